"""The judge of the Spanish screens (tests/integration/page_language.py) judged itself (issue 29):
in Debian's Chromium with this machine's fonts it passes a Spanish page with every glyph drawn,
and refuses English wherever a page shows it and a character no installed font has; every
English sentence the dealer's terminal is sent is refused, and what screen.py shows of it
passes."""

from __future__ import annotations

import subprocess

import pytest
from loadtest.browser import chromium

from jackpot.terminal.screen import UNTRANSLATED, WHO_APPROVES, in_spanish
from tests.integration.page_language import Verdict, english_words, judge

pytestmark = pytest.mark.integration

# The words the pages are built around; a page is a body's HTML in one of the screens' fonts.
PAGE = """<!doctype html><html lang="es"><head><meta charset="utf-8"><title>{title}</title>
<style>body {{ font-family: "DejaVu Sans", Arial, sans-serif; }} .hidden {{ display: none; }}
{style}</style></head><body>{body}</body></html>"""
SPANISH = f"""<h1>MESA CAR-1</h1>
<p>¡GANADOR! ESCALERA REAL · Posición 4 · $1.002.550 — A♠ K♥ Q♦ J♣</p>
<p>Debe aprobarlo {WHO_APPROVES}…</p>
<button title="conectado a la mesa">Pagado</button><input placeholder="código">
<div class="hidden">the payout service ended the session 🎰</div>
<script>const idle = "open";</script>"""
SLOT_MACHINE = "\U0001f3b0"  # no emoji font on the kiosk (fc-list, below)
PADLOCK = "\U0001f512"  # the terminal's old lock


async def judged(body: str, title: str = "Terminal del crupier", style: str = "") -> Verdict:
    async with chromium() as browser:
        page = await browser.new_page()
        await page.set_content(PAGE.format(title=title, style=style, body=body))
        return await judge(page, ignore=("CAR-1",))


def no_font_has(char: str) -> bool:
    covering = subprocess.run(
        ["fc-list", f":charset={ord(char):x}", "family"], capture_output=True, text=True, check=True
    )
    return not covering.stdout.strip()


async def test_a_spanish_page_with_its_glyphs_passes_and_hidden_text_is_not_judged() -> None:
    """Accents, ¡, ·, —, …, the cards' suits (DejaVu Sans has them), the approver's phrase."""
    verdict = await judged(SPANISH)
    assert verdict, str(verdict)
    assert "Pagado" in verdict.shown
    assert "conectado a la mesa" in verdict.shown  # a tooltip was judged
    assert "código" in verdict.shown  # the placeholder was judged too
    assert not any("payout" in text for text in verdict.shown)  # display: none, not shown


@pytest.mark.parametrize(
    ("body", "title", "word", "where"),
    [
        (
            "<div id=lock>aprueba a supervisor (their own certificate or a one-time code)</div>",
            "Terminal",
            "their",
            "div#lock",
        ),
        ("<span id=state>awaiting_approval</span>", "Terminal", "awaiting", "span#state"),
        ("<span id=link title='watching the table'>mesa</span>", "Terminal", "watching", "@title"),
        ("<button aria-label='Paid'>Pagado</button>", "Terminal", "Paid", "@aria-label"),
        ("<input id=code placeholder='code'>", "Terminal", "code", "input#code@placeholder"),
        ("<p>Pozo</p>", "Dealer terminal", "Dealer", "title"),
    ],
)
async def test_english_anywhere_the_page_shows_it_is_refused(
    body: str, title: str, word: str, where: str
) -> None:
    """The terminal's old approver phrase (its Spanish one passes, above), a machine value shown
    raw, a tooltip, an accessible name, a placeholder, the document's title."""
    verdict = await judged(body, title)
    assert not verdict
    assert any(w == word and where in place for w, place in verdict.english), str(verdict)


@pytest.mark.parametrize(
    ("body", "style", "char", "where"),
    [
        (f"<p id=sign>{SLOT_MACHINE} ¡GANADOR!</p>", "", SLOT_MACHINE, "p#sign"),
        (
            "<div id=lock class=lock>Debe aprobarlo un supervisor</div>",
            f'.lock::before {{ content: "{PADLOCK} "; }}',
            PADLOCK,
            "div#lock::before",
        ),
        (f"<b id=pot title='{SLOT_MACHINE}'>Pozo</b>", "", SLOT_MACHINE, "b#pot@title"),
    ],
)
async def test_a_glyph_no_installed_font_has_is_refused(
    body: str, style: str, char: str, where: str
) -> None:
    assert no_font_has(char), f"a font covers {char!r} now: the judge needs another to refuse"
    verdict = await judged(body, style=style)
    assert not verdict
    assert [(m["char"], m["where"]) for m in verdict.missing] == [(char, where)], str(verdict)
    assert verdict.missing[0]["code"] == f"U+{ord(char):X}"
    assert not verdict.english  # the rest is Spanish: only the glyph is refused


# What reaches the dealer's screen in English: links.py (the links, the answers), screen.py's
# own refusals, web.py's 400s, the payout service's refusals and the gateway's closed reasons.
AWARD = "g/CAR-1/R1/5/FLUSH"
SENTENCES = [  # (the payout's state as jackpot.domain.payout names it)
    "connecting",
    "connected",
    "watching the table",
    "the gateway ended the watch",
    "the payout service ended the session",
    "UNAVAILABLE: failed to connect to all addresses; last error: connection refused",
    "UNAUTHENTICATED: NOT_AUTHENTICATED: not a terminal of table CAR-1",
    "DEADLINE_EXCEEDED: Deadline Exceeded",
    "paid: the payout service confirmed it",
    "approved by the supervisor: the payout service confirmed it",
    "voided by the supervisor: the payout service confirmed it",
    f"refused: INVALID_STATE: payout {AWARD} is PAID: it cannot be paid",
    f"refused: INVALID_STATE: payout {AWARD} is AWAITING_APPROVAL: it cannot be paid",
    f"refused: INVALID_STATE: payout {AWARD} is VOIDED: it cannot be voided",
    f"refused: INVALID_STATE: payout {AWARD} is APPROVED, not awaiting approval",
    f"refused: TABLE_MISMATCH: award {AWARD} is paid at DRW-1, not at CAR-1",
    f"refused: TABLE_MISMATCH: award {AWARD} is at DRW-1, not at CAR-1",
    f"refused: INVALID_STATE: no payout for award {AWARD!r}",
    f"refused: INVALID_STATE: no open payout for award {AWARD!r}",
    "refused: NOT_AUTHENTICATED: this code was already used",
    "refused: NOT_AUTHENTICATED: this code has expired",
    f"refused: NOT_AUTHENTICATED: wrong code for award {AWARD}",
    f"refused: NOT_AUTHENTICATED: wrong code for award {AWARD}; 5 wrong codes: its codes are "
    "void, the supervisor must ask for a new one",
    "refused: NOT_AUTHENTICATED: an approval needs the supervisor's name",
    "refused: INVALID_STATE: a void needs the supervisor's name and a reason",
    "refused: the transaction on partition 3 failed; retry",
    "refused: SEAT_CLOSED: a sentence screen.py does not know",
    "no answer from the payout service in time; see the list",
    "the link to the payout service was lost before its answer; the list shows whether it was paid",
    "no link to the payout service",
    "no link to the payout service (UNAVAILABLE: connection refused): nothing can be paid",
    "no link to the table's gateway (connecting): nothing can be paid",
    "no award named",
    "the request is larger than 4096 bytes",
    "the request is not JSON",
    "the request must be a JSON object",
    "'award_id' must be a non-empty string",
    "'code' must be a non-empty string",
    '\'decision\' must be "approve" or "void"',
    "a void needs a 'reason'",
    "starting",
    "no update from pot group scl-main yet",
    "pot group scl-main silent for over 1.5 s",
    "events cannot be delivered to Kafka",
]
IDENTIFIERS = (AWARD, "CAR-1", "DRW-1", "scl-main")


@pytest.mark.parametrize("sentence", SENTENCES)
def test_every_english_sentence_the_terminal_is_sent_is_refused_and_shown_in_spanish(
    sentence: str,
) -> None:
    assert english_words(sentence, IDENTIFIERS), f"the judge let {sentence!r} pass"
    shown = in_spanish(sentence)
    assert not english_words(shown, IDENTIFIERS), (sentence, shown)
    if "does not know" not in sentence:
        assert UNTRANSLATED not in shown, (sentence, shown)
