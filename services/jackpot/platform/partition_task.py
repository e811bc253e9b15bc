"""One input partition an exactly-once processor owns: its handler, its transactional producer,
the records fetched for it, and the worker that writes its transactions one at a time.

:class:`PartitionTask` is steps 4-6 of :mod:`jackpot.platform.exactly_once` for one partition:
apply a batch, write it in one transaction (every record acknowledged before the commit is asked
for), and on any failure abort, roll the handler back and read again from the commit point; a
producer that cannot abort is renewed and the partition restored again, a fenced one halts it.
The processor fetches, hands each task its records (:meth:`PartitionTask.enqueue`), and decides
ownership; a task asks it for what only it has through :class:`TaskHost`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic

from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.errors import (
    IllegalOperation,
    KafkaError,
    ProducerFenced,
)
from aiokafka.structs import ConsumerRecord

from jackpot.platform.aiokafka_private import fatal_cause, retire_producer
from jackpot.platform.changelog import RestoredStateRefused, resume_record
from jackpot.platform.partition_handler import B, H, OffsetsOnly, OutputRecord
from jackpot.platform.takeover import take_over
from jackpot.platform.task_host import (
    PRODUCER_STATE_ERRORS,
    RECOVERABLE_ERRORS,
    TaskHost,
    deadline,
)
from jackpot.platform.tracing import batch_span, child_span, failed, kafka_headers
from jackpot.platform.transaction import send_and_commit
from jackpot.platform.waiting import wait_at_most


@dataclass(slots=True, eq=False)
class PartitionTask(Generic[H]):
    """An input partition this instance owns: its handler, its transactional producer and the
    pipeline its worker takes batches from."""

    host: TaskHost[H]
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
    tick_due: bool = False  # at a takeover: what the restore found due goes first (exactly_once)
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

    # ------------------------------------------------------------------------ the pipeline

    def enqueue(self, records: list[ConsumerRecord[bytes, bytes]]) -> None:
        """Queue records for the worker, in offset order, each once."""
        fresh = [r for r in records if r.offset >= self.fetched]  # older: before a re-seek
        if not fresh:
            return
        self.pending.extend(fresh)
        self.fetched = fresh[-1].offset + 1
        self.wake.set()

    def reposition(self, offset: int) -> None:
        """Read the partition again from ``offset``: what was queued past it is dropped."""
        self.pending.clear()
        self.fetched = offset
        consumer = self.host.consumer
        if consumer is not None:
            consumer.seek(self.tp, offset)

    def due_tick(self) -> None:
        """A tick for this partition, after the transaction it has in flight."""
        if not self.idle:
            self.tick_due = True
            self.wake.set()

    def start(self) -> None:
        name = f"{self.host.name}-partition-{self.partition}"
        self.worker = asyncio.create_task(self._work(), name=name)

    async def _work(self) -> None:
        """The worker: one transaction at a time, each with everything that arrived during the
        previous one (up to max_batch_records), then the tick if one is due."""
        try:
            while await self._next_work():
                if self.recovering:
                    async with self.lock:
                        await self._recover()
                    continue
                if self.pending:
                    await self._run_batch()
                elif self._group_behind() == 0.0:
                    await self._commit_group()
                if self.tick_due and not self.idle:
                    self.tick_due = False
                    await self._tick()
        except Exception as error:  # a bug: the service must not go on without this partition
            self.host.log.error(
                "partition_worker_failed",
                partition=self.partition,
                error=repr(error),
                exc_info=error,
            )
            self.host.worker_failed(error)

    async def _next_work(self) -> bool:
        """Wait for records, a tick, a recovery, or the group's offsets falling due while they
        are behind; False once the partition is closing or halted."""
        while not (self.pending or self.tick_due or self.recovering):
            if self.closing or self.halted:
                return False
            due = self._group_behind()
            if due == 0.0:
                break
            self.wake.clear()
            if due is None:
                await self.wake.wait()
            else:
                await wait_at_most(self.wake, due)
        if self.pending and not self.recovering:
            await self._linger()
        return not (self.closing or self.halted)

    async def _linger(self) -> None:
        """With batch_linger_ms: wait that long at most for batch_min_records."""
        settings = self.host.settings
        if settings.batch_linger_ms <= 0:
            return
        wanted = min(settings.batch_min_records, settings.max_batch_records)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + settings.batch_linger_ms / 1000
        while len(self.pending) < wanted and not (self.closing or self.halted):
            remaining = deadline - loop.time()
            if remaining <= 0:
                return
            self.wake.clear()
            await wait_at_most(self.wake, remaining)

    async def _run_batch(self) -> None:
        async with self.lock:  # taken under the lock: a change's abort may have re-seeked
            if self.idle:
                return
            size = self.host.settings.max_batch_records
            records = self.pending[:size]
            del self.pending[:size]
            self.host.taken()  # under its bound again: fetched for
            if await self._process(records):  # the handler may leave some: first in the next
                self.pending[:0] = [r for r in records if r.offset >= self.handler.next_offset]

    async def _process(self, records: list[ConsumerRecord[bytes, bytes]]) -> bool:
        handler = self.handler
        fresh = [r for r in records if r.offset >= handler.next_offset]  # older: before a re-seek
        if not fresh:
            return False
        name = self.host.name
        with batch_span(
            f"{name}.process",
            (r.headers for r in fresh),
            **{"messaging.batch.message_count": len(fresh), "jackpot.partition": self.partition},
        ):
            try:
                with child_span(f"{name}.apply"):
                    batch = handler.apply(fresh)
            except Exception as error:
                # A bug (for example rule M2 broken): never commit it, stop this partition loudly.
                handler.rollback()
                self.halt("processing_failed", error)
                return False
            return await self.transact(batch, "batch")

    async def _commit_group(self) -> None:
        """The consumer group's offsets alone, once input stopped coming for a while."""
        async with self.lock:
            if not (self.idle or self.pending):
                await self.transact(OffsetsOnly(), "offsets")

    async def _tick(self) -> None:
        async with self.lock:
            if self.idle:
                return
            batch = self.handler.tick()
            if batch is not None:
                await self.transact(batch, "tick")

    async def change(self, change: Callable[[H], B]) -> B | None:
        """Decide ``change`` on the handler and write its batch in a transaction of its own,
        under the lock held by the caller; None when the transaction failed (undone)."""
        try:
            batch = change(self.handler)
        except BaseException:
            self.handler.rollback()
            raise
        return batch if await self.transact(batch, "change") else None

    # ------------------------------------------------------------------------ transactions

    async def transact(self, batch: B | OffsetsOnly, kind: str) -> bool:
        """Write a batch (with its resume point for input batches) in one transaction; undo on
        failure."""
        started = time.perf_counter()
        with child_span(f"{self.host.name}.transaction", **{"jackpot.batch": kind}):
            return await self._write(batch, kind, started)

    async def _write(self, batch: B | OffsetsOnly, kind: str, started: float) -> bool:
        handler = self.handler
        traced = kafka_headers() or None  # the transaction span's context, if it is sampled
        records = self._records_of(batch, kind)
        to_group = kind == "offsets" or (kind == "batch" and self._group_due_in() == 0.0)
        offsets = {self.tp: handler.next_offset} if to_group else None
        group = self.host.settings.consumer_group
        try:
            async with deadline(self.host.settings):
                await send_and_commit(self.producer, records, offsets, group, traced)
        except ProducerFenced as error:
            failed(error)
            handler.rollback()
            self._fenced(error)
            return False
        except (KafkaError, OSError, TimeoutError, IllegalOperation) as error:
            # IllegalOperation: the transaction ended under us while we sent (the sender heard
            # of a failure first); abort asks the producer why.
            failed(error)
            await self.abort(error)
            return False
        except BaseException as error:  # a bug: never leave the transaction open, then raise
            await asyncio.shield(self.abort(error))
            raise
        if to_group:
            self.group_committed = handler.next_offset
            self.group_committed_at = time.monotonic()
        if not isinstance(batch, OffsetsOnly):
            handler.commit(batch)
        self.host.heard()
        self.host.metrics.transaction_seconds.labels(kind=kind).observe(
            time.perf_counter() - started
        )
        return True

    def _records_of(self, batch: B | OffsetsOnly, kind: str) -> list[OutputRecord]:
        """A transaction's records: the batch's, and for input batches where a takeover
        resumes (in the changelog, with the state)."""
        if kind != "batch":
            return list(batch.records)
        topic, offset = self.host.changelog_topic, self.handler.next_offset
        return [*batch.records, resume_record(topic, self.partition, offset)]

    def _group_due_in(self) -> float:
        """Seconds until the consumer group's offsets may go again (0: now): at most once per
        ``group_commit_interval_ms``. The changelog's offset is what a takeover resumes from;
        the group's serves lag monitoring, tools, and a changelog written before it had one."""
        due_at = self.group_committed_at + self.host.settings.group_commit_interval_ms / 1000
        return max(0.0, due_at - time.monotonic())

    def _group_behind(self) -> float | None:
        """Seconds until the group's offsets are due, if they are behind the input applied
        (None: they are not behind)."""
        if self.group_committed >= self.handler.next_offset:
            return None
        return self._group_due_in()

    # ---------------------------------------------------------------------------- failures

    async def abort(self, error: BaseException) -> None:
        """Abort the open transaction, undo the batch in memory, re-read from the commit point.

        A producer that cannot abort (fatal without a fencing, out of step with the brokers,
        its transaction's end unknown, or the brokers unreachable) is replaced and the
        partition taken over again (:meth:`_renew`); while that cannot be done either, the
        partition is *recovering*: not served, and its worker tries again with a back-off
        (:meth:`_recover`). A fenced producer halts the partition and asks the group to decide
        who owns it (:meth:`_fenced`). Nothing here stops the service: waiting cures these."""
        host = self.host
        host.metrics.transactions_aborted.inc()
        host.log.warning(
            "transaction_aborted", partition=self.partition, error=repr(error), exc_info=error
        )
        self.handler.rollback()
        cause = fatal_cause(self.producer)
        if isinstance(cause, ProducerFenced):
            self._fenced(cause)
            return
        if cause is None and not isinstance(error, PRODUCER_STATE_ERRORS):
            try:
                async with deadline(self.host.settings):
                    await self.producer.abort_transaction()
            except ProducerFenced as fenced:
                self._fenced(fenced)
                return
            except Exception as abort_error:  # any: the producer is replaced
                host.log.warning("abort_failed", partition=self.partition, error=repr(abort_error))
            else:
                self.reposition(self.handler.next_offset)
                await asyncio.sleep(host.settings.retry_backoff_ms / 1000)
                return
        try:
            await self._renew()
        except RECOVERABLE_ERRORS as renew_error:
            host.metrics.takeovers_failed.inc()
            self._start_recovery(renew_error)

    async def _renew(self) -> None:
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
        await retire_producer(self.producer)
        (restored,) = await take_over(self.host, [self.tp], replacing=self.handler.close)
        self.producer, self.handler = restored.producer, restored.handler
        self.group_committed, self.group_committed_at = restored.committed or 0, 0.0
        if restored.refused:  # checked as at a takeover
            self.halt("restored_state_refused", RestoredStateRefused(restored.refused))
            return
        start = restored.start
        self.reposition(0 if start is None else start)
        self.host.log.warning("producer_renewed", partition=self.partition, restored_from=start)

    def _start_recovery(self, error: BaseException) -> None:
        """The partition cannot be taken over again now: not served until its worker can."""
        self.recovering = True
        self.pending.clear()  # read again from the commit point once recovered
        self.wake.set()
        self.host.log.error(
            "partition_recovering",
            partition=self.partition,
            error=repr(error),
            retry_in_ms=self.host.settings.retry_backoff_ms,
        )
        self.host.ownership_changed()

    async def _recover(self) -> None:
        """Take the partition over again until it works (the worker, under the lock), the
        pause doubling from retry_backoff_ms to recovery_backoff_max_ms; returns early when the
        partition is revoked or the processor stops."""
        host = self.host
        settings = host.settings
        pause = settings.retry_backoff_ms / 1000
        attempts = 0
        while self.recovering and not (self.closing or self.halted):
            self.wake.clear()
            await wait_at_most(self.wake, pause)
            if self.closing or self.halted:
                return
            attempts += 1
            try:
                await self._renew()
            except RECOVERABLE_ERRORS as error:
                host.metrics.takeovers_failed.inc()
                pause = min(pause * 2, settings.recovery_backoff_max_ms / 1000)
                host.log.warning(
                    "partition_recovery_failed",
                    partition=self.partition,
                    attempts=attempts,
                    error=repr(error),
                    retry_in_ms=round(pause * 1000),
                )
                continue
            self.recovering = False
            host.log.warning("partition_recovered", partition=self.partition, attempts=attempts)
            host.ownership_changed()

    def _fenced(self, error: BaseException) -> None:
        """Another producer with this partition's transactional id has a newer epoch: a new
        owner, or the transaction coordinator itself when this one's transaction outlived
        transaction_timeout_ms (seen in a whole-cluster outage). Halt, and ask the group: a
        rejoin revokes the partition, and gives it back (fenced and restored anew) only if
        this instance still owns it; a zombie loses it (Kafka Streams' TaskMigratedException
        does the same)."""
        self.halt("producer_fenced", error)
        self.host.request_rejoin()

    def halt(self, why: str, error: BaseException) -> None:
        """Process nothing more until revoked: the handler forgets what it holds."""
        self.halted = True
        self.why_halted = why
        self.recovering = False
        self.pending.clear()  # its worker ends; the next owner reads them again
        self.wake.set()
        self.handler.close()  # what it holds is no longer ours to serve
        consumer = self.host.consumer
        if consumer is not None:
            with contextlib.suppress(Exception):
                consumer.pause(self.tp)
        self.host.log.error(
            "partition_halted",
            partition=self.partition,
            why=why,
            error=repr(error),
            exc_info=error,
        )
        self.host.ownership_changed()

    async def quiesce(self) -> None:
        """End the worker after its transaction in flight, and wait for a change being
        written; the records it had not taken are dropped."""
        self.closing = True
        self.pending.clear()
        self.wake.set()
        if self.worker is not None:
            await asyncio.wait([self.worker])  # it reports its own failures
        async with self.lock:  # a submitted change in flight
            pass

    async def close(self) -> None:
        await retire_producer(self.producer)
        self.host.metrics.forget_partition(self.partition)
        self.handler.close()
