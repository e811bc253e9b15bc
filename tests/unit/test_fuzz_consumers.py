"""Property-based fuzzing of the payout and display consumers, without Kafka (issue 9, "Bad input").

Payout: ``PayoutPartition.apply`` (the pure handler the exactly-once processor drives for one
awards partition) takes batches mixing valid awards, duplicates, arbitrary bytes and awards with
hostile fields. It never raises; the partition's offset moves past every record; exactly one
payout is ordered per new well-formed award, its record pinned to the award's partition; a
malformed award (undecodable, no award id, a negative amount) orders nothing and is written to
the dead-letter topic with a specific reason.

Display: ``feed.apply_record`` with arbitrary bytes and hostile pot updates and awards on either
topic (or another) never raises, and a record that is not a well-formed message for a pot group
leaves the board as it was.
"""

from __future__ import annotations

import contextlib
import random
from dataclasses import dataclass, field
from typing import Any

import pytest
from google.protobuf.message import DecodeError
from hypothesis import given, settings
from hypothesis import strategies as st

from jackpot.display.board import Board, Sign
from jackpot.display.feed import apply_record
from jackpot.display.settings import DisplaySettings
from jackpot.payout.payout_book import PayoutBook
from jackpot.payout.payout_partition import PayoutPartition
from jackpot.payout.settings import PayoutSettings
from jackpot.platform.partition_handler import OutputRecord
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


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int
    value: bytes
    key: bytes | None = None


SETTINGS = PayoutSettings(approval_threshold=1_000_000)


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


@dataclass
class Consumed:
    """What the payout handler of one awards partition wrote, batch by batch, all committed."""

    handler: PayoutPartition
    sent: list[OutputRecord] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)


def records_of(values: list[bytes], first_offset: int) -> list[Record]:
    return [
        Record(SETTINGS.awards_topic, 0, first_offset + i, value) for i, value in enumerate(values)
    ]


def consume(batches: list[list[bytes]]) -> Consumed:
    consumed = Consumed(PayoutPartition(0, SETTINGS, PayoutBook()))
    offset = 10
    for values in batches:
        batch = consumed.handler.apply(records_of(values, offset))  # type: ignore[arg-type]
        consumed.handler.commit(batch)
        consumed.sent.extend(batch.records)
        consumed.offsets.append(consumed.handler.next_offset)
        offset += len(values)
    return consumed


BATCHES = st.lists(st.lists(VALUES, min_size=1, max_size=8), min_size=1, max_size=3)


@settings(FUZZ, max_examples=300)
@given(batches=BATCHES)
def test_fuzz_payout_award_batches_never_break_the_consumer(batches: list[list[bytes]]) -> None:
    consumed = consume(batches)
    ends = [10 + sum(len(b) for b in batches[: i + 1]) for i in range(len(batches))]
    assert consumed.offsets == ends  # the partition moves on, garbage or not
    decodable: set[str] = set()
    first: dict[str, pot_pb2.Award] = {}  # the first well-formed award of each id wins
    for value in (v for values in batches for v in values):
        with contextlib.suppress(DecodeError):
            decodable.add(pot_pb2.Award.FromString(value).award_id)
        message = well_formed(value)
        if message is not None and message.award_id not in first:
            first[message.award_id] = message
    book = consumed.handler.book
    assert set(book.payouts) <= decodable  # nothing from undecodable bytes
    assert set(first) == set(book.payouts)  # every well-formed award is ordered, nothing else
    for award_id, source in first.items():
        payout = book.payouts[award_id]
        assert (payout.amount, payout.table_id, payout.seat, payout.prize) == (
            source.amount,
            source.table_id,
            source.seat,
            source.prize,
        )
        assert book.partition_of[award_id] == 0
    payouts = [r for r in consumed.sent if r.topic == SETTINGS.payouts_topic]
    assert len(payouts) == len(book.payouts)  # one payout per award, exactly once
    assert {r.partition for r in payouts} <= {0}  # pinned to the award's partition
    for record in payouts:
        payout_pb2.Payout.FromString(record.value or b"")
    ledger = [r for r in consumed.sent if r.topic == SETTINGS.ledger_topic]
    assert len(ledger) == len(payouts)
    for record in ledger:
        pot_pb2.LedgerEntry.FromString(record.value or b"")


@settings(FUZZ, max_examples=200)
@given(values=st.lists(st.one_of(HOSTILE_AWARDS, ARBITRARY), min_size=1, max_size=6))
def test_fuzz_malformed_awards_are_dead_lettered(values: list[bytes]) -> None:
    """Every award the consumer refuses goes to the dead-letter topic with a reason."""
    consumed = consume([values])
    refused = [v for v in values if well_formed(v) is None]
    letters = [
        dead_letter_pb2.DeadLetter.FromString(r.value or b"")
        for r in consumed.sent
        if r.topic == SETTINGS.dead_letter_topic
    ]
    assert sorted(letter.original for letter in letters) == sorted(refused)
    for letter in letters:
        assert letter.reason != common_pb2.REJECT_REASON_UNSPECIFIED
        assert letter.detail
        assert letter.original_topic == SETTINGS.awards_topic


def test_fuzz_regression_an_award_with_a_negative_amount_does_not_break_the_batch() -> None:
    """Minimised by hypothesis: Award(award_id='a1', amount=-1) raised out of the batch."""
    consumed = consume([[award("a1", -1), award("a2")]])
    assert set(consumed.handler.book.payouts) == {"a2"}
    assert consumed.offsets == [12]


def test_a_rolled_back_batch_leaves_no_payout_and_is_applied_again() -> None:
    handler = PayoutPartition(0, SETTINGS, PayoutBook())
    handler.apply(records_of([award("a1")], 0))  # type: ignore[arg-type]
    handler.rollback()  # its transaction failed
    assert handler.book.payouts == {}
    assert handler.next_offset == 0
    again = handler.apply(records_of([award("a1")], 0))  # type: ignore[arg-type]
    handler.commit(again)
    assert list(handler.book.payouts) == ["a1"]


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
