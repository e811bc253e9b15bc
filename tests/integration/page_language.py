"""The judge of a Spanish screen in the kiosk's browser (issue 29): one language, and no glyph the
machine's fonts lack. Used by the dealer terminal's and the signs' browser tests alike.

What a page shows is collected in the page itself: every visible text node, the ``title``,
``aria-label``, ``placeholder`` and ``alt`` of visible elements, the text of their ``::before``
and ``::after``, and the document's title, each with the font its element asks for.

- Glyphs: every character beyond ASCII is drawn on a canvas in its element's font and compared,
  pixel for pixel, with U+10FFFD (a private-use code point no font has): the same picture is the
  box Chromium draws when no installed font covers the character (the page's fonts and every
  fallback fontconfig offers were tried). Chromium's DevTools cannot tell it: its
  ``CSS.getPlatformFontsForNode`` names the page's font for a missing glyph too.
- Language: the text is cut into words (letters only; one-letter words and the test's own
  identifiers left out) and any word of :data:`ENGLISH` fails. The list is the English of the
  project's screens and services (what the links, the payout service, the gateway and the board
  say) and English's common words, less those that are Spanish words too ("no", "real",
  "color", "full", "error", "supervisor", "terminal", "local", "sin", "con", "mesa"...).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

# In the page: what it shows, then which of its characters no font draws.
COLLECT = """() => {
  const shown = [];
  const visible = el => el.checkVisibility({checkOpacity: true, checkVisibilityCSS: true});
  const fontOf = (el, pseudo) => {
    const s = getComputedStyle(el, pseudo);
    return `${s.fontStyle} ${s.fontWeight} 32px ${s.fontFamily}`;
  };
  const name = el => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "")
    + (el.dataset.testid ? "[data-testid=" + el.dataset.testid + "]" : "");
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement;
    if (el && node.data.trim() && visible(el)) {
      shown.push({text: node.data, font: fontOf(el), where: name(el)});
    }
  }
  for (const el of document.body.querySelectorAll("*")) {
    if (!visible(el)) continue;
    for (const attribute of ["title", "aria-label", "placeholder", "alt"]) {
      const value = el.getAttribute(attribute);
      if (value && value.trim()) {
        shown.push({text: value, font: fontOf(el), where: name(el) + "@" + attribute});
      }
    }
    for (const pseudo of ["::before", "::after"]) {
      const content = getComputedStyle(el, pseudo).content;
      if (content.startsWith('"') && content.length > 2) {
        const where = name(el) + pseudo;
        shown.push({text: content.slice(1, -1), font: fontOf(el, pseudo), where});
      }
    }
  }
  if (document.title.trim()) {
    shown.push({text: document.title, font: fontOf(document.body), where: "title"});
  }

  const canvas = document.createElement("canvas");
  canvas.width = canvas.height = 64;
  const ctx = canvas.getContext("2d", {willReadFrequently: true});
  const picture = (font, ch) => {
    ctx.clearRect(0, 0, 64, 64);
    ctx.font = font;
    ctx.textBaseline = "top";
    ctx.fillText(ch, 8, 8);
    return ctx.getImageData(0, 0, 64, 64).data.join(",");
  };
  const box = {}, tried = new Set(), missing = [];
  for (const item of shown) {
    for (const ch of item.text) {
      const code = ch.codePointAt(0);
      if (code < 0x7f || /\\s/.test(ch) || tried.has(item.font + ch)) continue;
      tried.add(item.font + ch);
      box[item.font] ??= picture(item.font, String.fromCodePoint(0x10FFFD));
      if (picture(item.font, ch) === box[item.font]) {
        const hex = "U+" + code.toString(16).toUpperCase().padStart(4, "0");
        missing.push({char: ch, code: hex, where: item.where});
      }
    }
  }
  return {shown, missing};
}"""

# English words, none of them a Spanish word as well.
ENGLISH_WORDS = """
    the of and or to in on at by for from with without into onto over under than then this that
    these those there here is are was were be been being am it its they them their theirs our
    ours your yours you we us she his her him who whom whose which what when where why how not
    nothing none any some all each every both either neither own only just also too very can
    cannot could would should will shall may might must need needs do does did done have had
    having get got yet still again before after while until since because if else up down out
    off one two three four five six seven eight nine first last next new old more most less
    least many much few other another same such way yes see shows show shown whether named name
    ask asks asked given give please ready wait waiting awaiting
    table tables seat seats bet bets betting credit credits round rounds open opened closed close
    closing locked lock unlock unlocked idle result results approval approve approved approves
    void voided paid pay pays payment payments payout payouts prize prizes award awards amount
    amounts pot pots jackpot progressive winner winners won win wins flush royal straight house
    kind aces sevens suit lamp lamps fault faulty dealer screen link links lost connecting
    connected connection disconnected watching watch gateway service services session ended
    stopping stopped started starting reconnect reconnecting unavailable deadline exceeded
    refused refusal denied permission unauthenticated cancelled canceled unknown invalid state
    states malformed wrong code codes used already expired certificate answer answered confirmed
    confirm confirmation request requests string object empty larger reason silent update
    updates event events delivered transaction failed retry partition list time detail details
    mismatch group sign signs live increment minimum maximum limit limits pending loading
    warning errors done cards card hand hands fold exchange mystery value values seen never
    always online offline status ordered order orders supervisors minute minutes
    seconds second
"""
ENGLISH = frozenset(ENGLISH_WORDS.split())
WORD = re.compile(r"[^\W\d_]+")


@dataclass
class Verdict:
    """What is wrong with a page as shown: words of English, characters no font draws."""

    english: list[tuple[str, str]] = field(default_factory=list)  # (word, where)
    missing: list[dict[str, str]] = field(default_factory=list)  # {char, code, where}
    shown: list[str] = field(default_factory=list)  # every text judged

    def __bool__(self) -> bool:
        return not self.english and not self.missing

    def __str__(self) -> str:
        lines = [f"English {word!r} in {where}" for word, where in self.english]
        lines += [f"no font has {m['code']} {m['char']!r} in {m['where']}" for m in self.missing]
        return "; ".join(lines) or "Spanish, every glyph drawn"


def english_words(text: str, ignore: Iterable[str] = ()) -> list[str]:
    """The words of ``text`` that are English, ``ignore`` (identifiers: tables, groups, awards)
    taken out first, longest first."""
    for identifier in sorted(ignore, key=len, reverse=True):
        text = text.replace(identifier, " ")
    return [w for w in WORD.findall(text) if len(w) > 1 and w.lower() in ENGLISH]


async def judge(page: Any, ignore: Iterable[str] = ()) -> Verdict:
    """The verdict on ``page`` (Playwright's) as it is shown now."""
    found = await page.evaluate(COLLECT)
    ignored = tuple(ignore)
    verdict = Verdict(missing=found["missing"])
    for item in found["shown"]:
        verdict.shown.append(item["text"])
        verdict.english += [(w, item["where"]) for w in english_words(item["text"], ignored)]
    return verdict


async def assert_spanish(page: Any, state: str, ignore: Iterable[str] = ()) -> None:
    """Fails, naming each fault, unless ``page`` shows only Spanish in glyphs its fonts have;
    ``state`` names what the page shows (for the failure's message)."""
    verdict = await judge(page, ignore)
    assert verdict.shown, f"{state}: the page shows nothing to judge"
    assert verdict, f"{state}: {verdict}"
