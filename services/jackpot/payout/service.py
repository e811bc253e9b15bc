"""The payout service's core: one payout per award, exactly once, and its transitions.

Awards go through the one exactly-once processor (``jackpot.platform.exactly_once``), partitioned
like the pot: awards are keyed by pot group, so one awards partition *p* owns an award, and every
record of its payout is written to jackpot.payouts.v1 partition *p* (key award id, compacted, the
history) and, in the same transaction, to jackpot.open-payouts.v1 partition *p*: the payout while
it is open (and for ``settled_kept_seconds`` after it is paid or voided), then a tombstone, and
the partition's :class:`~jackpot.v1.payout_pb2.OpenPayoutsMark` (key ``#mark``). An instance
given *p* first fences *p*'s previous owner (transactional id ``<prefix>-<p>``), then restores
*p* from the open-payouts topic (what is open: settled payouts cost a start nothing), catches up
from the payouts partition after the mark's checkpoint (:meth:`PayoutPartition.verify_restored`;
the whole partition once, on the first start of a deployment that had no open payouts), then
consumes from the mark's awards offset or the group's, whichever is further: nothing a stalled
old instance does can commit behind the restore's back, so the book never shows a paid prize as
open.
One instance owns every partition and the others stand by
(:class:`jackpot.platform.assignors.SingleOwnerAssignor`): a dealer terminal can then always find
all of its table's prizes on one instance. An instance that owns nothing, or was fenced (a zombie
that froze and came back), steps aside: it serves no payouts, ends its terminals' streams and
refuses every call with :class:`NotServedHere`, naming the owner the group told it of.

Each batch of awards becomes payouts written, with a ledger entry per transition, the mark and the
consumed offsets, in one transaction; an award id in the book (open, or settled within the keep
time) is never paid out again, and an award consumed is never read again: its offset is committed
with its payout, to the group and to the mark alike, so neither a restart nor a reset or expired
group offset re-reads a settled award. Supervisor and terminal transitions are submitted to the
processor: decided and written under its lock, on the producer of the award's partition, so two
confirmations of one payment cannot both pass.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from functools import partial

import structlog

from jackpot.clients.payout import OWNER_METADATA_KEY
from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.payout import (
    Payout,
    approve,
    pay_at_table,
    pay_to_wallet,
    void,
)
from jackpot.payout import metrics
from jackpot.payout.payout_book import PayoutBook
from jackpot.payout.payout_partition import TICK_SECONDS, PayoutBatch, PayoutPartition
from jackpot.payout.settings import PayoutSettings
from jackpot.platform.assignors import SingleOwnerAssignor
from jackpot.platform.exactly_once import ExactlyOnceProcessor
from jackpot.platform.grpc_edge import Unavailable
from jackpot.platform.kafka import KafkaConnection, ensure_topics, topic_partitions
from jackpot.platform.metrics import ProcessorMetrics
from jackpot.platform.processor_errors import NotOwned
from jackpot.platform.serving import ServingFlag
from jackpot.topics import OPEN_PAYOUTS, renamed

log = structlog.get_logger("jackpot.payout")


class NotServedHere(Unavailable):
    """This instance serves no payouts now (a standby, or fenced): go to ``owner`` (may be ""),
    named to the client in the trailing metadata ``jackpot-payout-owner``."""

    def __init__(self, owner: str) -> None:
        where = f"the owner is {owner}" if owner else "the owner is not known yet"
        super().__init__(
            f"this payout instance serves no payouts now ({where}); reconnect",
            ((OWNER_METADATA_KEY, owner),) if owner else (),
        )
        self.owner = owner


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
        # O9: a studio prize's wallet credit and its void exclude each other. The award ids whose
        # credit is being made (or answered and not PAID yet: jackpot.payout.wallet_payer), and
        # those whose void is being written; each is decided on the event loop, without a wait
        # between the look at the other set and its own mark.
        self.crediting: set[str] = set()
        self.voiding: set[str] = set()
        self.assignor = SingleOwnerAssignor(settings.advertised_address or settings.grpc_address)
        self.serving_flag = ServingFlag()
        self.processor: ExactlyOnceProcessor[PayoutPartition] = ExactlyOnceProcessor(
            "payout",
            settings.processor,
            settings.kafka_options(),
            input_topic=settings.awards_topic,
            changelog_topic=settings.open_payouts_topic,
            handler_factory=lambda p: PayoutPartition(p, settings, self.book),
            metrics=processor_metrics or ProcessorMetrics(),
            tick_seconds=TICK_SECONDS,
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

    @property
    def serving(self) -> bool:
        """This instance owns the payouts, unfenced, and can write them."""
        return self.serving_flag.serving

    def _on_ownership(self, owned: list[int]) -> None:
        processor = self.processor
        serving = bool(owned) and not processor.halted_partitions and processor.writable
        log.info(
            "payout_partitions",
            owned=owned,
            halted=processor.halted_partitions,
            recovering=processor.recovering_partitions,
            serving=serving,
            owner="this instance" if serving else (self.owner or "unknown"),
            payouts=len(self.book.payouts),
        )
        if self.serving_flag.set(serving):
            metrics.SERVING.set(1 if serving else 0)

    async def serving_changed_wait(self) -> None:
        """Returns the next time this instance starts or stops serving the payouts."""
        await self.serving_flag.changed()

    def require_serving(self) -> None:
        """Raise :class:`NotServedHere` unless this instance owns the payouts, unfenced."""
        if not self.serving:
            raise NotServedHere(self.owner)

    async def report_serving(self, report: Callable[[bool], Awaitable[None]]) -> None:
        """Tell ``report`` (the health service) each time this instance starts or stops serving."""
        await self.serving_flag.report(report)

    async def run(self) -> None:
        """Fence, restore, consume, transact until :meth:`stop` (ProcessorError if it cannot);
        meanwhile checkpoint the owned partitions (:meth:`checkpoints`)."""
        await self._ensure_open_payouts_topic()
        checkpoints = asyncio.create_task(self.checkpoints())
        try:
            await self.processor.run()
        finally:
            checkpoints.cancel()
            await asyncio.gather(checkpoints, return_exceptions=True)

    async def _ensure_open_payouts_topic(self) -> None:
        """With ``create_topics``: the open-payouts topic, partitioned as the payouts topic (its
        records are pinned to the same partition numbers)."""
        settings = self.settings
        if not settings.create_topics:
            return
        topics = [settings.payouts_topic, settings.open_payouts_topic]
        counts = await topic_partitions(settings.kafka_options(), topics)
        if settings.open_payouts_topic in counts:
            return
        partitions = counts.get(settings.payouts_topic, OPEN_PAYOUTS.partitions)
        await ensure_topics(
            settings.bootstrap_servers,
            [renamed(OPEN_PAYOUTS, settings.open_payouts_topic, partitions)],
            **settings.kafka_security.client_options(),
        )

    async def checkpoints(self) -> None:
        """Every ``checkpoint_seconds``: the end offsets of the owned payouts partitions, read
        now, are reflected on the open-payouts topic (every payouts record of a caught-up owner
        is written with its open one), so each partition's next mark says so, and a takeover
        reads only the payouts written since (:meth:`PayoutPartition.verify_restored`)."""
        connection = KafkaConnection.of(self.settings)
        while True:
            await asyncio.sleep(self.settings.checkpoint_seconds)
            owned = self.processor.owned_partitions
            if not owned:
                continue
            try:
                async with connection.reader(self.settings.payouts_topic) as reader:
                    _, ends = await reader.bounds(owned)
            except Exception as error:  # the next period tries again; a takeover reads more
                log.warning("payouts_checkpoint_failed", error=repr(error))
                continue
            for partition, end in ends.items():
                handler = self.processor.handler(partition)
                if handler is not None:
                    handler.reflected_to(end)

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
        """A supervisor's void; refused while the player's wallet is being credited the prize
        (it may be credited already: it ends PAID, or payable again if the wallet refuses)."""

        def voided(payout: Payout) -> Payout:
            if award_id in self.crediting:
                raise DomainError(
                    Reason.INVALID_STATE,
                    f"payout {award_id} is being credited to its player's wallet now: it will "
                    "be PAID, or payable again if the wallet refuses it (rule O9)",
                )
            self.voiding.add(award_id)  # the wallet payer leaves it until this is written
            return void(payout, supervisor, reason, time.time_ns())

        try:
            return await self._transition(award_id, voided)
        finally:
            self.voiding.discard(award_id)

    async def paid(self, table_id: str, award_id: str, dealer: str) -> Payout:
        """The table's dealer terminal confirmed the payment (D3)."""
        return await self._transition(
            award_id, lambda p: pay_at_table(p, table_id, dealer, time.time_ns())
        )

    async def paid_to_wallets(self, confirmed: Mapping[str, str]) -> list[Payout]:
        """Studio prizes their players' wallets confirmed (award id -> the wallet's transaction)
        are PAID: one transaction per partition for all of them (O9); those paid."""
        self.require_serving()
        by_partition: dict[int, dict[str, Callable[[Payout], Payout]]] = {}
        now = time.time_ns()
        for award_id, transaction in confirmed.items():
            partition = self.book.partition_of.get(award_id)
            if partition is not None:
                change = partial(pay_to_wallet, by=f"wallet {transaction}", at_ns=now)
                by_partition.setdefault(partition, {})[award_id] = change
        paid: list[Payout] = []
        for partition, changes in by_partition.items():
            try:
                batch = await self.processor.submit(partition, _transitions(changes))
            except NotOwned:
                raise NotServedHere(self.owner) from None
            paid += batch.payouts
        return paid


def _transitions(
    changes: Mapping[str, Callable[[Payout], Payout]],
) -> Callable[[PayoutPartition], PayoutBatch]:
    """The change of one partition's handler that moves these payouts in one batch."""
    return lambda handler: handler.transitions(changes)
