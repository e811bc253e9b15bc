"""The pot service's processing core without Kafka: TableEvent bytes in, records out.

Covers idempotency (sequence and event id, across a snapshot/restore), refusals to dead letters
with a specific reason and no change of state, the ledger (balanced transfers, deterministic ids,
contiguous sequence, configuration versions), awards, pot updates and heartbeats (D5), rollback,
and configuration versions taking effect only at the next reset (C7).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable

import pytest
from loadtest.rounds import CONFIG, ROYAL_FLUSH, interleaved_rounds, simulated_tables

from jackpot.domain.cards import Game
from jackpot.domain.money import MINOR_PER_PESO
from jackpot.platform import codec
from jackpot.pot import commands
from jackpot.pot.group_runtime import Outputs
from jackpot.pot.pot_book import InputRecord, PotBook
from jackpot.pot.state_records import decode_state
from jackpot.v1 import common_pb2, dead_letter_pb2, pot_pb2, table_events_pb2

GROUP = "scl-main"
TOPIC = "jackpot.table-events.v1"
CARIBBEAN = common_pb2.GAME_CARIBBEAN
NOW_NS = 1_790_000_000_000_000_000


class FakeClock:
    def __init__(self) -> None:
        self.wall_ns = NOW_NS
        self.monotonic_s = 100.0

    def wall(self) -> int:
        return self.wall_ns

    def monotonic(self) -> float:
        return self.monotonic_s


def fixed_trigger(low: int, high: int) -> tuple[int, bytes]:
    return (low + high) // 2, b"\x01" * 16


def make_book(clock: FakeClock | None = None) -> PotBook:
    clock = clock or FakeClock()
    return PotBook(
        0,
        source="pot:test",
        event_id_window=64,
        clock_ns=clock.wall,
        monotonic=clock.monotonic,
        trigger_source=fixed_trigger,
    )


class Feeder:
    """Feeds TableEvents to a book as consecutive records of one partition."""

    def __init__(self, book: PotBook) -> None:
        self.book = book
        self.offset = 0

    def raw(self, value: bytes | None, key: bytes | None = None) -> Outputs:
        outputs = self.book.apply(value, TOPIC, 0, self.offset, key)
        self.offset += 1
        self.book.commit(outputs)
        return outputs

    def __call__(self, *events: table_events_pb2.TableEvent) -> Outputs:
        batch = []
        for event in events:
            batch.append(
                InputRecord(
                    event.SerializeToString(), TOPIC, 0, self.offset, event.pot_group_id.encode()
                )
            )
            self.offset += 1
        outputs = self.book.apply_batch(batch)
        self.book.commit(outputs)
        return outputs


def link(table_id: str = "T1", game: int = CARIBBEAN, **limits: int) -> table_events_pb2.TableEvent:
    values = {"min_bet": 1000, "max_bet": 5000, "credit_value": 1000, **limits}
    return commands.link_table(
        GROUP,
        table_events_pb2.LinkTable(
            table_id=table_id,
            game=game,  # type: ignore[arg-type]
            site="SCL",
            **values,
        ),
    )


def lock(
    sequence: int, round_id: str, bets: dict[int, int], table_id: str = "T1"
) -> table_events_pb2.TableEvent:
    return commands.table_event(
        GROUP,
        table_id,
        round_id,
        sequence,
        CARIBBEAN,
        round_locked=commands.locked(bets),
    )


def resolve(
    sequence: int, round_id: str, hands: dict[int, list[str]], table_id: str = "T1"
) -> table_events_pb2.TableEvent:
    return commands.table_event(
        GROUP,
        table_id,
        round_id,
        sequence,
        CARIBBEAN,
        round_result=commands.result(hands),
    )


NOTHING = ["2C", "7D", "9S", "JC", "4C"]
FLUSH = ["2H", "5H", "9H", "JH", "KH"]


@pytest.fixture
def feed() -> Feeder:
    feeder = Feeder(make_book())
    feeder(commands.create_group(GROUP, CONFIG), link())
    return feeder


def accounts(entries: Iterable[pot_pb2.LedgerEntry]) -> Counter[str]:
    balances: Counter[str] = Counter()
    for entry in entries:
        for transfer in entry.transfers:
            amount = codec.minor_units(transfer.amount)
            balances[transfer.source] -= amount
            balances[transfer.target] += amount
    return balances


def state_of(book: PotBook, group_id: str = GROUP) -> pot_pb2.PotGroupState:
    state, _ = decode_state(book.snapshot(group_id))
    return state


def group_state(book: PotBook) -> pot_pb2.PotGroupState:
    """The group's state without where and when it was written."""
    state = state_of(book)
    state.ClearField("input_offset")
    state.ClearField("written_at")
    return state


# ------------------------------------------------------------------------- happy path


def test_create_and_link_produce_ledger_update_and_snapshot() -> None:
    feed = Feeder(make_book())
    out = feed(commands.create_group(GROUP, CONFIG, "ana", "opening"), link())
    assert out.applied == 2
    assert [e.type for e in out.ledger] == [
        pot_pb2.LEDGER_ENTRY_TYPE_POT_GROUP_OPENED,
        pot_pb2.LEDGER_ENTRY_TYPE_TABLE_LINKED,
    ]
    assert [e.ledger_sequence for e in out.ledger] == [1, 2]
    opened = out.ledger[0]
    assert [(t.source, t.target) for t in opened.transfers] == [("house", "pot:main")]
    assert codec.minor_units(opened.transfers[0].amount) == 500_000 * MINOR_PER_PESO
    (update,) = out.pot_updates
    assert update.sign_value == 500_000
    assert update.table_ids == ["T1"]
    assert update.config_version == 1
    assert not update.heartbeat
    assert update.update_sequence == 1
    assert set(out.snapshots) == {GROUP}
    state, group = decode_state(out.snapshots[GROUP])
    assert group.sign_value == 500_000
    assert state.input_offset == 2
    assert state.ledger_sequence == 2


def test_lock_collects_exactly_and_updates_the_sign(feed: Feeder) -> None:
    out = feed(lock(1, "R1", {1: 1000, 3: 5000}))
    (entry,) = out.ledger
    assert entry.type == pot_pb2.LEDGER_ENTRY_TYPE_BETS_COLLECTED
    assert entry.amount == 6000
    assert entry.table_id == "T1"
    assert entry.round_id == "R1"
    moved = accounts([entry])
    assert moved["bets"] == -6000 * MINOR_PER_PESO
    assert moved["commission"] == 750 * MINOR_PER_PESO  # 12.5 % (C2)
    assert moved["pot:main"] + moved["pot:reserve1"] == 5250 * MINOR_PER_PESO  # C3
    (update,) = out.pot_updates
    assert update.sign_value == 500_000 + 3675  # 70 % of 5250, floored (M3)
    assert update.increment == 3675


def test_a_winning_result_is_one_award_and_balanced_ledger(feed: Feeder) -> None:
    feed(lock(1, "R1", {1: 1000, 2: 2000}))
    out = feed(resolve(2, "R1", {1: NOTHING, 2: FLUSH}))
    (award,) = out.awards
    assert award.award_id == f"{GROUP}/T1/R1/2/FLUSH"
    assert (award.seat, award.prize, award.bet, award.amount) == (2, "FLUSH", 2000, 100_000)
    assert list(award.cards) == FLUSH
    assert award.awarded_at.ToNanoseconds() > 0
    assert [(t.source, t.target) for t in award.funded_by] == [("pot:main", "awards")]
    types = [e.type for e in out.ledger]
    assert types == [
        pot_pb2.LEDGER_ENTRY_TYPE_PRIZE_AWARDED,
        pot_pb2.LEDGER_ENTRY_TYPE_POT_RESEEDED,  # the prize left main below its base (S8)
        pot_pb2.LEDGER_ENTRY_TYPE_ROUND_SETTLED,
    ]
    assert out.ledger[0].prize == "FLUSH"
    assert out.ledger[0].amount == 100_000
    assert out.ledger[0].entry_id.endswith(":0")
    assert out.ledger[2].entry_id.endswith(":2")
    assert [e.ledger_sequence for e in out.ledger] == [4, 5, 6]


def test_m2_holds_on_the_ledger_of_many_simulated_rounds() -> None:
    rng = random.Random(7)
    feed = Feeder(make_book())
    feed(commands.create_group(GROUP, CONFIG))
    tables = simulated_tables(GROUP, [Game.CARIBBEAN, Game.DRAW, Game.GO_POKER], rng)
    for table in tables:
        table.royal_rate = 0.02
        feed(table.link_command())
    entries: list[pot_pb2.LedgerEntry] = []
    awards: list[pot_pb2.Award] = []
    for event in interleaved_rounds(tables, 60, rng):
        out = feed(event)
        assert out.applied == 1, out.dead_letters
        entries.extend(out.ledger)
        awards.extend(out.awards)
    group = feed.book.groups[GROUP].group
    moved = accounts(entries)
    collected, house = -moved["bets"], -moved["house"]
    pots = sum(v for k, v in moved.items() if k.startswith("pot:"))
    # The ledger of these rounds alone (the opening entry came before) balances exactly (M2).
    assert collected + house == moved["commission"] + pots + moved["awards"]
    assert moved["awards"] == sum(a.amount for a in awards) * MINOR_PER_PESO
    assert any(a.prize == "ROYAL_FLUSH" for a in awards)
    assert len({a.award_id for a in awards}) == len(awards)
    group.check_conservation()


# ----------------------------------------------------------------------- idempotency


def test_the_same_event_twice_is_ignored_and_counted(feed: Feeder) -> None:
    event = lock(1, "R1", {1: 1000})
    first = feed(event)
    before = group_state(feed.book)
    again = feed(event)
    assert again.applied == 0
    assert again.ignored == Counter({"DUPLICATE_SEQUENCE": 1})
    assert again.empty
    after = group_state(feed.book)
    assert after.events_ignored == before.events_ignored + 1
    after.events_ignored = before.events_ignored
    assert after == before
    assert first.applied == 1


def test_a_replayed_sequence_with_a_new_event_id_is_ignored(feed: Feeder) -> None:
    feed(lock(1, "R1", {1: 1000}))
    out = feed(lock(1, "R1", {1: 5000}))  # same sequence, other id and content
    assert out.ignored == Counter({"DUPLICATE_SEQUENCE": 1})
    assert out.ledger == []


def test_a_known_event_id_with_a_new_sequence_is_ignored(feed: Feeder) -> None:
    event = lock(1, "R1", {1: 1000})
    feed(event)
    renumbered = table_events_pb2.TableEvent()
    renumbered.CopyFrom(event)
    renumbered.sequence = 2
    out = feed(renumbered)
    assert out.ignored == Counter({"DUPLICATE_EVENT_ID": 1})
    assert out.ledger == []


def test_a_duplicate_admin_command_is_ignored_by_event_id(feed: Feeder) -> None:
    proposal = commands.propose_config(GROUP, {**CONFIG, "version": 2}, "ana", "new base")
    assert feed(proposal).applied == 1
    out = feed(proposal)
    assert out.ignored == Counter({"DUPLICATE_EVENT_ID": 1})


def test_idempotency_survives_snapshot_and_restore(feed: Feeder) -> None:
    event = lock(1, "R1", {1: 1000})
    feed(event)
    restored = make_book()
    restored.restore([feed.book.snapshot(GROUP)], next_offset=feed.offset)
    replay = Feeder(restored)
    replay.offset = feed.offset
    out = replay(event)
    assert out.ignored == Counter({"DUPLICATE_SEQUENCE": 1})
    assert out.empty


# ------------------------------------------------------------------------- refusals


def refused(out: Outputs) -> tuple[str, dead_letter_pb2.DeadLetter]:
    assert out.applied == 0
    assert out.ledger == []
    assert out.pot_updates == []
    assert out.snapshots == {}
    (letter,) = out.dead_letters
    (reason,) = out.rejected
    assert common_pb2.RejectReason.Name(letter.reason) == f"REJECT_REASON_{reason}"
    assert letter.detail
    assert letter.source == "pot:test"
    return reason, letter


def test_malformed_bytes_go_to_dead_letters_with_the_original(feed: Feeder) -> None:
    reason, letter = refused(feed.raw(b"\xff\xff not protobuf"))
    assert reason == "MALFORMED"
    assert letter.original == b"\xff\xff not protobuf"
    assert letter.original_topic == TOPIC
    assert letter.original_offset == 2


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        (lock(1, "R1", {1: 1000}, table_id="T9"), "UNKNOWN_TABLE"),
        (lock(1, "R1", {1: 999}), "BET_OUT_OF_LIMITS"),
        (lock(1, "R1", {9: 1000}), "SEAT_OUT_OF_RANGE"),
        (resolve(1, "R1", {1: NOTHING}), "ROUND_NOT_LOCKED"),
        (link("T2", min_bet=2000), "INVALID_CONFIG"),  # E1
        (commands.create_group(GROUP, CONFIG), "INVALID_STATE"),
        (commands.propose_config(GROUP, {**CONFIG, "version": 2}, "", ""), "INVALID_CONFIG"),
        (commands.propose_config(GROUP, "{not json", "ana", "x"), "INVALID_CONFIG"),
        (commands.unlink_table(GROUP, "T7"), "UNKNOWN_TABLE"),
    ],
)
def test_refusals_name_a_specific_reason_and_change_nothing(
    feed: Feeder, event: table_events_pb2.TableEvent, reason: str
) -> None:
    before = group_state(feed.book)
    got, letter = refused(feed(event))
    assert got == reason
    assert table_events_pb2.TableEvent.FromString(letter.original) == event
    assert group_state(feed.book) == before


def test_events_of_an_unknown_group_are_refused(feed: Feeder) -> None:
    event = lock(1, "R1", {1: 1000})
    event.pot_group_id = "nowhere"
    reason, _ = refused(feed.raw(event.SerializeToString(), b"nowhere"))
    assert reason == "UNKNOWN_POT_GROUP"


def test_a_game_that_differs_from_the_linked_table_is_refused(feed: Feeder) -> None:
    event = lock(1, "R1", {1: 1000})
    event.game = common_pb2.GAME_DRAW
    assert refused(feed(event))[0] == "UNKNOWN_GAME"


def test_a_key_that_is_not_the_group_is_refused(feed: Feeder) -> None:
    reason, letter = refused(feed.raw(lock(1, "R1", {1: 1000}).SerializeToString(), b"other"))
    assert reason == "MALFORMED"
    assert "key" in letter.detail


def test_a_seat_twice_in_one_lock_is_refused(feed: Feeder) -> None:
    event = lock(1, "R1", {1: 1000})
    event.round_locked.bets.add(seat=1, bet=2000)
    assert refused(feed(event))[0] == "MALFORMED"


def test_a_voided_round_after_lock_is_refused_before_lock_accepted(feed: Feeder) -> None:
    feed(lock(1, "R1", {1: 1000}))
    void = commands.table_event(
        GROUP, "T1", "R1", 2, CARIBBEAN, round_voided=table_events_pb2.RoundVoided(reason="x")
    )
    assert refused(feed(void))[0] == "INVALID_STATE"
    void_other = commands.table_event(
        GROUP, "T1", "R2", 2, CARIBBEAN, round_voided=table_events_pb2.RoundVoided(reason="x")
    )
    out = feed(void_other)
    assert out.applied == 1
    assert out.ledger == []


def test_a_refused_event_does_not_consume_its_sequence(feed: Feeder) -> None:
    assert refused(feed(lock(1, "R1", {1: 999})))[0] == "BET_OUT_OF_LIMITS"
    assert feed(lock(1, "R1", {1: 1000})).applied == 1


# ----------------------------------------------------- snapshots, rollback, heartbeats


def test_snapshot_restore_then_continue_equals_never_stopping() -> None:
    rng = random.Random(11)
    tables = simulated_tables(GROUP, [Game.CARIBBEAN, Game.DRAW], rng)
    for table in tables:
        table.royal_rate = 0.05
    events = [
        commands.create_group(GROUP, CONFIG),
        *(t.link_command() for t in tables),
        *interleaved_rounds(tables, 40, rng),
    ]
    half = len(events) // 2
    straight = Feeder(make_book())
    straight(*events[:half])
    restored = make_book()
    restored.restore([straight.book.snapshot(GROUP)], next_offset=straight.offset)
    resumed = Feeder(restored)
    resumed.offset = straight.offset
    a = straight(*events[half:])
    b = resumed(*events[half:])
    assert a.ledger == b.ledger
    assert a.awards == b.awards
    assert a.pot_updates == b.pot_updates
    assert a.snapshots == b.snapshots


def test_rollback_undoes_a_batch_and_replay_gives_the_same_records(feed: Feeder) -> None:
    committed = feed.book.snapshot(GROUP)
    batch = [lock(1, "R1", {1: 1000, 2: 1000}), resolve(2, "R1", {1: FLUSH, 2: NOTHING})]
    records_ = [
        InputRecord(e.SerializeToString(), TOPIC, 0, feed.offset + i, GROUP.encode())
        for i, e in enumerate(batch)
    ]
    first = feed.book.apply_batch(records_)
    assert first.awards
    feed.book.rollback()
    assert feed.book.snapshot(GROUP) == committed
    assert feed.book.next_offset == feed.offset
    second = feed.book.apply_batch(records_)
    assert second.ledger == first.ledger
    assert second.awards == first.awards


def test_rollback_forgets_a_group_created_in_the_failed_batch() -> None:
    book = make_book()
    book.apply(
        commands.create_group(GROUP, CONFIG).SerializeToString(), TOPIC, 0, 0, GROUP.encode()
    )
    book.rollback()
    assert GROUP not in book.groups


def test_heartbeats_repeat_the_state_and_keep_counting() -> None:
    clock = FakeClock()
    feed = Feeder(make_book(clock))
    feed(commands.create_group(GROUP, CONFIG), link())
    feed(lock(1, "R1", {1: 5000}))
    assert feed.book.heartbeat_due(0.5) == []
    clock.monotonic_s += 0.6
    assert feed.book.heartbeat_due(0.5) == [GROUP]
    out = feed.book.heartbeat([GROUP])
    (beat,) = out.pot_updates
    assert beat.heartbeat
    assert beat.update_sequence == 3
    assert beat.increment == 3062  # the last change's increment, repeated
    assert state_of(feed.book).update_sequence == 3
    assert out.snapshots == {}  # a heartbeat writes only a small update-sequence mark
    assert set(out.sequence_marks) == {GROUP}
    assert feed.book.heartbeat_due(0.5) == []
    feed.book.commit(out)

    # A successor restored from the last full snapshot plus the mark continues the sequence.
    snapshot_before_beat = feed.book.snapshot(GROUP)
    restored = make_book(clock)
    restored.restore(
        [snapshot_before_beat], feed.offset, sequence_marks=[out.sequence_marks[GROUP]]
    )
    (next_beat,) = restored.heartbeat([GROUP]).pot_updates
    assert next_beat.update_sequence == 4


def test_a_failed_heartbeat_does_not_reuse_its_sequence() -> None:
    clock = FakeClock()
    feed = Feeder(make_book(clock))
    feed(commands.create_group(GROUP, CONFIG))
    feed.book.commit(feed.book.heartbeat([GROUP]))  # sequence 2, committed
    failed = feed.book.heartbeat([GROUP])  # sequence 3, its transaction fails
    assert failed.pot_updates[0].update_sequence == 3
    feed.book.rollback()
    (again,) = feed.book.heartbeat([GROUP]).pot_updates
    assert again.update_sequence == 3  # 3 was never committed, so it is used now


# ------------------------------------------------------------- configuration (C7)


def test_a_new_configuration_takes_effect_only_at_the_next_reset(feed: Feeder) -> None:
    v2 = {**CONFIG, "version": 2, "commission_percent": "20", "base": 800_000}
    out = feed(commands.propose_config(GROUP, v2, "ana", "regulator approved plan 2027"))
    (proposed,) = out.ledger
    assert proposed.type == pot_pb2.LEDGER_ENTRY_TYPE_CONFIG_PROPOSED
    assert (proposed.changed_by, proposed.reason) == ("ana", "regulator approved plan 2027")
    assert proposed.config_version == 1
    assert list(proposed.pending_config_versions) == [2]

    out = feed(lock(1, "R1", {1: 1000}))
    assert accounts(out.ledger)["commission"] == 125 * MINOR_PER_PESO  # still v1: 12.5 %
    assert out.pot_updates[0].config_version == 1
    out = feed(resolve(2, "R1", {1: NOTHING}))
    assert out.pot_updates[0].config_version == 1

    feed(lock(3, "R2", {1: 1000}))
    out = feed(resolve(4, "R2", {1: list(ROYAL_FLUSH)}))  # 100 % of main: a reset
    types = [e.type for e in out.ledger]
    assert types == [
        pot_pb2.LEDGER_ENTRY_TYPE_PRIZE_AWARDED,
        pot_pb2.LEDGER_ENTRY_TYPE_CONFIG_ACTIVATED,
        pot_pb2.LEDGER_ENTRY_TYPE_POT_RESEEDED,
        pot_pb2.LEDGER_ENTRY_TYPE_ROUND_SETTLED,
        pot_pb2.LEDGER_ENTRY_TYPE_CHECKPOINT,  # every activation is checkpointed
    ]
    assert [e.config_version for e in out.ledger] == [1, 2, 2, 2, 2]
    assert [list(e.pending_config_versions) for e in out.ledger] == [[2], [], [], [], []]
    assert out.pot_updates[0].config_version == 2
    assert out.pot_updates[0].sign_value == 800_000  # reseeded to the new base (S8)

    out = feed(lock(5, "R3", {1: 1000}))
    assert accounts(out.ledger)["commission"] == 200 * MINOR_PER_PESO  # v2: 20 %


def test_the_mystery_prize_is_an_award_with_its_reveal() -> None:
    config = {
        **CONFIG,
        "pots": [
            {"name": "main", "percent": "60"},
            {"name": "reserve1", "percent": "30"},
            {"name": "mystery", "percent": "10"},
        ],
        "mystery": {"pot": "mystery", "min": 100, "max": 100},
    }
    feed = Feeder(make_book())
    out = feed(commands.create_group(GROUP, config), link())
    assert pot_pb2.LEDGER_ENTRY_TYPE_MYSTERY_COMMITTED in [e.type for e in out.ledger]
    out = feed(lock(1, "R1", {4: 2000}))  # 2000 x 87.5 % x 10 % = 175 >= 100: a hit
    (award,) = out.awards
    assert (award.prize, award.seat, award.bet, award.amount) == ("MYSTERY", 4, 2000, 100)
    assert award.mystery.trigger == 100
    assert award.mystery.salt_hex == "01" * 16
    assert award.mystery.commitment


def simultaneous_royals(first: str, second: str) -> Outputs:
    """Two tables' royal flushes stamped with the same nanosecond, in one batch: ``first``'s
    result is ahead of ``second``'s on the partition."""
    feed = Feeder(make_book())
    feed(commands.create_group(GROUP, CONFIG), link("T1"), link("T2"))
    seats = {"T1": 1, "T2": 3}
    feed(*(lock(1, "R1", {seat: 1000}, table) for table, seat in seats.items()))
    same_instant = NOW_NS - 5_000_000
    results = [
        commands.table_event(
            GROUP,
            table,
            "R1",
            2,
            CARIBBEAN,
            occurred_at_ns=same_instant,
            round_result=commands.result({seats[table]: list(ROYAL_FLUSH)}),
        )
        for table in (first, second)
    ]
    return feed(*results)


def test_R8_two_tables_hitting_at_once_are_ordered_and_recorded() -> None:
    """R8, S9: two royal flushes at the same instant on two tables of one pot: the one ahead on
    the partition wins the main pot, the other the pot as it stands after the reset; the ledger
    records the order (ledger_sequence), each table, the instant at the table and when the pot
    recorded it. The same two hits in the other order swap the amounts."""
    out = simultaneous_royals("T2", "T1")
    awards = [e for e in out.ledger if e.type == pot_pb2.LEDGER_ENTRY_TYPE_PRIZE_AWARDED]
    assert [a.table_id for a in awards] == ["T2", "T1"]
    assert awards[0].ledger_sequence < awards[1].ledger_sequence
    assert awards[0].occurred_at == awards[1].occurred_at  # the tables saw the same instant
    assert all(a.recorded_at.ToNanoseconds() == NOW_NS for a in awards)
    assert [a.table_id for a in out.awards] == ["T2", "T1"]
    first_amount, second_amount = awards[0].amount, awards[1].amount
    assert first_amount > second_amount > 0  # the second took the main pot after the reset
    swapped = [
        e
        for e in simultaneous_royals("T1", "T2").ledger
        if e.type == pot_pb2.LEDGER_ENTRY_TYPE_PRIZE_AWARDED
    ]
    assert [(a.table_id, a.amount) for a in swapped] == [
        ("T1", first_amount),
        ("T2", second_amount),
    ]


def test_a_group_is_checkpointed_at_once_then_by_the_hour_even_when_quiet() -> None:
    """Issue 23: every group gets a first checkpoint at the tick after its first entries, then
    one at least every checkpoint_seconds, so a takeover never reads further back than that."""
    clock = FakeClock()
    feed = Feeder(make_book(clock))
    feed(commands.create_group(GROUP, CONFIG), link())
    book = feed.book
    assert book.checkpoints_due() == [GROUP]
    out = book.checkpoint(book.checkpoints_due())
    (entry,) = out.ledger
    assert entry.type == pot_pb2.LEDGER_ENTRY_TYPE_CHECKPOINT
    assert not entry.transfers
    assert entry.ledger_sequence == book.groups[GROUP].ledger_sequence
    assert state_of(book).checkpoint_sequence == entry.ledger_sequence
    book.commit(out)
    assert book.checkpoints_due() == []
    clock.wall_ns += 3599 * 10**9
    assert book.checkpoints_due() == []
    clock.wall_ns += 10**9
    assert book.checkpoints_due() == [GROUP]  # quiet for an hour: checkpointed again
