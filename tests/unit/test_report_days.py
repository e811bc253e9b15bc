"""A period composed of its days (issue 37 item 7; D4, M2, R1): the same report, to the
picopeso and the annex row, as one read of the whole period; kept days read back as they were
kept; a kept day that was altered, or days that do not meet, refused.

The ledgers are the real pot processor's: ``tests.report_ledgers.casino`` (four days, two
partitions, hourly checkpoints, a configuration change, a pot down across a midnight, a group
opened mid-period, payouts a day after their awards) and ``tests.levels_ledgers`` (two levels,
envy bonuses, top-ups by the house).
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
from pathlib import Path

import pytest

from jackpot.tools.report import read_report, sections
from jackpot.tools.report_annex import AwardSpool
from jackpot.tools.report_compose import compose
from jackpot.tools.report_days import DayBooks, DayBooksError, days_of, is_whole_day
from jackpot.tools.report_figures import compute
from jackpot.tools.report_model import Period, Report
from jackpot.tools.report_rows import keep_awards
from jackpot.v1 import pot_pb2
from tests.levels_ledgers import START_NS, levels_ledger
from tests.report_ledgers import DAY_NS, HOUR_NS, NORTH, casino, day
from tests.unit.test_report import as_records
from tests.unit.test_report_checkpoints import MemoryLedger, figures

Ledger = dict[int, list[pot_pb2.LedgerEntry]]
THREE_DAYS = Period(day(1), day(4))


@pytest.fixture(scope="module")
def ledger() -> Ledger:
    return casino()


def read(ledger: Ledger, period: Period) -> Report:
    return asyncio.run(read_report(MemoryLedger(ledger), period))


def statement(report: Report) -> dict[str, object]:
    """Everything the report says (every CSV section, the annex rows, the last 25, the
    configurations, the payments of earlier awards) but what it cost to read."""
    said = sections(report)
    said["summary"] = [row for row in said["summary"] if row[1] != "records read"]
    return {
        "sections": said,
        "groups": {
            g.group_id: {
                **figures(g),
                "last": [dataclasses.asdict(a) for a in g.last_awards],
                "configs": [dataclasses.asdict(c) for c in g.configs],
                "earlier": g.earlier_payments,
                "levels": g.levels,
                "land": g.land,
                "studio": g.studio,
            }
            for g in report.groups
        },
        "reconciles": report.reconciles,
    }


def test_D4_three_days_composed_say_what_one_read_of_them_says(ledger: Ledger) -> None:
    """Day by day, then composed: every figure, row and configuration of the one read; awards of
    one day paid the next are complete rows; the days meet without a finding."""
    whole = read(ledger, THREE_DAYS)
    pieces = [read(ledger, d) for d in days_of(THREE_DAYS, "UTC")]
    assert len(pieces) == 3
    composed = compose(pieces)
    assert whole.reconciles, [g.findings for g in whole.groups]
    assert statement(composed) == statement(whole)
    north = {g.group_id: g for g in composed.groups}[NORTH]
    assert any(row.paid_by for row in north.awards)
    assert sum(p.groups[0].earlier_payments for p in pieces[1:]) > 0  # paid a day later...
    assert north.earlier_payments == {g.group_id: g for g in whole.groups}[NORTH].earlier_payments
    # ...and the same when the first day is read from the ledger's beginning
    from_first = compute(as_records([e for es in ledger.values() for e in es]), THREE_DAYS)
    assert [figures(g) for g in compose(pieces).groups] == [figures(g) for g in from_first.groups]


def test_L1_V1_a_levels_groups_days_compose_to_its_levels_books() -> None:
    """Each level's opening and closing balances, collections, prizes, envy and top-ups over
    pieces equal the one read's (the pieces' books begin at different points)."""
    floor = levels_ledger(checkpoint_entries=6)
    cuts = [START_NS + n * 4 * 10**9 for n in range(1, 4)]
    edges = [0, *cuts, 2**62]
    whole = compute(as_records(floor.ledger), Period(0, 2**62))
    pieces = [compute(as_records(floor.ledger), Period(a, b)) for a, b in itertools.pairwise(edges)]
    composed = compose(pieces)
    assert whole.groups[0].levels
    assert composed.groups[0].levels == whole.groups[0].levels
    assert statement(composed) == statement(whole)


def test_days_kept_are_read_back_as_they_were(ledger: Ledger, tmp_path: Path) -> None:
    books = DayBooks(tmp_path / "days")
    pieces = [read(ledger, d) for d in days_of(THREE_DAYS, "UTC")]
    for piece in pieces:
        books.keep(piece, ())
    kept = [books.read(d, (), AwardSpool(tmp_path)) for d in days_of(THREE_DAYS, "UTC")]
    assert all(piece is not None for piece in kept)
    assert statement(compose([p for p in kept if p is not None])) == statement(compose(pieces))
    assert books.read(Period(day(0), day(1)), (), keep_awards) is None  # never kept
    assert books.read(THREE_DAYS, (NORTH,), keep_awards) is None  # kept for every group only


def test_a_kept_day_altered_is_refused(ledger: Ledger, tmp_path: Path) -> None:
    """A day's figure changed in its books: the days no longer meet, the period does not
    reconcile and says where; a row changed in its annex: the day cannot be read."""
    books = DayBooks(tmp_path)
    days = days_of(THREE_DAYS, "UTC")
    for d in days:
        books.keep(read(ledger, d), ())
    (second,) = tmp_path.glob(f"*{_stamp(days[1].start_ns)}--*.json")
    data = json.loads(second.read_text())
    closing = data["groups"][0]["closing"]["accounts"]
    closing["commission"] += 10**12  # a peso more commission at the day's close
    second.write_text(json.dumps(data))
    composed = compose([books.read(d, (), keep_awards) for d in days])  # type: ignore[misc]
    assert not composed.reconciles
    (group,) = [g for g in composed.groups if g.group_id == data["groups"][0]["group_id"]]
    assert any("are not those at the start of the next" in p for p in group.findings), (
        group.findings
    )
    annex = second.with_name(second.name.replace(".json", ".awards.jsonl"))
    annex.write_text(annex.read_text().replace('"cashier@casino"', '"someone@else"', 1))
    with pytest.raises(DayBooksError, match="is not the annex"):
        books.read(days[1], (), keep_awards)


def test_pieces_that_do_not_meet_end_to_start_are_refused(ledger: Ledger) -> None:
    first, _, third = (read(ledger, d) for d in days_of(THREE_DAYS, "UTC"))
    with pytest.raises(ValueError, match="do not meet end to start"):
        compose([first, third])


def test_a_period_is_cut_at_the_casinos_midnights() -> None:
    """Whole days where the period covers them, its ends as parts; a day of 23 hours where the
    clock moves forward at midnight (America/Santiago, 2026-09-06)."""
    zone = "America/Santiago"
    period = Period(day(1) + 5 * HOUR_NS, day(1) + 5 * HOUR_NS + 3 * DAY_NS)
    days = days_of(period, zone)
    assert next(d.start_ns for d in days) == period.start_ns
    assert days[-1].end_ns == period.end_ns
    assert all(a.end_ns == b.start_ns for a, b in itertools.pairwise(days))
    assert [is_whole_day(d, zone) for d in days] == [False, True, True, False]
    spring = Period(1788580800 * 10**9, 1788750000 * 10**9)  # 09-05 00:00 -04 to 09-07 -03
    lengths = [(d.end_ns - d.start_ns) // HOUR_NS for d in days_of(spring, zone)]
    assert lengths == [24, 23]
    assert all(is_whole_day(d, zone) for d in days_of(spring, zone))


def _stamp(ns: int) -> str:
    from jackpot.tools.report_model import iso

    return iso(ns).replace(":", "")


def test_a_folder_that_cannot_keep_a_day_says_so(ledger: Ledger, tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    books = DayBooks.of(blocked, "jackpot.ledger.v1")
    with pytest.raises(DayBooksError, match="cannot keep a day"):
        books.keep(read(ledger, days_of(THREE_DAYS, "UTC")[0]), ())
