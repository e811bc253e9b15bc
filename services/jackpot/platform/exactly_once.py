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

**Where each part lives.** This module is the loop (fetch, hand each partition its records,
ticks, :meth:`ExactlyOnceProcessor.submit`) and the group (assignments, revocations, rejoins, a
replaced consumer). Beside it: the handler contract (:mod:`.partition_handler`); one owned
partition's worker, transactions and failures (:mod:`.partition_task`, steps 4-6); the takeover
shared by an assignment and a renewal (:mod:`.takeover`, steps 1-3); one transaction, all or
nothing (:mod:`.transaction`); the bounded fetch (:mod:`.bounded_fetch`); the clients
(:mod:`.processor_clients`); what aiokafka keeps privately (:mod:`.aiokafka_private`); the
changelog's reading and resume point (:mod:`.changelog`); waiting (:mod:`.waiting`).

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
producer, the partition's lock, the same roll back, no offsets. A partition's first tick is due at
its takeover, before its first batch: what its restore found due (the payout's mark after its
catch-up) is written at once, not a tick period later, so an instance stopped as soon as it serves
has written it (else every later start would read the whole payouts history again).

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
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic

import structlog
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, TopicPartition
from aiokafka.coordinator.assignors.range import RangePartitionAssignor
from aiokafka.errors import KafkaError

from jackpot.platform.aiokafka_private import (
    AiokafkaUnsupported,
    coordination_ended,
    request_rejoin,
    retire_producer,
    set_concurrent_transactions_backoff,
)
from jackpot.platform.bounded_fetch import fetch_under_bound
from jackpot.platform.broker_probe import BrokerProbe
from jackpot.platform.changelog import (
    RESTORE_TIMEOUT_SECONDS,
    RestoredStateRefused,
    changelog_consumer,
    check_changelog_partitions,
    read_compacted,
)
from jackpot.platform.exactly_once_settings import ExactlyOnceSettings
from jackpot.platform.kafka import KafkaConnection, stop_client
from jackpot.platform.metrics import ProcessorMetrics
from jackpot.platform.partition_handler import B, H
from jackpot.platform.partition_task import PartitionTask
from jackpot.platform.processor_clients import start_fencing_producer, start_group_consumer
from jackpot.platform.processor_errors import NotCommitted, NotOwned, ProcessorError
from jackpot.platform.takeover import take_over
from jackpot.platform.task_host import RECOVERABLE_ERRORS
from jackpot.platform.waiting import run_to_end, wait_at_most

log = structlog.get_logger("jackpot.exactly_once")


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
        self._owned: dict[int, PartitionTask[H]] = {}
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
        self.log = log.bind(service=name, instance=settings.instance_id)
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

    # -------------------------------------------------------- what a partition's task asks

    @property
    def consumer(self) -> AIOKafkaConsumer | None:
        return self._consumer

    def new_handler(self, partition: int) -> H:
        return self._factory(partition)

    def heard(self) -> None:
        if self._probe is not None:
            self._probe.heard()

    def taken(self) -> None:
        self._taken.set()

    def worker_failed(self, error: BaseException) -> None:
        self._failure = error

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
            on_change=lambda _: self.ownership_changed(),
            name=self.name,
        )
        await self._probe.start()
        self.running.set()
        self.log.info("processor_started", topic=self.input_topic)

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
        await asyncio.gather(*(owned.quiesce() for owned in list(self._owned.values())))
        if self._consumer is not None:
            await stop_client(self._consumer)  # leaves the group: the others rebalance at once
        # and any a rebalance started while the consumer stopped
        await asyncio.gather(*(owned.quiesce() for owned in list(self._owned.values())))
        for owned in list(self._owned.values()):
            await owned.close()
        self._owned.clear()
        self.ownership_changed()
        if self._restore_consumer is not None:
            await stop_client(self._restore_consumer)
        if self._probe is not None:
            await self._probe.stop()
        self.log.info("processor_stopped")

    # ---------------------------------------------------------------------------- loop

    async def _step(self) -> None:
        """Fetch, and hand each partition's records to its worker: never waits for a transaction."""
        consumer = self._consumer
        assert consumer is not None
        epoch = self._assignment_epoch
        try:
            fetched = await fetch_under_bound(
                consumer, self._owned.values(), self.settings, self._taken
            )
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
                owned.enqueue(records)
        self._ticks()
        self._update_lag()

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
            owned.due_tick()

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

    async def _change(self, owned: PartitionTask[H], change: Callable[[H], B]) -> B:
        partition = owned.partition
        async with owned.lock:
            if self._owned.get(partition) is not owned or owned.idle:
                raise NotOwned(partition)  # revoked, halted, recovering or stopping meanwhile
            batch = await owned.change(change)
            if batch is None:
                raise NotCommitted(f"the transaction on partition {partition} failed; retry")
            return batch

    def request_rejoin(self) -> None:
        """Make the consumer rejoin its group at its next poll (none while it is replaced: the
        new one joins anyway); an aiokafka that cannot is fatal (a fenced partition could never
        be given back)."""
        if self._consumer is None:
            return
        self.log.warning("group_rejoin_requested")
        try:
            request_rejoin(self._consumer)
        except AiokafkaUnsupported as error:
            self._failure = ProcessorError(str(error))

    def _update_lag(self) -> None:
        consumer = self._consumer
        assert consumer is not None
        for owned in self._owned.values():
            stable = consumer.last_stable_offset(owned.tp)
            if stable is not None:
                self.metrics.set_lag(owned.partition, stable - owned.handler.next_offset)

    def ownership_changed(self) -> None:
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
        self.log.error("group_coordination_ended", error=repr(error), exc_info=error)
        self._rejoining = True
        await self._on_revoked([owned.tp for owned in self._owned.values()])
        await stop_client(lost)
        self._consumer = None
        while not self._stopping.is_set():
            try:
                self._consumer = await self._join_group()
            except RECOVERABLE_ERRORS as join_error:
                backoff = self.settings.retry_backoff_ms
                self.log.warning("group_join_retrying", error=repr(join_error), retry_in_ms=backoff)
                await wait_at_most(self._stopping, backoff / 1000)
                continue
            self._rejoining = False
            self.ownership_changed()
            self.log.warning("group_joined_again")
            return

    # ----------------------------------------------------------------------- rebalances

    def _retry_takeover(self, fresh: list[TopicPartition], error: BaseException) -> None:
        """The brokers could not fence or restore ``fresh`` now: none of them is served, and
        the group is rejoined after retry_backoff_ms, which assigns them again (to this
        instance or another) and tries the takeover anew."""
        self.metrics.takeovers_failed.inc()
        self.log.error(
            "takeover_failed_retrying",
            partitions=[tp.partition for tp in fresh],
            error=repr(error),
            retry_in_ms=self.settings.retry_backoff_ms,
        )
        self._takeover_retry = asyncio.get_running_loop().call_later(
            self.settings.retry_backoff_ms / 1000, self.request_rejoin
        )
        self.ownership_changed()

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
            await asyncio.gather(*(owned.quiesce() for owned in gone))
            for owned in gone:
                await owned.close()
            self.ownership_changed()
            self.log.info("partitions_revoked", partitions=sorted(tp.partition for tp in revoked))

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
                self.log.error("assignment_failed", error=repr(error), exc_info=error)
                return
            self.ownership_changed()
            self.log.info(
                "partitions_assigned",
                partitions=[tp.partition for tp in fresh],
                seconds=round(time.perf_counter() - started, 3),
            )

    async def _take_over(self, fresh: list[TopicPartition]) -> None:
        """Fence the previous owners, then restore, then position the consumer (in that order)."""
        restored = await take_over(self, fresh)
        consumer = self._consumer
        assert consumer is not None
        try:
            for each in restored:
                owned = PartitionTask(
                    self, each.tp.partition, each.tp, each.handler, each.producer,
                    group_committed=each.committed or 0, tick_due=self._tick_seconds is not None,
                )  # fmt: skip
                self._owned[each.tp.partition] = owned
                if each.refused:  # a state the handler may not run from: never consumed (halted)
                    owned.halt("restored_state_refused", RestoredStateRefused(each.refused))
                    continue
                # Never committed: from the beginning. Offset 0 is reset to the earliest kept
                # (auto_offset_reset) without awaiting the fetch in flight as seek_to_beginning
                # does (half a second per partition).
                owned.fetched = 0 if each.start is None else each.start
                consumer.seek(each.tp, owned.fetched)
                consumer.resume(each.tp)
                if not self._stopping.is_set():  # assigned while the consumer stops: no work
                    owned.start()
        except BaseException:
            for each in restored:
                await retire_producer(each.producer)
            raise

    async def fencing_producer(self, partition: int) -> AIOKafkaProducer:
        return await start_fencing_producer(self.kafka_options, self.settings, partition)

    async def read_changelogs(self, partitions: list[int]) -> dict[int, dict[bytes, bytes]]:
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
