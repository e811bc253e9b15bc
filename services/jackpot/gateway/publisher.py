"""The gateway's publisher (:class:`SpoolPublisher`): spooled records to the broker, round after
round, each partition's in spool order; only what the broker acknowledged is deleted from the spool.

Why a round is one batch per partition, built here rather than by ``producer.send`` (aiokafka
0.14; docs/architecture.md, "What we trust the Kafka client to do"):

- A batch that fails (the broker refuses it, MESSAGE_TOO_LARGE; or it expires while its
  partition has no leader, ``MessageAccumulator.drain_by_nodes``) has spent its sequence
  numbers: the same producer's later batches of that partition are refused with
  OUT_OF_ORDER_SEQUENCE_NUMBER, for ever. Java's idempotent producer resets them; aiokafka does
  not. So after any failure the gateway starts a new producer.
- The broker accepts any first sequence number from a producer it holds no state for: when a new
  producer's first batch of a partition fails, its second batch is written. Records of one
  partition sent as several batches can thus reach the topic with a hole, the hole filled on a
  later round, out of order; and the pot ignores an event whose table sequence is at or below
  one it applied (``DUPLICATE_SEQUENCE``): an event lost. So a round sends at most one batch per
  partition and waits for all of them; a partition's later records go in a later round, after
  its earlier ones were acknowledged.
- A record counts as published only by its own batch's result. The records of a round's other
  partitions that the broker acknowledged are not sent again (:class:`Acknowledgements`), though
  the spool deletes only through the first record not acknowledged. After a restart those are
  sent again; they keep their event ids, and the pot ignores an event it applied.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import structlog
from aiokafka import AIOKafkaProducer
from aiokafka.partitioner import DefaultPartitioner
from aiokafka.producer.message_accumulator import BatchBuilder
from opentelemetry.trace import Span

from jackpot.gateway import metrics
from jackpot.gateway.settings import GatewaySettings
from jackpot.gateway.spool import OutboxRecord, Spool
from jackpot.platform.kafka import KafkaConnection, stop_client
from jackpot.platform.tracing import headers_of, start_span_under

log = structlog.get_logger("jackpot.gateway")
PUBLISH_SPAN = "gateway.publish"  # a record from the spool to the broker's ack
PARTITIONER = DefaultPartitioner()  # what producer.send() uses: murmur2, as the Java client


@dataclass(slots=True)
class Round:
    """What one round came to: the records the broker acknowledged (in spool order) and the
    first failure, if any (every record not acknowledged waits for a later round)."""

    acknowledged: list[OutboxRecord] = field(default_factory=list)
    error: Exception | None = None


@dataclass(slots=True)
class _Batch:
    topic: str
    partition: int
    builder: BatchBuilder
    records: list[OutboxRecord] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)


class Acknowledgements:
    """Which outbox ids the broker acknowledged: every one through :attr:`through` (the spool
    may delete those), and some after it, behind a record still waiting (not sent again)."""

    def __init__(self) -> None:
        self.through = 0
        self._beyond: set[int] = set()

    def unsent(self, pending: Iterable[OutboxRecord]) -> list[OutboxRecord]:
        """``pending`` without the records the broker acknowledged already."""
        return [r for r in pending if r.id not in self._beyond]

    def add(self, pending: Sequence[OutboxRecord], acknowledged: Iterable[OutboxRecord]) -> bool:
        """The broker acknowledged ``acknowledged``; ``pending`` is the spool's outbox after
        :attr:`through`, in order. Whether :attr:`through` moved on."""
        self._beyond.update(r.id for r in acknowledged)
        moved = False
        for record in pending:
            if record.id not in self._beyond:
                break
            self._beyond.discard(record.id)
            self.through, moved = record.id, True
        return moved


async def send_round(producer: AIOKafkaProducer, records: Sequence[OutboxRecord]) -> Round:
    """Send one batch per partition, each holding that partition's first ``records`` (in order,
    as many as fit), and wait for every batch's outcome. The records left out wait for the
    next round; so do those of a failed batch."""
    batches = await _batches(producer, records)
    queued: list[tuple[_Batch, asyncio.Future[object]]] = []
    error: Exception | None = None
    try:
        for batch in batches:
            sent = await producer.send_batch(batch.builder, batch.topic, partition=batch.partition)
            queued.append((batch, sent))
    except Exception as failed:  # the batches already queued still tell their outcome
        error = failed
    try:
        results = await asyncio.gather(*(sent for _, sent in queued), return_exceptions=True)
    finally:
        for batch in batches:
            for span in batch.spans:
                span.end()
    outcome = Round()
    for (batch, _), result in zip(queued, results, strict=True):
        if isinstance(result, Exception):
            error = error or result
        elif isinstance(result, BaseException):  # a batch cancelled, not this task
            error = error or RuntimeError(f"batch of {batch.topic}/{batch.partition} cancelled")
        else:
            outcome.acknowledged.extend(batch.records)
    outcome.acknowledged.sort(key=lambda r: r.id)
    outcome.error = error
    return outcome


async def _batches(producer: AIOKafkaProducer, records: Sequence[OutboxRecord]) -> list[_Batch]:
    """A batch per partition of ``records``, each with the partition's leading records (a
    partition whose batch is full takes no later record: it would leave a hole)."""
    partitions: dict[str, list[int]] = {}
    batches: dict[tuple[str, int], _Batch] = {}
    full: set[tuple[str, int]] = set()
    for record in records:
        if record.topic not in partitions:
            partitions[record.topic] = sorted(await producer.partitions_for(record.topic))
        every = partitions[record.topic]
        tp = (record.topic, PARTITIONER(record.key, every, every))
        if tp in full:
            continue
        batch = batches.get(tp)
        if batch is None:
            batch = batches[tp] = _Batch(record.topic, tp[1], producer.create_batch())
        span = start_span_under(PUBLISH_SPAN, record.trace_context, record.created_ns)
        appended = batch.builder.append(
            timestamp=None, key=record.key, value=record.value, headers=headers_of(span) or []
        )
        if appended is None:  # full (a batch's first record always fits): left for next round
            full.add(tp)
            continue  # its span, never ended, is never exported
        batch.records.append(record)
        if span is not None:
            batch.spans.append(span)
    return list(batches.values())


class SpoolPublisher:
    """The gateway's publisher task: the spool to the broker, round after round, with a new
    producer after any failure. ``spooled`` wakes it (a write with records); it sets
    ``published`` after each round and when nothing waits; once ``stopping`` is set it ends as
    soon as the spool is empty."""

    def __init__(
        self,
        spool: Spool,
        settings: GatewaySettings,
        spooled: asyncio.Event,
        published: asyncio.Event,
        stopping: asyncio.Event,
    ) -> None:
        self.spool = spool
        self.settings = settings
        self.spooled = spooled
        self.published = published
        self.stopping = stopping

    async def run(self) -> None:
        """Send the spool to Kafka, each partition in spool order; delete only what the broker
        acknowledged (jackpot.gateway.publisher says why a round is one batch per partition).

        The deletion is not waited for: it rides in the spool's next group transaction, and
        the next round goes out at once. Should the process die before the deletion is on disk,
        those records are sent again at the next start (same event ids: the pot ignores them).
        A failed round leaves its failed records in the spool, and a new producer sends them
        (aiokafka's producer refuses every later batch of a partition one of its batches failed
        in).
        """
        producer = None
        acks = Acknowledgements()
        while True:
            try:
                if producer is None:
                    producer = KafkaConnection.of(self.settings).producer(
                        request_timeout_ms=self.settings.kafka_request_timeout_ms,
                        # what waits in the spool goes in one round, so it batches without a
                        # linger; 2 ms added 2.3 ms to every lock's path (issue 26)
                        linger_ms=0,
                    )
                    await producer.start()
                pending = self.spool.pending(after_id=acks.through)
                records = acks.unsent(pending)
                if not records:
                    if self.stopping.is_set():
                        await producer.stop()
                        return
                    self.published.set()
                    self.spooled.clear()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self.spooled.wait(), 0.5)
                    continue
                sent = await send_round(producer, records)
                self._acknowledge(acks, pending, sent.acknowledged)
                if sent.error is not None:
                    raise sent.error
            except asyncio.CancelledError:
                if producer is not None:
                    with contextlib.suppress(Exception):
                        await producer.stop()
                raise
            except Exception as error:  # keep the spool; a fresh producer retries in order
                metrics.PUBLISH_FAILURES.labels(type(error).__name__).inc()
                log.warning("publish_retry", error=repr(error), spool_depth=self.spool.depth())
                if producer is not None:
                    await stop_client(producer)
                producer = None
                await asyncio.sleep(0.5)

    def _acknowledge(
        self, acks: Acknowledgements, pending: list[OutboxRecord], published: list[OutboxRecord]
    ) -> None:
        """The broker acknowledged ``published``: the spool deletes through the first record of
        ``pending`` it did not acknowledge."""
        now_ns = time.time_ns()
        for record in published:
            metrics.PUBLISH_SECONDS.observe((now_ns - record.created_ns) / 1e9)
        if acks.add(pending, published):
            self.spool.acknowledge(acks.through)  # deleted with the next group's write
        metrics.PUBLISHED.inc(len(published))
        metrics.SPOOL_DEPTH.set(self.spool.depth())
        self.published.set()
