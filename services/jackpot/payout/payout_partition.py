"""The pure side of one awards partition, as the exactly-once processor drives it: its payouts,
what a batch of awards, a transition or a tick writes, and its restore and takeover check.

What the records are and why (the payouts and open-payouts topics, the mark, the catch-up) is
the payout service's module docstring (:mod:`jackpot.payout.service`).
"""

from __future__ import annotations

import heapq
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import structlog
from aiokafka.structs import ConsumerRecord
from google.protobuf.message import DecodeError

from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.payout import (
    OPEN,
    Payout,
    PayoutState,
)
from jackpot.payout import metrics
from jackpot.payout.codec import from_proto, ledger_entry, payout_for_award, to_proto
from jackpot.payout.payout_book import PayoutBook
from jackpot.payout.settings import PayoutSettings
from jackpot.platform.bundles import BundleError, awards_of, bundle_ledger
from jackpot.platform.deadletter import dead_letter
from jackpot.platform.kafka import KafkaConnection
from jackpot.platform.partition_handler import OutputRecord
from jackpot.platform.processor_errors import ProcessorError
from jackpot.topics import OPEN_PAYOUTS_MARK_KEY
from jackpot.v1 import payout_pb2, pot_pb2

log = structlog.get_logger("jackpot.payout")

TICK_SECONDS = 1.0  # how often a partition writes what is due without input (catch-up, expiry)
CATCH_UP_SECONDS = 120.0  # the payouts-topic read of a takeover (the processor's restore's too)
EXPIRED_PER_TICK = 500  # tombstones of settled payouts per transaction at most


def _awards(value: bytes | None) -> list[pot_pb2.Award]:
    """The awards of one record (a bundle's, :mod:`jackpot.platform.bundles`), each decodable
    with an id and a non-negative amount, or a refusal naming why."""
    try:
        awards = awards_of(value or b"")
    except BundleError as error:
        raise DomainError(Reason.MALFORMED, f"not a bundle of awards: {error}") from None
    except DecodeError:
        raise DomainError(Reason.MALFORMED, "not an Award") from None
    for award in awards:
        _check(award)
    return awards


def _check(award: pot_pb2.Award) -> None:
    if not award.award_id:
        raise DomainError(Reason.MALFORMED, "the award has no award_id")
    if award.amount < 0:
        raise DomainError(
            Reason.MALFORMED, f"award {award.award_id} has a negative amount {award.amount}"
        )


@dataclass(slots=True)
class PayoutBatch:
    """Payouts created or moved, and the records one transaction writes for them."""

    payouts: list[Payout] = field(default_factory=list)
    records: list[OutputRecord] = field(default_factory=list)
    duplicates: int = 0
    dropped: set[str] = field(default_factory=set)  # tombstoned on the open-payouts topic
    mark: payout_pb2.OpenPayoutsMark | None = None
    caught_up: bool = False  # carries the takeover's catch-up writes
    ledger: list[pot_pb2.LedgerEntry] = field(default_factory=list)  # written at the finish


@dataclass(slots=True)
class CatchUp:
    """What a takeover read from the payouts partition after the mark's checkpoint: the latest
    state of each award to keep (open, or settled within the keep time), the restored awards it
    settled for good, and the highest payment order seen."""

    now_ns: int
    keep: dict[str, Payout] = field(default_factory=dict)
    gone: set[str] = field(default_factory=set)
    last_order: int = 0
    read: int = 0


class PayoutPartition:
    """The payouts of one awards partition: the pure handler the processor drives.

    It holds what is open (and settled within ``settled_kept_seconds``), never the history: that
    stays on the payouts topic and the ledger. Its open-payouts topic partition is its changelog.
    """

    def __init__(self, partition: int, settings: PayoutSettings, book: PayoutBook) -> None:
        self.partition = partition
        self.settings = settings
        self.book = book
        self.payouts: dict[str, Payout] = {}
        self.next_order = 1
        self._next_offset = 0
        self._committed_offset = 0
        self._mark = payout_pb2.OpenPayoutsMark(next_order=1)  # the last one committed
        self._marked = False  # the open-payouts partition has a mark
        self._unseeded = False  # restored without a mark, and not caught up yet
        self._caught_up = False  # verify_restored read the payouts partition to its end
        self._payouts_reflected = 0  # every payouts record before it is on the open topic
        self._pending: dict[str, bytes | None] = {}  # catch-up writes not committed yet
        self._keep_ns = int(settings.settled_kept_seconds * 1e9)
        # (expires at, award id) of every settled payout kept, soonest first: a tick reads the
        # expired ones, not every payout kept (a studio round's 10,000, O9). The entry of a
        # payout dropped since is let go when a tick reaches it.
        self._expiries: list[tuple[int, str]] = []

    @property
    def next_offset(self) -> int:
        return self._next_offset

    def restore(self, changelog: Mapping[bytes, bytes], committed: int | None) -> int | None:
        """The open payouts of the partition and its mark; consume from the mark's awards offset
        or the committed one, whichever is further (both are written with every award batch)."""
        restored = []
        mark: payout_pb2.OpenPayoutsMark | None = None
        for key, value in changelog.items():
            try:
                if key == OPEN_PAYOUTS_MARK_KEY:
                    mark = payout_pb2.OpenPayoutsMark.FromString(value)
                else:
                    restored.append(from_proto(payout_pb2.Payout.FromString(value)))
            except (DecodeError, ValueError):
                log.error("payout_record_unreadable", partition=self.partition, key=key)
        self._keep_all(restored)
        if mark is not None:
            self._mark, self._marked = mark, True
            self.next_order = max(self.next_order, mark.next_order)
        self._unseeded = mark is None
        self._payouts_reflected = self._mark.payouts_offset
        start = max(committed or 0, self._mark.awards_offset)
        self._next_offset = self._committed_offset = start
        metrics.RESTORED.inc(len(restored))
        log.info(
            "payouts_restored",
            partition=self.partition,
            payouts=len(restored),
            marked=mark is not None,
            awards_offset=start,
            payouts_offset=self._mark.payouts_offset,
        )
        return None if committed is None and not self._mark.awards_offset else start

    async def verify_restored(self) -> str:
        """After the fence: read the payouts partition from the mark's checkpoint to its end and
        take what the open-payouts topic does not reflect yet (written by the next transaction):
        normally the payouts of the last checkpoint period, and whatever an older version (which
        writes no open payouts) wrote meanwhile; without a mark (the first start of a deployment
        that had no open-payouts topic) the whole partition, once. "" when the partition may
        run."""
        start = self._mark.payouts_offset
        topic = self.settings.payouts_topic
        async with KafkaConnection.of(self.settings).reader(topic) as reader:
            if self.partition not in reader.partitions:
                return f"{topic} has no partition {self.partition}"
            _, ends = await reader.bounds([self.partition])
            end = ends[self.partition]
            if end < start:
                log.warning("payouts_before_checkpoint", partition=self.partition, end=end)
            found = CatchUp(time.time_ns())
            async for record in reader.records(
                {self.partition: start}, ends, deadline_seconds=CATCH_UP_SECONDS
            ):
                self.catch_up(found, record.key, record.value)
        self.take(found)
        self._payouts_reflected = end
        self._unseeded, self._caught_up = False, True
        metrics.CATCH_UP_RECORDS.inc(found.read)
        log.info(
            "payouts_caught_up",
            partition=self.partition,
            records=found.read,
            start=start,
            end=end,
            writes=len(self._pending),
        )
        return ""

    def catch_up(self, found: CatchUp, key: bytes | None, value: bytes | None) -> None:
        """One payouts record of the catch-up, in offset order: the latest state wins."""
        found.read += 1
        try:
            payout = from_proto(payout_pb2.Payout.FromString(value or b""))
        except (DecodeError, ValueError):
            log.error("payout_record_unreadable", partition=self.partition, key=key)
            return
        if not payout.award_id or not payout.history:
            return
        found.last_order = max(found.last_order, payout.order)
        if self._kept(payout, found.now_ns):
            found.keep[payout.award_id] = payout
            found.gone.discard(payout.award_id)
        else:
            found.keep.pop(payout.award_id, None)
            if payout.award_id in self.payouts:
                found.gone.add(payout.award_id)

    def take(self, found: CatchUp) -> None:
        """The catch-up's payouts into the book, and the open-topic writes they need."""
        for award_id in found.gone:
            del self.payouts[award_id]
            self._pending[award_id] = None
        self.book.drop(found.gone)
        changed = [p for a, p in found.keep.items() if self.payouts.get(a) != p]
        for payout in changed:
            self._pending[payout.award_id] = to_proto(payout).SerializeToString()
        self._keep_all(changed)
        self.next_order = max(self.next_order, found.last_order + 1)

    def reflected_to(self, payouts_end: int) -> None:
        """Every payouts record before ``payouts_end`` is on the open-payouts topic (the owner
        read it after its catch-up): the next mark may say so. Ignored before a catch-up."""
        if self._caught_up:
            self._payouts_reflected = max(self._payouts_reflected, payouts_end)

    def apply(self, records: Sequence[ConsumerRecord[bytes, bytes]]) -> PayoutBatch:
        """One payout per award id never seen; a refused award becomes a dead letter."""
        batch = PayoutBatch()
        if self._unseeded:
            return batch  # renewed before its first catch-up: tick() stops the service
        seen: set[str] = set()
        now = time.time_ns()
        order = self.next_order
        for record in records:
            self._next_offset = record.offset + 1
            try:
                awards = _awards(record.value)
            except DomainError as refused:  # a bundle with one bad award: all of it, as sent
                batch.records.append(self._dead_letter(refused, record))
                continue
            for award in awards:
                if award.award_id in self.payouts or award.award_id in seen:
                    batch.duplicates += 1
                    continue
                seen.add(award.award_id)
                self._add(batch, self._order(award, order, now))
                order += 1
        return self._finish(batch, order)

    def _dead_letter(
        self, refused: DomainError, record: ConsumerRecord[bytes, bytes]
    ) -> OutputRecord:
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
        return OutputRecord(self.settings.dead_letter_topic, letter.SerializeToString(), b"payout")

    def transition(self, award_id: str, change: Callable[[Payout], Payout]) -> PayoutBatch:
        """A batch moving one payout; ``change`` raises DomainError to refuse."""
        self._require_seeded()
        current = self.payouts.get(award_id)
        if current is None:
            raise DomainError(Reason.INVALID_STATE, f"no payout for award {award_id!r}")
        batch = PayoutBatch()
        self._add(batch, change(current))
        return self._finish(batch)

    def transitions(self, changes: Mapping[str, Callable[[Payout], Payout]]) -> PayoutBatch:
        """One batch moving several payouts (the wallet's answers of one moment, O9); a payout
        whose change refuses (paid or voided meanwhile) is left as it is."""
        self._require_seeded()
        batch = PayoutBatch()
        for award_id, change in changes.items():
            current = self.payouts.get(award_id)
            if current is None:
                continue
            try:
                self._add(batch, change(current))
            except DomainError as refused:
                log.info("payout_change_refused", award=award_id, why=refused.detail)
        return self._finish(batch)

    def tick(self) -> PayoutBatch | None:
        """What is due without input: the catch-up's writes and the mark after a takeover or a
        checkpoint, and tombstones of payouts settled longer ago than the keep time."""
        self._require_seeded()
        batch = PayoutBatch()
        for award_id in self._expired(time.time_ns()):
            batch.records.append(self._open_record(award_id, None))
            batch.dropped.add(award_id)
        due = not self._marked or self._mark.payouts_offset != self._payouts_reflected
        if not (batch.records or self._pending or due):
            return None
        return self._finish(batch)

    def commit(self, batch: PayoutBatch) -> None:
        """Committed: now it is true."""
        self._committed_offset = self._next_offset
        metrics.DUPLICATE_AWARDS.inc(batch.duplicates)
        if batch.caught_up:
            self._pending.clear()
        if batch.mark is not None:
            if not self._marked:  # a takeover reads the payouts partition from here on
                log.info(
                    "payouts_marked",
                    partition=self.partition,
                    payouts_offset=batch.mark.payouts_offset,
                    awards_offset=batch.mark.awards_offset,
                )
            self._mark, self._marked = batch.mark, True
        for payout in batch.payouts:
            self.next_order = max(self.next_order, payout.order + 1)
        # the book told once per transaction: a studio split's 10,000 payouts, one change (O4)
        self._keep_all([p for p in batch.payouts if p.award_id not in batch.dropped])
        self._log_transitions(batch.payouts)
        gone = [a for a in batch.dropped if a in self.payouts]
        for award_id in gone:
            del self.payouts[award_id]
        self.book.drop(gone)

    def _log_transitions(self, payouts: list[Payout]) -> None:
        """A line for each land payout moved; the studio prizes moved (thousands a round, paid
        to wallets a few hundred a second, O9) one line counting them by state: the ledger
        holds each."""
        states = Counter(payout.state for payout in payouts)
        for state, count in states.items():
            metrics.TRANSITIONS.labels(state.value).inc(count)
        metrics.PAID.inc(states[PayoutState.PAID])
        studio = [payout for payout in payouts if payout.to_wallet]
        if studio:
            log.info(
                "payout_transitions",
                partition=self.partition,
                states=dict(Counter(payout.state.value for payout in studio)),
                tables=sorted({payout.table_id for payout in studio}),
                first=studio[0].award_id,
                last=studio[-1].award_id,
            )
        for payout in payouts:
            if not payout.to_wallet:
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

    def _require_seeded(self) -> None:
        if self._unseeded:
            # Every restore (a takeover's, a producer renewal's) runs verify_restored, which
            # reads the payouts topic: a partition still unseeded here is a bug, and a restart
            # takes the partition over again, and reads it.
            raise ProcessorError(
                f"payouts partition {self.partition} was restored without its open payouts "
                "(a producer renewal before the first catch-up): restart"
            )

    def _kept(self, payout: Payout, now_ns: int) -> bool:
        """Open, or settled less than the keep time ago: on the open topic and in the book."""
        expires = self._expiry(payout)
        return expires is None or expires > now_ns

    def _expired(self, now_ns: int) -> list[str]:
        """The settled payouts past their keep time, soonest first, ``EXPIRED_PER_TICK`` at
        most. The index is left as it was but for entries no payout holds any more: a payout
        leaves ``payouts`` only when the transaction dropping it commits."""
        expiries, due = self._expiries, list[tuple[int, str]]()
        while expiries and expiries[0][0] <= now_ns and len(due) < EXPIRED_PER_TICK:
            entry = heapq.heappop(expiries)
            if entry[1] in self.payouts:  # a settled payout never changes: only its drop
                due.append(entry)
        for entry in due:
            heapq.heappush(expiries, entry)
        return list(dict.fromkeys(award_id for _, award_id in due))

    def _expiry(self, payout: Payout) -> int | None:
        """When a settled payout leaves the book (None while it is open)."""
        return None if payout.state in OPEN else payout.history[-1].at_ns + self._keep_ns

    def _keep_all(self, payouts: list[Payout]) -> None:
        for payout in payouts:
            self.payouts[payout.award_id] = payout
            self.next_order = max(self.next_order, payout.order + 1)
            expires = self._expiry(payout)
            if expires is not None:
                heapq.heappush(self._expiries, (expires, payout.award_id))
        self.book.put_many(self.partition, payouts)

    def _order(self, award: pot_pb2.Award, order: int, now: int) -> Payout:
        settings = self.settings
        threshold = (
            settings.studio_approval_threshold if award.player else settings.approval_threshold
        )
        return payout_for_award(award, order, threshold, now)

    def _open_record(self, award_id: str, value: bytes | None) -> OutputRecord:
        return OutputRecord(
            self.settings.open_payouts_topic, value, award_id.encode(), self.partition
        )

    def _add(self, batch: PayoutBatch, payout: Payout) -> None:
        """The payout's records pinned to this partition (payouts, and open payouts: its state
        while kept, else a tombstone), and its ledger entry."""
        batch.payouts.append(payout)
        value = to_proto(payout).SerializeToString()
        kept = self._kept(payout, time.time_ns())
        if not kept:
            batch.dropped.add(payout.award_id)
        else:
            batch.dropped.discard(payout.award_id)
        batch.records.append(
            OutputRecord(
                self.settings.payouts_topic, value, payout.award_id.encode(), self.partition
            )
        )
        batch.records.append(self._open_record(payout.award_id, value if kept else None))
        batch.ledger.append(ledger_entry(payout))

    def _finish(self, batch: PayoutBatch, next_order: int | None = None) -> PayoutBatch:
        """The catch-up's writes first (the batch's own records are newer), then the payouts'
        ledger entries (a run of one group bundled: ``bundle_ledger``), the mark last."""
        raws = [entry.SerializeToString() for entry in batch.ledger]
        ledger = self.settings.ledger_topic
        batch.records += [
            OutputRecord(ledger, raw, group_id.encode())
            for group_id, raw in bundle_ledger(batch.ledger, raws, f"payout:{self.partition}")
        ]
        if self._pending:
            pending = [self._open_record(a, v) for a, v in self._pending.items()]
            batch.records[:0] = pending
            batch.caught_up = True
        batch.mark = payout_pb2.OpenPayoutsMark(
            awards_offset=self._next_offset,
            next_order=max(self.next_order, next_order or 0),
            payouts_offset=self._payouts_reflected,
        )
        batch.records.append(
            OutputRecord(
                self.settings.open_payouts_topic,
                batch.mark.SerializeToString(),
                OPEN_PAYOUTS_MARK_KEY,
                self.partition,
            )
        )
        return batch
