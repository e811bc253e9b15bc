"""`jackpot report` level by level (rules L1-L4, V1): ``levels.csv``, the document's levels table
and chart, envy bonuses under their own names; a one-level group's report as it was.

The ledger is the real pot processor's (tests/levels_ledgers.py); every level figure is checked
against the audit's books of the same ledger and against each level's own balance (what it held,
plus what came in, less what it paid, is what it holds)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from jackpot.domain.money import pesos
from jackpot.pot.ledger_audit import CHECKPOINT, GroupAudit
from jackpot.tools.report import sections, write_csv
from jackpot.tools.report_figures import compute
from jackpot.tools.report_model import LevelRow, Period, Report, level_rows
from jackpot.v1 import pot_pb2
from tests.levels_ledgers import GROUP, START_NS, LevelsFloor, levels_ledger, one_level_ledger
from tests.unit.test_report import as_records, render_html

WHOLE = Period(0, 2**62)


@pytest.fixture(scope="module")
def floor() -> LevelsFloor:
    return levels_ledger()


def report_of(ledger: list[pot_pb2.LedgerEntry], period: Period = WHOLE) -> Report:
    return compute(as_records(ledger), period)


def balanced(level: LevelRow) -> bool:
    """A level's own books: its pot and reserves at the close are the opening plus what came in
    less what left them (prizes and envy paid by the house never were in them)."""
    came_in = level.opened + level.collected + level.collected_to_reserves
    came_in += level.refilled_from_house
    left = level.prizes + level.envy - level.paid_by_house
    return level.closing + level.reserves_closing == (
        level.opening + level.reserves_opening + came_in - left
    )


def test_L1_L4_V1_levels_csv_gives_each_level_its_period(
    floor: LevelsFloor, tmp_path: Path
) -> None:
    report = report_of(floor.ledger)
    assert report.reconciles
    (group,) = report.groups
    royal, sf = group.levels
    assert (royal.name, royal.label, royal.pot, sf.name, sf.pot) == (
        "royal",
        "Royal Flush",
        "main",
        "sf",
        "sf",
    )
    assert (sf.envy, royal.envy) == (pesos(8_000), pesos(4_000))  # 4 x 2,000 and 4 x 1,000
    assert sf.prizes == pesos(500_000 + 50_350)  # the four of a kind and the straight flushes
    assert (royal.closing, sf.closing) == (pesos(500_000), pesos(50_000))  # back at their bases
    assert all(balanced(level) for level in group.levels)
    assert royal.prizes + royal.envy + sf.prizes + sf.envy == group.awarded
    written = {p.name for p in write_csv(tmp_path, report)}
    assert "levels.csv" in written
    with (tmp_path / "levels.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["level"], r["envy_paid"], r["refilled_from_house"]) for r in rows] == [
        ("royal", "4000", "549987.5"),
        ("sf", "8000", "99825"),
    ]
    prizes = {row[1]: row[2:] for row in sections(report)["prizes"][1:]}
    # V1: under their own names; all at land tables (O8: no envy bonus beside a studio table)
    assert prizes["ENVY_ROYAL_FLUSH"] == ["4", "8000", "4", "8000", "0", "0"]
    assert prizes["ENVY_STRAIGHT_FLUSH"] == ["4", "4000", "4", "4000", "0", "0"]


def test_L4_a_period_cut_in_two_gives_each_level_the_same_books(floor: LevelsFloor) -> None:
    """The two halves of the ledger's time: the first's closing is the second's opening, and
    their collections, prizes, envy and top-ups add up to the whole's."""
    cut = START_NS + 8 * 10**9
    whole = report_of(floor.ledger).groups[0].levels
    first = report_of(floor.ledger, Period(0, cut)).groups[0].levels
    second = report_of(floor.ledger, Period(cut, 2**62)).groups[0].levels
    for all_of, one, two in zip(whole, first, second, strict=True):
        assert one.closing == two.opening
        assert balanced(one)
        assert balanced(two)
        for figure in ("collected", "prizes", "envy", "refilled_from_house"):
            assert getattr(one, figure) + getattr(two, figure) == getattr(all_of, figure)
    assert first[1].envy == 0 < second[1].envy  # the royal's envy was paid after the cut


def test_L1_a_group_begun_at_a_checkpoint_has_the_same_level_books() -> None:
    """Books begun at a checkpoint (the report's windowed read) take the levels from its state:
    the level figures after it equal the whole ledger's difference."""
    floor = levels_ledger(checkpoint_entries=6)
    at = next(i for i, e in enumerate(floor.ledger) if e.type == CHECKPOINT)
    checkpoint = floor.ledger[at]
    begun = GroupAudit.from_checkpoint(checkpoint, checkpoint.SerializeToString())
    opening = GroupAudit.from_checkpoint(checkpoint, checkpoint.SerializeToString())
    whole, before = GroupAudit(GROUP), GroupAudit(GROUP)
    for n, entry in enumerate(floor.ledger):
        whole.add(entry)
        if n <= at:
            before.add(entry)
        else:
            begun.add(entry)
    assert begun.levels is not None
    assert level_rows(opening, begun) == level_rows(before, whole)
    begun.update = whole.update = floor.update
    begun.finish()
    assert begun.problems == []


def test_the_documents_levels_table_and_chart_in_spanish_and_english(floor: LevelsFloor) -> None:
    report = report_of(floor.ledger)
    spanish, english = render_html(report, "es"), render_html(report, "en")
    assert "Niveles (L1-L4)" in spanish
    assert "Levels (L1-L4)" in english
    assert spanish.count("<svg") == english.count("<svg") == 3  # main pot, per hour, levels
    assert "Envidia: Escalera real" in spanish  # V1: the envy bonus among the prizes by hand
    assert "Envy: Royal flush" in english
    assert "Envidias pagadas (V1)" in spanish
    assert "100 % del nivel sf" in spanish  # L2: the straight flush is a percentage of its level
    assert "y a las mesas enlazadas (V2)" in spanish


def test_L1_a_one_level_groups_report_has_no_levels_section(tmp_path: Path) -> None:
    report = report_of(one_level_ledger().ledger)
    assert report.reconciles
    assert report.groups[0].levels == []
    assert "levels" not in sections(report)
    assert "levels.csv" not in {p.name for p in write_csv(tmp_path, report)}
    page = render_html(report, "es")
    assert "Niveles" not in page
    assert "nivel" not in page
    assert page.count("<svg") == 2


def test_L2_a_report_of_a_level_prize_from_another_levels_pot_does_not_reconcile(
    floor: LevelsFloor,
) -> None:
    """The report's judge is the audit's: a prize of the sf level paid from the main pot."""
    tampered = [pot_pb2.LedgerEntry.FromString(e.SerializeToString()) for e in floor.ledger]
    quads = next(e for e in tampered if e.prize == "FOUR_OF_A_KIND")
    quads.transfers[0].source = "pot:main"
    report = report_of(tampered)
    assert not report.reconciles
    assert any("the pot of level royal" in p for p in report.groups[0].problems)
