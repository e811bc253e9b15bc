"""The payout service's core: one payout per award, exactly once, and its transitions.

Awards are consumed read_committed from the awards topic by one consumer group. Each batch is
turned into payouts and written, with a ledger entry per transition and the consumed offsets, in
one Kafka transaction; a payout already known for an award id is never created again (the state is
restored from the compacted payouts topic before consuming). Supervisor and terminal transitions
go through the same transactional producer. The single transactional id fences an old instance
(a zombie) the moment a new one starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

import structlog
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from google.protobuf.message import DecodeError

from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.payout import OPEN, Payout, PayoutState, approve, order_payout, pay, void
from jackpot.payout import metrics
from jackpot.payout.codec import from_proto, ledger_entry, to_proto
from jackpot.payout.settings import PayoutSettings
from jackpot.platform.deadletter import dead_letter
from jackpot.platform.kafka import committed_consumer, transactional_producer
from jackpot.v1 import payout_pb2, pot_pb2

log = structlog.get_logger("jackpot.payout")
Listener = Callable[[str], None]


def _award(value: bytes | None) -> pot_pb2.Award:
    """A decodable award with an id and a non-negative amount, or a refusal naming why."""
    try:
        award = pot_pb2.Award.FromString(value or b"")
    except DecodeError:
        raise DomainError(Reason.MALFORMED, "not an Award") from None
    if not award.award_id:
        raise DomainError(Reason.MALFORMED, "the award has no award_id")
    if award.amount < 0:
        raise DomainError(
            Reason.MALFORMED, f"award {award.award_id} has a negative amount {award.amount}"
        )
    return award


class PayoutBook:
    """All payouts by award id, and who wants to hear about a table's changes."""

    def __init__(self) -> None:
        self.payouts: dict[str, Payout] = {}
        self._listeners: list[Listener] = []
        self.next_order = 1

    def put(self, payout: Payout) -> None:
        self.payouts[payout.award_id] = payout
        self.next_order = max(self.next_order, payout.order + 1)
        for listener in list(self._listeners):
            listener(payout.table_id)
        self.refresh_metrics()

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def unsubscribe(self, listener: Listener) -> None:
        self._listeners.remove(listener)

    def open_for(self, table_id: str) -> list[Payout]:
        return sorted(
            (p for p in self.payouts.values() if p.table_id == table_id and p.state in OPEN),
            key=lambda p: p.order,
        )

    def listing(self, pending_only: bool) -> list[Payout]:
        chosen = (p for p in self.payouts.values() if not pending_only or p.state in OPEN)
        return sorted(chosen, key=lambda p: p.order)

    def refresh_metrics(self) -> None:
        pending = [p for p in self.payouts.values() if p.state in OPEN]
        metrics.PENDING.set(len(pending))
        oldest = min((p.ordered_at_ns for p in pending), default=None)
        metrics.OLDEST_PENDING.set(0 if oldest is None else (time.time_ns() - oldest) / 1e9)


class PayoutService:
    def __init__(self, settings: PayoutSettings, book: PayoutBook | None = None) -> None:
        self.settings = settings
        self.book = book or PayoutBook()
        self._producer: AIOKafkaProducer | None = None
        self._lock = asyncio.Lock()  # one transaction at a time on the one producer
        self._task: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()

    async def start(self) -> None:
        await self.restore()
        self._producer = transactional_producer(
            self.settings.bootstrap_servers,
            self.settings.transactional_id,
            **self.settings.kafka_security.client_options(),
        )
        await self._producer.start()
        self._task = asyncio.create_task(self._consume(), name="payout-consumer")
        self.ready.set()
        log.info("payout_started", payouts=len(self.book.payouts))

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._producer is not None:
            await self._producer.stop()

    async def restore(self) -> None:
        """Read the compacted payouts topic to its end: the latest state per award id."""
        consumer = committed_consumer(
            self.settings.bootstrap_servers,
            self.settings.payouts_topic,
            group_id=None,
            **self.settings.kafka_security.client_options(),
        )
        await consumer.start()
        try:
            partitions = consumer.assignment()
            end = await consumer.end_offsets(list(partitions))

            async def behind() -> bool:
                return any([await consumer.position(tp) < end[tp] for tp in partitions])

            while await behind():
                batch = await consumer.getmany(timeout_ms=1000)
                for records in batch.values():
                    for record in records:
                        if record.value is None:
                            continue
                        try:
                            self.book.put(from_proto(payout_pb2.Payout.FromString(record.value)))
                        except (DecodeError, ValueError):
                            log.error("payout_record_unreadable", offset=record.offset)
        finally:
            await consumer.stop()

    async def _consume(self) -> None:
        consumer = AIOKafkaConsumer(
            self.settings.awards_topic,
            bootstrap_servers=self.settings.bootstrap_servers,
            group_id=self.settings.consumer_group,
            isolation_level="read_committed",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            **self.settings.kafka_security.client_options(),
        )
        await consumer.start()
        try:
            while True:
                batch = await consumer.getmany(timeout_ms=500, max_records=200)
                if not batch:
                    continue
                await self._apply_batch(batch)
                for tp in batch:
                    highwater = consumer.highwater(tp)
                    if highwater is not None:
                        lag = highwater - await consumer.position(tp)
                        metrics.CONSUMER_LAG.labels(str(tp.partition)).set(lag)
        finally:
            await consumer.stop()

    async def _apply_batch(self, batch: dict[TopicPartition, list]) -> None:  # type: ignore[type-arg]
        async with self._lock:
            await self._apply_batch_locked(batch)

    async def _apply_batch_locked(self, batch: dict[TopicPartition, list]) -> None:  # type: ignore[type-arg]
        created: list[Payout] = []
        letters: list[bytes] = []
        now = time.time_ns()
        order = self.book.next_order
        for records in batch.values():
            for record in records:
                try:
                    award = _award(record.value)
                    if award.award_id in self.book.payouts or any(
                        p.award_id == award.award_id for p in created
                    ):
                        metrics.DUPLICATE_AWARDS.inc()
                        continue
                    created.append(
                        order_payout(
                            award_id=award.award_id,
                            pot_group_id=award.pot_group_id,
                            table_id=award.table_id,
                            round_id=award.round_id,
                            seat=award.seat,
                            prize=award.prize,
                            amount=award.amount,
                            cards=tuple(award.cards),
                            order=order,
                            approval_threshold=self.settings.approval_threshold,
                            at_ns=now,
                        )
                    )
                    order += 1
                except DomainError as refused:
                    log.error("award_refused", reason=refused.reason.value, detail=refused.detail)
                    letter = dead_letter(
                        "payout",
                        refused.reason,
                        refused.detail,
                        record.value or b"",
                        topic=record.topic,
                        partition=record.partition,
                        offset=record.offset,
                    )
                    letters.append(letter.SerializeToString())
        offsets = {tp: records[-1].offset + 1 for tp, records in batch.items()}
        await self._commit(created, offsets, letters)

    async def _commit(
        self,
        payouts: list[Payout],
        offsets: dict[TopicPartition, int] | None = None,
        dead_letters: list[bytes] | None = None,
    ) -> None:
        """Write payouts and their ledger entries (and consumed offsets) in one transaction.

        The caller holds ``_lock``: a transition is decided and written as one step, so two
        confirmations of the same payment can never both pass the "not yet paid" check.
        """
        producer = self._producer
        assert producer is not None
        assert self._lock.locked()
        async with producer.transaction():
            for payout in payouts:
                await producer.send(
                    self.settings.payouts_topic,
                    to_proto(payout).SerializeToString(),
                    key=payout.award_id.encode(),
                )
                await producer.send(
                    self.settings.ledger_topic,
                    ledger_entry(payout).SerializeToString(),
                    key=payout.pot_group_id.encode(),
                )
            for letter in dead_letters or ():
                await producer.send(self.settings.dead_letter_topic, letter, key=b"payout")
            if offsets:
                await producer.send_offsets_to_transaction(offsets, self.settings.consumer_group)
        for payout in payouts:  # committed: now it is true
            self.book.put(payout)
            metrics.TRANSITIONS.labels(payout.state.value).inc()
            if payout.state is PayoutState.PAID:
                metrics.PAID.inc()
            log.info(
                "payout_transition",
                award=payout.award_id,
                table=payout.table_id,
                round=payout.round_id,
                pot_group=payout.pot_group_id,
                state=payout.state.value,
                by=payout.history[-1].by,
            )

    def _get(self, award_id: str) -> Payout:
        payout = self.book.payouts.get(award_id)
        if payout is None:
            raise DomainError(Reason.INVALID_STATE, f"no payout for award {award_id!r}")
        return payout

    async def _transition(self, award_id: str, change: Callable[[Payout], Payout]) -> Payout:
        async with self._lock:
            payout = change(self._get(award_id))
            await self._commit([payout])
            return payout

    async def approve(self, award_id: str, supervisor: str, note: str = "") -> Payout:
        return await self._transition(
            award_id, lambda p: approve(p, supervisor, time.time_ns(), note)
        )

    async def void(self, award_id: str, supervisor: str, reason: str) -> Payout:
        return await self._transition(
            award_id, lambda p: void(p, supervisor, reason, time.time_ns())
        )

    async def paid(self, table_id: str, award_id: str, dealer: str) -> Payout:
        def confirm(current: Payout) -> Payout:
            if current.table_id != table_id:
                raise DomainError(
                    Reason.TABLE_MISMATCH,
                    f"award {award_id} is paid at {current.table_id}, not at {table_id}",
                )
            return pay(current, dealer, time.time_ns())

        return await self._transition(award_id, confirm)
