"""Pot service benchmark: rounds applied per second end to end through Kafka, with transactions.

In one run, against one broker and the same pre-published input (simulated rounds of several
tables and games, lock + forfeits + result per round):

1. **raw loop**: a plain aiokafka consume-produce loop doing no work (read_committed consumer,
   one idempotent produce per record, offsets committed per batch): the ceiling of the client;
2. **pot service**: the real :class:`~jackpot.pot.service.PotService`, one transaction per batch
   (pot updates, awards, ledger, state snapshots, dead letters, offsets);
3. **processor only**: the same events through :class:`~jackpot.pot.pot_book.PotBook` in
   memory, no Kafka, to show where the time goes.

Both Kafka figures are timed from the first record fetched to the last offset committed, so group
joins and topic creation are not counted. Transaction latency p50/p99 is over batch transactions.
Figures vary with the machine; compare the ratio measured in one run.

    python -m loadtest.bench_pot [--rounds 4000] [--bootstrap-servers 127.0.0.1:9092]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient

from jackpot.domain.cards import Game
from jackpot.platform import partition_task
from jackpot.platform.kafka import committed_consumer, ensure_topics, idempotent_producer
from jackpot.platform.logging import configure_logging
from jackpot.pot import commands
from jackpot.pot.metrics import PotMetrics
from jackpot.pot.partitions import key_partition
from jackpot.pot.pot_book import InputRecord, PotBook
from jackpot.pot.service import PotService
from jackpot.pot.settings import PotSettings
from jackpot.topics import TopicSpec
from jackpot.v1 import table_events_pb2
from loadtest.rounds import CONFIG, interleaved_rounds, simulated_tables

GAMES = [Game.CARIBBEAN, Game.DRAW, Game.GO_POKER]
TIMEOUT_SECONDS = 600.0


class _TimedHistogram:
    """Stands in for the processor's transaction histogram: observes into the real one and
    tells the bench about every batch transaction."""

    def __init__(self, histogram: Any, on_batch: Callable[[float], None]) -> None:
        self._histogram = histogram
        self._on_batch = on_batch

    def labels(self, kind: str) -> _TimedObservation:
        return _TimedObservation(self._histogram.labels(kind=kind), kind, self._on_batch)


class _TimedObservation:
    def __init__(self, child: Any, kind: str, on_batch: Callable[[float], None]) -> None:
        self._child, self._kind, self._on_batch = child, kind, on_batch

    def observe(self, seconds: float) -> None:
        self._child.observe(seconds)
        if self._kind == "batch":
            self._on_batch(seconds)


class TimingMetrics(PotMetrics):
    """PotMetrics that also keep every batch transaction's duration and the events applied."""

    def __init__(self) -> None:
        super().__init__()
        self.batch_seconds: list[float] = []
        self.applied = 0
        self.first_started: float | None = None
        self.last_done = 0.0
        histogram = self.processor.transaction_seconds
        self.processor.transaction_seconds = _TimedHistogram(histogram, self._batch_done)  # type: ignore[assignment]

    def _batch_done(self, seconds: float) -> None:
        now = time.perf_counter()
        self.batch_seconds.append(seconds)
        if self.first_started is None:
            self.first_started = now - seconds
        self.last_done = now

    def record_outcomes(
        self, applied: int, ignored: Mapping[str, int], rejected: Mapping[str, int]
    ) -> None:
        super().record_outcomes(applied, ignored, rejected)
        self.applied += applied


def script(
    rounds: int, groups: int, seed: int = 20261129
) -> tuple[list[table_events_pb2.TableEvent], int]:
    """Create + link commands and ``rounds`` interleaved rounds over ``groups`` pot groups."""
    rng = random.Random(seed)
    events: list[table_events_pb2.TableEvent] = []
    streams = []
    per_table = max(1, rounds // (groups * len(GAMES)))
    for g in range(groups):
        group_id = f"bench-{g}"
        tables = simulated_tables(group_id, GAMES, rng, prefix=f"{group_id}-T")
        events.append(commands.create_group(group_id, CONFIG))
        events.extend(table.link_command() for table in tables)
        streams.append(interleaved_rounds(tables, per_table, rng))
    for batch in zip(*streams, strict=False):
        events.extend(batch)
    for stream in streams:
        events.extend(stream[min(len(s) for s in streams) :])
    return events, per_table * groups * len(GAMES)


async def publish(
    bootstrap: str, topic: str, events: Sequence[table_events_pb2.TableEvent]
) -> None:
    producer = idempotent_producer(bootstrap)
    await producer.start()
    try:
        sent = [
            await producer.send(topic, e.SerializeToString(), key=e.pot_group_id.encode())
            for e in events
        ]
        await asyncio.gather(*sent)
    finally:
        await producer.stop()


async def raw_loop(bootstrap: str, topic: str, out_topic: str, expected: int, batch: int) -> float:
    """Seconds a consume-produce loop doing no work needs for ``expected`` records."""
    consumer = committed_consumer(bootstrap, topic, group_id=f"bench-raw-{uuid.uuid4().hex[:8]}")
    producer = idempotent_producer(bootstrap)
    await consumer.start()
    await producer.start()
    started: float | None = None
    seen = 0
    deadline = time.monotonic() + TIMEOUT_SECONDS
    try:
        while seen < expected:
            if time.monotonic() > deadline:
                raise TimeoutError("the raw loop did not finish")
            records = await consumer.getmany(timeout_ms=200, max_records=batch)
            if not records:
                continue
            if started is None:
                started = time.perf_counter()
            sent = []
            for partition_records in records.values():
                for record in partition_records:
                    sent.append(await producer.send(out_topic, record.value, key=record.key))
                    seen += 1
            await asyncio.gather(*sent)
            await consumer.commit()
        assert started is not None
        return time.perf_counter() - started
    finally:
        await consumer.stop()
        await producer.stop()


async def pot_run(settings: PotSettings, expected_events: int) -> TimingMetrics:
    metrics = TimingMetrics()
    service = PotService(settings, metrics)
    task = asyncio.create_task(service.run())
    deadline = time.monotonic() + TIMEOUT_SECONDS
    try:
        while metrics.applied < expected_events:
            if task.done():
                task.result()
                raise RuntimeError("the pot service stopped")
            if time.monotonic() > deadline:
                raise TimeoutError("the pot service did not finish")
            await asyncio.sleep(0.05)
    finally:
        await service.stop()
        await asyncio.wait_for(task, 60)
    return metrics


def processor_only(
    events: Sequence[table_events_pb2.TableEvent], partitions: int, batch: int
) -> float:
    """Seconds the in-memory processor needs for the events (batches as the service cuts them)."""
    processors: dict[int, PotBook] = {}
    pending: dict[int, list[InputRecord]] = {}
    encoded = [(e.pot_group_id, e.SerializeToString()) for e in events]
    started = time.perf_counter()
    for offset, (group_id, value) in enumerate(encoded):
        partition = key_partition(group_id, partitions)
        records = pending.setdefault(partition, [])
        records.append(InputRecord(value, "bench", partition, offset, group_id.encode()))
        if len(records) == batch:
            processor = processors.setdefault(partition, PotBook(partition))
            processor.commit(processor.apply_batch(records))
            records.clear()
    for partition, records in pending.items():
        if records:
            processor = processors.setdefault(partition, PotBook(partition))
            processor.commit(processor.apply_batch(records))
    return time.perf_counter() - started


def _settings(bootstrap_servers: str, unique: str, partitions: int, batch: int) -> PotSettings:
    """A pot of its own topics, group and transactional ids."""
    return PotSettings(
        bootstrap_servers=bootstrap_servers,
        processor={
            "consumer_group": f"bench-pot-{unique}",
            "transactional_id_prefix": f"bench-pot-{unique}",
            "max_batch_records": batch,
        },
        table_events_topic=f"bench.table-events.{unique}",
        pot_updates_topic=f"bench.pot-updates.{unique}",
        awards_topic=f"bench.awards.{unique}",
        ledger_topic=f"bench.ledger.{unique}",
        state_topic=f"bench.pot-state.{unique}",
        dead_letter_topic=f"bench.dead-letter.{unique}",
        topic_partitions=partitions,
        metrics_port=0,
        event_id_window=max(256, batch),
        log_level="WARNING",
    )


async def _delete_topics(bootstrap_servers: str, names: list[str]) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap_servers)
    await admin.start()
    try:
        await admin.delete_topics(names)
    finally:
        await admin.close()


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def bench_pot(
    bootstrap_servers: str = "127.0.0.1:9092",
    rounds: int = 4000,
    groups: int = 2,
    partitions: int = 2,
    batch: int = 200,
) -> dict[str, float]:
    """Run the three measurements; figures keyed by name (rounds/s, ratio, ms)."""
    unique = uuid.uuid4().hex[:8]
    settings = _settings(bootstrap_servers, unique, partitions, batch)
    raw_out = f"bench.raw-out.{unique}"
    topics = [*settings.topic_specs(), TopicSpec(raw_out, partitions)]
    await ensure_topics(bootstrap_servers, topics)
    events, round_count = script(rounds, groups)
    try:
        await publish(bootstrap_servers, settings.table_events_topic, events)
        raw_seconds = await raw_loop(
            bootstrap_servers, settings.table_events_topic, raw_out, len(events), batch
        )
        metrics = await pot_run(settings, len(events))
    finally:
        await _delete_topics(bootstrap_servers, [t.name for t in topics])
    assert metrics.first_started is not None
    pot_seconds = metrics.last_done - metrics.first_started
    memory_seconds = processor_only(events, partitions, batch)
    pot_rate = round_count / pot_seconds
    raw_rate = round_count / raw_seconds
    return {
        "rounds": round_count,
        "events": len(events),
        "pot_rounds_per_s": pot_rate,
        "raw_rounds_per_s": raw_rate,
        "pot_over_raw": pot_rate / raw_rate,
        "transactions": len(metrics.batch_seconds),
        "transaction_p50_ms": 1000 * statistics.median(metrics.batch_seconds),
        "transaction_p99_ms": 1000 * percentile(metrics.batch_seconds, 0.99),
        "processor_rounds_per_s": round_count / memory_seconds,
    }


def render(figures: Mapping[str, float]) -> str:
    rows = [
        (
            "pot service: rounds applied/s (Kafka transactions)",
            f"{figures['pot_rounds_per_s']:,.0f}",
        ),
        ("raw consume-produce loop, no work: rounds/s", f"{figures['raw_rounds_per_s']:,.0f}"),
        ("ratio pot / raw", f"{figures['pot_over_raw']:.2f}"),
        ("transaction latency p50 (ms)", f"{figures['transaction_p50_ms']:.1f}"),
        ("transaction latency p99 (ms)", f"{figures['transaction_p99_ms']:.1f}"),
        ("processor only, in memory: rounds/s", f"{figures['processor_rounds_per_s']:,.0f}"),
    ]
    lines = [f"{'pot benchmark':56} {'figure':>12}"]
    lines += [f"{name:56} {value:>12}" for name, value in rows]
    lines.append(
        f"({figures['rounds']:,.0f} rounds, {figures['events']:,.0f} events, "
        f"{figures['transactions']:,.0f} batch transactions)"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--bootstrap-servers",
        default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092"),
    )
    parser.add_argument("--rounds", type=int, default=4000)
    parser.add_argument("--groups", type=int, default=2)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--batch", type=int, default=200, help="records per transaction, at most")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    configure_logging("WARNING", json=False)
    figures = asyncio.run(
        bench_pot(args.bootstrap_servers, args.rounds, args.groups, args.partitions, args.batch)
    )
    print(render(figures))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(figures, out, indent=2)


if __name__ == "__main__":
    main()


# ------------------------------------------------------------------ commit order A/B (issue 36)


async def _commit_in_flight(
    producer: Any,
    records: list[Any],
    offsets: Mapping[Any, int] | None,
    consumer_group: str,
    traced: list[tuple[str, bytes]] | None,
) -> None:
    """9546cb3's order, kept here only as the bench's baseline: commit while the records are in
    flight and look at their outcomes after the commit. UNSAFE: aiokafka commits a transaction
    one of whose batches failed (issue 36); never used by the product. The signature of
    ``jackpot.platform.transaction.send_and_commit``, which it stands in for."""
    await producer.begin_transaction()
    sent = [
        await producer.send(
            r.topic, r.value, key=r.key, partition=r.partition, headers=list(r.headers) or traced
        )
        for r in records
    ]
    delivered = asyncio.gather(*sent, return_exceptions=True)
    if offsets is not None:
        await producer.send_offsets_to_transaction(dict(offsets), consumer_group)
    await producer.commit_transaction()
    for outcome in await delivered:
        if isinstance(outcome, BaseException):
            raise outcome


async def trickle_run(
    settings: PotSettings, events: Sequence[table_events_pb2.TableEvent], in_flight: bool
) -> list[float]:
    """The pot service consuming ``events`` published one round's events at a time, each when
    the previous batch committed (low load: a transaction per round, as at a quiet floor); the
    batch transactions' durations. ``in_flight``: the baseline commit order."""
    metrics = TimingMetrics()
    service = PotService(settings, metrics)
    # The baseline's commit order stands in for the product's where the partition's task calls it.
    original = partition_task.send_and_commit  # type: ignore[attr-defined]
    if in_flight:
        partition_task.send_and_commit = _commit_in_flight  # type: ignore[attr-defined]
    task = asyncio.create_task(service.run())
    producer = idempotent_producer(settings.bootstrap_servers)
    await producer.start()
    try:
        for start in range(0, len(events), 3):  # a round: lock, forfeit(s), result
            chunk = events[start : start + 3]
            for event in chunk:
                await producer.send(
                    settings.table_events_topic,
                    event.SerializeToString(),
                    key=event.pot_group_id.encode(),
                )
            deadline = time.monotonic() + 30
            while metrics.applied < start + len(chunk):
                if task.done() or time.monotonic() > deadline:
                    raise RuntimeError("the pot service stopped or stalled")
                await asyncio.sleep(0.001)
    finally:
        await producer.stop()
        await service.stop()
        await asyncio.wait_for(task, 60)
        partition_task.send_and_commit = original  # type: ignore[attr-defined]
    return metrics.batch_seconds


async def commit_order_ab(
    bootstrap_servers: str = "127.0.0.1:9092", rounds: int = 300, repeats: int = 2
) -> dict[str, float]:
    """Issue 36's cost, in one run on one broker: the pot's batch transaction p50/p99 at low load
    with every record acknowledged before the commit (the code) and with the commit asked for
    while the records are in flight (9546cb3, the baseline), alternated ``repeats`` times."""
    events, _ = script(rounds, groups=1)
    durations: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(repeats):
        for in_flight in (True, False):
            unique = uuid.uuid4().hex[:8]
            settings = _settings(bootstrap_servers, unique, partitions=1, batch=200)
            await ensure_topics(bootstrap_servers, settings.topic_specs())
            try:
                durations[in_flight] += await trickle_run(settings, events, in_flight)
            finally:
                await _delete_topics(bootstrap_servers, [t.name for t in settings.topic_specs()])
    figures: dict[str, float] = {}
    for in_flight, name in ((False, "acknowledged_first"), (True, "in_flight_baseline")):
        figures[f"{name}_p50_ms"] = 1000 * statistics.median(durations[in_flight])
        figures[f"{name}_p99_ms"] = 1000 * percentile(durations[in_flight], 0.99)
        figures[f"{name}_transactions"] = len(durations[in_flight])
    for q in ("p50", "p99"):
        baseline = figures[f"in_flight_baseline_{q}_ms"]
        figures[f"{q}_ratio"] = figures[f"acknowledged_first_{q}_ms"] / baseline
    return figures
