"""`jackpot report` of one day of a four-day ledger on real Kafka (issue 23, R1, M2): the broker's
offsets-for-times find where each partition's read begins, the report reads a day and a bit of
records instead of the whole topic, and its figures equal those of the whole ledger replayed.

The ledger is the real pot processor's (``tests.report_ledgers``), written to a two-partition
topic with each record's time its entry's recorded_at, as the pot's producer stamps it.
"""

from __future__ import annotations

import asyncio
import csv
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer

from jackpot.tools import partitions
from jackpot.tools import report as report_tool
from jackpot.tools.report_document import ReportSettings
from jackpot.tools.report_figures import compute
from jackpot.tools.report_model import Period, iso
from jackpot.v1 import pot_pb2
from tests.conftest import TopicFactory
from tests.report_ledgers import casino, day, read_whole_ledger, recorded

pytestmark = pytest.mark.integration


async def write(bootstrap: str, topic: str, ledger: dict[int, list[pot_pb2.LedgerEntry]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    try:
        for partition, entries in ledger.items():
            for entry in entries:
                await producer.send(
                    topic,
                    entry.SerializeToString(),
                    key=entry.pot_group_id.encode(),
                    partition=partition,
                    timestamp_ms=recorded(entry) // 10**6,
                )
        await producer.flush()
    finally:
        await producer.stop()


async def test_one_day_of_four_reads_the_day_and_equals_the_whole_ledger(
    kafka_bootstrap: str, make_topic: TopicFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = casino()
    topic = await make_topic("ledger", partitions=2)
    await write(kafka_bootstrap, topic, ledger)
    options = {"bootstrap_servers": kafka_bootstrap}
    period = Period(day(2), day(3))
    report = await report_tool.report_from_kafka(options, topic, period)
    every = await read_whole_ledger(options, topic)
    whole = compute(every, period)
    total = sum(len(entries) for entries in ledger.values())
    assert len(every) == total  # what the report read before (the whole topic, every time)
    assert report.reconciles, [g.problems for g in report.groups]
    for mine, theirs in zip(report.groups, whole.groups, strict=True):
        assert mine.group_id == theirs.group_id
        assert mine.opening.figures() == theirs.opening.figures()
        assert mine.closing.figures() == theirs.closing.figures()
        assert mine.reconciliation() == theirs.reconciliation()
        assert mine.awards == theirs.awards
        assert mine.main_series == theirs.main_series
    assert report.records_read < total * 0.45, (report.records_read, total)
    # Two processes, a partition each (--jobs 2): the same books, the same records read.
    monkeypatch.setattr(partitions, "RECORDS_PER_PROCESS", 1)  # side by side even when small
    side_by_side = await report_tool.report_from_kafka(options, topic, period, jobs=2)
    assert side_by_side.workers_rss_mb > 0  # it did run in worker processes
    assert side_by_side.records_read == report.records_read
    for mine, theirs in zip(side_by_side.groups, report.groups, strict=True):
        assert mine.reconciliation() == theirs.reconciliation()
        assert mine.closing.figures() == theirs.closing.figures()
        assert (mine.awards, mine.main_series) == (theirs.awards, theirs.main_series)
    print(f"\none day of four: {report.records_read} ledger records read, the topic holds {total}")

    # The command: exit 0, and the summary says what it read.
    out = tmp_path / "report"
    status = await asyncio.to_thread(
        report_tool.run, options, topic, str(out), iso(day(2)), iso(day(3))
    )
    assert status == 0
    with (out / "summary.csv").open() as handle:
        summary = {(g, k): v for g, k, v in csv.reader(handle)}
    assert int(summary[("*", "records read")]) < total * 0.45
    assert summary[("north", "opening books from")].startswith("the checkpoint at ledger entry")


def _csv(folder: Path, name: str) -> list[list[str]]:
    with (folder / name).open() as handle:
        return [row for row in csv.reader(handle) if row[1:2] != ["records read"]]


async def test_three_days_composed_of_kept_days_equal_the_ledger_read_and_read_nothing(
    kafka_bootstrap: str, make_topic: TopicFactory, tmp_path: Path
) -> None:
    """`--day-books` (D4, R1): the first report of three days reads each day from the ledger and
    keeps it; the second composes the kept days and reads no ledger record; both say, section by
    section and annex byte by byte, what the ledger read alone says."""
    topic = await make_topic("ledger", partitions=2)
    await write(kafka_bootstrap, topic, casino())
    options = {"bootstrap_servers": kafka_bootstrap}
    books = tmp_path / "days"
    kept = ReportSettings(day_books=str(books), time_zone="UTC")
    period = (iso(day(1)), iso(day(4)))
    folders = {name: tmp_path / name for name in ("ledger", "first", "second")}
    for name, document in (("ledger", None), ("first", kept), ("second", kept)):
        status = await asyncio.to_thread(
            report_tool.run,
            options,
            topic,
            str(folders[name]),
            *period,
            document=document,
            pdf=False,
        )
        assert status == 0, name
    assert len(list((books / topic).glob("*.json"))) == 3  # three whole days, of this ledger
    summaries = {
        name: dict(((g, k), v) for g, k, v in _csv(f, "summary.csv")) for name, f in folders.items()
    }
    assert summaries["second"][("*", "days from the day books")] == "3"
    assert ("*", "days from the day books") not in summaries["first"]
    for name in ("first", "second"):
        summary = {k: v for k, v in summaries[name].items() if k[1] != "days from the day books"}
        assert summary == summaries["ledger"], name
        for section in ("pots.csv", "prizes.csv", "configs.csv", "last_awards.csv", "main_pot.csv"):
            assert _csv(folders[name], section) == _csv(folders["ledger"], section), section
        annex = (folders[name] / "awards.csv").read_bytes()
        assert annex == (folders["ledger"] / "awards.csv").read_bytes(), name
    with (folders["second"] / "summary.csv").open() as handle:
        read_now = {(g, k): v for g, k, v in csv.reader(handle)}[("*", "records read")]
    assert read_now == "0"
