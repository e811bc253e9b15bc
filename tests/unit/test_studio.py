"""Studio tables (docs/rules.md, rules O1-O8): the engine and the pot's book with a live-dealer
table of thousands of seats judged on one shared hand, beside land tables.

Amounts are worked out by hand in the comments; ``pesos(n)`` is n whole pesos in minor units.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from jackpot.domain.config import PotGroupConfig
from jackpot.domain.engine import PotGroup
from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.events import Event, MysteryAwarded, PrizeAwarded, TableLinked
from jackpot.domain.money import pesos
from jackpot.domain.studio import MAX_STUDIO_SEATS
from jackpot.pot import commands
from jackpot.pot.ledger_restore import ledger_event
from jackpot.pot.pot_book import InputRecord, PotBook
from jackpot.pot.records import linked_tables
from jackpot.pot.transaction_cut import transaction_size
from jackpot.v1 import common_pb2, pot_pb2, table_events_pb2
from tests.unit.test_engine_rules import LIMITS
from tests.unit.test_engine_rules import config as engine_config

ROYAL = ["AH", "KH", "QH", "JH", "TH"]
STRAIGHT_FLUSH = ["5D", "6D", "7D", "8D", "9D"]
FULL_HOUSE = ["QS", "QH", "QD", "4C", "4S"]
NOTHING = ["2C", "7D", "9S", "JC", "4C"]
ENVY_PAYTABLE = {
    "name": "royal-envy",
    "evaluator": "poker",
    "prizes": [
        {"hand": "FLUSH", "multiple": 50},
        {"hand": "ROYAL_FLUSH", "percent": "100", "envy": {"amount": 500}},
    ],
}


def config(**overrides: Any) -> PotGroupConfig:
    """The engine tests' configuration without the commission (the amounts worked out here are
    the bets' whole pesos)."""
    return engine_config(**{"commission_percent": "0", **overrides})


def studio_group(main_pesos: int, seats: int = 10_000, **overrides: Any) -> PotGroup:
    """A group with the studio table S1 of ``seats`` seats and the land table L1."""
    group, _ = PotGroup.open("G", config(**overrides), {"main": pesos(main_pesos)})
    group.link_table("S1", "caribbean", "studio", **LIMITS, studio_seats=seats)
    group.link_table("L1", "caribbean", "SCL", **LIMITS)
    return group


def awards(events: list[Event]) -> list[tuple[str, int, str, int]]:
    return [
        (e.table_id, e.seat, e.prize, e.amount_pesos) for e in events if isinstance(e, PrizeAwarded)
    ]


def identity_holds(group: PotGroup) -> bool:
    """M2 recomputed from the group's fields, independently of check_conservation."""
    return group.collected + group.house_advance == (
        group.commission + sum(group.balances.values()) + group.awarded
    )


def refused(reason: Reason, call: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(DomainError) as error:
        call(*args, **kwargs)
    assert error.value.reason == reason, error.value.detail
    return error.value.detail


# --------------------------------------------------------------------------- the engine


def test_O1_a_studio_table_links_with_its_seats_and_a_wrong_one_is_refused() -> None:
    group = studio_group(1_000_000, seats=10_000)
    events = group.link_table("S2", "caribbean", **LIMITS, studio_seats=MAX_STUDIO_SEATS)
    assert events == [TableLinked("G", "S2", "caribbean", "", MAX_STUDIO_SEATS)]
    assert group.tables["S1"].seats == 10_000
    assert group.tables["L1"].seats == 7
    group.lock_round("S1", "R1", {1: 1000, 10_000: 1000})  # both ends of its seats
    detail = refused(Reason.SEAT_OUT_OF_RANGE, group.lock_round, "S2", "R1", {0: 1000})
    assert "studio table's seats 1-1000000" in detail
    refused(Reason.SEAT_OUT_OF_RANGE, group.lock_round, "L1", "R1", {8: 1000})  # a land table
    link = group.link_table
    for seats in (-1, MAX_STUDIO_SEATS + 1):
        assert "rule O1" in refused(
            Reason.INVALID_CONFIG, link, "S3", "caribbean", **LIMITS, studio_seats=seats
        )
    assert "runs draw" in refused(
        Reason.INVALID_CONFIG, link, "S3", "draw", **LIMITS, studio_seats=100
    )
    # a land table does not become a studio table (nor back) by linking it again
    refused(Reason.INVALID_STATE, link, "L1", "caribbean", **LIMITS, studio_seats=100)
    refused(Reason.INVALID_STATE, link, "S1", "caribbean", **LIMITS)
    # its seats do not shrink under a locked round's bets
    refused(Reason.INVALID_STATE, link, "S1", "caribbean", **LIMITS, studio_seats=10)
    assert "S3" not in group.tables


def test_O1_D4_the_snapshot_and_the_ledger_keep_a_studio_tables_seats() -> None:
    group = studio_group(1_000, seats=12_345)
    restored = PotGroup.from_snapshot(group.snapshot())
    assert restored.tables == group.tables
    state = json.loads(group.snapshot())
    assert state["tables"]["L1"] == ["caribbean", "SCL"]  # a land table's entry as before
    assert state["tables"]["S1"] == ["caribbean", "studio", 12_345]
    # the ledger's TableLinked names the seats of a studio table only (L4's optional fields)
    linked = [
        e.to_dict() for e in group.link_table("S1", "caribbean", **LIMITS, studio_seats=12_345)
    ]
    assert linked[0]["studio_seats"] == 12_345
    land = group.link_table("L1", "caribbean", "SCL", **LIMITS)[0].to_dict()
    assert "studio_seats" not in land


def test_O2_every_bet_is_judged_on_the_shared_hand() -> None:
    """Seats 3, 50 and 9999 bet 1,000 each: the shared royal flush is every bet's hand. Main
    1,000,000 + 3,000 = 1,003,000 = 3 x 334,333 + 1: seat 3 gets 334,334 (S3)."""
    group = studio_group(1_000_000)
    group.lock_round("S1", "R1", {9999: 1000, 3: 1000, 50: 1000})
    events = group.resolve_round("S1", "R1", {}, shared_hand=ROYAL)
    assert awards(events) == [
        ("S1", 3, "ROYAL_FLUSH", 334_334),
        ("S1", 50, "ROYAL_FLUSH", 334_333),
        ("S1", 9999, "ROYAL_FLUSH", 334_333),
    ]
    assert group.main == 0
    assert identity_holds(group)
    assert [list(a["cards"]) for a in group.last_awards] == [ROYAL] * 3


def test_O2_a_wrong_result_is_refused_whole_and_changes_nothing() -> None:
    group = studio_group(1_000_000)
    group.lock_round("S1", "R1", {1: 1000, 2: 1000})
    group.lock_round("L1", "R1", {1: 1000})
    before = group.snapshot()
    resolve = group.resolve_round
    assert "rule O2" in refused(
        Reason.MALFORMED, resolve, "S1", "R1", {1: ROYAL}, shared_hand=ROYAL
    )
    refused(Reason.MALFORMED, resolve, "L1", "R1", {1: ROYAL}, shared_hand=ROYAL)
    refused(Reason.WRONG_CARD_COUNT, resolve, "S1", "R1", {}, shared_hand=ROYAL[:4])
    refused(Reason.WRONG_CARD_COUNT, resolve, "S1", "R1", {}, ["2C"], shared_hand=ROYAL)
    refused(Reason.INVALID_CARD, resolve, "S1", "R1", {}, shared_hand=[*ROYAL[:4], "1H"])
    detail = refused(Reason.DUPLICATE_CARD, resolve, "S1", "R1", {}, shared_hand=[*ROYAL[:4], "AH"])
    assert "AH appears twice in the shared hand" in detail
    refused(Reason.WRONG_CARD_COUNT, resolve, "S1", "R1", {})  # no hand at all
    assert group.snapshot() == before


def test_O3_each_winning_bet_is_paid_the_fixed_prize_on_its_own_bet() -> None:
    """A full house pays 100 x the bet: 100 x 1,000, 100 x 5,000 and 100 x 3,000 (P1, S5)."""
    group = studio_group(2_000_000)
    group.lock_round("S1", "R1", {4000: 3000, 1: 1000, 25: 5000})
    events = group.resolve_round("S1", "R1", {}, shared_hand=FULL_HOUSE)
    assert awards(events) == [
        ("S1", 1, "FULL_HOUSE", 100_000),
        ("S1", 25, "FULL_HOUSE", 500_000),
        ("S1", 4000, "FULL_HOUSE", 300_000),
    ]
    assert group.main == pesos(2_009_000 - 900_000)
    assert identity_holds(group)


def test_O4_S3_ten_thousand_winning_bets_share_the_royal_flush() -> None:
    """10,000 bets of 1,000: main 1,234,567 + 10,000,000 = 11,234,567 = 10,000 x 1,123 + 4,567;
    seat 1 gets 1,123 + 4,567 = 5,690, every other bet 1,123 (S3)."""
    group = studio_group(1_234_567)
    bets = dict.fromkeys(range(10_000, 0, -1), 1000)
    group.lock_round("S1", "R1", bets)
    events = group.resolve_round("S1", "R1", {}, shared_hand=ROYAL)
    paid = awards(events)
    assert len(paid) == 10_000
    assert paid[0] == ("S1", 1, "ROYAL_FLUSH", 5_690)
    assert Counter(amount for *_, amount in paid[1:]) == Counter({1_123: 9_999})
    assert [seat for _, seat, _, _ in paid] == list(range(1, 10_001))  # S5: from seat 1
    assert sum(amount for *_, amount in paid) == 11_234_567
    assert group.main == 0
    assert identity_holds(group)


def test_O4_S4_the_cap_applies_to_each_share_on_its_own_bet() -> None:
    """Straight flush: 10 % of 100,000,000 + 2,000 = 10,000,200, two parts of 5,000,100; seat 1's
    bet of 1,000 caps it at 5,000,000; seat 2's bet of 1,000 too: 100 + 100 stay in the pot."""
    group = studio_group(100_000_000 - 2_000 + 2_000)
    group.lock_round("S1", "R1", {1: 1000, 2: 1000})
    events = group.resolve_round("S1", "R1", {}, shared_hand=STRAIGHT_FLUSH)
    assert awards(events) == [
        ("S1", 1, "STRAIGHT_FLUSH", 5_000_000),
        ("S1", 2, "STRAIGHT_FLUSH", 5_000_000),
    ]
    assert group.main == pesos(100_002_000 - 10_000_000)


def test_O5_a_folded_bet_stays_collected_and_wins_nothing() -> None:
    group = studio_group(100_000)
    group.lock_round("S1", "R1", {1: 1000, 2: 1000})
    group.forfeit("S1", "R1", 1, "FOLD")
    events = group.resolve_round("S1", "R1", {}, shared_hand=ROYAL)
    assert awards(events) == [("S1", 2, "ROYAL_FLUSH", 102_000)]  # C6: seat 1's bet is in it
    assert group.collected == pesos(2_000)
    assert identity_holds(group)


def test_O6_E1_land_and_studio_tables_share_a_group_with_its_limits() -> None:
    group = studio_group(0)
    detail = refused(
        Reason.INVALID_CONFIG,
        group.link_table,
        "S2",
        "caribbean",
        min_bet=500,
        max_bet=5000,
        credit_value=1000,
        studio_seats=100,
    )
    assert "rule E1" in detail
    refused(Reason.BET_OUT_OF_LIMITS, group.lock_round, "S1", "R1", {1: 1000, 2: 6000})
    refused(Reason.BET_OUT_OF_LIMITS, group.lock_round, "S1", "R1", {1: 1500})
    assert "S1" not in group.locked


def test_O8_V1_no_envy_bonus_in_a_group_with_a_studio_table() -> None:
    envious, _ = PotGroup.open("G", config(paytable=ENVY_PAYTABLE), {})
    detail = refused(
        Reason.INVALID_CONFIG, envious.link_table, "S1", "caribbean", **LIMITS, studio_seats=100
    )
    assert "rule O8" in detail
    assert "ROYAL_FLUSH" in detail
    envious.link_table("L1", "caribbean", **LIMITS)  # a land table keeps its envy (V1)
    group = studio_group(0)
    newer = config(version=2, paytable=ENVY_PAYTABLE)
    assert "S1" in refused(Reason.INVALID_CONFIG, group.propose_config, newer, "ops", "envy")
    assert group.pending == []


# --------------------------------------------------------------------------- the pot's book

GROUP = "studio-group"
TOPIC = "jackpot.table-events.v1"
CARIBBEAN = common_pb2.GAME_CARIBBEAN


class Book:
    """Table events through a real PotBook as records of one partition, each batch committed."""

    def __init__(self) -> None:
        self.book = PotBook(0, source="pot:test", trigger_source=lambda lo, hi: (lo, b"\x01" * 16))
        self.offset = 0
        self.sequences: Counter[str] = Counter()
        self.ledger: list[pot_pb2.LedgerEntry] = []  # every entry written, in order

    def __call__(self, *events: table_events_pb2.TableEvent) -> Any:
        records = []
        for event in events:
            value = event.SerializeToString()
            records.append(InputRecord(value, TOPIC, 0, self.offset, GROUP.encode()))
            self.offset += 1
        batch = self.book.batch(records)
        self.book.commit(batch.outputs)
        self.ledger += batch.outputs.ledger
        return batch

    def table_event(self, table: str, round_id: str, **payload: Any) -> Any:
        self.sequences[table] += 1
        return commands.table_event(
            GROUP, table, round_id, self.sequences[table], CARIBBEAN, **payload
        )


def opened_book(main_pesos: int, book: Book | None = None) -> Book:
    book = book or Book()
    data = {**json.loads(json.dumps(config().to_config())), "base": 100_000}
    book(commands.create_group(GROUP, data))
    for table, seats in (("S1", 10_000), ("L1", 0)):
        link = table_events_pb2.LinkTable(
            table_id=table, game=CARIBBEAN, site="x", studio_seats=seats, **LIMITS
        )
        book(commands.link_table(GROUP, link))
    if main_pesos:
        book.book.groups[GROUP].group.balances["main"] += pesos(main_pesos)
        book.book.groups[GROUP].group.house_advance += pesos(main_pesos)
    return book


def test_O7_S9_a_studio_and_a_land_round_in_one_batch_resolve_in_their_order() -> None:
    """One batch: S1 locks 10,000 bets of 1,000 and L1 one; S1's shared royal flush takes the
    main pot 100,000 (base) + 10,001,000 = 10,101,000 = 10,000 x 1,010 + 1,000 (seat 1 2,010);
    the pot is filled back to the base 100,000 by the house (S8); then L1's royal flush takes that
    100,000. The awards, the ledger and the dead letters of the batch are its records."""
    book = opened_book(0)
    bets = {seat: 1000 for seat in range(1, 10_001)}
    shared = table_events_pb2.RoundResult(shared_hand=ROYAL)
    batch = book(
        book.table_event("S1", "S-1", round_locked=commands.locked(bets)),
        book.table_event("L1", "L-1", round_locked=commands.locked({4: 1000})),
        book.table_event("S1", "S-1", round_result=shared),
        book.table_event(
            "L1", "L-1", round_result=commands.result({4: ["TS", "JS", "QS", "KS", "AS"]})
        ),
    )
    outputs = batch.outputs
    assert not outputs.dead_letters
    studio = [a for a in outputs.awards if a.table_id == "S1"]
    assert len(studio) == 10_000
    assert (studio[0].seat, studio[0].amount) == (1, 2_010)
    assert {a.amount for a in studio[1:]} == {1_010}
    assert [(a.table_id, a.seat, a.amount) for a in outputs.awards[10_000:]] == [("L1", 4, 100_000)]
    topics = Counter(record.topic for record in batch.records)
    assert topics["jackpot.awards.v1"] == 5  # the studio's 10,000 in 4 bundles, the land one alone
    runtime = book.book.groups[GROUP]
    assert runtime.group.main == pesos(100_000)
    assert identity_holds(runtime.group)
    assert [t.studio_seats for t in linked_tables(runtime.group)] == [0, 10_000]  # GetPotGroup


def test_O2_a_wrong_shared_hand_is_a_dead_letter_and_the_round_waits() -> None:
    """A shared hand with a card twice: refused with its reason to the dead letters, nothing
    paid or written to the ledger; the round stays locked for the corrected result."""
    book = opened_book(500_000)
    book(book.table_event("S1", "R1", round_locked=commands.locked({1: 1000, 2: 1000})))
    bad = table_events_pb2.RoundResult(shared_hand=[*ROYAL[:4], "AH"])
    outputs = book(book.table_event("S1", "R1", round_result=bad)).outputs
    (letter,) = outputs.dead_letters
    assert letter.reason == common_pb2.REJECT_REASON_DUPLICATE_CARD
    assert "AH appears twice in the shared hand" in letter.detail
    assert not outputs.awards
    assert not outputs.ledger
    group = book.book.groups[GROUP].group
    assert "S1" in group.locked
    assert group.main == pesos(602_000)
    good = table_events_pb2.RoundResult(shared_hand=ROYAL)
    paid = book(book.table_event("S1", "R1", round_result=good)).outputs.awards
    assert [(a.seat, a.amount) for a in paid] == [(1, 301_000), (2, 301_000)]


def test_O1_D4_each_award_names_the_player_who_held_the_seat_across_snapshot_and_ledger() -> None:
    """The platform's player of each bet travels with the round: in the lock's ledger entry, the
    snapshot, a state rebuilt from the ledger alone, and each award (whose wallet is paid)."""
    book = opened_book(0)
    players = {1: "ana", 2: "bea"}
    locked = table_events_pb2.RoundLocked(
        bets=[
            table_events_pb2.SeatBet(seat=seat, bet=1000, player=player)
            for seat, player in players.items()
        ]
    )
    batch = book(book.table_event("S1", "R1", round_locked=locked))
    (collected,) = [
        e for e in batch.outputs.ledger if e.type == pot_pb2.LEDGER_ENTRY_TYPE_BETS_COLLECTED
    ]
    assert json.loads(collected.detail_json)["players"] == [[1, "ana"], [2, "bea"]]
    group = book.book.groups[GROUP].group
    assert PotGroup.from_snapshot(group.snapshot()).locked["S1"].players == players
    rebuilt, _ = PotGroup.from_ledger(GROUP, [ledger_event(e) for e in book.ledger])
    assert rebuilt.locked["S1"].players == players  # D4: the ledger alone knows them
    shared = table_events_pb2.RoundResult(shared_hand=ROYAL)
    awards = book(book.table_event("S1", "R1", round_result=shared)).outputs.awards
    assert [(a.seat, a.player) for a in awards] == [(1, "ana"), (2, "bea")]
    # a land table's bets name no player
    land = table_events_pb2.RoundLocked(
        bets=[table_events_pb2.SeatBet(seat=1, bet=1000, player="someone")]
    )
    (letter,) = book(book.table_event("L1", "L-9", round_locked=land)).outputs.dead_letters
    assert "land table L1 names no players" in letter.detail


def test_O9_X2_a_mystery_prize_won_at_a_studio_seat_names_its_player() -> None:
    """The mystery prize (X2) crossed by a studio bet is that player's, paid to the wallet as
    every studio prize (O9); at a land seat it names nobody (its ledger entry as before)."""
    mystery = {
        "pots": [{"name": "main", "percent": 90}, {"name": "mystery", "percent": 10}],
        "mystery": {"pot": "mystery", "min": 1_000, "max": 1_000},
    }
    group, _ = PotGroup.open("G", config(**mystery), trigger_source=lambda lo, hi: (lo, b"\1" * 16))
    group.link_table("S1", "caribbean", "studio", **LIMITS, studio_seats=20_000)
    group.link_table("L1", "caribbean", "SCL", **LIMITS)
    bets = dict.fromkeys(range(1, 21), 1000)  # 10 % of 1,000 a bet: seat 10 crosses 1,000
    events = group.lock_round("S1", "R1", bets, {seat: f"p{seat}" for seat in bets})
    [hit] = [e for e in events if isinstance(e, MysteryAwarded)]
    assert (hit.seat, hit.amount_pesos, hit.player) == (10, 1_000, "p10")
    assert hit.to_dict()["player"] == "p10"
    events = group.lock_round("L1", "R1", dict.fromkeys(range(1, 8), 5000))
    [land] = [e for e in events if isinstance(e, MysteryAwarded)]
    assert land.player == ""
    assert "player" not in land.to_dict()  # a land table's entry is as it was


def test_O7_a_studio_round_locks_and_settles_after_what_came_before_it_committed() -> None:
    """The pot's transactions (issue 39 item 6): a record that locks or settles a round of
    LARGE_ROUND_BETS bets or more starts a transaction, so the land records fetched before
    it commit without waiting for its 10,000 contributions or prizes; those after it go with it.
    Cut so, the batches pay exactly what one batch of them all pays (S9's order kept)."""
    book = opened_book(0)
    bets = {seat: 1000 for seat in range(1, 10_001)}
    royal = table_events_pb2.RoundResult(shared_hand=ROYAL)
    land_royal = commands.result({4: ["TS", "JS", "QS", "KS", "AS"]})
    events = [
        book.table_event("L1", "L-1", round_locked=commands.locked({4: 1000})),
        book.table_event("S1", "S-1", round_locked=commands.locked(bets)),
        book.table_event("L1", "L-1", round_result=land_royal),
        book.table_event("S1", "S-1", round_result=royal),
        book.table_event("L1", "L-2", round_locked=commands.locked({2: 1000})),
    ]
    records = [
        InputRecord(e.SerializeToString(), TOPIC, 0, book.offset + i, GROUP.encode())
        for i, e in enumerate(events)
    ]
    whole = opened_book(0)
    whole(*events)  # the same events in one batch, as before the cut
    sizes = []
    rest = records
    while rest:
        size = transaction_size(rest, book.book.groups)
        sizes.append(size)
        batch = book.book.batch(rest[:size])
        book.book.commit(batch.outputs)
        book.ledger += batch.outputs.ledger
        rest = rest[size:]
    assert sizes == [1, 2, 2]  # L1's lock; S1's lock and L1's result; S1's result and L1's lock

    def written(entry: pot_pb2.LedgerEntry) -> tuple[Any, ...]:
        return (entry.ledger_sequence, entry.type, entry.table_id, entry.seat, entry.amount)

    assert len(book.ledger) > 10_000
    assert [written(e) for e in book.ledger] == [written(e) for e in whole.ledger]
    assert book.book.groups[GROUP].group.balances == whole.book.groups[GROUP].group.balances
    # a round locked in an earlier transaction: its result after a land record starts one too
    book(book.table_event("S1", "S-2", round_locked=commands.locked(bets)))
    later = [
        book.table_event("L1", "L-2", round_result=commands.result({2: ROYAL})),
        book.table_event("S1", "S-2", round_voided=table_events_pb2.RoundVoided()),
    ]
    records = [
        InputRecord(e.SerializeToString(), TOPIC, 0, book.offset + i, GROUP.encode())
        for i, e in enumerate(later)
    ]
    assert transaction_size(records, book.book.groups) == 1
    assert transaction_size(records[1:], book.book.groups) == 1
    # a studio round of a few bets, or anything unreadable, is no reason to cut
    small = [
        book.table_event("S1", "S-3", round_locked=commands.locked({1: 1000, 2: 1000})),
        book.table_event("L1", "L-3", round_locked=commands.locked({3: 1000})),
    ]
    records = [
        InputRecord(b"\xff not a table event", TOPIC, 0, 0, GROUP.encode()),
        *(
            InputRecord(e.SerializeToString(), TOPIC, 0, 1 + i, GROUP.encode())
            for i, e in enumerate(small)
        ),
    ]
    assert transaction_size(records, book.book.groups) == 3
