"""The open-payouts topic without Kafka (issue 23): what the payout handler writes to it, restores
from it and catches up from the payouts topic, and how the display's signs read it.

The integration side (20,000 settled awards, real restarts, the log cleaner) is
tests/integration/test_open_payouts.py.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest

from jackpot.display.board import Board
from jackpot.display.feed import PendingRead, apply_open_record
from jackpot.display.pending import PendingPrize
from jackpot.domain.errors import DomainError
from jackpot.domain.payout import OPEN, Payout, PayoutState, Transition, pay, void
from jackpot.payout import payout_partition
from jackpot.payout.codec import to_proto
from jackpot.payout.payout_book import PayoutBook
from jackpot.payout.payout_partition import CatchUp, PayoutBatch, PayoutPartition
from jackpot.payout.settings import PayoutSettings
from jackpot.platform.processor_errors import ProcessorError
from jackpot.topics import (
    CHANGELOG_OFFSET_KEY,
    OPEN_PAYOUTS_MARK_KEY,
    is_bookkeeping_key,
    open_payouts_topic,
)
from jackpot.v1 import payout_pb2, pot_pb2

SETTINGS = PayoutSettings(approval_threshold=1_000_000, settled_kept_seconds=3600)
HOUR_NS = 3600 * 1_000_000_000


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int
    value: bytes
    key: bytes | None = None


def award(award_id: str, amount: int = 100_000) -> bytes:
    return pot_pb2.Award(
        award_id=award_id,
        pot_group_id="g",
        table_id="T1",
        round_id="R1",
        seat=2,
        prize="FLUSH",
        amount=amount,
    ).SerializeToString()


def payout(award_id: str, *states: PayoutState, at_ns: int, order: int = 1) -> Payout:
    return Payout(
        award_id,
        "g",
        "T1",
        "R1",
        2,
        "FLUSH",
        100_000,
        (),
        order,
        tuple(Transition(s, "someone", at_ns + i) for i, s in enumerate(states)),
    )


def encoded(item: Payout) -> bytes:
    return to_proto(item).SerializeToString()


def mark(**fields: int) -> bytes:
    return payout_pb2.OpenPayoutsMark(**fields).SerializeToString()


def open_records(batch: PayoutBatch) -> list[tuple[bytes | None, bytes | None]]:
    """(key, value) of what the batch writes to the open-payouts topic, in order."""
    return [(r.key, r.value) for r in batch.records if r.topic == SETTINGS.open_payouts_topic]


def handler(settings: PayoutSettings = SETTINGS) -> PayoutPartition:
    return PayoutPartition(0, settings, PayoutBook())


def awards(first: int, *values: bytes) -> Any:
    """Award records at offsets from ``first`` (what the processor hands ``apply``)."""
    return [Record(SETTINGS.awards_topic, 0, first + i, v) for i, v in enumerate(values)]


def consume(partition: PayoutPartition, first: int, *values: bytes) -> PayoutBatch:
    batch = partition.apply(awards(first, *values))
    partition.commit(batch)
    return batch


def test_the_open_topic_is_named_after_the_payouts_topic() -> None:
    assert open_payouts_topic("jackpot.payouts.v1") == "jackpot.open-payouts.v1"
    assert open_payouts_topic("demo-1.payouts") == "demo-1.open-payouts"
    assert open_payouts_topic("elsewhere") == "elsewhere.open"
    assert SETTINGS.open_payouts_topic == "jackpot.open-payouts.v1"


def test_an_award_batch_writes_each_open_payout_and_the_mark_last() -> None:
    partition = handler()
    batch = consume(partition, 40, award("a1"), award("a2", amount=2_000_000))
    written = open_records(batch)
    assert [k for k, _ in written] == [b"a1", b"a2", OPEN_PAYOUTS_MARK_KEY]
    assert payout_pb2.Payout.FromString(written[1][1] or b"").state == (
        payout_pb2.PAYOUT_STATE_AWAITING_APPROVAL
    )
    written_mark = payout_pb2.OpenPayoutsMark.FromString(written[-1][1] or b"")
    assert (written_mark.awards_offset, written_mark.next_order) == (42, 3)
    assert {r.partition for r in batch.records if r.topic == SETTINGS.open_payouts_topic} == {0}


def test_a_settled_payout_is_kept_for_the_keep_time_then_tombstoned() -> None:
    partition = handler()
    consume(partition, 0, award("a1"))
    paid = partition.transition("a1", lambda p: pay(p, "dealer", time.time_ns()))
    partition.commit(paid)
    assert open_records(paid)[0][1] is not None  # its final state, kept
    assert partition.book.payouts["a1"].state is PayoutState.PAID
    assert partition.tick() is None  # nothing due: not expired yet
    with pytest.raises(DomainError):
        partition.transition("a1", lambda p: pay(p, "dealer", time.time_ns()))

    restored = handler()
    long_ago = time.time_ns() - 2 * HOUR_NS
    settled = payout("a1", PayoutState.ORDERED, PayoutState.PAID, at_ns=long_ago)
    restored.restore({b"a1": encoded(settled), OPEN_PAYOUTS_MARK_KEY: mark(next_order=2)}, 1)
    expiry = restored.tick()
    assert expiry is not None
    assert open_records(expiry) == [
        (b"a1", None),
        (OPEN_PAYOUTS_MARK_KEY, expiry.records[-1].value),
    ]
    restored.commit(expiry)
    assert restored.book.payouts == {}


def test_ticks_tombstone_the_payouts_past_their_keep_time_soonest_first_and_only_those(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The expiry index, judged against the definition (settled at least the keep time ago) on a
    clock the test moves: 300 restored payouts settled over two hours, 200 more consumed and
    settled as time goes, ticks capped at 7 tombstones, a third of their transactions failing
    (rolled back: the same tombstones are due again). Each tick writes the soonest expired ones,
    exactly; at the end only the open payouts are left."""
    clock = [10 * HOUR_NS]
    monkeypatch.setattr(payout_partition, "time", SimpleNamespace(time_ns=lambda: clock[0]))
    monkeypatch.setattr(payout_partition, "EXPIRED_PER_TICK", 7)
    rng = random.Random(5)
    partition = handler()
    changelog = {OPEN_PAYOUTS_MARK_KEY: mark(next_order=400)}
    for n in range(300):
        states = (PayoutState.ORDERED,) if n % 6 == 0 else (PayoutState.ORDERED, PayoutState.PAID)
        at = clock[0] - HOUR_NS - rng.randrange(HOUR_NS) + rng.randrange(HOUR_NS)
        changelog[f"r{n}".encode()] = encoded(payout(f"r{n}", *states, at_ns=at, order=n))
    partition.restore(changelog, 0)
    offset = dropped = 0

    def due() -> list[str]:
        expiries = sorted(
            (p.history[-1].at_ns + HOUR_NS, a)
            for a, p in partition.payouts.items()
            if p.state not in OPEN and p.history[-1].at_ns + HOUR_NS <= clock[0]
        )
        return [a for _, a in expiries[:7]]

    for step in range(400):
        clock[0] += rng.randrange(60 * 1_000_000_000)
        if step < 200:
            consume(partition, offset, award(f"c{step}"))
            offset += 1
        open_ones = [a for a, p in partition.payouts.items() if p.state in OPEN]
        for award_id in rng.sample(open_ones, min(len(open_ones), rng.randrange(3))):
            partition.commit(partition.transition(award_id, lambda p: pay(p, "ana", clock[0])))
        expected = due()
        batch = partition.tick()
        written = open_records(batch) if batch else []
        tombstones = [k.decode() for k, v in written if v is None and k is not None]
        assert tombstones == expected, step
        if batch is not None and rng.random() < 0.33:
            partition.rollback()  # the transaction failed: nothing dropped, due again
            assert due() == expected
        elif batch is not None:
            partition.commit(batch)
            dropped += len(batch.dropped)
            assert not set(tombstones) & set(partition.book.payouts)
    clock[0] += 2 * HOUR_NS
    while (batch := partition.tick()) is not None:
        partition.commit(batch)
        dropped += len(batch.dropped)
    assert dropped >= 250  # most of the 300 restored, and those settled as time went
    assert set(partition.book.payouts) == {
        a for a, p in partition.payouts.items() if p.state in OPEN
    }


def test_with_no_keep_time_a_settlement_writes_a_tombstone_and_leaves_the_book() -> None:
    partition = handler(SETTINGS.replace(settled_kept_seconds=0))
    consume(partition, 0, award("a1"))
    voided = partition.transition("a1", lambda p: void(p, "sup", "misread", time.time_ns()))
    partition.commit(voided)
    assert open_records(voided)[0] == (b"a1", None)
    assert partition.book.payouts == {}
    assert [r.topic for r in voided.records].count(SETTINGS.payouts_topic) == 1  # history kept


def test_a_restore_resumes_the_awards_and_the_payment_order_from_the_mark() -> None:
    partition = handler()
    start = partition.restore({OPEN_PAYOUTS_MARK_KEY: mark(awards_offset=120, next_order=57)}, 90)
    assert start == 120  # the group's offset is behind (reset, or expired): never re-read
    assert handler().restore({}, None) is None  # nothing ever: from the beginning
    batch = consume(partition, 120, award("a9"))
    assert partition.book.payouts["a9"].order == 57  # nothing open held order 56
    assert payout_pb2.OpenPayoutsMark.FromString(batch.records[-1].value or b"").next_order == 58


def test_a_catch_up_takes_what_the_open_topic_does_not_reflect() -> None:
    now = time.time_ns()
    partition = handler()
    shown_open = payout("a1", PayoutState.ORDERED, at_ns=now, order=1)
    partition.restore({b"a1": encoded(shown_open), OPEN_PAYOUTS_MARK_KEY: mark(next_order=2)}, 5)
    found = CatchUp(now)
    history = [
        payout("a1", PayoutState.ORDERED, PayoutState.PAID, at_ns=now - 2 * HOUR_NS, order=1),
        payout("a2", PayoutState.ORDERED, PayoutState.PAID, at_ns=now - 3 * HOUR_NS, order=7),
        payout("a3", PayoutState.AWAITING_APPROVAL, at_ns=now, order=3),
    ]
    for item in history:  # paid long ago by an instance that wrote no open payouts, and a3
        partition.catch_up(found, item.award_id.encode(), encoded(item))
    partition.take(found)
    assert set(partition.book.payouts) == {"a3"}
    assert partition.next_order == 8  # past every order the payouts topic holds
    partition.reflected_to(99)  # before verify_restored finished: ignored
    batch = partition.tick()
    assert batch is not None
    assert open_records(batch)[:2] == [(b"a1", None), (b"a3", encoded(history[2]))]
    partition.commit(batch)
    assert partition.tick() is None  # written once


class History:
    """The payouts partition a catch-up reads (``KafkaConnection.of(settings).reader``)."""

    def __init__(self, *payouts: Payout) -> None:
        self.values = [encoded(p) for p in payouts]
        self.partitions = [0]

    def of(self, _: Any) -> History:
        return self

    def reader(self, _: str) -> History:
        return self

    async def __aenter__(self) -> History:
        return self

    async def __aexit__(self, *_: object) -> None:
        return None

    async def bounds(self, _: Any) -> tuple[dict[int, int], dict[int, int]]:
        return {0: 0}, {0: len(self.values)}

    async def records(self, start: dict[int, int], *_: Any, **__: Any) -> Any:
        for offset in range(start[0], len(self.values)):
            yield Record(SETTINGS.payouts_topic, 0, offset, self.values[offset])


async def test_an_unmarked_catch_up_is_marked_by_the_next_tick_though_nothing_is_open(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A deployment's first start on a settled history: the whole partition read, nothing to
    write but the mark, which the next tick (the processor's first, at the takeover) writes
    once, so the next start reads from the partition's end."""
    long_ago = time.time_ns() - 2 * HOUR_NS
    settled = [
        payout(f"a{i}", PayoutState.ORDERED, PayoutState.PAID, at_ns=long_ago, order=i)
        for i in range(1, 6)
    ]
    monkeypatch.setattr(payout_partition, "KafkaConnection", History(*settled))
    partition = handler()
    assert partition.restore({}, None) is None
    assert await partition.verify_restored() == ""
    batch = partition.tick()
    assert batch is not None
    written = open_records(batch)
    assert [k for k, _ in written] == [OPEN_PAYOUTS_MARK_KEY]
    marked = payout_pb2.OpenPayoutsMark.FromString(written[0][1] or b"")
    assert (marked.payouts_offset, marked.next_order, marked.awards_offset) == (5, 6, 0)
    partition.commit(batch)
    assert partition.tick() is None  # marked once


def test_a_partition_renewed_before_its_first_catch_up_consumes_nothing_and_stops() -> None:
    partition = handler()
    partition.restore({}, 3)  # no mark, and the processor's renewal calls no verify_restored
    assert partition.apply(awards(3, award("a1"))).records == []
    assert partition.next_offset == 3
    with pytest.raises(ProcessorError):
        partition.tick()


def prize(award_id: str, order: int = 1) -> PendingPrize:
    return PendingPrize(award_id, "T1", 2, "ROYAL_FLUSH", 2_000_000, order)


def test_a_restore_replaces_the_pending_prizes_and_a_tombstone_takes_one_down() -> None:
    board = Board(stale_after=5, winner_seconds=5)
    board.payout("g1", prize("old"), awaiting_approval=True)
    board.replace_pending({"g2": [prize("b", 2), prize("a", 1)]})
    assert board.signs["g1"].pending == ()  # settled while the display was away
    assert [p.award_id for p in board.signs["g2"].pending] == ["a", "b"]
    apply_open_record(board, b"a", None)
    apply_open_record(board, OPEN_PAYOUTS_MARK_KEY, mark(next_order=3))
    assert [p.award_id for p in board.signs["g2"].pending] == ["b"]


def test_the_display_reads_the_open_topic_as_complete_only_with_every_mark() -> None:
    read = PendingRead("open", partitions=[0, 1])
    awaiting = payout_pb2.Payout(
        award_id="a", pot_group_id="g", amount=5, state=payout_pb2.PAYOUT_STATE_AWAITING_APPROVAL
    )
    approved = payout_pb2.Payout(
        award_id="b", pot_group_id="g", amount=5, state=payout_pb2.PAYOUT_STATE_APPROVED
    )
    read.add(0, b"a", awaiting.SerializeToString())
    read.add(1, b"b", approved.SerializeToString())
    read.add(0, OPEN_PAYOUTS_MARK_KEY, mark())
    assert not read.complete
    read.add(1, OPEN_PAYOUTS_MARK_KEY, mark())
    assert read.complete
    assert set(read.pending) == {"a"}
    read.add(0, b"a", None)
    assert read.pending == {}
    assert read.read == 5


def test_the_processors_offset_record_is_neither_a_payout_nor_malformed() -> None:
    """The exactly-once processor writes each partition's resume point on the open-payouts
    topic (CHANGELOG_OFFSET_KEY): the display and `jackpot payouts` pass over it in silence."""
    from structlog.testing import capture_logs

    board = Board(stale_after=5, winner_seconds=5)
    board.replace_pending({"g": [prize("a", 1)]})
    read = PendingRead("open", partitions=[0])
    with capture_logs() as logged:
        apply_open_record(board, CHANGELOG_OFFSET_KEY, b"17")
        read.add(0, CHANGELOG_OFFSET_KEY, b"17")
    assert logged == []
    assert [p.award_id for p in board.signs["g"].pending] == ["a"]
    assert read.pending == {}
    assert not read.complete  # not a mark either


def test_bookkeeping_keys_are_told_from_every_entity_key() -> None:
    """One predicate says which changelog records are the writers' own bookkeeping, so that a
    reader of pot-state or open-payouts cannot miss one of them; no group or award key is one."""
    from jackpot.pot.state_records import sequence_mark_key, state_key

    bookkeeping = [CHANGELOG_OFFSET_KEY, sequence_mark_key("g"), sequence_mark_key("#mark")]
    entities = [
        state_key("g"),
        state_key("#mark"),  # a group may be named so: its state is not the payouts' mark
        state_key("\U0010ffff"),  # the highest code point: UTF-8 starts it with 0xF4
        b"g/T1/R1/3/ROYAL",
        OPEN_PAYOUTS_MARK_KEY,  # read as the mark, not passed over
        b"",
    ]
    assert [is_bookkeeping_key(key) for key in bookkeeping] == [True, True, True]
    assert [is_bookkeeping_key(key) for key in entities] == [False] * len(entities)
    assert not is_bookkeeping_key(None)


def test_a_studio_split_s_payouts_write_their_ledger_entries_in_bundles_read_back_whole() -> None:
    """O9 (issue 39 item 6): the payouts a split orders at once are one transaction's run of one
    group; their lifecycle entries go in a few bundles (not one record each), and the ledger's
    one reader gives back every entry, in order, byte for byte; a land round's few go one each."""
    from jackpot.payout.codec import ledger_entry
    from jackpot.platform.bundles import BUNDLE, BUNDLE_FROM, ledger_entries

    def ledger(batch: PayoutBatch) -> list[bytes]:
        return [r.value or b"" for r in batch.records if r.topic == SETTINGS.ledger_topic]

    partition = handler()
    many = BUNDLE_FROM * 40
    batch = consume(partition, 0, *(award(f"g/S-1/R1/{seat}/ROYAL") for seat in range(many)))
    records = ledger(batch)
    assert 0 < len(records) < 5
    assert {pot_pb2.LedgerEntry.FromString(r).type for r in records} == {BUNDLE}
    read = [pair for r in records for pair in ledger_entries(r)]
    expected = [ledger_entry(p).SerializeToString() for p in batch.payouts]
    assert [raw for _, raw in read] == expected
    assert [e.source_event_id for e, _ in read] == [f"g/S-1/R1/{s}/ROYAL" for s in range(many)]
    assert {r.key for r in batch.records if r.topic == SETTINGS.ledger_topic} == {b"g"}

    few = consume(handler(), 0, *(award(f"g/T1/R9/{seat}/FLUSH") for seat in range(3)))
    assert [pot_pb2.LedgerEntry.FromString(r).type for r in ledger(few)] == [
        pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_ORDERED
    ] * 3
