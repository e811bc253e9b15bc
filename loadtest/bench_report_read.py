"""The period report's read of a ledger, CPU only: records per second, no Kafka (issue 37).

A floor's history is synthesized in process (:mod:`loadtest.history_synth`: the pot's own book
writes every ledger entry) and its ledger records kept in a pickle (``--cache``, made once; the
default 80 tables for 1.1 days, some 320,000 records, take about 40 s). The last day is then
the period: each partition's records go, as `jackpot report` reads them, from a checkpoint
interval before ``--from`` (windowed, :mod:`jackpot.tools.report`), through
:meth:`ReportBuilder.add_value <jackpot.tools.report_figures.ReportBuilder.add_value>`, the
callback the Kafka reader calls per record; then what it must replay, from the first record.
What is timed is that feeding alone: the figures of ``jackpot report`` without the broker and
the client's decoding.

``--whole`` reads every partition from its first record instead (as a replay does: every entry
before ``--from`` then goes to the books the period opens with). ``--out DIR`` writes the
report's CSV files, its annex, its groups' problems and books (as the day books keep them) there,
to compare two versions of the code byte for byte; ``--profile N`` prints cProfile's N costliest
functions by own time.

    python -m loadtest.bench_report_read [--tables 80] [--days 1.1] [--cache PATH] [--repeat 3]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pickle
import pstats
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jackpot.platform.logging import configure_logging
from jackpot.pot.ledger_audit import audit_to_dict
from jackpot.tools.report import CHECKPOINT_INTERVAL_SECONDS, SEEK_MARGIN_MS, write_csv
from jackpot.tools.report_figures import ReportBuilder
from jackpot.tools.report_model import Period, Report
from loadtest.history_synth import DAY_NS, GroupHistory, Plan, group_plans

END_NS = 1_780_012_800 * 10**9  # a midnight (UTC): the history's end, the period's --to
# (partition, offset, value, time in ms) as the ledger topic holds them
Ledger = list[tuple[int, int, bytes, int]]


def synthesize(tables: int, days: float) -> Ledger:
    """The ledger records of ``days`` of ``tables`` tables ending at :data:`END_NS`."""
    configure_logging("WARNING", json=False)  # the book logs every admin command it applies
    plan = Plan(tables=tables, days=days, end_ns=END_NS)
    records: Ledger = []
    for group in group_plans(tables):
        offset = 0
        for chunk in GroupHistory(plan, group).chunks():
            for record in chunk.records:
                if record.kind == "ledger" and record.value is not None:
                    records.append((record.partition, offset, record.value, record.time_ms))
                    offset += 1
    return records


def load(path: Path, tables: int, days: float) -> Ledger:
    if path.exists():
        cached: Ledger = pickle.loads(path.read_bytes())
        return cached
    started = time.perf_counter()
    records = synthesize(tables, days)
    path.write_bytes(pickle.dumps(records))
    print(f"synthesized {len(records):,} ledger records in {time.perf_counter() - started:.0f} s")
    return records


def windowed_reads(
    records: Ledger, period: Period, whole: bool = False
) -> tuple[Ledger, dict[int, int]]:
    """The records a report of ``period`` reads, each partition from a checkpoint interval and a
    margin before ``--from`` (as :func:`jackpot.tools.report._starts` seeks while the pot
    writes; ``whole``: from its first record), to ``--to`` and a margin; and the partitions read
    from later than their first."""
    since_ms = period.start_ns // 10**6 - int(CHECKPOINT_INTERVAL_SECONDS * 1000) - SEEK_MARGIN_MS
    if whole:
        since_ms = min(r[3] for r in records)
    until_ms = period.end_ns // 10**6 + SEEK_MARGIN_MS
    read = [r for r in records if since_ms <= r[3] < until_ms]
    windowed = {p: since_ms * 10**6 for p in {r[0] for r in records if r[3] < since_ms}}
    return read, windowed


def report_of(records: Ledger, period: Period, whole: bool = False) -> tuple[Report, int, float]:
    """The report, the records fed and the CPU seconds feeding them took (replays included:
    CPU time, not wall time, as other work on the machine slows this process down less)."""
    read, windowed = windowed_reads(records, period, whole)
    elapsed = 0.0
    builder = ReportBuilder(period, windowed=windowed)
    started = time.process_time()
    for partition, offset, value, _ in read:
        builder.add_value(partition, offset, value)
    elapsed += time.process_time() - started
    fed = len(read)
    again = builder.replays()
    if again:
        replayed = ReportBuilder(period, replaying=again)
        started = time.process_time()
        for partition, offset, value, time_ms in records:
            if partition in again and time_ms < period.end_ns // 10**6 + SEEK_MARGIN_MS:
                replayed.add_value(partition, offset, value)
                fed += 1
        elapsed += time.process_time() - started
        builder.replace(replayed)
    return builder.report(), fed, elapsed


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", type=int, default=80)
    parser.add_argument("--days", type=float, default=1.1)
    parser.add_argument("--cache", type=Path, help="the ledger's pickle (default: under /tmp)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--whole", action="store_true", help="read from the first records")
    parser.add_argument("--out", type=Path, help="write the report's CSV files here")
    parser.add_argument("--profile", type=int, default=0, metavar="N")
    args = parser.parse_args(argv)
    cache = args.cache or Path(f"/tmp/bench-report-read-{args.tables}x{args.days}.pickle")
    records = load(cache, args.tables, args.days)
    period = Period(END_NS - DAY_NS, END_NS)
    if args.profile:
        profile(records, period, args.whole, args.profile)
        return
    seconds = []
    for _ in range(args.repeat):
        report, fed, elapsed = report_of(records, period, args.whole)
        seconds.append(elapsed)
        print(f"{fed:,} records in {elapsed:.2f} CPU s: {fed / elapsed:,.0f} records/s", flush=True)
    best = min(seconds)
    print(f"best {fed / best:,.0f} records/s, median {fed / statistics.median(seconds):,.0f}")
    print(f"reconciles: {report.reconciles}; groups {len(report.groups)}")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        write_csv(args.out, report)
        problems = [f"{g.group_id}: {p}" for g in report.groups for p in g.problems]
        (args.out / "problems.txt").write_text("".join(f"{p}\n" for p in problems))
        books = {
            g.group_id: [audit_to_dict(g.opening), audit_to_dict(g.closing)] for g in report.groups
        }
        (args.out / "books.json").write_text(json.dumps(books, sort_keys=True))


def profile(records: Ledger, period: Period, whole: bool, top: int) -> None:
    profiler = cProfile.Profile()
    result: Any = profiler.runcall(report_of, records, period, whole)
    print(f"{result[1]:,} records in {result[2]:.2f} s under the profiler")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(top)


if __name__ == "__main__":
    main()
