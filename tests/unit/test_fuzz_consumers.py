"""Property-based fuzzing of the payout and display consumers, without Kafka (issue 9, "Bad input").

Payout: ``PayoutService._apply_batch`` (the awards consumer's batch step) runs against a tiny
in-memory stand-in for the transactional producer (``transaction()``, ``send``,
``send_offsets_to_transaction``) with batches mixing valid awards, duplicates, arbitrary bytes and
awards with hostile fields, over several partitions. It never raises; the consumed offsets of
every partition are committed in the same transaction as the payouts; exactly one payout is
ordered per new well-formed award; a malformed award (undecodable, no award id, a negative
amount) orders nothing and is written to the dead-letter topic with a specific reason.

Display: ``feed.apply_record`` with arbitrary bytes and hostile pot updates and awards on either
topic (or another) never raises, and a record that is not a well-formed message for a pot group
leaves the board as it was.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiokafka import TopicPartition
from google.protobuf.message import DecodeError
from hypothesis import given, settings
from hypothesis import strategies as st

from jackpot.display.board import Board, Sign
from jackpot.display.feed import apply_record
from jackpot.display.settings import DisplaySettings
from jackpot.payout.service import PayoutService
from jackpot.payout.settings import PayoutSettings
from jackpot.topics import DEAD_LETTER
from jackpot.v1 import common_pb2, dead_letter_pb2, payout_pb2, pot_pb2
from tests.unit.fuzzing import CHARS, FUZZ, INT64, UINT32

pytestmark = pytest.mark.usefixtures("quiet_logs")

TEXT = st.one_of(st.text(CHARS, max_size=8), st.sampled_from(["", "a1", "scl-main"]))


def _random_bytes(size: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(size)


ARBITRARY = st.one_of(
    st.binary(max_size=64),
    st.binary(max_size=1024),
    st.builds(_random_bytes, st.integers(60_000, 100_000), UINT32),
)


# ------------------------------------------------------------------------------- payout


@dataclass
class FakeProducer:
    """The transactional producer's surface the payout service uses, in memory."""

    sent: list[tuple[str, bytes | None, bytes]] = field(default_factory=list)
    offsets: list[tuple[dict[TopicPartition, int], str]] = field(default_factory=list)
    transactions: int = 0
    _open: list[tuple[str, bytes | None, bytes]] | None = None

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        assert self._open is None, "nested transaction"
        self._open = []
        try:
            yield
        finally:
            self.sent.extend(self._open)  # committed (an exception would abort: not here)
            self._open = None
            self.transactions += 1

    async def send(self, topic: str, value: bytes, key: bytes | None = None) -> None:
        assert self._open is not None, "send outside a transaction"
        self._open.append((topic, key, value))

    async def send_offsets_to_transaction(
        self, offsets: dict[TopicPartition, int], group_id: str
    ) -> None:
        assert self._open is not None, "offsets outside a transaction"
        self.offsets.append((dict(offsets), group_id))


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int
    value: bytes
    key: bytes | None = None


SETTINGS = PayoutSettings(approval_threshold=1_000_000)
DEAD_LETTER_TOPIC = getattr(SETTINGS, "dead_letter_topic", DEAD_LETTER.name)


def award(award_id: str, amount: int = 100_000, **fields: Any) -> bytes:
    values: dict[str, Any] = {
        "pot_group_id": "scl-main",
        "table_id": "T1",
        "round_id": "R1",
        "seat": 2,
        "prize": "FLUSH",
        "bet": 2000,
        "cards": ["2H", "5H", "9H", "JH", "KH"],
        **fields,
    }
    return pot_pb2.Award(award_id=award_id, amount=amount, **values).SerializeToString()


HOSTILE_AWARDS = st.builds(
    lambda award_id, amount, seat, prize, table_id, cards: award(
        award_id, amount, seat=seat, prize=prize, table_id=table_id, cards=cards
    ),
    award_id=st.one_of(st.sampled_from(["a1", "a2", "a3", ""]), st.text(CHARS, max_size=8)),
    amount=st.one_of(st.sampled_from([0, 1, 999_999, 1_000_000]), INT64),
    seat=UINT32,
    prize=TEXT,
    table_id=TEXT,
    cards=st.lists(st.text(CHARS, max_size=3), max_size=12),
)
VALUES = st.one_of(HOSTILE_AWARDS, ARBITRARY, st.sampled_from([award("a1"), award("a2")]))


def well_formed(value: bytes) -> pot_pb2.Award | None:
    try:
        message = pot_pb2.Award.FromString(value)
    except DecodeError:
        return None
    return message if message.award_id and message.amount >= 0 else None


def batch_of(values: list[tuple[int, bytes]]) -> dict[TopicPartition, list[Record]]:
    batch: dict[TopicPartition, list[Record]] = {}
    for partition, value in values:
        tp = TopicPartition(SETTINGS.awards_topic, partition)
        records = batch.setdefault(tp, [])
        offset = records[-1].offset + 1 if records else 10 * partition
        records.append(Record(tp.topic, partition, offset, value))
    return batch


async def consume(
    service: PayoutService, batches: list[dict[TopicPartition, list[Record]]]
) -> FakeProducer:
    producer = FakeProducer()
    service._producer = producer
    for batch in batches:
        await service._apply_batch(batch)
    return producer


BATCHES = st.lists(
    st.lists(st.tuples(st.integers(0, 2), VALUES), min_size=1, max_size=8),
    min_size=1,
    max_size=3,
)


@settings(FUZZ, max_examples=300)
@given(batches=BATCHES)
def test_fuzz_payout_award_batches_never_break_the_consumer(
    batches: list[list[tuple[int, bytes]]],
) -> None:
    service = PayoutService(SETTINGS)
    producer = asyncio.run(consume(service, [batch_of(b) for b in batches]))
    assert producer.transactions == len(batches)
    expected_offsets = [
        ({tp: records[-1].offset + 1 for tp, records in batch_of(b).items()}, "jackpot-payout")
        for b in batches
    ]
    assert producer.offsets == expected_offsets  # every partition moves on, garbage or not
    decodable: set[str] = set()
    first: dict[str, pot_pb2.Award] = {}  # the first well-formed award of each id wins
    for values in batches:  # in the order the consumer sees them: partition by partition
        for value in (r.value for records in batch_of(values).values() for r in records):
            with contextlib.suppress(DecodeError):
                decodable.add(pot_pb2.Award.FromString(value).award_id)
            message = well_formed(value)
            if message is not None and message.award_id not in first:
                first[message.award_id] = message
    assert set(service.book.payouts) <= decodable  # nothing from undecodable bytes
    assert set(first) <= set(service.book.payouts)  # every well-formed award is ordered
    for award_id, source in first.items():
        payout = service.book.payouts[award_id]
        assert (payout.amount, payout.table_id, payout.seat, payout.prize) == (
            source.amount,
            source.table_id,
            source.seat,
            source.prize,
        )
    payouts = [v for t, _, v in producer.sent if t == SETTINGS.payouts_topic]
    assert len(payouts) == len(service.book.payouts)  # one payout per award, exactly once
    for value in payouts:
        payout_pb2.Payout.FromString(value)
    ledger = [v for t, _, v in producer.sent if t == SETTINGS.ledger_topic]
    assert len(ledger) == len(payouts)
    for value in ledger:
        pot_pb2.LedgerEntry.FromString(value)


@settings(FUZZ, max_examples=200)
@given(values=st.lists(st.one_of(HOSTILE_AWARDS, ARBITRARY), min_size=1, max_size=6))
def test_fuzz_malformed_awards_are_dead_lettered(values: list[bytes]) -> None:
    """Every award the consumer refuses goes to the dead-letter topic with a reason."""
    service = PayoutService(SETTINGS)
    producer = asyncio.run(consume(service, [batch_of([(0, v) for v in values])]))
    refused = [v for v in values if well_formed(v) is None]
    letters = [
        dead_letter_pb2.DeadLetter.FromString(v)
        for t, _, v in producer.sent
        if t == DEAD_LETTER_TOPIC
    ]
    assert sorted(letter.original for letter in letters) == sorted(refused)
    for letter in letters:
        assert letter.reason != common_pb2.REJECT_REASON_UNSPECIFIED
        assert letter.detail
        assert letter.original_topic == SETTINGS.awards_topic


def test_fuzz_regression_an_award_with_a_negative_amount_does_not_break_the_batch() -> None:
    """Minimised by hypothesis: Award(award_id='a1', amount=-1) raised out of the batch."""
    service = PayoutService(SETTINGS)
    producer = asyncio.run(consume(service, [batch_of([(0, award("a1", -1)), (0, award("a2"))])]))
    assert set(service.book.payouts) == {"a2"}
    assert producer.offsets == [({TopicPartition(SETTINGS.awards_topic, 0): 2}, "jackpot-payout")]


# ------------------------------------------------------------------------------ display

DISPLAY = DisplaySettings()
TOPICS = [DISPLAY.pot_updates_topic, DISPLAY.awards_topic, "jackpot.other.v1"]

POT_UPDATES = st.builds(
    pot_pb2.PotUpdate,
    pot_group_id=TEXT,
    sign_value=st.one_of(st.integers(0, 10**7), INT64),
    increment=INT64,
    min_bet=INT64,
    max_bet=INT64,
    pots=st.lists(
        st.builds(
            pot_pb2.PotBalance,
            name=st.sampled_from(["main", "reserve1", ""]),
            balance=st.builds(common_pb2.ExactAmount, numerator=INT64, denominator=INT64),
        ),
        max_size=3,
    ),
).map(lambda update: update.SerializeToString())
DISPLAY_AWARDS = st.builds(
    lambda group, award_id, amount: award(award_id, amount, pot_group_id=group),
    group=TEXT,
    award_id=TEXT,
    amount=INT64,
)
DISPLAY_VALUES = st.one_of(ARBITRARY, POT_UPDATES, DISPLAY_AWARDS)


def well_formed_for_display(topic: str, value: bytes) -> bool:
    """A pot update or award the display should show: decodable, for a pot group, sane."""
    try:
        if topic == DISPLAY.pot_updates_topic:
            update = pot_pb2.PotUpdate.FromString(value)
            return bool(update.pot_group_id) and update.sign_value >= 0
        if topic == DISPLAY.awards_topic:
            message = pot_pb2.Award.FromString(value)
            return bool(message.pot_group_id and message.award_id) and message.amount >= 0
    except DecodeError:
        return False
    return False


def display_board() -> tuple[Board, list[str]]:
    board = Board(stale_after=5.0, winner_seconds=15.0)
    board.signs["scl-main"] = Sign("scl-main", amount=500_000, live=True, closed_reason="")
    changed: list[str] = []
    board.subscribe(changed.append)
    return board, changed


@settings(FUZZ, max_examples=400)
@given(records=st.lists(st.tuples(st.sampled_from(TOPICS), DISPLAY_VALUES), max_size=6))
def test_fuzz_display_feed_never_raises(records: list[tuple[str, bytes]]) -> None:
    board, changed = display_board()
    for topic, value in records:
        before = dict(board.signs)
        apply_record(board, topic, value, DISPLAY)
        board.tick(0.0)
        for sign in board.signs.values():  # every sign still renders for the web page
            sign.to_json()
        if topic not in TOPICS[:2]:
            assert board.signs == before
    assert len(changed) <= 2 * len(records)


@settings(FUZZ, max_examples=300)
@given(topic=st.sampled_from(TOPICS[:2]), value=DISPLAY_VALUES)
def test_fuzz_display_leaves_the_board_alone_on_malformed_records(topic: str, value: bytes) -> None:
    board, changed = display_board()
    before = dict(board.signs)
    apply_record(board, topic, value, DISPLAY)
    if not well_formed_for_display(topic, value):
        assert board.signs == before, board.signs
        assert changed == []
