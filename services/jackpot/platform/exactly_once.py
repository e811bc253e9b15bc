"""The one exactly-once processor: consume, process, produce in Kafka transactions, per partition.

Every consume-process-produce service (the pot and the payout) plugs a pure
:class:`PartitionHandler` into one :class:`ExactlyOnceProcessor`; nothing else in the code base
speaks Kafka transactions. For each input partition *p* the processor is given by the consumer
group it does, in this order:

1. **fence**: start *p*'s transactional producer (id ``<prefix>-<p>``) and complete
   ``InitProducerId``. That bumps the id's epoch: the previous owner (a zombie that still believes
   it owns *p*) can no longer commit, and the broker finishes or aborts whatever it left open;
2. **restore**: read *p*'s compacted changelog partition (same number) read_committed to its end,
   within a deadline, and hand the latest value per key to the handler. Because the fence came
   first, nothing can be committed to the changelog behind the restore's back;
3. **consume** the input read_committed from the resume point: the further of the next offset
   the last transaction wrote to the changelog (``CHANGELOG_OFFSET_KEY``) and the consumer
   group's committed offset (or the handler's own, if its state is ahead);
4. **apply** the pure handler to a batch;
5. **transact**: the outputs, the new state (changelog records) and the next input offset (a
   changelog record too) in one transaction; the consumer group's offsets
   (``send_offsets_to_transaction``) join a transaction at most once per
   ``group_commit_interval_ms``, and go alone that long after the last input. The commit is
   asked for only once every record of the transaction is acknowledged: aiokafka, unlike the
   Java client, commits a transaction one of whose batches failed (issue 36);
6. **roll back** on any failure: abort, the handler rolls its memory back to the last commit, the
   consumer re-seeks to the committed offset. A producer that cannot abort (its idempotence
   state refused, its sender dead, the brokers unreachable) is renewed and the partition
   restored again (a renewal fences like a takeover, so it restores like one); while the brokers
   cannot be reached for that either, the partition is *recovering* (not served, health
   NOT_SERVING, retried with a back-off), and a takeover that fails the same way is retried by
   rejoining the group (an idle instance hears of the brokers' loss from its broker probe). A
   fenced producer halts the partition and makes the consumer rejoin its group, which gives the
   partition back (fenced and restored anew) only if this instance still owns it. A group
   consumer whose coordination ended (aiokafka ends it on any unexpected error, and its consumer
   then only raises it) is replaced: every partition is given up as at a revocation and a new
   consumer joins the group. Only a bug
   (a handler that raises, a worker that dies) makes :meth:`run` raise: waiting cures
   everything else, so the service does not exit for it.

aiokafka has no KIP-447 consumer-group fencing, so this is the classic pre-KIP-447 scheme: one
transactional id per input partition, shape of aiokafka ``docs/examples/transaction_example.rst``
and faust's table recovery.

**Why the resume point is on the changelog** (issue 26). The consumer group's offsets cost a
transaction two requests of its own (AddOffsetsToTxn to the transaction coordinator,
TxnOffsetCommit to the group coordinator) and one more marker; at low load they were a third of
every transaction. The changelog is already in the transaction, and its record is read with the
state at a takeover (after the fence, so it is the last committed transaction's), so the offset
there is exact; the group's offsets, kept within a second, serve lag monitoring and tools.

Work that does not come from the input topic (the pot's heartbeats, the payout's terminal and
supervisor transitions) goes through the ticks and :meth:`ExactlyOnceProcessor.submit`: the same
producer, the partition's lock, the same roll back, no offsets.

**Why a pipeline per partition, not one step for all** (issue 26). A transaction costs about five
round trips whatever it carries (~10 ms on an idle broker), and one begun right after a commit
often meets CONCURRENT_TRANSACTIONS (the previous markers are still being written) and waits for
a retry. When one loop fetched, then ran every partition's transaction, then fetched again, a
record of partition B that arrived while A's transaction was in flight waited for A (the slowest
of the step) before it was even fetched: at low load every record paid its own transaction *and*
its wait behind the others, and the hop to the pot was slower at 10 rounds/s than at 133. So the
consumer only fetches and hands each partition's records to that partition's worker; the worker
writes one transaction at a time and, when it ends, takes everything that arrived meanwhile as its
next batch. Batch size follows load by itself: a lone record goes at once, and under load the
transaction in flight is the linger that fills the next one. What a worker has not taken yet is
bounded (a partition is not fetched for at ``pending_batches`` batches), order within a partition
is the worker's, and a partition's transactions (batches, ticks, submitted changes) never
interleave: they take turns on its lock, which is what a rebalance and a stop wait for.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

import aiokafka
import structlog
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, TopicPartition
from aiokafka.coordinator.assignors.range import RangePartitionAssignor
from aiokafka.errors import (
    IllegalOperation,
    InvalidProducerEpoch,
    InvalidProducerIdMapping,
    InvalidTxnState,
    KafkaError,
    OutOfOrderSequenceNumber,
    ProducerFenced,
    UnknownProducerId,
)
from aiokafka.structs import ConsumerRecord

from jackpot.platform.aiokafka_private import (
    CONSUMER_COORDINATOR_ATTRIBUTE,
    coordination_ended,
    fatal_cause,
    retire_producer,
    set_concurrent_transactions_backoff,
)
from jackpot.platform.broker_probe import BrokerProbe
from jackpot.platform.changelog import (
    RESTORE_TIMEOUT_SECONDS,
    RestoredStateRefused,
    changelog_consumer,
    check_changelog_partitions,
    read_compacted,
    resume_point,
    verify_restored,
)
from jackpot.platform.exactly_once_settings import ExactlyOnceSettings
from jackpot.platform.kafka import KafkaConnection, stop_client
from jackpot.platform.metrics import ProcessorMetrics
from jackpot.platform.processor_errors import NotCommitted, NotOwned, ProcessorError
from jackpot.platform.tracing import batch_span, child_span, failed, kafka_headers
from jackpot.topics import CHANGELOG_OFFSET_KEY

log = structlog.get_logger("jackpot.exactly_once")

# The producer's sequence or epoch is out of step with the brokers: only a new producer helps.
PRODUCER_STATE_ERRORS = (
    OutOfOrderSequenceNumber,
    UnknownProducerId,
    InvalidProducerEpoch,
    InvalidProducerIdMapping,
    InvalidTxnState,
)


# What waiting cures: the brokers unreachable or not ready, a request timed out, a restore that
# did not finish in its deadline. A partition that meets one of these while it is taken over
# again is retried, not given up (issue 36: a whole-cluster outage made the pot exit).
RECOVERABLE_ERRORS: tuple[type[BaseException], ...] = (KafkaError, OSError, TimeoutError)


@dataclass(frozen=True, slots=True)
class OutputRecord:
    """One record a transaction writes; ``partition`` pins it (changelog records do). Without
    ``headers`` it carries the transaction's trace context (jackpot.platform.tracing)."""

    topic: str
    value: bytes | None
    key: bytes | None
    partition: int | None = None
    headers: tuple[tuple[str, bytes], ...] = ()


@dataclass(frozen=True, slots=True)
class OffsetsOnly:
    """A transaction of the consumer group's offsets alone (no handler batch)."""

    records: tuple[OutputRecord, ...] = ()


class Batch(Protocol):
    """What a handler returns for a transaction: the records to write."""

    @property
    def records(self) -> Sequence[OutputRecord]: ...


B = TypeVar("B", bound=Batch)
H = TypeVar("H", bound="PartitionHandler[Any]")
T = TypeVar("T")


class PartitionHandler(Protocol[B]):
    """The pure side of one input partition: its state and how records change it.

    ``next_offset`` is the input offset after the last record applied (rolled back with it).
    ``apply`` may change memory, but only ``commit`` makes it the rollback point; ``rollback``
    returns to it exactly.
    """

    @property
    def next_offset(self) -> int: ...

    def restore(self, changelog: Mapping[bytes, bytes], committed: int | None) -> int | None:
        """Rebuild from the latest changelog value per key; the offset to consume from (None:
        the beginning of the partition)."""
        ...

    def apply(self, records: Sequence[ConsumerRecord[bytes, bytes]]) -> B: ...

    def tick(self) -> B | None:
        """Periodic outputs without input (for example liveness), or None."""
        ...

    def commit(self, batch: B) -> None: ...

    def rollback(self) -> None: ...

    def close(self) -> None:
        """The partition is halted or no longer owned: forget everything (and its metrics).
        May be called twice (halted, then revoked)."""
        ...


BOUND_RECHECK_MS = 5  # the longest fetch while a partition is left out at its bound


@dataclass(slots=True)
class Owned(Generic[H]):
    """An input partition this instance owns: its handler, its transactional producer and the
    pipeline its worker takes batches from."""

    partition: int
    tp: TopicPartition
    handler: H
    producer: AIOKafkaProducer
    halted: bool = False  # fenced or broken: nothing processed until revoked
    why_halted: str = ""
    # its producer is unusable and a new one could not be made yet (the brokers unreachable):
    # its worker takes it over again, with a back-off, before anything else
    recovering: bool = False
    # its pipeline: the records fetched that its worker has not taken yet, in offset order
    pending: list[ConsumerRecord[bytes, bytes]] = field(default_factory=list)
    fetched: int = 0  # the offset after the last record queued: where the consumer reads on
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)  # one transaction at a time
    wake: asyncio.Event = field(default_factory=asyncio.Event)  # records, a tick or closing
    worker: asyncio.Task[None] | None = None
    tick_due: bool = False
    closing: bool = False  # revoked or stopping: its worker ends after its transaction
    group_committed: int = 0  # the input offset last committed to the consumer group
    group_committed_at: float = 0.0  # monotonic seconds of that commit (0: due at once)

    @property
    def serving(self) -> bool:
        """Its handler may be read and given work."""
        return not (self.halted or self.recovering)

    @property
    def idle(self) -> bool:
        """No work may be taken: halted, recovering or closing."""
        return self.halted or self.recovering or self.closing


class _Rebalance(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, processor: ExactlyOnceProcessor[Any]) -> None:
        self._processor = processor

    async def on_partitions_revoked(self, revoked: Iterable[TopicPartition]) -> None:
        await self._processor._on_revoked(list(revoked))

    async def on_partitions_assigned(self, assigned: Iterable[TopicPartition]) -> None:
        await self._processor._on_assigned(list(assigned))


class ExactlyOnceProcessor(Generic[H]):
    """Runs ``handler_factory(partition)`` for every input partition this instance is given."""

    def __init__(
        self,
        name: str,
        settings: ExactlyOnceSettings,
        kafka_options: Mapping[str, Any],
        *,
        input_topic: str,
        changelog_topic: str,
        handler_factory: Callable[[int], H],
        metrics: ProcessorMetrics,
        tick_seconds: float | None = None,
        on_ownership: Callable[[list[int]], None] | None = None,
        assignor: Any = RangePartitionAssignor,
        restore_timeout_seconds: float = RESTORE_TIMEOUT_SECONDS,
    ) -> None:
        self.name = name  # the service, for logs and spans
        self.settings = settings
        self.kafka_options = kafka_options  # bootstrap_servers and security options
        self.input_topic = input_topic
        self.changelog_topic = changelog_topic  # partition p holds input partition p's state
        self.restore_timeout_seconds = restore_timeout_seconds
        self.metrics = metrics
        self._factory = handler_factory
        self._tick_seconds = tick_seconds
        self._on_ownership = on_ownership
        self._assignor = assignor  # how the group spreads the partitions (range by default)
        self._owned: dict[int, Owned[H]] = {}
        self._lock = asyncio.Lock()  # one rebalance callback at a time
        self._restore_lock = asyncio.Lock()  # the restore consumer reads for one caller at a time
        self._taken = asyncio.Event()  # a worker took a batch: its partition may be under bound
        self._assignment_epoch = 0
        self._takeover_retry: asyncio.TimerHandle | None = None  # a failed takeover's rejoin
        self._stopping = asyncio.Event()
        self._closed = False
        self._failure: BaseException | None = None
        self._consumer: AIOKafkaConsumer | None = None
        self._rejoining = False  # the group consumer is being replaced: nothing is owned
        self._restore_consumer: AIOKafkaConsumer | None = None
        self._probe: BrokerProbe | None = None
        self._last_tick = 0.0
        self._running_task: asyncio.Task[Any] | None = None
        self._done = asyncio.Event()
        self.running = asyncio.Event()  # set once subscribed: the group may assign partitions
        self._log = log.bind(service=name, instance=settings.instance_id)
        metrics.writable.set(1)  # owning nothing, it can write all it owns (a standby)

    # ----------------------------------------------------------------------------- life

    @property
    def owned_partitions(self) -> list[int]:
        """The partitions this instance owns and serves (not halted, not recovering)."""
        return sorted(p for p, owned in self._owned.items() if owned.serving)

    @property
    def halted_partitions(self) -> list[int]:
        return sorted(p for p, owned in self._owned.items() if owned.halted)

    @property
    def recovering_partitions(self) -> list[int]:
        return sorted(p for p, owned in self._owned.items() if owned.recovering)

    @property
    def writable(self) -> bool:
        """Every partition the group gave this instance can write: none recovering, none whose
        takeover failed and waits for the group again, the brokers answering, a group consumer
        in the group (none being replaced)."""
        stuck = self._rejoining or self.recovering_partitions or self._takeover_retry is not None
        return not stuck and (self._probe is None or self._probe.answering)

    def handlers(self) -> list[H]:
        """The handlers of the partitions owned and not halted, by partition."""
        return [self._owned[p].handler for p in self.owned_partitions]

    def handler(self, partition: int) -> H | None:
        owned = self._owned.get(partition)
        return owned.handler if owned is not None and owned.serving else None

    async def run(self) -> None:
        """Process until :meth:`stop` or a fatal error; always leaves the group on the way out."""
        self._running_task = asyncio.current_task()
        try:
            await self._start()
            while not self._stopping.is_set():
                await self._step()
                if self._failure is not None:
                    raise ProcessorError(f"{self.name} cannot continue") from self._failure
        finally:
            await self._shutdown()
            self._done.set()

    async def stop(self) -> None:
        """Let :meth:`run` finish the transactions in flight and leave the group; returns when
        it has (at once if it never ran). Records fetched and not yet taken are dropped: the
        next owner reads them again from the committed offsets."""
        self._stopping.set()
        if self._running_task is not None and self._running_task is not asyncio.current_task():
            await self._done.wait()

    async def _start(self) -> None:
        settings = self.settings
        connection = KafkaConnection(self.kafka_options)
        set_concurrent_transactions_backoff(settings.concurrent_transactions_backoff_ms)
        await check_changelog_partitions(self.kafka_options, self.input_topic, self.changelog_topic)
        self._restore_consumer = changelog_consumer(
            self.kafka_options, f"{settings.instance_id}-restore"
        )
        await self._restore_consumer.start()
        self._consumer = await self._join_group()
        self._probe = BrokerProbe(
            connection.client(client_id=f"{settings.instance_id}-probe"),
            interval=settings.broker_probe_ms / 1000,
            deadline=settings.transaction_deadline_ms / 1000,
            on_change=lambda _: self._ownership_changed(),
            name=self.name,
        )
        await self._probe.start()
        self.running.set()
        self._log.info("processor_started", topic=self.input_topic)

    async def _join_group(self) -> AIOKafkaConsumer:
        return await start_group_consumer(
            self.kafka_options, self.settings, self._assignor, self.input_topic, _Rebalance(self)
        )

    async def _shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stopping.set()
        self._cancel_takeover_retry()
        # the transactions in flight end first (committed or aborted), then the group is left
        await asyncio.gather(*(self._quiesce(owned) for owned in list(self._owned.values())))
        if self._consumer is not None:
            await stop_client(self._consumer)  # leaves the group: the others rebalance at once
        # and any a rebalance started while the consumer stopped
        await asyncio.gather(*(self._quiesce(owned) for owned in list(self._owned.values())))
        for owned in list(self._owned.values()):
            await self._close(owned)
        self._owned.clear()
        self._ownership_changed()
        if self._restore_consumer is not None:
            await stop_client(self._restore_consumer)
        if self._probe is not None:
            await self._probe.stop()
        self._log.info("processor_stopped")

    # ---------------------------------------------------------------------------- loop

    async def _step(self) -> None:
        """Fetch, and hand each partition's records to its worker: never waits for a transaction."""
        consumer = self._consumer
        assert consumer is not None
        epoch = self._assignment_epoch
        try:
            fetched = await self._fetch(consumer)
        except KafkaError as error:
            if not coordination_ended(consumer):
                raise
            await self._replace_group_consumer(consumer, error)
            return
        if epoch != self._assignment_epoch:
            # The assignment changed while these records were fetched: drop them, and re-seek
            # so that none fetched after the new positions is skipped either.
            for current in self._owned.values():
                consumer.seek(current.tp, current.fetched)
            return
        for tp, records in fetched.items():
            owned = self._owned.get(tp.partition)
            if owned is not None and not owned.idle:
                self._enqueue(owned, records)
        self._ticks()
        self._update_lag()

    async def _fetch(
        self, consumer: AIOKafkaConsumer
    ) -> dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]]:
        """The records of the partitions whose workers are under their bound
        (``pending_batches``): a partition at it is left out until its worker catches up, and
        what aiokafka fetched for it stays in aiokafka's buffer (one fetch per partition). Not
        ``consumer.pause``: a pause drops that buffer and a resume fetches it again; the pot's
        bench (a backlog, pre-published) ran at about half the rate paused at the bound."""
        settings = self.settings
        bound = settings.pending_batches * settings.max_batch_records
        live = [o for o in self._owned.values() if not o.idle]
        ready = [o.tp for o in live if len(o.pending) < bound]
        if live and not ready:  # every worker is at its bound: wait for one to take a batch
            self._taken.clear()
            await _wait_at_most(self._taken, settings.poll_timeout_ms / 1000)
            return {}
        # Some left out: a short wait, so that one whose worker catches up meanwhile is
        # fetched for again soon. None left out: all assigned, as the group gave them.
        partial = len(ready) < len(live)
        fetched: dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]] = await consumer.getmany(
            *(ready if partial else ()),
            timeout_ms=min(settings.poll_timeout_ms, BOUND_RECHECK_MS)
            if partial
            else settings.poll_timeout_ms,
            max_records=settings.max_batch_records,
        )
        return fetched

    def _enqueue(self, owned: Owned[H], records: list[ConsumerRecord[bytes, bytes]]) -> None:
        """Queue records for the partition's worker, in offset order, each once."""
        fresh = [r for r in records if r.offset >= owned.fetched]  # older: before a re-seek
        if not fresh:
            return
        owned.pending.extend(fresh)
        owned.fetched = fresh[-1].offset + 1
        owned.wake.set()

    def _reposition(self, owned: Owned[H], offset: int) -> None:
        """Read the partition again from ``offset``: what was queued past it is dropped."""
        owned.pending.clear()
        owned.fetched = offset
        if self._consumer is not None:
            self._consumer.seek(owned.tp, offset)

    def _start_worker(self, owned: Owned[H]) -> None:
        owned.worker = asyncio.create_task(
            self._work(owned), name=f"{self.name}-partition-{owned.partition}"
        )

    async def _work(self, owned: Owned[H]) -> None:
        """A partition's worker: one transaction at a time, each with everything that arrived
        during the previous one (up to max_batch_records), then the tick if one is due."""
        try:
            while await self._next_work(owned):
                if owned.recovering:
                    async with owned.lock:
                        await self._recover(owned)
                    continue
                if owned.pending:
                    await self._run_batch(owned)
                elif self._group_behind(owned) == 0.0:
                    await self._commit_group(owned)
                if owned.tick_due and not owned.idle:
                    owned.tick_due = False
                    await self._tick(owned)
        except Exception as error:  # a bug: the service must not go on without this partition
            self._failure = error
            self._log.error(
                "partition_worker_failed",
                partition=owned.partition,
                error=repr(error),
                exc_info=error,
            )

    async def _next_work(self, owned: Owned[H]) -> bool:
        """Wait for records, a tick, a recovery, or the group's offsets falling due while they
        are behind; False once the partition is closing or halted."""
        while not (owned.pending or owned.tick_due or owned.recovering):
            if owned.closing or owned.halted:
                return False
            due = self._group_behind(owned)
            if due == 0.0:
                break
            owned.wake.clear()
            if due is None:
                await owned.wake.wait()
            else:
                await _wait_at_most(owned.wake, due)
        if owned.pending and not owned.recovering:
            await self._linger(owned)
        return not (owned.closing or owned.halted)

    async def _linger(self, owned: Owned[H]) -> None:
        """With batch_linger_ms: wait that long at most for batch_min_records."""
        settings = self.settings
        if settings.batch_linger_ms <= 0:
            return
        wanted = min(settings.batch_min_records, settings.max_batch_records)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + settings.batch_linger_ms / 1000
        while len(owned.pending) < wanted and not (owned.closing or owned.halted):
            remaining = deadline - loop.time()
            if remaining <= 0:
                return
            owned.wake.clear()
            await _wait_at_most(owned.wake, remaining)

    async def _run_batch(self, owned: Owned[H]) -> None:
        async with owned.lock:  # taken under the lock: a change's abort may have re-seeked
            if owned.idle:
                return
            size = self.settings.max_batch_records
            records = owned.pending[:size]
            del owned.pending[:size]
            self._taken.set()  # under its bound again: fetched for
            await self._process(owned, records)

    async def _process(self, owned: Owned[H], records: list[ConsumerRecord[bytes, bytes]]) -> None:
        handler = owned.handler
        fresh = [r for r in records if r.offset >= handler.next_offset]  # older: before a re-seek
        if not fresh:
            return
        name = self.name
        with batch_span(
            f"{name}.process",
            (r.headers for r in fresh),
            **{"messaging.batch.message_count": len(fresh), "jackpot.partition": owned.partition},
        ):
            try:
                with child_span(f"{name}.apply"):
                    batch = handler.apply(fresh)
            except Exception as error:
                # A bug (for example rule M2 broken): never commit it, stop this partition loudly.
                handler.rollback()
                self._halt(owned, "processing_failed", error)
                return
            await self._transact(owned, batch, "batch")

    def _ticks(self) -> None:
        """Every tick_seconds, a tick for every partition, through its worker (after the
        transaction it has in flight, in the partition's sequence)."""
        if self._tick_seconds is None:
            return
        now = time.monotonic()
        if now - self._last_tick < self._tick_seconds:
            return
        self._last_tick = now
        for owned in self._owned.values():
            if not owned.idle:
                owned.tick_due = True
                owned.wake.set()

    async def _commit_group(self, owned: Owned[H]) -> None:
        """The consumer group's offsets alone, once input stopped coming for a while."""
        async with owned.lock:
            if not (owned.idle or owned.pending):
                await self._transact(owned, OffsetsOnly(), "offsets")

    async def _tick(self, owned: Owned[H]) -> None:
        async with owned.lock:
            if owned.idle:
                return
            batch = owned.handler.tick()
            if batch is not None:
                await self._transact(owned, batch, "tick")

    async def submit(self, partition: int, change: Callable[[H], B]) -> B:
        """Decide ``change`` on partition's handler and write its batch in a transaction of its
        own; the batch once committed. ``change`` may raise to refuse (nothing is written).

        Decided and written under the partition's lock, between two of its batches: two
        changes of one partition never interleave, nor a change and a batch, so a check made
        in ``change`` still holds when its batch commits. A caller that goes away (a cancelled
        gRPC call) does not cut it short: it runs to its commit or its abort without it.
        """
        owned = self._owned.get(partition)
        if owned is None or not owned.serving:
            raise NotOwned(partition)
        return await run_to_end(self._change(owned, change))

    async def _change(self, owned: Owned[H], change: Callable[[H], B]) -> B:
        partition = owned.partition
        async with owned.lock:
            if self._owned.get(partition) is not owned or owned.idle:
                raise NotOwned(partition)  # revoked, halted, recovering or stopping meanwhile
            try:
                batch = change(owned.handler)
            except BaseException:
                owned.handler.rollback()
                raise
            if not await self._transact(owned, batch, "change"):
                raise NotCommitted(f"the transaction on partition {partition} failed; retry")
            return batch

    async def _transact(self, owned: Owned[H], batch: B | OffsetsOnly, kind: str) -> bool:
        """Write a batch (with its resume point for input batches) in one transaction; undo on
        failure."""
        started = time.perf_counter()
        with child_span(f"{self.name}.transaction", **{"jackpot.batch": kind}):
            return await self._write(owned, batch, kind, started)

    async def _write(
        self, owned: Owned[H], batch: B | OffsetsOnly, kind: str, started: float
    ) -> bool:
        handler = owned.handler
        traced = kafka_headers() or None  # the transaction span's context, if it is sampled
        records = self._records_of(owned, batch, kind)
        to_group = kind == "offsets" or (kind == "batch" and self._group_due_in(owned) == 0.0)
        try:
            async with self._deadline():
                await self._send_and_commit(owned, records, to_group, traced)
        except ProducerFenced as error:
            failed(error)
            handler.rollback()
            self._fenced(owned, error)
            return False
        except (KafkaError, OSError, TimeoutError, IllegalOperation) as error:
            # IllegalOperation: the transaction ended under us while we sent (the sender heard
            # of a failure first); _abort asks the producer why.
            failed(error)
            await self._abort(owned, error)
            return False
        except BaseException as error:  # a bug: never leave the transaction open, then raise
            await asyncio.shield(self._abort(owned, error))
            raise
        if to_group:
            owned.group_committed = handler.next_offset
            owned.group_committed_at = time.monotonic()
        if not isinstance(batch, OffsetsOnly):
            handler.commit(batch)
        if self._probe is not None:
            self._probe.heard()
        self.metrics.transaction_seconds.labels(kind=kind).observe(time.perf_counter() - started)
        return True

    async def _send_and_commit(
        self,
        owned: Owned[H],
        records: list[OutputRecord],
        to_group: bool,
        traced: list[tuple[str, bytes]] | None,
    ) -> None:
        """One transaction: begin, send every record, the group's offsets when due, then
        commit once every record is acknowledged."""
        producer = owned.producer
        await producer.begin_transaction()
        sent = [
            await producer.send(
                r.topic,
                r.value,
                key=r.key,
                partition=r.partition,
                headers=list(r.headers) or traced,
            )
            for r in records
        ]
        # Each failure marked retrieved whatever happens next (unretrieved ones are logged by
        # the garbage collector: settle_failures).
        delivered = asyncio.gather(*sent, return_exceptions=True)
        if to_group:  # the offsets go while the records are in flight
            await producer.send_offsets_to_transaction(
                {owned.tp: owned.handler.next_offset}, self.settings.consumer_group
            )
        # All or nothing: every record acknowledged before the commit is asked for. aiokafka's
        # commit flushes the batches and sends EndTxn(commit) whether or not they were
        # delivered (MessageAccumulator.flush_for_commit); Java's commitTransaction throws if a
        # send of the transaction failed (KAFKA-13967). Committing first committed
        # transactions without one of their records (issue 36;
        # tests/integration/test_transaction_atomicity.py).
        # (shielded: a deadline must not cancel aiokafka's own delivery futures)
        for outcome in await asyncio.shield(delivered):
            if isinstance(outcome, BaseException):
                raise outcome
        await producer.commit_transaction()

    def _deadline(self) -> asyncio.Timeout:
        """TimeoutError after transaction_deadline_ms: aiokafka waits for ever for brokers that
        are gone (a commit, an abort, InitProducerId all retry until answered)."""
        return asyncio.timeout(self.settings.transaction_deadline_ms / 1000)

    def _records_of(self, owned: Owned[H], batch: B | OffsetsOnly, kind: str) -> list[OutputRecord]:
        """A transaction's records: the batch's, and for input batches where a takeover
        resumes (in the changelog, with the state)."""
        records = list(batch.records)
        if kind == "batch":
            offset = str(owned.handler.next_offset).encode()
            records.append(
                OutputRecord(self.changelog_topic, offset, CHANGELOG_OFFSET_KEY, owned.partition)
            )
        return records

    def _group_due_in(self, owned: Owned[H]) -> float:
        """Seconds until the consumer group's offsets may go again (0: now): at most once per
        ``group_commit_interval_ms``. The changelog's offset is what a takeover resumes from;
        the group's serves lag monitoring, tools, and a changelog written before it had one."""
        due_at = owned.group_committed_at + self.settings.group_commit_interval_ms / 1000
        return max(0.0, due_at - time.monotonic())

    def _group_behind(self, owned: Owned[H]) -> float | None:
        """Seconds until the group's offsets are due, if they are behind the input applied
        (None: they are not behind)."""
        if owned.group_committed >= owned.handler.next_offset:
            return None
        return self._group_due_in(owned)

    async def _abort(self, owned: Owned[H], error: BaseException) -> None:
        """Abort the open transaction, undo the batch in memory, re-read from the commit point.

        A producer that cannot abort (fatal without a fencing, out of step with the brokers,
        its transaction's end unknown, or the brokers unreachable) is replaced and the
        partition taken over again (:meth:`_renew`); while that cannot be done either, the
        partition is *recovering*: not served, and its worker tries again with a back-off
        (:meth:`_recover`). A fenced producer halts the partition and asks the group to decide
        who owns it (:meth:`_fenced`). Nothing here stops the service: waiting cures these."""
        self.metrics.transactions_aborted.inc()
        self._log.warning(
            "transaction_aborted", partition=owned.partition, error=repr(error), exc_info=error
        )
        owned.handler.rollback()
        cause = fatal_cause(owned.producer)
        if isinstance(cause, ProducerFenced):
            self._fenced(owned, cause)
            return
        if cause is None and not isinstance(error, PRODUCER_STATE_ERRORS):
            try:
                async with self._deadline():
                    await owned.producer.abort_transaction()
            except ProducerFenced as fenced:
                self._fenced(owned, fenced)
                return
            except Exception as abort_error:  # any: the producer is replaced
                self._log.warning(
                    "abort_failed", partition=owned.partition, error=repr(abort_error)
                )
            else:
                self._reposition(owned, owned.handler.next_offset)
                await asyncio.sleep(self.settings.retry_backoff_ms / 1000)
                return
        try:
            await self._renew(owned)
        except RECOVERABLE_ERRORS as renew_error:
            self.metrics.takeovers_failed.inc()
            self._start_recovery(owned, renew_error)

    async def _renew(self, owned: Owned[H]) -> None:
        """Replace a producer that can no longer commit (its idempotence state refused by the
        brokers, its sender dead, its transaction's end unknown) and take the partition over
        again.

        After a whole-cluster outage the brokers can answer every later batch of the old
        producer with OutOfOrderSequenceNumber: aborting and retrying on it never ends. A new
        producer with the same transactional id gets a new epoch, which fences whoever else
        writes with that id: a zombie, or the partition's rightful owner if *this* instance is
        the zombie and does not know it yet. So the memory is not trusted after it: the
        partition is restored from its changelog again, exactly as in a takeover (fence, then
        restore, then consume from the commit point), and a stale book can never pay. Raises
        what the brokers answered if they cannot be reached; the old producer is retired
        either way.
        """
        await retire_producer(owned.producer)
        async with self._deadline():
            producer = await self._fencing_producer(owned.partition)
        try:
            changelogs = await self._read_changelogs([owned.partition])
            consumer = self._consumer
            assert consumer is not None
            async with self._deadline():
                committed = await consumer.committed(owned.tp)
        except BaseException:
            await retire_producer(producer)
            raise
        owned.producer = producer
        where = f"{self.changelog_topic} partition {owned.partition}"
        resume = resume_point(changelogs[owned.partition], committed, where)
        owned.handler.close()
        owned.handler = self._factory(owned.partition)
        owned.group_committed, owned.group_committed_at = committed or 0, 0.0
        start = owned.handler.restore(changelogs[owned.partition], resume)
        refused = await verify_restored(owned.handler)  # checked as at a takeover
        if refused:
            self._halt(owned, "restored_state_refused", RestoredStateRefused(refused))
            return
        self._reposition(owned, 0 if start is None else start)
        self._log.warning("producer_renewed", partition=owned.partition, restored_from=start)

    def _start_recovery(self, owned: Owned[H], error: BaseException) -> None:
        """The partition cannot be taken over again now: not served until its worker can."""
        owned.recovering = True
        owned.pending.clear()  # read again from the commit point once recovered
        owned.wake.set()
        self._log.error(
            "partition_recovering",
            partition=owned.partition,
            error=repr(error),
            retry_in_ms=self.settings.retry_backoff_ms,
        )
        self._ownership_changed()

    async def _recover(self, owned: Owned[H]) -> None:
        """Take the partition over again until it works (its worker, under its lock), the
        pause doubling from retry_backoff_ms to recovery_backoff_max_ms; returns early when the
        partition is revoked or the processor stops."""
        settings = self.settings
        pause = settings.retry_backoff_ms / 1000
        attempts = 0
        while owned.recovering and not (owned.closing or owned.halted):
            owned.wake.clear()
            await _wait_at_most(owned.wake, pause)
            if owned.closing or owned.halted:
                return
            attempts += 1
            try:
                await self._renew(owned)
            except RECOVERABLE_ERRORS as error:
                self.metrics.takeovers_failed.inc()
                pause = min(pause * 2, settings.recovery_backoff_max_ms / 1000)
                self._log.warning(
                    "partition_recovery_failed",
                    partition=owned.partition,
                    attempts=attempts,
                    error=repr(error),
                    retry_in_ms=round(pause * 1000),
                )
                continue
            owned.recovering = False
            self._log.warning("partition_recovered", partition=owned.partition, attempts=attempts)
            self._ownership_changed()

    def _fenced(self, owned: Owned[H], error: BaseException) -> None:
        """Another producer with this partition's transactional id has a newer epoch: a new
        owner, or the transaction coordinator itself when this one's transaction outlived
        transaction_timeout_ms (seen in a whole-cluster outage). Halt, and ask the group: a
        rejoin revokes the partition, and gives it back (fenced and restored anew) only if
        this instance still owns it; a zombie loses it (Kafka Streams' TaskMigratedException
        does the same)."""
        self._halt(owned, "producer_fenced", error)
        self._request_rejoin()

    def _request_rejoin(self) -> None:
        """Make the consumer rejoin its group at its next poll (aiokafka has no public call for
        it: the group coordinator's ``request_rejoin``; tests/unit/test_exactly_once.py fails
        when it is gone)."""
        if self._consumer is None:
            return  # being replaced: the new one joins the group anyway
        coordinator = getattr(self._consumer, CONSUMER_COORDINATOR_ATTRIBUTE, None)
        if coordinator is None or not hasattr(coordinator, "request_rejoin"):
            self._failure = ProcessorError(
                f"aiokafka {aiokafka.__version__}: the consumer has no "
                f"{CONSUMER_COORDINATOR_ATTRIBUTE}.request_rejoin, so a fenced partition cannot "
                "be given back (see the range pinned in pyproject.toml)"
            )
            return
        self._log.warning("group_rejoin_requested")
        coordinator.request_rejoin()

    def _halt(self, owned: Owned[H], why: str, error: BaseException) -> None:
        owned.halted = True
        owned.why_halted = why
        owned.recovering = False
        owned.pending.clear()  # its worker ends; the next owner reads them again
        owned.wake.set()
        owned.handler.close()  # what it holds is no longer ours to serve
        self.metrics.partitions_halted.set(len(self.halted_partitions))
        if self._consumer is not None:
            with contextlib.suppress(Exception):
                self._consumer.pause(owned.tp)
        self._log.error(
            "partition_halted",
            partition=owned.partition,
            why=why,
            error=repr(error),
            exc_info=error,
        )
        self._ownership_changed()

    def _update_lag(self) -> None:
        consumer = self._consumer
        assert consumer is not None
        for owned in self._owned.values():
            stable = consumer.last_stable_offset(owned.tp)
            if stable is not None:
                self.metrics.set_lag(owned.partition, stable - owned.handler.next_offset)

    def _ownership_changed(self) -> None:
        self.metrics.partitions_owned.set(len(self._owned))
        self.metrics.partitions_halted.set(len(self.halted_partitions))
        self.metrics.partitions_recovering.set(len(self.recovering_partitions))
        self.metrics.writable.set(1 if self.writable else 0)
        if self._on_ownership is not None:
            self._on_ownership(self.owned_partitions)

    async def _replace_group_consumer(self, lost: AIOKafkaConsumer, error: KafkaError) -> None:
        """aiokafka's group coordination ended on an unexpected error; its consumer only raises
        that error from now on. Give up every partition as at a revocation, stop the consumer,
        and join the group with a new one (retried after retry_backoff_ms while the brokers are
        gone; not writable meanwhile). The group gives the partitions back, fenced as ever."""
        self.metrics.group_consumers_replaced.inc()
        self._log.error("group_coordination_ended", error=repr(error), exc_info=error)
        self._rejoining = True
        await self._on_revoked([owned.tp for owned in self._owned.values()])
        await stop_client(lost)
        self._consumer = None
        while not self._stopping.is_set():
            try:
                self._consumer = await self._join_group()
            except RECOVERABLE_ERRORS as join_error:
                backoff = self.settings.retry_backoff_ms
                self._log.warning(
                    "group_join_retrying", error=repr(join_error), retry_in_ms=backoff
                )
                await _wait_at_most(self._stopping, backoff / 1000)
                continue
            self._rejoining = False
            self._ownership_changed()
            self._log.warning("group_joined_again")
            return

    # ----------------------------------------------------------------------- rebalances

    def _retry_takeover(self, fresh: list[TopicPartition], error: BaseException) -> None:
        """The brokers could not fence or restore ``fresh`` now: none of them is served, and
        the group is rejoined after retry_backoff_ms, which assigns them again (to this
        instance or another) and tries the takeover anew."""
        self.metrics.takeovers_failed.inc()
        self._log.error(
            "takeover_failed_retrying",
            partitions=[tp.partition for tp in fresh],
            error=repr(error),
            retry_in_ms=self.settings.retry_backoff_ms,
        )
        self._takeover_retry = asyncio.get_running_loop().call_later(
            self.settings.retry_backoff_ms / 1000, self._request_rejoin
        )
        self._ownership_changed()

    def _cancel_takeover_retry(self) -> None:
        if self._takeover_retry is not None:
            self._takeover_retry.cancel()
            self._takeover_retry = None

    async def _on_revoked(self, revoked: list[TopicPartition]) -> None:
        async with self._lock:
            self._cancel_takeover_retry()  # the group is deciding again anyway
            self._assignment_epoch += 1
            gone = [
                owned
                for tp in revoked
                if (owned := self._owned.pop(tp.partition, None)) is not None
                and tp.topic == self.input_topic
            ]
            # Each waits for its partition's transaction in flight (a batch, a tick or a
            # change) before its producer is closed; what was queued is dropped: the next
            # owner reads it again from the committed offsets.
            await asyncio.gather(*(self._quiesce(owned) for owned in gone))
            for owned in gone:
                await self._close(owned)
            self._ownership_changed()
            self._log.info("partitions_revoked", partitions=sorted(tp.partition for tp in revoked))

    async def _on_assigned(self, assigned: list[TopicPartition]) -> None:
        async with self._lock:
            self._cancel_takeover_retry()
            self._assignment_epoch += 1
            topic = self.input_topic
            fresh = sorted(
                (tp for tp in assigned if tp.topic == topic and tp.partition not in self._owned),
                key=lambda tp: tp.partition,
            )
            if not fresh:
                return
            started = time.perf_counter()
            try:
                await self._take_over(fresh)
            except RECOVERABLE_ERRORS as error:
                self._retry_takeover(fresh, error)
                return
            except Exception as error:
                self._failure = error
                self._log.error("assignment_failed", error=repr(error), exc_info=error)
                return
            self._ownership_changed()
            self._log.info(
                "partitions_assigned",
                partitions=[tp.partition for tp in fresh],
                seconds=round(time.perf_counter() - started, 3),
            )

    async def _take_over(self, fresh: list[TopicPartition]) -> None:
        """Fence the previous owners, then restore, then position the consumer (in that order)."""
        started = time.perf_counter()
        async with self._deadline():
            producers = await asyncio.gather(
                *(self._fencing_producer(tp.partition) for tp in fresh)
            )
        fenced = time.perf_counter()
        try:
            changelogs = await self._read_changelogs([tp.partition for tp in fresh])
            restored = time.perf_counter()
            consumer = self._consumer
            assert consumer is not None
            async with self._deadline():
                offsets = await asyncio.gather(*(consumer.committed(tp) for tp in fresh))
            self._log.info(
                "partitions_taken_over",
                partitions=[tp.partition for tp in fresh],
                fence_seconds=round(fenced - started, 3),
                restore_seconds=round(restored - fenced, 3),
                offsets_seconds=round(time.perf_counter() - restored, 3),
            )
            handlers = [self._factory(tp.partition) for tp in fresh]
            resumes = [
                resume_point(changelogs[p], committed, f"{self.changelog_topic} partition {p}")
                for p, committed in zip([tp.partition for tp in fresh], offsets, strict=True)
            ]
            starts = [
                handler.restore(changelogs[tp.partition], resume)
                for tp, handler, resume in zip(fresh, handlers, resumes, strict=True)
            ]
            # Every partition's check at once: each reads its own ledger partition, and one
            # after another they added seconds to a takeover (the pot's kill -9 recovery).
            refusals = await asyncio.gather(*(verify_restored(h) for h in handlers))
            for tp, producer, handler, start, refused, committed in zip(
                fresh, producers, handlers, starts, refusals, offsets, strict=True
            ):
                owned = Owned(tp.partition, tp, handler, producer, group_committed=committed or 0)
                self._owned[tp.partition] = owned
                if refused:  # a state the handler may not run from: never consumed (halted)
                    self._halt(owned, "restored_state_refused", RestoredStateRefused(refused))
                    continue
                # Never committed: from the beginning. Offset 0 is reset to the earliest kept
                # (auto_offset_reset) without awaiting the fetch in flight as seek_to_beginning
                # does (half a second per partition).
                owned.fetched = 0 if start is None else start
                consumer.seek(tp, owned.fetched)
                consumer.resume(tp)
                if not self._stopping.is_set():  # assigned while the consumer stops: no work
                    self._start_worker(owned)
        except BaseException:
            for producer in producers:
                await retire_producer(producer)
            raise

    async def _fencing_producer(self, partition: int) -> AIOKafkaProducer:
        return await start_fencing_producer(self.kafka_options, self.settings, partition)

    async def _read_changelogs(self, partitions: list[int]) -> dict[int, dict[bytes, bytes]]:
        """Per changelog partition, the latest committed value of every key (tombstones drop
        it), read to the end within the restore deadline."""
        consumer = self._restore_consumer
        assert consumer is not None
        async with self._restore_lock:  # a renewal (in a worker) and a takeover may both read
            return await read_compacted(
                consumer,
                self.changelog_topic,
                partitions,
                self.restore_timeout_seconds,
            )

    async def _quiesce(self, owned: Owned[H]) -> None:
        """End the partition's worker after its transaction in flight, and wait for a change
        being written; the records it had not taken are dropped."""
        owned.closing = True
        owned.pending.clear()
        owned.wake.set()
        if owned.worker is not None:
            await asyncio.wait([owned.worker])  # it reports its own failures
        async with owned.lock:  # a submitted change in flight
            pass

    async def _close(self, owned: Owned[H]) -> None:
        await retire_producer(owned.producer)
        self.metrics.forget_partition(owned.partition)
        owned.handler.close()


async def start_group_consumer(
    kafka_options: Mapping[str, Any],
    settings: ExactlyOnceSettings,
    assignor: Any,
    topic: str,
    listener: ConsumerRebalanceListener,
) -> AIOKafkaConsumer:
    """A started group consumer subscribed to ``topic``: the group assigns it partitions at its
    first fetch, and ``listener`` hears of each change."""
    consumer = KafkaConnection(kafka_options).consumer(
        group_id=settings.consumer_group,
        auto_offset_reset="earliest",
        partition_assignment_strategy=(assignor,),
        session_timeout_ms=settings.session_timeout_ms,
        heartbeat_interval_ms=settings.heartbeat_ms,
        max_poll_interval_ms=settings.max_poll_interval_ms,
        # aiokafka defaults this to the session timeout: a member still fencing and restoring
        # in its rebalance callback after 3 s would be evicted, rejoin, and evict the others
        # in turn (seen with two pot instances). A dead member still leaves after 3 s.
        rebalance_timeout_ms=settings.max_poll_interval_ms,
        client_id=settings.instance_id,
    )
    try:
        await consumer.start()
    except BaseException:
        await stop_client(consumer)
        raise
    consumer.subscribe([topic], listener=listener)
    return consumer


async def start_fencing_producer(
    kafka_options: Mapping[str, Any], settings: ExactlyOnceSettings, partition: int
) -> AIOKafkaProducer:
    """Start ``partition``'s transactional producer; returns once older epochs are fenced."""
    producer = KafkaConnection(kafka_options).producer(
        # A transaction sends all its records before it waits for any: they batch without
        # lingering, and the 2 ms linger only delayed the commit (bench: p50 6-8 -> 4-4.5 ms).
        linger_ms=0,
        transactional_id=settings.transactional_id(partition),
        transaction_timeout_ms=settings.transaction_timeout_ms,
        client_id=f"{settings.instance_id}-p{partition}",
        # A transaction begun right after a commit meets CONCURRENT_TRANSACTIONS while the
        # previous markers are written; AddOffsetsToTxn then retries after this (100 ms by
        # aiokafka's default), AddPartitionsToTxn after concurrent_transactions_backoff_ms.
        retry_backoff_ms=settings.producer_retry_backoff_ms,
    )
    await producer.start()
    try:
        # begin_transaction waits for InitProducerId, which completes only after the
        # broker finished or aborted the previous epoch's open transaction.
        await producer.begin_transaction()
        await producer.abort_transaction()
    except BaseException:
        await retire_producer(producer)
        raise
    return producer


async def run_to_end(work: Coroutine[Any, Any, T]) -> T:
    """``work``'s result; if the caller is cancelled meanwhile, ``work`` still runs to its end
    (its failure, if any, logged). A transaction cut between its begin and its commit stays
    open on the partition's producer, and the partition's next one fails (issue 36: the payout
    stopped when a dealer's terminal went away mid-call)."""
    task = asyncio.ensure_future(work)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        task.add_done_callback(_log_unread_failure)
        raise


def _log_unread_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and (error := task.exception()) is not None:
        log.warning("abandoned_change_failed", error=repr(error))


async def _wait_at_most(event: asyncio.Event, seconds: float) -> None:
    """Wait for ``event``, ``seconds`` at most. Not ``asyncio.wait_for``: on Python 3.11 it
    swallows a cancellation that arrives as the event is set, and a cancelled service ran on
    (tests/integration/test_pot_service.py, cancelled mid-stream, hung on half its runs)."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await event.wait()
