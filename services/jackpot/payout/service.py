"""The payout service's core: one payout per award, exactly once, and its transitions.

Awards go through the one exactly-once processor (``jackpot.platform.exactly_once``), partitioned
like the pot: awards are keyed by pot group, so one awards partition *p* owns an award, and every
record of its payout is written to jackpot.payouts.v1 partition *p* (key award id, compacted). An
instance given *p* first fences *p*'s previous owner (transactional id ``<prefix>-<p>``), then
restores *p*'s payouts from the payouts topic to its end, then consumes: nothing a stalled old
instance does can commit behind the restore's back, so the book never shows a paid prize as open.
One instance owns every partition and the others stand by
(:class:`jackpot.platform.assignors.SingleOwnerAssignor`): a dealer terminal can then always find
all of its table's prizes on one instance. An instance that owns nothing, or was fenced (a zombie
that froze and came back), steps aside: it serves no payouts, ends its terminals' streams and
refuses every call with :class:`NotServedHere`, naming the owner the group told it of.

Each batch of awards becomes payouts written, with a ledger entry per transition and the consumed
offsets, in one transaction; an award id already known is never paid out again. Supervisor and
terminal transitions are submitted to the processor: decided and written under its lock, on the
producer of the award's partition, so two confirmations of one payment cannot both pass.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

import structlog
from aiokafka.structs import ConsumerRecord
from google.protobuf.message import DecodeError

from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.payout import OPEN, Payout, PayoutState, approve, order_payout, pay, void
from jackpot.payout import metrics
from jackpot.payout.codec import from_proto, ledger_entry, to_proto
from jackpot.payout.settings import PayoutSettings
from jackpot.platform.assignors import SingleOwnerAssignor
from jackpot.platform.deadletter import dead_letter
from jackpot.platform.exactly_once import (
    ExactlyOnceProcessor,
    NotOwned,
    OutputRecord,
    ProcessorConfig,
)
from jackpot.platform.metrics import ProcessorMetrics
from jackpot.v1 import payout_pb2, pot_pb2

log = structlog.get_logger("jackpot.payout")
Listener = Callable[[str], None]


class NotServedHere(RuntimeError):
    """This instance serves no payouts now (a standby, or fenced): go to ``owner`` (may be "")."""

    def __init__(self, owner: str) -> None:
        where = f"the owner is {owner}" if owner else "the owner is not known yet"
        super().__init__(f"this payout instance serves no payouts now ({where}); reconnect")
        self.owner = owner


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
    """The payouts of the partitions this instance owns, and who listens to a table's changes."""

    def __init__(self) -> None:
        self.payouts: dict[str, Payout] = {}
        self.partition_of: dict[str, int] = {}
        self._listeners: list[Listener] = []
        self._terminals: Counter[str] = Counter()  # connected dealer terminals by table

    def put(self, partition: int, payout: Payout) -> None:
        self.payouts[payout.award_id] = payout
        self.partition_of[payout.award_id] = partition
        self._notify({payout.table_id})

    def forget(self, partition: int) -> None:
        """The partition moved to another instance: its payouts are no longer ours to show."""
        gone = [a for a, p in self.partition_of.items() if p == partition]
        tables = {self.payouts[a].table_id for a in gone}
        for award_id in gone:
            del self.payouts[award_id]
            del self.partition_of[award_id]
        self._notify(tables)

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def attend(self, table_id: str) -> None:
        """A dealer terminal of ``table_id`` is connected and shown its payouts."""
        self._terminals[table_id] += 1
        self.refresh_metrics()

    def leave(self, table_id: str) -> None:
        self._terminals[table_id] -= 1
        if self._terminals[table_id] <= 0:
            del self._terminals[table_id]
        self.refresh_metrics()

    def unsubscribe(self, listener: Listener) -> None:
        self._listeners.remove(listener)

    def open_for(self, table_id: str) -> list[Payout]:
        """A table's payouts still to pay, in payment order (rule S5)."""
        return sorted(
            (p for p in self.payouts.values() if p.table_id == table_id and p.state in OPEN),
            key=lambda p: (p.order, p.award_id),
        )

    def listing(self, pending_only: bool) -> list[Payout]:
        chosen = (p for p in self.payouts.values() if not pending_only or p.state in OPEN)
        return sorted(chosen, key=lambda p: (p.order, p.award_id))

    def _notify(self, tables: set[str]) -> None:
        for table_id in tables:
            for listener in list(self._listeners):
                listener(table_id)
        self.refresh_metrics()

    def refresh_metrics(self) -> None:
        pending = [p for p in self.payouts.values() if p.state in OPEN]
        metrics.PENDING.set(len(pending))
        oldest = min((p.ordered_at_ns for p in pending), default=None)
        metrics.OLDEST_PENDING.set(0 if oldest is None else (time.time_ns() - oldest) / 1e9)
        # Rule D3: a prize is payable only where its table's terminal shows it.
        # Tables with a terminal connected show 0: the series exists while all is well.
        unattended = Counter(p.table_id for p in pending if p.table_id not in self._terminals)
        metrics.UNATTENDED.clear()
        for table_id in {*self._terminals, *unattended}:
            metrics.UNATTENDED.labels(table=table_id).set(unattended[table_id])


@dataclass(slots=True)
class PayoutBatch:
    """Payouts created or moved, and the records one transaction writes for them."""

    payouts: list[Payout] = field(default_factory=list)
    records: list[OutputRecord] = field(default_factory=list)
    duplicates: int = 0


class PayoutPartition:
    """The payouts of one awards partition: the pure handler the processor drives."""

    def __init__(self, partition: int, settings: PayoutSettings, book: PayoutBook) -> None:
        self.partition = partition
        self.settings = settings
        self.book = book
        self.payouts: dict[str, Payout] = {}
        self.next_order = 1
        self._next_offset = 0
        self._committed_offset = 0

    @property
    def next_offset(self) -> int:
        return self._next_offset

    def restore(self, changelog: Mapping[bytes, bytes], committed: int | None) -> int | None:
        """Every payout of the partition at its latest state; consume from the committed offset."""
        for key, value in changelog.items():
            try:
                payout = from_proto(payout_pb2.Payout.FromString(value))
            except (DecodeError, ValueError):
                log.error("payout_record_unreadable", partition=self.partition, key=key)
                continue
            self._keep(payout)
        self._next_offset = self._committed_offset = committed or 0
        log.info("payouts_restored", partition=self.partition, payouts=len(self.payouts))
        return committed

    def apply(self, records: Sequence[ConsumerRecord[bytes, bytes]]) -> PayoutBatch:
        """One payout per award id never seen; a refused award becomes a dead letter."""
        batch = PayoutBatch()
        seen: set[str] = set()
        now = time.time_ns()
        order = self.next_order
        for record in records:
            self._next_offset = record.offset + 1
            try:
                award = _award(record.value)
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
                batch.records.append(
                    OutputRecord(
                        self.settings.dead_letter_topic, letter.SerializeToString(), b"payout"
                    )
                )
                continue
            if award.award_id in self.payouts or award.award_id in seen:
                batch.duplicates += 1
                continue
            seen.add(award.award_id)
            self._add(batch, self._order(award, order, now))
            order += 1
        return batch

    def transition(self, award_id: str, change: Callable[[Payout], Payout]) -> PayoutBatch:
        """A batch moving one payout; ``change`` raises DomainError to refuse."""
        current = self.payouts.get(award_id)
        if current is None:
            raise DomainError(Reason.INVALID_STATE, f"no payout for award {award_id!r}")
        batch = PayoutBatch()
        self._add(batch, change(current))
        return batch

    def tick(self) -> None:
        return None

    def commit(self, batch: PayoutBatch) -> None:
        """Committed: now it is true."""
        self._committed_offset = self._next_offset
        metrics.DUPLICATE_AWARDS.inc(batch.duplicates)
        for payout in batch.payouts:
            self._keep(payout)
            metrics.TRANSITIONS.labels(payout.state.value).inc()
            if payout.state is PayoutState.PAID:
                metrics.PAID.inc()
            log.info(
                "payout_transition",
                award=payout.award_id,
                table=payout.table_id,
                round=payout.round_id,
                pot_group=payout.pot_group_id,
                partition=self.partition,
                state=payout.state.value,
                by=payout.history[-1].by,
            )

    def rollback(self) -> None:
        # Payouts change only in commit: going back is going back to the committed offset.
        self._next_offset = self._committed_offset

    def close(self) -> None:
        self.book.forget(self.partition)

    def _keep(self, payout: Payout) -> None:
        self.payouts[payout.award_id] = payout
        self.next_order = max(self.next_order, payout.order + 1)
        self.book.put(self.partition, payout)

    def _order(self, award: pot_pb2.Award, order: int, now: int) -> Payout:
        return order_payout(
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

    def _add(self, batch: PayoutBatch, payout: Payout) -> None:
        """The payout's record pinned to this partition (its changelog), and its ledger entry."""
        batch.payouts.append(payout)
        batch.records.append(
            OutputRecord(
                self.settings.payouts_topic,
                to_proto(payout).SerializeToString(),
                payout.award_id.encode(),
                self.partition,
            )
        )
        batch.records.append(
            OutputRecord(
                self.settings.ledger_topic,
                ledger_entry(payout).SerializeToString(),
                payout.pot_group_id.encode(),
            )
        )


def processor_config(settings: PayoutSettings) -> ProcessorConfig:
    """The exactly-once processor's configuration from the payout's settings."""
    return ProcessorConfig.of(
        "payout",
        settings,
        input_topic=settings.awards_topic,
        changelog_topic=settings.payouts_topic,
    )


class PayoutService:
    """The payout book of the owned partitions and the transitions terminals and supervisors ask."""

    def __init__(
        self,
        settings: PayoutSettings,
        book: PayoutBook | None = None,
        processor_metrics: ProcessorMetrics | None = None,
    ) -> None:
        self.settings = settings
        self.book = book or PayoutBook()
        self.assignor = SingleOwnerAssignor(settings.advertised_address or settings.grpc_address)
        self.serving = False
        self._flipped = asyncio.Event()  # set (and replaced) each time `serving` changes
        self.processor: ExactlyOnceProcessor[PayoutPartition] = ExactlyOnceProcessor(
            processor_config(settings),
            lambda p: PayoutPartition(p, settings, self.book),
            processor_metrics or ProcessorMetrics(),
            on_ownership=self._on_ownership,
            assignor=self.assignor,
        )

    def advertise(self, address: str) -> None:
        """Where this instance's clients reach it (known once its gRPC port is bound)."""
        self.assignor.address = self.settings.advertised_address or address

    @property
    def owner(self) -> str:
        """The owner's address as the group last told it ("" if this is the owner or unknown)."""
        owner = self.assignor.owner_address
        return "" if owner == self.assignor.address else owner

    def _on_ownership(self, owned: list[int]) -> None:
        serving = bool(owned) and not self.processor.halted_partitions
        log.info(
            "payout_partitions",
            owned=owned,
            halted=self.processor.halted_partitions,
            serving=serving,
            owner="this instance" if serving else (self.owner or "unknown"),
            payouts=len(self.book.payouts),
        )
        if serving != self.serving:
            self.serving = serving
            metrics.SERVING.set(1 if serving else 0)
            flipped, self._flipped = self._flipped, asyncio.Event()
            flipped.set()

    async def serving_changed_wait(self) -> None:
        """Returns the next time this instance starts or stops serving the payouts."""
        await self._flipped.wait()

    def require_serving(self) -> None:
        """Raise :class:`NotServedHere` unless this instance owns the payouts, unfenced."""
        if not self.serving:
            raise NotServedHere(self.owner)

    async def report_serving(self, report: Callable[[bool], Awaitable[None]]) -> None:
        """Tell ``report`` (the health service) each time this instance starts or stops serving."""
        while True:
            flipped = self._flipped  # taken first: a change while reporting is not missed
            await report(self.serving)
            await flipped.wait()

    async def run(self) -> None:
        """Fence, restore, consume, transact until :meth:`stop` (ProcessorError if it cannot)."""
        await self.processor.run()

    async def stop(self) -> None:
        await self.processor.stop()

    async def _transition(self, award_id: str, change: Callable[[Payout], Payout]) -> Payout:
        self.require_serving()
        partition = self.book.partition_of.get(award_id)
        if partition is None:
            raise DomainError(Reason.INVALID_STATE, f"no payout for award {award_id!r}")
        try:
            batch = await self.processor.submit(
                partition, lambda handler: handler.transition(award_id, change)
            )
        except NotOwned:
            raise NotServedHere(self.owner) from None
        return batch.payouts[-1]

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
