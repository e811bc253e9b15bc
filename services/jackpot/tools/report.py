"""`jackpot report`: a period's books of every pot group, from the ledger alone (D4, M2; R1).

Reads jackpot.ledger.v1 (read_committed, streamed through
:class:`~jackpot.platform.kafka.TopicReader`) and computes the figures with
:mod:`jackpot.tools.report_figures`. Its cost follows the period, not the history: each partition
is read from a checkpoint interval (``PotSettings.checkpoint_interval_seconds``) and a margin
before the last time it was written before ``--from`` (found by the broker's offsets-for-times),
so it holds every group's last checkpoint before the period, where each group's opening books
begin, up to the records just after ``--to``. Only what cannot begin there (a ledger from before
checkpoints, a group whose checkpoint disagrees with itself) is read again from the partition's
first record, streamed. ``records read`` in the summary says what it cost. It writes, into
``--out``:

- one CSV file per section, for a spreadsheet: ``summary.csv`` (period figures and the M2
  reconciliation per group, where its books begin, the records read; collected, commission,
  awarded and awards at land and at studio tables, O1, :mod:`jackpot.tools.report_split`),
  ``pots.csv`` (opening, received, closing per pot), ``prizes.csv`` (hits and amounts per
  category, then at land and at studio tables), ``awards.csv`` (the
  annex: each award of the period, table, seat, round, hand, time, who approved and who paid,
  and last its table's kind, land or studio;
  spooled to disk as the ledger streams by and written in award order,
  :mod:`jackpot.tools.report_annex`), ``configs.csv`` (versions in
  force: base, percentages, ceilings, paytable, when and by whom), ``last_awards.csv`` (the last
  25), ``contributions_by_hour.csv`` and ``main_pot.csv`` (the chart's points: the main pot at
  its last move of each minute), and, when a group has levels (rules L1-L4, V1), ``levels.csv``
  (per level: its pot's opening and closing balance, collected, prizes paid, envy bonuses paid,
  refilled from its reserves and from the house, and its reserves'); envy bonuses count in
  ``prizes.csv`` under their own names (``ENVY_<hand>``); a field that only records before
  those read state (a configuration proposed long before the period, an award only the
  checkpoint remembers) says
  ``not read (before T)``;
- ``report.html`` and ``report.pdf``: the same as a document a regulator files, Spanish by
  default, amounts as the floor writes them and dates in the casino's time zone, for A4
  landscape paper (:mod:`jackpot.tools.report_document`; ``JACKPOT_REPORT_*`` and the options):
  a summary whose size follows the pot groups, not the prizes (the last 25 per group, R1), bound
  to its annex by the annex's row count and SHA-256 printed on the cover.

Exit 0 when every group reconciles, 1 when one does not or a ledger record cannot be read (the
page and the CSV say so at the top), 2 on refused input (``--from`` not before ``--to``, an unknown
group, an unreadable date) or an unreadable topic, 3 when the books reconcile but the PDF could
not be printed (no Chromium; the CSV files and the page are written); refused input writes
nothing.
"""

from __future__ import annotations

import asyncio
import csv
import functools
import itertools
import json
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from aiokafka import ConsumerRecord
from aiokafka.errors import KafkaError
from aiokafka.partitioner import DefaultPartitioner
from google.protobuf.message import DecodeError

from jackpot.domain.money import format_amount
from jackpot.platform.kafka import KafkaConnection
from jackpot.pot.settings import PotSettings
from jackpot.tools.partitions import cost_line, map_shares
from jackpot.tools.report_annex import (
    ANNEX_NAME,
    AWARD_HEADER,
    AwardSpool,
    award_cells,
    write_annex,
)
from jackpot.tools.report_compose import compose
from jackpot.tools.report_days import DayBooks, DayBooksError, days_of, is_whole_day
from jackpot.tools.report_document import DocumentError, ReportSettings, write_document
from jackpot.tools.report_figures import ReportBuilder
from jackpot.tools.report_model import (
    ConfigVersion,
    GroupReport,
    LevelRow,
    Period,
    Report,
    ReportInputError,
    iso,
    parse_period,
)
from jackpot.tools.report_rows import SinkFactory, keep_awards
from jackpot.v1 import pot_pb2

# How often the pot checkpoints every group at least: its default (run() takes the setting). A
# pot set to checkpoint less often only costs the report a read from the beginning.
CHECKPOINT_INTERVAL_SECONDS = float(PotSettings.model_fields["checkpoint_interval_seconds"].default)
# A record's time is when its producer sent it, a little after its recorded_at (either way for
# the payout service's clock): the margin on both edges of the read.
SEEK_MARGIN_MS = 120_000
PROBE_RECORDS = 100  # the last records before --from first read to see when the pot last wrote


class LedgerReader(Protocol):
    """What the report needs of :class:`~jackpot.platform.kafka.TopicReader`."""

    topic: str
    partitions: list[int]

    async def bounds(
        self, partitions: Iterable[int] | None = None
    ) -> tuple[dict[int, int], dict[int, int]]: ...

    async def offsets_for_time(
        self, unix_ms: int, partitions: Iterable[int] | None = None
    ) -> dict[int, int]: ...

    def records(
        self,
        start: Mapping[int, int] | None = None,
        end: Mapping[int, int] | None = None,
        *,
        partitions: Iterable[int] | None = None,
    ) -> AsyncIterator[ConsumerRecord[bytes, bytes]]: ...


# Feeds a builder the records of every partition from ``start`` to ``end`` (offsets).
Feed = Callable[[ReportBuilder, Mapping[int, int], Mapping[int, int]], Awaitable[None]]


async def read_report(
    reader: LedgerReader,
    period: Period,
    only_groups: Sequence[str] = (),
    checkpoint_interval_seconds: float = CHECKPOINT_INTERVAL_SECONDS,
    feed: Feed | None = None,
    awards: SinkFactory = keep_awards,
) -> Report:
    """The report of ``period``: each partition read from a little before its groups' last
    checkpoints before ``--from`` to just after ``--to``, then what could not begin there read
    again from its first record (:meth:`ReportBuilder.replays`), both streamed, by ``feed``
    (default: this reader, in this process); the award rows go to ``awards``' sinks."""
    feed = feed or functools.partial(_feed, reader)
    firsts, _ = await reader.bounds()
    end = await reader.offsets_for_time(period.end_ns // 10**6 + SEEK_MARGIN_MS)
    interval_ms = int(checkpoint_interval_seconds * 1000)
    start, windowed, probed = await _starts(reader, firsts, period, interval_ms)
    builder = ReportBuilder(period, only_groups, windowed=windowed, awards=awards)
    await feed(builder, start, end)
    again = _replays(builder, reader.partitions)
    if again:
        replayed = ReportBuilder(period, only_groups, replaying=again, awards=awards)
        await feed(replayed, {p: firsts[p] for p in again}, end)
        builder.replace(replayed)
    report = builder.report()
    report.records_read += probed
    return report


async def _starts(
    reader: LedgerReader, firsts: Mapping[int, int], period: Period, interval_ms: int
) -> tuple[dict[int, int], dict[int, int], int]:
    """Where each partition's read begins: ``interval_ms`` and a margin before the last time the
    pot wrote it before ``--from`` (the pot checkpoints every group that often while it runs; a
    partition whose pot was down for days is read from its last hour of checkpoints), or its
    first record; the partitions read from later, with when (ns); and the records it took."""
    from_ms = period.start_ns // 10**6
    at_from = await reader.offsets_for_time(from_ms)
    later = {p: offset for p, offset in at_from.items() if offset > firsts[p]}
    written_ms, probed = await _last_written(reader, firsts, later)
    start, windowed = dict(firsts), {}
    for partition in later:
        since_ms = min(from_ms, written_ms.get(partition, from_ms)) - interval_ms - SEEK_MARGIN_MS
        offset = (await reader.offsets_for_time(since_ms, [partition]))[partition]
        if offset > firsts[partition]:
            start[partition], windowed[partition] = offset, since_ms * 10**6
    return start, windowed, probed


async def _last_written(
    reader: LedgerReader, firsts: Mapping[int, int], before: Mapping[int, int]
) -> tuple[dict[int, int], int]:
    """The time (ms) of the last record the pot wrote (not the payout service, which goes on
    while the pot is down) before each offset: looking back PROBE_RECORDS records, then ten times
    as many, until one is found; and how many records that read."""
    latest: dict[int, int] = {}
    count, span, todo = 0, PROBE_RECORDS, dict(before)
    while todo:
        start = {p: max(firsts[p], offset - span) for p, offset in todo.items()}
        async for record in reader.records(start, todo):
            count += 1
            if record.value is not None and written_by_the_pot(record.value):
                latest[record.partition] = max(latest.get(record.partition, 0), record.timestamp)
        todo = {p: start[p] for p in todo if p not in latest and start[p] > firsts[p]}
        span *= 10
    return latest, count


async def _feed(
    reader: LedgerReader,
    builder: ReportBuilder,
    start: Mapping[int, int],
    end: Mapping[int, int],
    partitions: Sequence[int] | None = None,
) -> None:
    async for record in reader.records(start, end, partitions=partitions):
        if record.value is not None:
            builder.add_value(record.partition, record.offset, record.value)


async def _feed_side_by_side(
    reader: LedgerReader,
    kafka_options: Mapping[str, Any],
    jobs: int,
    builder: ReportBuilder,
    start: Mapping[int, int],
    end: Mapping[int, int],
) -> None:
    """The partitions read by ``jobs`` processes (:mod:`jackpot.tools.partitions`), each into
    an empty copy of ``builder``, whose books ``builder`` then takes (a group lives on one
    partition); a read too small for that is fed to ``builder`` here, through ``reader``."""
    todo = {p: end.get(p, 0) - start[p] for p in start}
    work = functools.partial(
        report_partitions, dict(kafka_options), reader.topic, builder, dict(start), dict(end)
    )

    async def here(partitions: list[int]) -> ReportBuilder:
        await _feed(reader, builder, start, end, partitions)
        return builder

    for share in await map_shares(work, todo, jobs, here):
        if share.value is not builder:  # fed in a worker process
            builder.absorb(share.value)
            builder.workers_rss_mb += share.rss_mb


def written_by_the_pot(value: bytes) -> bool:
    """Whether a ledger record is an entry the pot service wrote (sequenced; the payout
    service's lifecycle entries are not)."""
    try:
        return pot_pb2.LedgerEntry.FromString(value).ledger_sequence > 0
    except DecodeError:
        return False


def report_partitions(
    kafka_options: dict[str, Any],
    topic: str,
    builder: ReportBuilder,
    start: dict[int, int],
    end: dict[int, int],
    partitions: list[int],
) -> ReportBuilder:
    """One share of the partitions fed to (a copy of) an empty builder, in a worker."""

    async def share() -> ReportBuilder:
        async with KafkaConnection(kafka_options).reader(topic) as reader:
            await _feed(reader, builder, start, end, partitions)
        builder.shed()
        return builder

    return asyncio.run(share())


def _replays(builder: ReportBuilder, partitions: list[int]) -> dict[int, frozenset[str] | None]:
    """What to read again from the first record: the builder's, and each group asked for that
    had no record in a windowed read (on its key's partition, where the pot writes it)."""
    again = builder.replays()
    partitioner = DefaultPartitioner()
    for group_id in builder.unseen():
        partition = partitioner(group_id.encode(), partitions, partitions)
        if partition in builder.windowed and again.get(partition, frozenset()) is not None:
            again[partition] = (again.get(partition) or frozenset()) | {group_id}
    return again


async def report_from_kafka(
    kafka_options: Mapping[str, Any],
    topic: str,
    period: Period,
    only_groups: Sequence[str] = (),
    checkpoint_interval_seconds: float = CHECKPOINT_INTERVAL_SECONDS,
    jobs: int = 1,
    awards: SinkFactory = keep_awards,
) -> Report:
    """The report of ``period`` from the ledger topic, its partitions read by ``jobs``
    processes side by side (1: this one), the award rows to ``awards``' sinks."""
    async with KafkaConnection(kafka_options).reader(topic) as reader:
        if not reader.partitions:
            raise LookupError(f"topic {topic} does not exist")
        feed = None
        if jobs > 1:
            feed = functools.partial(_feed_side_by_side, reader, kafka_options, jobs)
        return await read_report(
            reader, period, only_groups, checkpoint_interval_seconds, feed, awards
        )


async def report_by_days(
    kafka_options: Mapping[str, Any],
    topic: str,
    period: Period,
    only_groups: Sequence[str],
    checkpoint_interval_seconds: float,
    jobs: int,
    spool: Path,
    books: DayBooks,
    time_zone: str,
) -> Report:
    """The report of ``period`` composed of its days (:mod:`jackpot.tools.report_days`): each
    whole day kept in ``books`` read from there, every other read from the ledger, and kept once
    it is over and its books reconcile."""
    pieces, kept = [], 0
    for day in days_of(period, time_zone):
        whole = is_whole_day(day, time_zone)
        piece = books.read(day, only_groups, AwardSpool(spool)) if whole else None
        if piece is not None:
            kept += 1
        else:
            piece = await report_from_kafka(
                *(kafka_options, topic, day, only_groups),
                *(checkpoint_interval_seconds, jobs, AwardSpool(spool)),
            )
            over = day.end_ns + 2 * SEEK_MARGIN_MS * 10**6 <= time.time_ns()
            if whole and over and piece.reconciles:
                books.keep(piece, only_groups)
        pieces.append(piece)
    report = compose(pieces, AwardSpool(spool))
    report.kept_days = kept
    return report


# ------------------------------------------------------------------------------------- CSV


LEVEL_HEADER = [
    *("pot_group", "level", "label", "pot", "opening", "collected", "prizes_paid", "envy_paid"),
    *("refilled_from_reserves", "refilled_from_house", "closing"),
    *("reserves_opening", "collected_to_reserves", "paid_from_reserves", "paid_by_house"),
    *("reserves_closing", "opened_by_house"),
]
# Hits and whole pesos per prize, and (added last: a reader of the first four keeps working) at
# the group's land and at its studio tables (O1).
PRIZE_HEADER = [
    *("pot_group", "prize", "hits", "amount"),
    *("land_hits", "land_amount", "studio_hits", "studio_amount"),
]
CONFIG_HEADER = [
    *("pot_group", "version", "base", "commission_percent", "pots", "paytable"),
    *("proposed_at", "proposed_by", "reason", "activated_at"),
]


def sections(report: Report) -> dict[str, list[list[str]]]:
    """Every CSV file's rows (header first), whole pesos where the boundary wants them; but the
    annex, ``awards.csv``, which :func:`write_csv` streams (:mod:`jackpot.tools.report_annex`)."""
    return {name: list(rows) for name, rows in _sections(report).items()}


def _sections(report: Report) -> dict[str, Iterable[list[str]]]:
    """:func:`sections`, each file's rows made as they are written (a month's main pot is
    a quarter of a million rows)."""
    verdict = "reconciles" if report.reconciles else "DOES NOT RECONCILE"
    summary = [
        ["pot_group", "figure", "value"],
        ["*", "period", report.period.describe()],
        ["*", "verdict", verdict],
        ["*", "records read", str(report.records_read)],
    ]
    if report.kept_days:
        summary.append(["*", "days from the day books", str(report.kept_days)])
    summary += [["*", "unreadable", line] for line in report.unreadable]
    tables: dict[str, list[list[str]]] = {
        "summary": summary,
        "pots": [["pot_group", "pot", "opening", "received", "closing"]],
        "prizes": [PRIZE_HEADER],
        "configs": [CONFIG_HEADER],
        "last_awards": [AWARD_HEADER],
        "contributions_by_hour": [["pot_group", "hour", "collected"]],
        "main_pot": [["pot_group", "at", "main"]],
    }
    if any(group.levels for group in report.groups):  # L1: only when a group has levels
        tables["levels"] = [LEVEL_HEADER]
    parts: dict[str, list[Iterable[list[str]]]] = {name: [rows] for name, rows in tables.items()}
    for group in report.groups:
        for name, rows in _group_rows(group).items():
            if name in parts:
                parts[name].append(rows)
    return {name: itertools.chain.from_iterable(rows) for name, rows in parts.items()}


def _group_rows(group: GroupReport) -> dict[str, Iterable[list[str]]]:
    """One group's rows of each section."""
    g = group.group_id
    opening, received, closing = group.opening.pots, group.received, group.closing.pots
    return {
        "summary": _summary_rows(group),
        "pots": [
            [g, pot, *map(format_amount, (opening.get(pot, 0), received[pot], closing.get(pot, 0)))]
            for pot in sorted({*opening, *closing})
        ],
        "prizes": [_prize_row(group, prize, hits) for prize, hits in group.prizes.items()],
        "configs": [_config_row(g, c) for c in group.configs],
        "last_awards": [award_cells(g, a) for a in group.last_awards],
        "contributions_by_hour": [
            [g, iso(hour), format_amount(amount)]
            for hour, amount in sorted(group.collected_by_hour.items())
        ],
        "main_pot": ([g, iso(at), format_amount(main)] for at, main in group.main_series),
        "levels": [_level_row(g, level) for level in group.levels],
    }


def _prize_row(group: GroupReport, prize: str, total: tuple[int, int]) -> list[str]:
    by_kind = (*group.land.prize(prize), *group.studio.prize(prize))
    return [group.group_id, prize, *map(str, (*total, *by_kind))]


def _level_row(g: str, level: LevelRow) -> list[str]:
    figures = (
        *(level.opening, level.collected, level.prizes, level.envy),
        *(level.refilled_from_reserves, level.refilled_from_house, level.closing),
        *(level.reserves_opening, level.collected_to_reserves, level.paid_from_reserves),
        *(level.paid_by_house, level.reserves_closing, level.opened),
    )
    return [g, level.name, level.label, level.pot, *map(format_amount, figures)]


def _summary_rows(group: GroupReport) -> list[list[str]]:
    g = group.group_id
    rows = [
        [g, "verdict", "reconciles" if group.reconciles else "DOES NOT RECONCILE"],
        [g, "opening books from", group.opened_from],
        [g, "collected", format_amount(group.collected)],
        [g, "commission", format_amount(group.commission)],
        [g, "house advances", format_amount(group.house_advances)],
        [g, "overflow", format_amount(group.overflow)],
        [g, "awarded", format_amount(group.awarded)],
        [g, "awards", str(group.award_count)],
        *_split_rows(group),
        [g, "reconciliation (M2)", group.reconciliation()[1]],
    ]
    if group.earlier_payments:
        rows.append([g, "settled awards made before the records read", _earlier(group)])
    return rows + [[g, "problem", p] for p in group.findings]


def _split_rows(group: GroupReport) -> list[list[str]]:
    """The period's books at the group's land and at its studio tables (O1), which add up to
    the totals above (else a problem row says where), and the studio tables linked in it."""
    g, rows = group.group_id, []
    for kind, books in (("land", group.land), ("studio", group.studio)):
        rows += [
            [g, f"collected at {kind} tables", format_amount(books.collected)],
            [g, f"commission at {kind} tables", format_amount(books.commission)],
            [g, f"awarded at {kind} tables", format_amount(books.awarded)],
            [g, f"awards at {kind} tables", str(books.award_count)],
        ]
    return [*rows, [g, "studio tables", " ".join(sorted(group.studio_tables))]]


def _config_row(g: str, c: ConfigVersion) -> list[str]:
    config = c.config
    return [
        *(g, str(c.version), str(config.get("base", ""))),
        *(str(config.get("commission_percent", "")), json.dumps(config.get("pots", []))),
        _paytable_name(config.get("paytable", "")),
        *(c.proposed_at, c.proposed_by, c.reason, c.activated_at),
    ]


def _earlier(group: GroupReport) -> str:
    return (
        f"{group.earlier_payments} (paid or voided here; their awards are matched by jackpot audit)"
    )


def _paytable_name(paytable: Any) -> str:
    """A paytable by its name (its prizes are in the configuration the operator reported)."""
    return str(paytable.get("name", "")) if isinstance(paytable, dict) else str(paytable)


def write_sections(out: Path, report: Report) -> list[Path]:
    """Every section's file but the annex."""
    written = []
    for name, rows in _sections(report).items():
        path = out / f"{name}.csv"
        with path.open("w", newline="", encoding="utf-8") as handle:
            csv.writer(handle).writerows(rows)
        written.append(path)
    return written


def write_csv(out: Path, report: Report) -> list[Path]:
    """Every section's file and the annex (``awards.csv``, :func:`write_annex`)."""
    written = write_sections(out, report)
    write_annex(out / ANNEX_NAME, report)
    return [*written, out / ANNEX_NAME]


def _group_problems(report: Report) -> list[str]:
    lines = []
    for group in report.groups:
        ok, line = group.reconciliation()
        lines += [f"{group.group_id}: {p}" for p in group.findings]
        if not ok:
            lines.append(f"{group.group_id}: {line}")
    return lines


# ------------------------------------------------------------------------------ the command


def render_text(report: Report, out: Path) -> str:
    lines = [
        f"jackpot report {report.period.describe()} -> {out} "
        f"({report.records_read} ledger records read)"
    ]
    if not report.reconciles:
        lines.append("DOES NOT RECONCILE")
        lines += [f"  ! {p}" for p in report.unreadable + _group_problems(report)]
    for group in report.groups:
        lines.append(
            f"pot group {group.group_id}: collected {format_amount(group.collected)}, commission "
            f"{format_amount(group.commission)}, awarded {format_amount(group.awarded)} in "
            f"{group.award_count} awards, house advances {format_amount(group.house_advances)}"
        )
        lines.append(f"  {group.reconciliation()[1]}")
        lines.append(f"  opening books from {group.opened_from}")
    return "\n".join(lines)


def run(
    kafka_options: Mapping[str, Any],
    ledger_topic: str,
    out: str,
    start: str | None,
    end: str | None,
    only_groups: Sequence[str] = (),
    checkpoint_interval_seconds: float = CHECKPOINT_INTERVAL_SECONDS,
    jobs: int = 1,
    document: ReportSettings | None = None,
    pdf: bool = True,
) -> int:
    """The command: exit 0 when every group reconciles, 1 when one does not, 2 on refused input
    or an unreadable topic (nothing written), 3 when the books reconcile but the PDF could not be
    printed (the CSV files and report.html are written)."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="jackpot-report-awards-") as spool:
        try:
            period = parse_period(start, end, time.time_ns())
            settings = document or ReportSettings()
            if settings.day_books:
                reading = report_by_days(
                    *(kafka_options, ledger_topic, period, only_groups),
                    *(checkpoint_interval_seconds, jobs, Path(spool)),
                    *(DayBooks.of(Path(settings.day_books), ledger_topic), settings.time_zone),
                )
            else:
                reading = report_from_kafka(
                    *(kafka_options, ledger_topic, period, only_groups),
                    *(checkpoint_interval_seconds, jobs, AwardSpool(Path(spool))),
                )
            report = asyncio.run(reading)
        except DayBooksError as error:
            print(f"jackpot report: {error}", file=sys.stderr)
            return 2
        except ReportInputError as error:
            print(f"jackpot report: {error}", file=sys.stderr)
            return 2
        except (LookupError, OSError, KafkaError) as error:
            print(f"jackpot report: cannot read {ledger_topic}: {error}", file=sys.stderr)
            return 2
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        write_sections(folder, report)
        annex = write_annex(folder / ANNEX_NAME, report)  # the spools read: then removed
    try:
        write_document(folder, report, document or ReportSettings(), pdf, annex)
        printed = True
    except DocumentError as error:
        print(f"jackpot report: {error}", file=sys.stderr)
        printed = False
    print(render_text(report, folder))
    print(
        cost_line("jackpot report", report.records_read, started, report.workers_rss_mb),
        file=sys.stderr,
    )
    if not report.reconciles:
        return 1
    return 0 if printed else 3
