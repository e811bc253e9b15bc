"""`jackpot report` of a group with land and studio tables (O1, O3, O9; R1, M2; issue 39).

The ledger is the real pot's book (``tests.report_ledgers.studio_floor``): three land tables, then
studio table S1 of 1,000 seats linked a third of the way in, one of whose rounds deals a flush to
every bet (1,000 awards of one round). Each period's books are split between land and studio
tables: the studio figures are checked against sums taken straight from S1's entries, land +
studio against the totals, and a split that does not add up is refused (the report does not
reconcile). The annex says each prize's kind of table; the document lists the last 25 prizes,
never the studio round's 1,000.
"""

from __future__ import annotations

import csv
import hashlib
import html
import json
import re
from pathlib import Path

import pytest

from jackpot.domain.money import MINOR_PER_PESO
from jackpot.pot.ledger_audit import AWARD_TYPES
from jackpot.tools.report import sections, write_csv
from jackpot.tools.report_annex import ANNEX_NAME, AWARD_HEADER, Annex
from jackpot.tools.report_document import render_document
from jackpot.tools.report_figures import LAST_AWARDS, compute
from jackpot.tools.report_model import GroupReport, LedgerRecord, Period, Report
from jackpot.tools.report_words import Style
from jackpot.v1 import pot_pb2
from tests.report_ledgers import (
    STUDIO_GROUP,
    STUDIO_TABLE,
    STUDIO_WINNERS,
    recorded,
    studio_floor,
)
from tests.unit.test_report import START_NS, VERIFIED
from tests.unit.test_report_checkpoints import windowed

Entries = list[pot_pb2.LedgerEntry]


@pytest.fixture(scope="module")
def entries() -> Entries:
    return studio_floor()


def records(entries: Entries) -> list[LedgerRecord]:
    return [LedgerRecord(0, n, e.SerializeToString()) for n, e in enumerate(entries)]


def whole(entries: Entries) -> Period:
    return Period(recorded(entries[0]), recorded(entries[-1]) + 1)


def linked_at(entries: Entries) -> int:
    """When S1 was linked (its TableLinked entry, the one with studio seats)."""
    (link,) = [
        e
        for e in entries
        if e.type == pot_pb2.LEDGER_ENTRY_TYPE_TABLE_LINKED and e.table_id == STUDIO_TABLE
    ]
    assert json.loads(link.detail_json)["studio_seats"] == STUDIO_WINNERS
    return recorded(link)


def group_of(report: Report) -> GroupReport:
    (group,) = report.groups
    assert group.group_id == STUDIO_GROUP
    return group


def studio_sums(entries: Entries, period: Period) -> tuple[int, int, int]:
    """Straight from S1's entries of ``period``: bets collected (pesos), awards, pesos awarded."""
    inside = [
        e
        for e in entries
        if period.start_ns <= recorded(e) < period.end_ns and e.table_id == STUDIO_TABLE
    ]
    bets = sum(e.amount for e in inside if e.type == pot_pb2.LEDGER_ENTRY_TYPE_BETS_COLLECTED)
    awards = [e.amount for e in inside if e.type in AWARD_TYPES]
    return bets, len(awards), sum(awards)


def render(report: Report, lang: str = "es") -> str:
    return render_document(report, Style(lang), "Casino de prueba", VERIFIED, START_NS)


def test_O1_R1_the_books_split_between_land_and_studio_tables_add_up(entries: Entries) -> None:
    """The whole history and a period cut after S1's link: the studio figures are S1's entries',
    land + studio is each total (collected, commission, awarded, awards, each prize), and the
    period reconciles."""
    for period in (whole(entries), Period(linked_at(entries) + 1, whole(entries).end_ns)):
        group = group_of(compute(records(entries), period))
        assert group.reconciles, group.findings
        assert group.split_problems() == []
        bets, count, pesos = studio_sums(entries, period)
        studio, land = group.studio, group.land
        assert (studio.collected, studio.award_count) == (bets * MINOR_PER_PESO, count)
        assert studio.awarded == pesos * MINOR_PER_PESO
        assert studio.hits["FLUSH"] == STUDIO_WINNERS  # one round, a bet of every seat (O3)
        assert land.collected > 0
        assert land.award_count > 0
        assert land.collected + studio.collected == group.collected
        assert land.commission + studio.commission == group.commission
        assert land.awarded + studio.awarded == group.awarded
        assert land.award_count + studio.award_count == group.award_count
        assert group.studio_tables == {STUDIO_TABLE}
        assert group.has_studio
        kinds = {a.studio for a in group.awards if a.table_id == STUDIO_TABLE}
        assert kinds == {True}
        assert sum(a.studio for a in group.awards) == studio.award_count


def test_O1_a_day_read_from_a_checkpoint_knows_the_studio_table_from_its_state(
    entries: Entries,
) -> None:
    """A period read from the checkpoint before it (no TableLinked of S1 in the records read:
    the checkpoint's state lists S1 with its seats) splits as the report of the whole ledger."""
    period = Period(linked_at(entries) + 3 * 3600 * 10**9, whole(entries).end_ns)
    report, reader = windowed({0: entries}, period)
    link = next(n for n, e in enumerate(entries) if recorded(e) == linked_at(entries))
    assert all(read[0] > link for read in reader.reads)  # never from the beginning, nor the link
    group = group_of(report)
    assert "checkpoint" in group.opened_from
    full = group_of(compute(records(entries), period))
    assert (group.land, group.studio, group.studio_tables) == (
        full.land,
        full.studio,
        full.studio_tables,
    )
    assert group.studio_tables == {STUDIO_TABLE}
    assert group.reconciles


def test_O1_a_split_that_does_not_add_up_is_refused(entries: Entries) -> None:
    """One peso more at the studio tables, or a flush moved from land to studio in hits alone:
    the group does not reconcile, and the CSV, the text and the document say where."""
    group = group_of(compute(records(entries), whole(entries)))
    assert group.reconciles
    group.studio.collected += MINOR_PER_PESO
    assert not group.reconciles
    (problem,) = group.split_problems()
    assert problem.startswith("land + studio tables do not add up to the period's books: ")
    assert "collected: land " in problem
    assert f"!= {group.collected // MINOR_PER_PESO}" in problem
    report = Report(whole(entries), [group])
    assert not report.reconciles
    summary = sections(report)["summary"]
    assert [STUDIO_GROUP, "problem", problem] in summary
    assert [STUDIO_GROUP, "verdict", "DOES NOT RECONCILE"] in summary
    assert "ESTOS LIBROS NO CUADRAN" in html.unescape(render(report))
    group.studio.collected -= MINOR_PER_PESO
    assert group.reconciles
    group.land.hits["FLUSH"] -= 1
    group.studio.hits["FLUSH"] += 1  # the sum holds: the split's own count, checked above
    assert group.reconciles
    group.studio.wins["FLUSH"] += 1
    assert [p.split(": ", 1)[1] for p in group.split_problems()] == [
        f"prize FLUSH: land {group.land.hits['FLUSH']} hits {group.land.wins['FLUSH']} + studio "
        f"{group.studio.hits['FLUSH']} hits {group.studio.wins['FLUSH']} != "
        f"{group.prizes['FLUSH'][0]} hits {group.prizes['FLUSH'][1]}"
    ]
    assert not group.reconciles


def test_O1_R1_the_annex_says_each_prizes_table_kind_and_the_document_lists_25(
    entries: Entries, tmp_path: Path
) -> None:
    """awards.csv: its columns as before, then table_kind (land or studio), a row per prize
    (1,000 of them S1's one round), its SHA-256 on the cover; the document lists the last 25."""
    report = compute(records(entries), whole(entries))
    group = group_of(report)
    write_csv(tmp_path, report)
    annex = tmp_path / ANNEX_NAME
    with annex.open(encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == AWARD_HEADER
    assert AWARD_HEADER[-1] == "table_kind"
    assert AWARD_HEADER[:-1] == [
        *("pot_group", "award_id", "table", "seat", "round", "prize", "amount", "hand"),
        *("occurred_at", "recorded_at", "approved_by", "paid_by", "paid_at"),
    ]
    kinds = {(row[2] == STUDIO_TABLE, row[-1]) for row in rows[1:]}
    assert kinds == {(True, "studio"), (False, "land")}
    studio_rows = [row for row in rows[1:] if row[-1] == "studio"]
    assert len(studio_rows) == group.studio.award_count >= STUDIO_WINNERS
    assert len(rows) - 1 == group.award_count
    page = render_document(
        report, Style("es"), "Casino", VERIFIED, START_NS, annex=Annex.of(annex, len(rows) - 1)
    )
    assert hashlib.sha256(annex.read_bytes()).hexdigest() in page
    listed = re.search(r"<table class='last-awards'>.*?</table>", page)
    assert listed is not None
    assert listed.group(0).count("<tr>") == LAST_AWARDS + 1  # the header and the last 25
    assert page.count(f"{STUDIO_TABLE} (estudio)") <= LAST_AWARDS
    assert len(page) < 60_000  # its size follows the groups, not the 1,000 prizes of a round


def test_O1_the_document_shows_land_and_studio_columns_in_spanish_and_english(
    entries: Entries,
) -> None:
    """A period with a studio table: the cover's collected, awarded and prizes per kind and in
    total, the group's split table naming S1, its prizes by hand per kind."""
    report = compute(records(entries), whole(entries))
    group = group_of(report)
    spanish = html.unescape(render(report, "es"))
    cover = spanish[: spanish.index("<section class='group'")]
    for name in ("Recaudado (apuestas)", "Premios otorgados", "Número de premios"):
        assert f"<th colspan='3'>{name}</th>" in cover, name
    assert cover.count("<th>presencial</th><th>estudio</th><th>total</th>") == 3
    for words in (
        "Mesas presenciales y de estudio (O1)",
        "Mesas de estudio en el período: S1.",
        "Aciertos: estudio",
        "Monto: presencial",
    ):
        assert words in spanish, words
    style = Style("es")
    for figure in (group.land.collected, group.studio.collected, group.collected):
        assert style.money(figure) in spanish
    assert style.number(group.studio.award_count) in spanish
    english = html.unescape(render(report, "en"))
    assert english.count("<th>land</th><th>studio</th><th>total</th>") == 3
    for words in ("Land and studio tables (O1)", "Hits: studio", "Amount: total"):
        assert words in english, words


def test_O1_a_period_without_a_studio_table_reads_as_before(entries: Entries) -> None:
    """Before S1 was linked: the document has no land or studio column (an inspector of a land
    casino reads it as before); the CSV keeps its columns, the studio ones at zero."""
    period = Period(recorded(entries[0]), linked_at(entries))
    report = compute(records(entries), period)
    group = group_of(report)
    assert group.reconciles
    assert not group.has_studio
    assert group.award_count > 0
    page = html.unescape(render(report))
    for words in ("presencial", "estudio", "Mesas presenciales"):
        assert words not in page, words
    prizes = sections(report)["prizes"]
    assert prizes[0][4:] == ["land_hits", "land_amount", "studio_hits", "studio_amount"]
    assert all(row[2:4] == row[4:6] and row[6:] == ["0", "0"] for row in prizes[1:])
    summary = {row[1]: row[2] for row in sections(report)["summary"] if row[0] == STUDIO_GROUP}
    assert summary["collected at studio tables"] == "0"
    assert summary["awards at land tables"] == str(group.award_count)
    assert summary["studio tables"] == ""
