"""`jackpot report`'s document: a period's books as a regulator files them (R1, R6; D4, M2, C7).

``report.html`` is one self-contained page (inline SVG charts, no script, no server, the machine's
DejaVu Sans) laid out for A4 landscape paper, and ``report.pdf`` is that page printed by Chromium
headless (:func:`print_pdf`; ``chromium --print-to-pdf`` honours the page's ``@page`` size, margins
and page numbers). The cover states the casino, the period and its time zone, the pot groups with
their verdicts, the overall verdict, the records read, the digest of the software that wrote the
document (R6) and the annex's: ``awards.csv``, every prize of the period a row, named with its row
count and SHA-256 (:mod:`jackpot.tools.report_annex`), so the annex is bound to the document. Each
pot group then starts a page: its figures, the M2 reconciliation written out, for a group whose
period had a studio table its books at land and at studio tables
(:mod:`jackpot.tools.report_split_document`: the cover and its prizes by hand split too; a
land-only period's document is as it was), its pots, for a group with levels each level's figures
as a table and a chart (L1-L4, V1: a one-level group's document has no such section), hits by hand
(an envy bonus under its own name, "Envidia: Escalera real"), the configuration in force as tables
(pots, shares, ceilings, paytable, C7), the main pot and the collections per hour as charts as wide
as the page (:mod:`jackpot.tools.report_charts`), and the last 25 prizes (R1); a table longer than
a page repeats its header on the next, and no table is wider than the page (fixed layouts,
identifiers that wrap). The document's size follows the pot groups and their configurations, never
the number of prizes: a casino's day prints a few pages per group, not one per 12 prizes.

Words, amounts and dates come from :class:`~jackpot.tools.report_words.Style`: Spanish by default,
amounts as the floor writes them, instants in the casino's zone. The CSV files are not this
module's: they stay machine-readable (:func:`jackpot.tools.report.write_csv`).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator
from pydantic_settings import SettingsConfigDict

from jackpot.domain.config import PotGroupConfig, load_config
from jackpot.domain.errors import DomainError
from jackpot.platform.manifest import Verification, package_root, verify
from jackpot.platform.settings import Settings
from jackpot.tools import report_charts
from jackpot.tools.report_annex import ANNEX_NAME, Annex, write_annex
from jackpot.tools.report_charts import LEVEL_FIGURES
from jackpot.tools.report_html import escape as _e
from jackpot.tools.report_html import facts as _facts
from jackpot.tools.report_html import none as _none
from jackpot.tools.report_html import number as _n
from jackpot.tools.report_html import table as _table
from jackpot.tools.report_model import ConfigVersion, GroupReport, LevelRow, Report
from jackpot.tools.report_rows import AwardRow
from jackpot.tools.report_split_document import (
    cover_table,
    prizes_section,
    split_cover,
    split_section,
    table_cell,
)
from jackpot.tools.report_words import Style

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
PDF_TIMEOUT_SECONDS = 120.0

TITLE_PT = 22  # the cover's title: a PDF whose title is smaller was shrunk to fit its page
CSS = """
@page { size: A4 landscape; margin: 12mm 12mm 14mm;
  @bottom-left { content: var(--footer); font: 8pt "DejaVu Sans", sans-serif; color: #444; }
  @bottom-right { content: var(--page-word) " " counter(page) " " var(--of-word) " "
    counter(pages); font: 8pt "DejaVu Sans", sans-serif; color: #444; } }
* { box-sizing: border-box; }
body { font: 9.5pt/1.35 "DejaVu Sans", sans-serif; color: #111; margin: 0 auto; max-width: 273mm; }
h1 { font-size: %dpt; margin: 0 0 4mm; } h2 { font-size: 15pt; margin: 0 0 3mm; }
h3 { font-size: 11pt; margin: 5mm 0 2mm; break-after: avoid; }
section.group { break-before: page; }
table { width: 100%; border-collapse: collapse; table-layout: fixed; margin: 0 0 3mm; }
thead { display: table-header-group; } tr { break-inside: avoid; }
th, td { border: 0.3mm solid #888; padding: 1mm 1.5mm; text-align: left; vertical-align: top;
  overflow-wrap: anywhere; }
th { background: #e8ecef; font-weight: bold; }
td.n { text-align: right; white-space: nowrap; }
table.facts { break-inside: avoid; } table.facts th { width: 30%; } table.narrow { width: 60%; }
table.last-awards { font-size: 7pt; } table.cover-split { font-size: 8.5pt; }
.verdict { font-size: 13pt; font-weight: bold; padding: 3mm 4mm; margin: 3mm 0;
  border-radius: 2mm; }
.ok { background: #e3f2e5; color: #1b5e20; } .bad { background: #fde7e9; color: #b71c1c; }
.m2 { font-family: "DejaVu Sans Mono", monospace; font-size: 9pt; }
figure { margin: 0 0 4mm; break-inside: avoid; } figure svg { width: 100%; height: auto; }
figcaption { font-weight: bold; margin-bottom: 1mm; }
ul.problems { color: #b71c1c; }
""".replace("%dpt", f"{TITLE_PT}pt")


class ReportSettings(Settings):
    """`jackpot report`'s document: the casino it names, its language and time zone, and the
    browser that prints its PDF (the command's options win over these)."""

    model_config = SettingsConfigDict(env_prefix="JACKPOT_REPORT_")

    casino: str = Field("", description="the casino's name on the cover")
    lang: Literal["es", "en"] = Field("es", description="the document's language")
    time_zone: str = Field(
        "America/Santiago", description="the casino's time zone (IANA): every date in it"
    )
    day_books: str = Field(
        "",
        description="folder where each gaming day's books are kept once the day is over, so a "
        "month's report is composed of its days instead of replaying the month's ledger "
        "(jackpot.tools.report_days; empty: every report reads the ledger alone)",
    )
    browser: str = Field(
        "",
        description="the Chromium that prints the PDF (default: the first of chromium, "
        "chromium-browser, google-chrome on the PATH)",
    )

    @field_validator("time_zone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                "not a time zone of the IANA database (e.g. America/Santiago)"
            ) from None
        return value


class DocumentError(RuntimeError):
    """The PDF could not be printed (no browser, or it failed): the HTML and CSV still stand."""


# ----------------------------------------------------------------------------- the document


def _source(report: Report, style: Style) -> str:
    """Where the figures come from: the ledger alone, or with days already issued."""
    records = style.number(report.records_read)
    if report.kept_days:
        return style.words("source_days_text", records=records, days=report.kept_days)
    return style.words("source_text", records=records)


def render_document(
    report: Report,
    style: Style,
    casino: str,
    software: Verification,
    issued_ns: int,
    annex: Annex | None = None,
) -> str:
    """The whole page: the cover (with ``annex``, the CSV of every prize, bound by its digest),
    then one section per pot group."""
    footer = f"{style.words('title')} · {casino or ''} · {_period(report, style)}"
    parts = [
        f"<!doctype html><html lang='{style.lang}'><head><meta charset='utf-8'>",
        f"<title>{_e(style.words('title'))} {_e(_period(report, style))}</title>",
        f"<style>{CSS}:root {{ --footer: {_css_string(footer)}; "
        f"--page-word: {_css_string(style.words('page'))}; "
        f"--of-word: {_css_string(style.words('of'))}; }}</style></head><body>",
        _cover(report, style, casino, software, issued_ns, annex),
        *(_group_section(group, style, annex) for group in report.groups),
        "</body></html>",
    ]
    return "\n".join(parts)


def _cover(
    report: Report,
    style: Style,
    casino: str,
    software: Verification,
    issued_ns: int,
    annex: Annex | None,
) -> str:
    w = style.words
    digest = (
        w("software_ok", digest=software.digest)
        if software.ok
        else w("software_bad", why=software.describe())
    )
    facts = [
        (w("casino"), casino or "—"),
        (w("period"), _period(report, style)),
        (w("zone"), style.zone_line(report.period.start_ns, report.period.end_ns)),
        (w("source"), _source(report, style)),
        (w("software"), digest),
        (w("generated"), style.when(issued_ns)),
        (w("annex"), _annex(annex, style)),
    ]
    rows = [
        [
            _e(group.group_id),
            _n(style.money(group.collected)),
            _n(style.money(group.awarded)),
            _n(style.number(group.award_count)),
            _verdict_word(group, style),
        ]
        for group in report.groups
    ]
    head = [w("group"), w("collected"), w("awarded"), w("award_count"), w("verdict")]
    groups = _table(head, rows, widths=(30, 18, 18, 14, 20)) if rows else f"<p>{w('no_groups')}</p>"
    if split_cover(report):  # land and studio columns: a group had a studio table
        groups = cover_table(report, style, lambda group: _verdict_word(group, style))
    return (
        f"<section class='cover'><h1>{_e(w('title'))}</h1>{_facts(facts)}"
        f"{_verdict(report, style)}<h3>{_e(w('groups'))}</h3>{groups}</section>"
    )


def _annex(annex: Annex | None, style: Style) -> str:
    """The annex's name, rows and SHA-256, on the cover (R1): what binds the CSV to the page."""
    w = style.words
    if annex is None:
        return f"{ANNEX_NAME}: {w('annex_missing')}"
    return w("annex_text", name=annex.name, rows=style.number(annex.rows), digest=annex.sha256)


def _verdict(report: Report, style: Style) -> str:
    if report.reconciles:
        return f"<p class='verdict ok'>{_e(style.words('all_reconcile'))}</p>"
    why = [*report.unreadable]
    for group in report.groups:
        why += [f"{group.group_id}: {problem}" for problem in group.findings]
        if not group.reconciliation()[0]:
            why.append(f"{group.group_id}: {_m2_line(group, style)}")
    return f"<p class='verdict bad'>{_e(style.words('not_reconcile', why='; '.join(why)))}</p>"


def _verdict_word(group: GroupReport, style: Style) -> str:
    if group.reconciles:
        return f"<span class='ok'>{_e(style.words('reconciles'))}</span>"
    return f"<span class='bad'>{_e(style.words('does_not_reconcile'))}</span>"


def _group_section(group: GroupReport, style: Style, annex: Annex | None) -> str:
    w = style.words
    g = _e(group.group_id)
    parts = [
        f"<section class='group' id='group-{g}'><h2>{_e(w('group'))} {g}</h2>",
        f"<p class='verdict {'ok' if group.reconciles else 'bad'}'>{_verdict_word(group, style)}"
        f"</p><p class='m2'>{_e(w('reconciliation'))}: {_e(_m2_line(group, style))}</p>",
        f"<h3>{_e(w('figures'))}</h3>{_facts(_figures(group, style))}",
        split_section(group, style),
    ]
    if group.findings:
        items = "".join(f"<li>{_e(p)}</li>" for p in group.findings)
        parts.append(f"<ul class='problems'>{items}</ul>")
    parts += [_pots(group, style), *_levels(group.levels, style), prizes_section(group, style)]
    parts.append(_configs(group.configs, style))
    parts += report_charts.charts(group, style)
    in_annex = w(
        "awards_in_annex",
        count=style.number(group.award_count),
        name=annex.name if annex else ANNEX_NAME,
    )
    parts += [
        f"<h3>{_e(w('last_awards'))}</h3><p class='in-annex'>{_e(in_annex)}</p>",
        _awards(group.last_awards, style, "last-awards"),
        "</section>",
    ]
    return "".join(parts)


def _figures(group: GroupReport, style: Style) -> list[tuple[str, str]]:
    w, money = style.words, style.money
    if group.opened_checkpoint is None:
        opened = w("first_entry")
    else:
        opened = w("checkpoint_at", at=style.when(group.opened_checkpoint[1]))
    rows = [
        (w("collected"), money(group.collected)),
        (w("commission"), money(group.commission)),
        (w("house_advances"), money(group.house_advances)),
        (w("overflow"), money(group.overflow)),
        (w("awarded"), money(group.awarded)),
        (w("award_count"), style.number(group.award_count)),
        (w("opening_from"), opened),
    ]
    if group.earlier_payments:
        rows.append((w("problem"), w("earlier_payments", count=group.earlier_payments)))
    return rows


def _m2_line(group: GroupReport, style: Style) -> str:
    """Rule M2 over the period in the document's words, exactly."""
    w, money = style.words, style.money
    opening, closing = sum(group.opening.pots.values()), sum(group.closing.pots.values())
    equal = "=" if group.reconciliation()[0] else "≠"
    return (
        f"{w('opening_pots')} {money(opening)} + {w('m2_collected')} {money(group.collected)} + "
        f"{w('m2_house_advances')} {money(group.house_advances)} {equal} {w('m2_commission')} "
        f"{money(group.commission)} + {w('m2_awarded')} {money(group.awarded)} + "
        f"{w('closing_pots')} {money(closing)}"
    )


def _pots(group: GroupReport, style: Style) -> str:
    w = style.words
    opening, closing = group.opening.pots, group.closing.pots
    rows = [
        [
            _e(style.pot(pot)),
            *(
                _n(style.money(v))
                for v in (opening.get(pot, 0), group.received[pot], closing.get(pot, 0))
            ),
        ]
        for pot in sorted({*opening, *closing})
    ]
    head = [w("pot"), w("opening"), w("received"), w("closing")]
    return f"<h3>{_e(w('pots'))}</h3>" + _table(head, rows, widths=(25, 25, 25, 25))


def _levels(levels: Sequence[LevelRow], style: Style) -> list[str]:
    """A group with levels: each level's opening, what it collected, paid (its prizes and its
    envy bonuses apart) and was refilled from its reserves and by the house, its closing, and
    a chart of those figures; nothing for a one-level group (its document is as it was)."""
    if not levels:
        return []
    w = style.words
    rows = [
        [
            _e(f"{level.label} ({level.name})"),
            _n(style.money(level.opening)),
            *(_n(style.money(getattr(level, figure))) for _, figure, _ in LEVEL_FIGURES),
            _n(style.money(level.closing)),
            _n(style.money(level.reserves_closing)),
        ]
        for level in levels
    ]
    head = [w("level"), w("opening"), *(w(k) for k, _, _ in LEVEL_FIGURES), w("closing")]
    head.append(w("level_reserves"))
    table = _table(head, rows, widths=(16, 10, 10, 10, 10, 11, 11, 11, 11), css="levels")
    return [f"<h3>{_e(w('levels'))}</h3>", table, report_charts.level_chart(levels, style)]


def _configs(configs: Sequence[ConfigVersion], style: Style) -> str:
    parts = [f"<h3>{_e(style.words('configs'))}</h3>"]
    for version in configs:
        parts.append(_config(version, style))
    return "".join(parts)


def _config(version: ConfigVersion, style: Style) -> str:
    """One configuration version: who and when, then its pots and its paytable as tables."""
    w = style.words
    raw = version.config
    facts = [
        (w("version"), str(version.version)),
        (w("proposed"), f"{style.when_text(version.proposed_at)} {w('by')} {version.proposed_by}"),
        (w("reason"), version.reason or "—"),
        (w("activated"), style.when_text(version.activated_at) or w("pending")),
    ]
    try:
        config = load_config(raw, recorded=True)
    except (DomainError, ValueError, TypeError, KeyError) as error:
        return _facts([*facts, (w("problem"), f"{error}")])
    facts += [
        (w("base"), style.money(config.base)),
        (w("commission"), style.percent(config.commission_ppm)),
        (w("min_max_bet"), _bets(raw, style)),
    ]
    if config.mystery is not None:
        mystery = config.mystery
        facts.append(
            (
                w("mystery"),
                w(
                    "mystery_range",
                    pot=style.pot(mystery.pot),
                    low=style.pesos(mystery.min_pesos),
                    high=style.pesos(mystery.max_pesos),
                ),
            )
        )
    return _facts(facts) + _config_pots(config, style) + _paytable(config, style)


def _bets(raw: dict[str, Any], style: Style) -> str:
    if "min_bet" not in raw or "max_bet" not in raw:
        return "—"
    return f"{style.pesos(int(raw['min_bet']))} / {style.pesos(int(raw['max_bet']))}"


def _config_pots(config: PotGroupConfig, style: Style) -> str:
    w = style.words
    rows = [
        [
            _e(style.pot(pot.name)),
            _n(style.percent(pot.share_ppm)),
            _n(style.money(pot.ceiling) if pot.ceiling is not None else w("none")),
            _e(style.pot(pot.overflow_to) if pot.overflow_to else w("none")),
        ]
        for pot in config.pots
    ]
    head = [w("pot"), w("share"), w("ceiling"), w("overflow_to")]
    return _table(head, rows, widths=(25, 20, 30, 25), css="narrow")


def _paytable(config: PotGroupConfig, style: Style) -> str:
    w = style.words
    table = config.paytable
    rows = []
    for hand in (*table.fixed_order, *table.percent_order):
        prize = table.prizes[hand]
        if prize.is_fixed:
            text = w("fixed", multiple=style.number(prize.multiple))
        elif prize.level is not None and config.has_levels:  # L2: a percentage of its level
            text = w(
                "percent_of_level", percent=style.percent(prize.percent_ppm), level=prize.level
            )
        else:
            text = w("percent_of_main", percent=style.percent(prize.percent_ppm))
        if not prize.is_fixed and prize.cap_multiple is not None:
            text += f", {w('cap', cap=style.number(prize.cap_multiple))}"
        if prize.envy is not None:  # V1, V2
            level = prize.envy.level or prize.level or config.main_level_name
            text += "; " + w("envy_bonus", amount=style.pesos(prize.envy.amount_pesos), level=level)
            text += w("envy_linked") if prize.envy.linked else ""
        rows.append([_e(style.hand(hand)), _e(text)])
    head = [f"{w('paytable')} {table.name}: {w('hand')}", w("prize")]
    return _table(head, rows, widths=(40, 60), css="narrow")


def _awards(awards: Sequence[AwardRow], style: Style, css: str) -> str:
    """The last prizes, a line each (an award's id is group/table/round/seat/prize: shown)."""
    if not awards:
        return _none(style.words("no_awards"))
    w = style.words
    head = [
        *(w("table"), w("seat"), w("round"), w("hand"), w("amount")),
        *(w("occurred"), w("approved_by"), w("paid_by"), w("paid_at")),
    ]
    rows = [
        [
            _e(table_cell(a.table_id, a.studio, style)),
            _n(str(a.seat)),
            _e(a.round_id),
            _e(f"{style.hand(a.prize)} ({a.cards})" if a.cards else style.hand(a.prize)),
            _n(style.pesos(a.amount)),
            _e(style.when_text(a.occurred_at)),
            _e(a.approved_by),
            _e(a.paid_by),
            _e(style.when_text(a.paid_at)),
        ]
        for a in awards
    ]
    return _table(head, rows, widths=(7, 6, 17, 18, 7, 12, 9, 12, 12), css=css)


# ---------------------------------------------------------------------------------- pieces


def _css_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def _period(report: Report, style: Style) -> str:
    w = style.words
    period = report.period
    return f"{w('from')} {style.when(period.start_ns)} {w('to')} {style.when(period.end_ns)}"


# ------------------------------------------------------------------------------------- PDF


def write_document(
    folder: Path,
    report: Report,
    settings: ReportSettings,
    pdf: bool,
    annex: Annex | None = None,
) -> None:
    """``report.html`` into ``folder`` and, when ``pdf``, ``report.pdf`` printed from it (a
    :class:`DocumentError` when it cannot be: the page is written first and stays); bound to
    ``annex``, or to the ``awards.csv`` it writes there first from the report's rows."""
    style = Style(settings.lang, ZoneInfo(settings.time_zone))
    software = verify(package_root())
    if annex is None:
        annex = write_annex(folder / ANNEX_NAME, report)
    page = folder / "report.html"
    text = render_document(report, style, settings.casino, software, time.time_ns(), annex)
    page.write_text(text, encoding="utf-8")
    target = folder / "report.pdf"
    target.unlink(missing_ok=True)  # never a PDF of an earlier run beside this page
    if pdf:
        print_pdf(page, target, find_browser(settings.browser))


def find_browser(setting: str = "") -> str:
    """The Chromium to print with: the setting's, or the first of BROWSERS on the PATH."""
    if setting:
        found = shutil.which(setting)
        if found is None:
            raise DocumentError(f"browser {setting!r} (JACKPOT_REPORT_BROWSER) is not a program")
        return found
    for name in BROWSERS:
        found = shutil.which(name)
        if found is not None:
            return found
    raise DocumentError(
        "no Chromium on the PATH (Debian: apt-get install chromium), so no report.pdf; "
        "set JACKPOT_REPORT_BROWSER or pass --no-pdf"
    )


def print_pdf(page: Path, pdf: Path, browser: str) -> None:
    """``page`` printed to ``pdf`` by Chromium headless, at the page's own @page size; printed
    again once if the browser was killed by a signal (``--single-process`` Chromium died of
    SIGSEGV printing the report in the fresh-clone CI of 2026-12-05, cause unknown), a second
    death or any other failure a :class:`DocumentError`."""
    try:
        _print_once(page, pdf, browser)
    except _BrowserDied as died:
        print(f"jackpot report: {died}; printing again", file=sys.stderr)
        _print_once(page, pdf, browser)


class _BrowserDied(DocumentError):
    """The browser was killed by a signal while printing."""


def _print_once(page: Path, pdf: Path, browser: str) -> None:
    pdf.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="jackpot-report-") as profile:
        command = [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            # One process, not eleven: the report's peak memory is the browser's (a day of 300
            # tables: 385 MB, not 462 MB of proportional set size; the same PDF). A page that is
            # ours alone needs none of the site isolation the processes are for.
            "--single-process",
            "--no-zygote",
            "--no-pdf-header-footer",
            f"--user-data-dir={profile}",
            f"--print-to-pdf={pdf}",
            page.resolve().as_uri(),
        ]
        try:
            done = subprocess.run(
                command, capture_output=True, timeout=PDF_TIMEOUT_SECONDS, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise DocumentError(f"{browser} could not print {page.name}: {error}") from None
    if done.returncode != 0 or not pdf.exists() or pdf.stat().st_size == 0:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:]
        failed = _BrowserDied if done.returncode < 0 else DocumentError
        raise failed(
            f"{browser} could not print {page.name} (exit {done.returncode}): {' '.join(tail)}"
        )


__all__ = [
    "DocumentError",
    "ReportSettings",
    "find_browser",
    "print_pdf",
    "render_document",
    "write_document",
]
