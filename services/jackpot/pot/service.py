"""The pot service's Kafka edge: exactly-once processing of table events, per input partition.

How exactly-once is achieved with aiokafka (which has no KIP-447 consumer-group fencing):

- the consumer reads jackpot.table-events.v1 with ``isolation_level=read_committed``, no auto
  commit, in one consumer group with the range assignor; a pot group's events are on one partition;
- every owned input partition *p* has its own transactional producer with the id
  ``<prefix>-<p>``. Creating it (InitProducerId) bumps the epoch of that id, which fences any
  zombie that still believes it owns *p* and makes the broker finish or abort the zombie's open
  transaction before we go on: the classic pre-KIP-447 scheme;
- only then are the partition's pot groups restored from the compacted jackpot.pot-state.v1
  (same partition number, read to its last stable offset) and the consumer positioned at the
  committed offset, both now stable;
- each batch of records of *p* is applied in memory and written in one transaction: pot updates,
  awards, ledger entries, dead letters, the new state snapshots and the consumed offsets
  (``send_offsets_to_transaction``). If anything fails the transaction is aborted, the groups are
  rolled back to their committed snapshots and the consumer re-seeks to the committed offset;
- a heartbeat pot update per owned group goes out at least once per second (rule D5), in a
  transaction of its own with the snapshot that keeps the group's update sequence.

A producer fenced by another instance means the partition was lost: it is paused and left alone
until the rebalance takes it away. A producer that cannot even abort is fatal: :meth:`run` raises
and the process should restart (it leaves the group on the way out, in ``finally``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable
from dataclasses import dataclass

import structlog
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, TopicPartition
from aiokafka.coordinator.assignors.range import RangePartitionAssignor
from aiokafka.errors import (
    InvalidProducerEpoch,
    InvalidProducerIdMapping,
    InvalidTxnState,
    KafkaError,
    OutOfOrderSequenceNumber,
    ProducerFenced,
    UnknownProducerId,
)
from aiokafka.structs import ConsumerRecord

from jackpot.domain.mystery import TriggerSource, secure_trigger
from jackpot.platform.kafka import (
    STARTUP_TOPIC_WAIT_SECONDS,
    committed_consumer,
    idempotent_producer,
    stop_client,
)
from jackpot.pot.metrics import PotMetrics
from jackpot.pot.partitions import topic_partitions
from jackpot.pot.processor import (
    SEQUENCE_MARK_PREFIX,
    InputRecord,
    Outputs,
    PotProcessor,
    sequence_mark_key,
    state_key,
)
from jackpot.pot.settings import PotSettings
from jackpot.v1 import pot_pb2

log = structlog.get_logger("jackpot.pot.service")

RESTORE_TIMEOUT_SECONDS = 120.0


class PotServiceError(RuntimeError):
    """The service cannot go on safely; the process should stop and be restarted."""


# The producer's sequence or epoch is out of step with the brokers: only a new producer helps.
PRODUCER_STATE_ERRORS = (
    OutOfOrderSequenceNumber,
    UnknownProducerId,
    InvalidProducerEpoch,
    InvalidProducerIdMapping,
    InvalidTxnState,
)


@dataclass(slots=True)
class OwnedPartition:
    """An input partition this instance owns: its groups, its transactional producer."""

    partition: int
    tp: TopicPartition
    processor: PotProcessor
    producer: AIOKafkaProducer
    halted: bool = False  # fenced or broken: no processing, no heartbeats until revoked


class _Rebalance(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, service: PotService) -> None:
        self._service = service

    async def on_partitions_revoked(self, revoked: Iterable[TopicPartition]) -> None:
        await self._service._on_revoked(list(revoked))

    async def on_partitions_assigned(self, assigned: Iterable[TopicPartition]) -> None:
        await self._service._on_assigned(list(assigned))


class PotService:
    """Consumes table events, applies them, and writes everything in Kafka transactions."""

    def __init__(
        self,
        settings: PotSettings,
        metrics: PotMetrics | None = None,
        *,
        trigger_source: TriggerSource = secure_trigger,
    ) -> None:
        self.settings = settings
        self.metrics = metrics if metrics is not None else PotMetrics()
        self._trigger_source = trigger_source
        self._owned: dict[int, OwnedPartition] = {}
        self._lock = asyncio.Lock()
        self._assignment_epoch = 0
        self._stopping = asyncio.Event()
        self._closed = False
        self._failure: BaseException | None = None
        self._consumer: AIOKafkaConsumer | None = None
        self._restore_consumer: AIOKafkaConsumer | None = None
        self._log = log.bind(instance=settings.instance_id)

    # ----------------------------------------------------------------------------- life

    @property
    def owned_partitions(self) -> list[int]:
        return sorted(p for p, owned in self._owned.items() if not owned.halted)

    def owned_groups(self) -> list[str]:
        return sorted(g for owned in self._owned.values() for g in owned.processor.groups)

    async def run(self) -> None:
        """Process until :meth:`stop` or a fatal error; always leaves the group on the way out."""
        try:
            await self._start()
            while not self._stopping.is_set():
                await self._step()
                if self._failure is not None:
                    raise PotServiceError("the pot service cannot continue") from self._failure
        finally:
            await self._shutdown()

    async def stop(self) -> None:
        """Ask :meth:`run` to finish its current transaction and leave."""
        self._stopping.set()

    async def _start(self) -> None:
        settings = self.settings
        self._restore_consumer = AIOKafkaConsumer(
            **settings.kafka_options(),
            group_id=None,
            isolation_level="read_committed",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            client_id=f"{settings.instance_id}-restore",
        )
        await self._restore_consumer.start()
        options = settings.kafka_options()
        self._consumer = committed_consumer(
            options.pop("bootstrap_servers"),
            group_id=settings.consumer_group,
            partition_assignment_strategy=(RangePartitionAssignor,),
            session_timeout_ms=settings.session_timeout_ms,
            heartbeat_interval_ms=settings.heartbeat_ms,
            max_poll_interval_ms=settings.max_poll_interval_ms,
            client_id=settings.instance_id,
            **options,
        )
        await self._consumer.start()
        await self._check_state_partitions()
        self._consumer.subscribe([settings.table_events_topic], listener=_Rebalance(self))
        self._log.info("pot_service_started", topic=settings.table_events_topic)

    async def _check_state_partitions(self) -> None:
        """The state of input partition p is kept on state partition p: the state topic needs
        at least as many partitions as the input topic."""
        settings = self.settings
        counts = await topic_partitions(
            settings.kafka_options(),
            [settings.table_events_topic, settings.state_topic],
            wait_seconds=STARTUP_TOPIC_WAIT_SECONDS,
        )
        inputs = counts.get(settings.table_events_topic, 0)
        states = counts.get(settings.state_topic, 0)
        if not inputs or not states:
            raise PotServiceError(
                f"topics {settings.table_events_topic} and {settings.state_topic} must exist "
                "(set JACKPOT_CREATE_TOPICS=true or create them)"
            )
        if states < inputs:
            raise PotServiceError(
                f"{settings.state_topic} has {states} partitions, fewer than the {inputs} of "
                f"{settings.table_events_topic}"
            )

    async def _shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stopping.set()
        if self._consumer is not None:
            with contextlib.suppress(Exception):
                await self._consumer.stop()
        for owned in list(self._owned.values()):
            await self._close_partition(owned)
        self._owned.clear()
        if self._restore_consumer is not None:
            with contextlib.suppress(Exception):
                await self._restore_consumer.stop()
        self._log.info("pot_service_stopped")

    # ---------------------------------------------------------------------------- loop

    async def _step(self) -> None:
        consumer = self._consumer
        assert consumer is not None
        epoch = self._assignment_epoch
        batch = await consumer.getmany(
            timeout_ms=self.settings.poll_timeout_ms, max_records=self.settings.max_batch_records
        )
        async with self._lock:
            if epoch != self._assignment_epoch:
                # The assignment changed while these records were fetched: drop them, and
                # re-seek so that none fetched after the new positions is skipped either.
                for current in self._owned.values():
                    consumer.seek(current.tp, current.processor.next_offset)
                return
            work = [
                self._process(owned, records)
                for tp, records in batch.items()
                if (owned := self._owned.get(tp.partition)) is not None and not owned.halted
            ]
            if work:
                await asyncio.gather(*work)
            await self._heartbeats()
            self._update_lag()

    async def _process(self, owned: OwnedPartition, records: list[ConsumerRecord]) -> None:
        processor = owned.processor
        inputs = [
            InputRecord(r.value, r.topic, r.partition, r.offset, r.key)
            for r in records
            if r.offset >= processor.next_offset  # older ones were applied before a re-seek
        ]
        if not inputs:
            return
        try:
            outputs = processor.apply_batch(inputs)
        except Exception as error:
            # A bug (for example rule M2 broken): never commit it, stop this partition loudly.
            processor.rollback()
            self._halt(owned, "processing_failed", error)
            return
        await self._transact(owned, outputs, commit_offsets=True)

    async def _heartbeats(self) -> None:
        interval = self.settings.heartbeat_interval_ms / 1000
        beats = []
        for owned in self._owned.values():
            if owned.halted:
                continue
            due = owned.processor.heartbeat_due(interval)
            if due:
                beats.append(
                    self._transact(owned, owned.processor.heartbeat(due), commit_offsets=False)
                )
        if beats:
            await asyncio.gather(*beats)

    async def _transact(
        self, owned: OwnedPartition, outputs: Outputs, commit_offsets: bool
    ) -> None:
        """Write a batch's outputs (and offsets) in one transaction; undo everything on failure."""
        settings = self.settings
        producer = owned.producer
        processor = owned.processor
        started = time.perf_counter()
        try:
            await producer.begin_transaction()
            # (topic, value, key, partition): keyed by pot group, state pinned to its partition
            records: list[tuple[str, bytes, bytes, int | None]] = [
                *(
                    (topic, m.SerializeToString(), m.pot_group_id.encode(), None)
                    for topic, messages in (
                        (settings.pot_updates_topic, outputs.pot_updates),
                        (settings.awards_topic, outputs.awards),
                        (settings.ledger_topic, outputs.ledger),
                    )
                    for m in messages
                ),
                *(
                    (settings.dead_letter_topic, d.SerializeToString(), d.source.encode(), None)
                    for d in outputs.dead_letters
                ),
                *(
                    (settings.state_topic, snapshot, state_key(g), owned.partition)
                    for g, snapshot in outputs.snapshots.items()
                ),
                *(
                    (settings.state_topic, mark, sequence_mark_key(g), owned.partition)
                    for g, mark in outputs.sequence_marks.items()
                ),
            ]
            sent = [
                await producer.send(topic, value, key=key, partition=partition)
                for topic, value, key, partition in records
            ]
            await asyncio.gather(*sent)
            if commit_offsets:
                await producer.send_offsets_to_transaction(
                    {owned.tp: processor.next_offset}, settings.consumer_group
                )
            await producer.commit_transaction()
        except ProducerFenced as error:
            processor.rollback()
            self._halt(owned, "producer_fenced", error)
            return
        except (KafkaError, OSError, TimeoutError) as error:
            await self._abort(owned, error)
            return
        processor.commit(outputs)
        kind = "batch" if commit_offsets else "heartbeat"
        self.metrics.observe_transaction(time.perf_counter() - started, kind)
        self.metrics.record_outcomes(outputs.applied, outputs.ignored, outputs.rejected)
        for group_id in outputs.snapshots:
            self.metrics.set_balances(group_id, processor.groups[group_id].group.balances)

    async def _abort(self, owned: OwnedPartition, error: BaseException) -> None:
        """Abort the open transaction, undo the batch in memory, re-read from the commit point."""
        self.metrics.transactions_aborted.inc()
        self._log.warning(
            "transaction_aborted", partition=owned.partition, error=repr(error), exc_info=error
        )
        try:
            if isinstance(error, PRODUCER_STATE_ERRORS):
                await self._renew_producer(owned)
            else:
                await owned.producer.abort_transaction()
        except ProducerFenced as fenced:
            owned.processor.rollback()
            self._halt(owned, "producer_fenced", fenced)
            return
        except Exception as abort_error:
            owned.processor.rollback()
            self._halt(owned, "abort_failed", abort_error)
            self._failure = abort_error
            return
        owned.processor.rollback()
        assert self._consumer is not None
        self._consumer.seek(owned.tp, owned.processor.next_offset)
        await asyncio.sleep(self.settings.retry_backoff_ms / 1000)

    async def _renew_producer(self, owned: OwnedPartition) -> None:
        """Replace a producer whose idempotence state the brokers no longer accept.

        After a whole-cluster outage the brokers can answer every later batch of the old
        producer with OutOfOrderSequenceNumber: aborting and retrying on it never ends. A new
        producer with the same transactional id gets a new epoch; the broker aborts whatever the
        old one left open, and nothing it wrote outside a committed transaction is visible.
        """
        await stop_client(owned.producer)
        owned.producer = await self._fencing_producer(owned.partition)
        self._log.warning("producer_renewed", partition=owned.partition)

    def _halt(self, owned: OwnedPartition, why: str, error: BaseException) -> None:
        owned.halted = True
        self.metrics.partitions_halted.set(sum(o.halted for o in self._owned.values()))
        if self._consumer is not None:
            with contextlib.suppress(Exception):
                self._consumer.pause(owned.tp)
        self._log.error(
            "partition_halted",
            partition=owned.partition,
            why=why,
            groups=sorted(owned.processor.groups),
            error=repr(error),
            exc_info=error,
        )

    def _update_lag(self) -> None:
        consumer = self._consumer
        assert consumer is not None
        for owned in self._owned.values():
            stable = consumer.last_stable_offset(owned.tp)
            if stable is not None:
                self.metrics.set_lag(owned.partition, stable - owned.processor.next_offset)

    # ----------------------------------------------------------------------- rebalances

    async def _on_revoked(self, revoked: list[TopicPartition]) -> None:
        async with self._lock:
            self._assignment_epoch += 1
            topic = self.settings.table_events_topic
            for tp in revoked:
                owned = self._owned.pop(tp.partition, None) if tp.topic == topic else None
                if owned is not None:
                    await self._close_partition(owned)
            self.metrics.partitions_owned.set(len(self._owned))
            self.metrics.partitions_halted.set(sum(o.halted for o in self._owned.values()))
            self._log.info("partitions_revoked", partitions=sorted(tp.partition for tp in revoked))

    async def _on_assigned(self, assigned: list[TopicPartition]) -> None:
        async with self._lock:
            self._assignment_epoch += 1
            topic = self.settings.table_events_topic
            fresh = sorted(
                (tp for tp in assigned if tp.topic == topic and tp.partition not in self._owned),
                key=lambda tp: tp.partition,
            )
            if not fresh:
                return
            started = time.perf_counter()
            try:
                await self._take_over(fresh)
            except Exception as error:
                self._failure = error
                self._log.error("assignment_failed", error=repr(error), exc_info=error)
                return
            self.metrics.partitions_owned.set(len(self._owned))
            self._log.info(
                "partitions_assigned",
                partitions=[tp.partition for tp in fresh],
                groups=self.owned_groups(),
                seconds=round(time.perf_counter() - started, 3),
            )

    async def _take_over(self, fresh: list[TopicPartition]) -> None:
        """Fence the previous owners, restore the groups, position the consumer (in that order)."""
        producers = await asyncio.gather(*(self._fencing_producer(tp.partition) for tp in fresh))
        try:
            states = await self._read_states([tp.partition for tp in fresh])
            consumer = self._consumer
            assert consumer is not None
            for tp, producer in zip(fresh, producers, strict=True):
                committed = await consumer.committed(tp)
                snapshots, marks = states.get(tp.partition, ({}, []))
                restored_offsets = [s.input_offset for s, _ in snapshots.values()]
                next_offset = max([committed or 0, *restored_offsets])
                if committed is not None and restored_offsets and max(restored_offsets) > committed:
                    self._log.warning(
                        "state_ahead_of_committed_offset",
                        partition=tp.partition,
                        committed=committed,
                        state_offset=max(restored_offsets),
                    )
                processor = PotProcessor(
                    tp.partition,
                    source=self.settings.source,
                    event_id_window=self.settings.event_id_window,
                    trigger_source=self._trigger_source,
                )
                processor.restore(
                    (data for _, data in snapshots.values()), next_offset, sequence_marks=marks
                )
                if committed is None and not restored_offsets:
                    await consumer.seek_to_beginning(tp)
                else:
                    consumer.seek(tp, next_offset)
                consumer.resume(tp)
                self._owned[tp.partition] = OwnedPartition(tp.partition, tp, processor, producer)
                for group_id, runtime in processor.groups.items():
                    self.metrics.set_balances(group_id, runtime.group.balances)
        except BaseException:
            for producer in producers:
                with contextlib.suppress(Exception):
                    await producer.stop()
            raise

    async def _fencing_producer(self, partition: int) -> AIOKafkaProducer:
        """Start partition's transactional producer; returns once older epochs are fenced."""
        options = self.settings.kafka_options()
        producer = idempotent_producer(
            options.pop("bootstrap_servers"),
            transactional_id=self.settings.transactional_id(partition),
            transaction_timeout_ms=self.settings.transaction_timeout_ms,
            client_id=f"{self.settings.instance_id}-p{partition}",
            **options,
        )
        await producer.start()
        try:
            # begin_transaction waits for InitProducerId, which completes only after the
            # broker finished or aborted the previous epoch's open transaction.
            await producer.begin_transaction()
            await producer.abort_transaction()
        except BaseException:
            with contextlib.suppress(Exception):
                await producer.stop()
            raise
        return producer

    async def _read_states(
        self, partitions: list[int]
    ) -> dict[int, tuple[dict[str, tuple[pot_pb2.PotGroupState, bytes]], list[bytes]]]:
        """Per state partition: the latest committed snapshot of every group, and the latest
        update-sequence mark of every group."""
        consumer = self._restore_consumer
        assert consumer is not None
        tps = [TopicPartition(self.settings.state_topic, p) for p in partitions]
        consumer.assign(tps)
        try:
            await consumer.seek_to_beginning(*tps)
            ends = await consumer.end_offsets(tps)
            latest: dict[int, dict[bytes, bytes]] = {p: {} for p in partitions}
            remaining = {tp for tp in tps if ends[tp] > 0}
            deadline = time.monotonic() + RESTORE_TIMEOUT_SECONDS
            while remaining:
                if time.monotonic() > deadline:
                    raise PotServiceError(f"restoring {sorted(partitions)} took too long")
                batch = await consumer.getmany(*remaining, timeout_ms=500)
                for tp, records in batch.items():
                    for record in records:
                        if record.key is None:
                            continue
                        if record.value is None:
                            latest[tp.partition].pop(record.key, None)
                        else:
                            latest[tp.partition][record.key] = record.value
                for tp in list(remaining):
                    if await consumer.position(tp) >= ends[tp]:
                        remaining.discard(tp)
        finally:
            consumer.assign([])
        restored: dict[int, tuple[dict[str, tuple[pot_pb2.PotGroupState, bytes]], list[bytes]]]
        restored = {}
        for partition, records in latest.items():
            snapshots: dict[str, tuple[pot_pb2.PotGroupState, bytes]] = {}
            marks: list[bytes] = []
            for key, data in records.items():
                state = pot_pb2.PotGroupState.FromString(data)
                if state.input_partition != partition:
                    self._log.warning(
                        "state_on_wrong_partition",
                        pot_group=state.pot_group_id,
                        partition=partition,
                        input_partition=state.input_partition,
                    )
                elif key.startswith(SEQUENCE_MARK_PREFIX):
                    marks.append(data)
                else:
                    snapshots[state.pot_group_id] = (state, data)
            restored[partition] = (snapshots, marks)
        return restored

    async def _close_partition(self, owned: OwnedPartition) -> None:
        with contextlib.suppress(Exception):
            await owned.producer.stop()
        self.metrics.forget_partition(owned.partition)
        for group_id, runtime in owned.processor.groups.items():
            self.metrics.forget_group(group_id, runtime.group.balances)
