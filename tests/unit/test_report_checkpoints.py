"""`jackpot report` from checkpoints (issue 23, R1, M2, D4): a day of a multi-day ledger costs the
day, not the history, and says the same to the picopeso as the report of the whole ledger.

The ledgers are the real pot processor's (``tests.report_ledgers``: four days, three groups on two
partitions, hourly checkpoints, a configuration change, a pot service down before the day, a
group opened in it, payouts paid a day later). ``read_report`` reads them through
:class:`MemoryLedger`, which answers as the broker does (offsets for a time, ranges of offsets),
so the seeking, the look-back and the second read from the beginning are the command's own.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator, Iterable, Mapping

import pytest
from aiokafka import ConsumerRecord

from jackpot.pot.ledger_audit import CHECKPOINT
from jackpot.tools.report import CHECKPOINT_INTERVAL_SECONDS, SEEK_MARGIN_MS, read_report
from jackpot.tools.report_figures import compute
from jackpot.tools.report_model import (
    FROM_FIRST_ENTRY,
    GroupReport,
    LedgerRecord,
    Period,
    Report,
    ReportInputError,
)
from jackpot.v1 import pot_pb2
from tests.report_ledgers import (
    HOUR_NS,
    LATE,
    MINUTE_NS,
    NORTH,
    SOUTH,
    SOUTH_DOWN,
    casino,
    day,
    recorded,
    retold,
)

Ledger = dict[int, list[pot_pb2.LedgerEntry]]
DAY2 = Period(day(2), day(3))


class MemoryLedger:
    """A ledger topic in memory, read as :class:`~jackpot.platform.kafka.TopicReader` reads one
    (each record's time is its entry's recorded_at, as the producer sends it just then)."""

    def __init__(self, ledger: Ledger) -> None:
        self.partitions = sorted(ledger)
        self.log = {p: [e.SerializeToString() for e in entries] for p, entries in ledger.items()}
        self.times = {p: [recorded(e) // 10**6 for e in entries] for p, entries in ledger.items()}
        self.reads: list[dict[int, int]] = []  # the start offsets of each read

    async def bounds(
        self, partitions: Iterable[int] | None = None
    ) -> tuple[dict[int, int], dict[int, int]]:
        chosen = self.partitions if partitions is None else list(partitions)
        return {p: 0 for p in chosen}, {p: len(self.log[p]) for p in chosen}

    async def offsets_for_time(
        self, unix_ms: int, partitions: Iterable[int] | None = None
    ) -> dict[int, int]:
        chosen = self.partitions if partitions is None else list(partitions)
        return {
            p: next((n for n, t in enumerate(self.times[p]) if t >= unix_ms), len(self.log[p]))
            for p in chosen
        }

    async def records(
        self,
        start: Mapping[int, int] | None = None,
        end: Mapping[int, int] | None = None,
        *,
        partitions: Iterable[int] | None = None,
    ) -> AsyncIterator[ConsumerRecord[bytes, bytes]]:
        begin = dict(start) if start is not None else {p: 0 for p in self.partitions}
        if partitions is not None:
            begin = {p: o for p, o in begin.items() if p in set(partitions)}
        self.reads.append(begin)
        stop = {p: min(len(self.log[p]), (end or {}).get(p, len(self.log[p]))) for p in begin}
        at = dict(begin)
        while any(at[p] < stop[p] for p in at):  # partitions interleaved, a few records each
            for p in at:
                for offset in range(at[p], min(at[p] + 7, stop[p])):
                    yield record(p, offset, self.times[p][offset], self.log[p][offset])
                at[p] = min(at[p] + 7, stop[p])


def record(partition: int, offset: int, ms: int, value: bytes) -> ConsumerRecord[bytes, bytes]:
    return ConsumerRecord("ledger", partition, offset, ms, 0, None, value, None, 0, len(value), [])


def every_record(ledger: Ledger) -> list[LedgerRecord]:
    return [
        LedgerRecord(p, n, e.SerializeToString())
        for p, es in ledger.items()
        for n, e in enumerate(es)
    ]


def windowed(ledger: Ledger, period: Period, *groups: str) -> tuple[Report, MemoryLedger]:
    reader = MemoryLedger(ledger)
    return asyncio.run(read_report(reader, period, groups)), reader


def figures(group: GroupReport) -> dict[str, object]:
    """Everything the report states of a group but where its books begin."""
    return {
        "opening": group.opening.figures(),
        "closing": group.closing.figures(),
        "period": (group.collected, group.commission, group.awarded, group.house_advances),
        "received": dict(group.received),
        "overflow": group.overflow,
        "prizes": group.prizes,
        "reconciliation": group.reconciliation(),
        "by_hour": dict(group.collected_by_hour),
        "main_series": group.main_series,
        "awards": [dataclasses.asdict(a) for a in group.awards],
        "problems": group.problems,
    }


def checkpoints(entries: list[pot_pb2.LedgerEntry], group: str) -> list[int]:
    return [n for n, e in enumerate(entries) if e.type == CHECKPOINT and e.pot_group_id == group]


@pytest.fixture(scope="module")
def ledger() -> Ledger:
    return casino()


def test_a_day_from_its_checkpoints_equals_the_report_of_the_whole_ledger(ledger: Ledger) -> None:
    """Every figure of every group, to the picopeso, the period's awards with who approved and
    paid each, the last 25 awards, the configuration in force: as from the whole ledger; and the
    day cost a day and a bit of records, not four days."""
    report, reader = windowed(ledger, DAY2)
    whole = compute(every_record(ledger), DAY2)
    assert whole.reconciles
    assert report.reconciles, [g.problems for g in report.groups]
    assert [g.group_id for g in report.groups] == [g.group_id for g in whole.groups]
    for mine, theirs in zip(report.groups, whole.groups, strict=True):
        assert figures(mine) == figures(theirs), mine.group_id
        assert len(mine.awards) > 25
        assert [dataclasses.asdict(a) for a in mine.last_awards] == [
            dataclasses.asdict(a) for a in theirs.last_awards
        ]
        assert [(c.version, c.config) for c in mine.configs] == [
            (c.version, c.config) for c in theirs.configs
        ]
    by_id = {g.group_id: g for g in report.groups}
    whole_by_id = {g.group_id: g for g in whole.groups}
    assert by_id[NORTH].opened_from.startswith("the checkpoint at ledger entry")
    assert by_id[SOUTH].opened_from.startswith("the checkpoint at ledger entry")  # before down
    assert by_id[LATE].opened_from == FROM_FIRST_ENTRY  # opened in the day, read from its opening
    assert any(a.paid_by == "cashier@casino" for a in by_id[NORTH].awards)
    assert by_id[NORTH].earlier_payments > 0  # awards of the day before, paid in this one
    assert whole_by_id[NORTH].earlier_payments == 0
    # Version 2 was proposed on day 1, long before the records read: its checkpoint says which
    # version was in force, and the page says when and by whom is not read.
    (v2,) = by_id[NORTH].configs
    (whole_v2,) = whole_by_id[NORTH].configs
    assert (v2.version, whole_v2.proposed_by) == (2, "bea@casino")
    assert v2.proposed_by.startswith("not read (before ")
    assert len(reader.reads) == 2  # the look-back before --from, then the period: no second read
    total = sum(len(entries) for entries in ledger.values())
    assert whole.records_read == total
    assert report.records_read < total * 0.45, (report.records_read, total)
    print(
        f"records read for one day of {len(ledger)} partitions x 4 days: {report.records_read}"
        f" (the whole ledger: {total})"
    )


def test_a_partition_silent_before_the_day_is_read_from_its_last_checkpoints(
    ledger: Ledger,
) -> None:
    """South's pot was down from eight hours before the day: its read begins an hour and a margin
    before its last record then, not at the day minus an hour (where there is none)."""
    report, reader = windowed(ledger, DAY2)
    last_before = max(recorded(e) for e in ledger[1] if recorded(e) < SOUTH_DOWN[0])
    since_ms = (last_before // 10**6) - int(CHECKPOINT_INTERVAL_SECONDS * 1000) - SEEK_MARGIN_MS
    expected = next(n for n, e in enumerate(ledger[1]) if recorded(e) // 10**6 >= since_ms)
    assert reader.reads[-1][1] == expected
    assert recorded(ledger[1][expected]) < SOUTH_DOWN[0] - HOUR_NS
    assert report.reconciles


def test_a_short_period_takes_the_last_awards_before_it_from_the_checkpoint(ledger: Ledger) -> None:
    """Half an hour with fewer than 25 awards: the last 25 are those of the whole ledger, and the
    ones only the checkpoint remembers say their times were not read."""
    period = Period(day(2) + 6 * HOUR_NS, day(2) + 6 * HOUR_NS + 30 * MINUTE_NS)
    report, _ = windowed(ledger, period, NORTH)
    whole = compute(every_record(ledger), period, [NORTH])
    ((mine,), (theirs,)) = report.groups, whole.groups
    assert figures(mine) == figures(theirs)
    assert len(mine.awards) < 25
    assert [(a.award_id, a.amount, a.prize, a.table_id) for a in mine.last_awards] == [
        (a.award_id, a.amount, a.prize, a.table_id) for a in theirs.last_awards
    ]
    unread = [a for a in mine.last_awards if a.recorded_at.startswith("not read (before ")]
    assert unread  # awarded before the records read: the checkpoint's state names them
    read = [a for a in mine.last_awards if a not in unread]
    assert all(a in theirs.last_awards for a in read)


def test_a_ledger_from_before_checkpoints_is_read_from_its_beginning() -> None:
    """No checkpoint in the records read: every partition is read again from its first record,
    streamed, and the figures are the same as ever."""
    old = casino(checkpoints=False)
    assert not any(e.type == CHECKPOINT for es in old.values() for e in es)
    report, reader = windowed(old, DAY2)
    whole = compute(every_record(old), DAY2)
    assert report.reconciles
    assert [figures(g) for g in report.groups] == [figures(g) for g in whole.groups]
    assert reader.reads[-1] == {0: 0, 1: 0}
    assert all(g.opened_from == FROM_FIRST_ENTRY for g in report.groups)


def test_a_checkpoint_that_disagrees_with_itself_is_not_a_start(ledger: Ledger) -> None:
    """The checkpoint a day's books would begin at, copied with one figure changed: the report
    does not start there but reads the partition from its beginning, where the audit of every
    entry finds the checkpoint disagrees with the entries before it, and does not reconcile."""
    since = day(2) - HOUR_NS - SEEK_MARGIN_MS * 10**6
    entries = list(ledger[0])
    first = next(n for n in checkpoints(entries, NORTH) if recorded(entries[n]) >= since)
    main = json.loads(entries[first].detail_json)["pots"]["main"]
    entries[first] = retold(entries[first], {"pots.main": main + 1})  # one picopeso
    report, reader = windowed({**ledger, 0: entries}, DAY2, NORTH)
    assert not report.reconciles
    (north,) = report.groups
    assert north.opened_from == FROM_FIRST_ENTRY
    assert any("disagrees with the entries before it" in p for p in north.problems)
    assert reader.reads[-1] == {0: 0}


def test_a_forged_checkpoint_agreeing_with_itself_is_refused_by_the_next(ledger: Ledger) -> None:
    """A peso moved from the main pot to commission in the checkpoint and in its state (it still
    conserves and agrees with itself): the next checkpoint in the period states other figures
    and another hash chain, and the report does not reconcile."""
    since = day(2) - HOUR_NS - SEEK_MARGIN_MS * 10**6
    entries = list(ledger[0])
    first = next(n for n in checkpoints(entries, NORTH) if recorded(entries[n]) >= since)
    detail = json.loads(entries[first].detail_json)
    peso = 10**12
    entries[first] = retold(
        entries[first],
        {
            "pots.main": detail["pots"]["main"] - peso,
            "commission": detail["commission"] + peso,
            "state.balances.main": detail["state"]["balances"]["main"] - peso,
            "state.commission": detail["state"]["commission"] + peso,
        },
    )
    report, _ = windowed({**ledger, 0: entries}, DAY2, NORTH)
    (north,) = report.groups
    assert north.opened_from.startswith("the checkpoint")
    assert not report.reconciles
    assert any("checkpoint != ledger" in p for p in north.problems)
    assert any("hash chain" in p for p in north.problems)


def test_a_checkpoint_of_the_period_that_disagrees_does_not_reconcile(ledger: Ledger) -> None:
    entries = list(ledger[1])
    inside = [
        n for n in checkpoints(entries, SOUTH) if DAY2.start_ns < recorded(entries[n]) < DAY2.end_ns
    ]
    wrong = inside[len(inside) // 2]
    collected = json.loads(entries[wrong].detail_json)["collected"]
    entries[wrong] = retold(entries[wrong], {"collected": collected + 10**12})
    report, _ = windowed({**ledger, 1: entries}, DAY2, SOUTH)
    assert not report.reconciles
    assert any("collected" in p and "checkpoint != ledger" in p for p in report.groups[0].problems)


def test_an_unknown_group_is_refused_after_looking_where_its_key_would_be(ledger: Ledger) -> None:
    with pytest.raises(ReportInputError, match="no pot group nowhere in the ledger"):
        windowed(ledger, DAY2, "nowhere")


def test_a_whole_history_period_reads_from_the_beginning_once(ledger: Ledger) -> None:
    report, reader = windowed(ledger, Period(0, day(5)))
    assert reader.reads == [{0: 0, 1: 0}]
    assert [figures(g) for g in report.groups] == [
        figures(g) for g in compute(every_record(ledger), Period(0, day(5))).groups
    ]
    assert report.records_read == sum(len(es) for es in ledger.values())
