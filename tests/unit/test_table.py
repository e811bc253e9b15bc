"""The gateway's per-table round state machine (rules C1, D1, D5, E1-E6; jackpot.domain.table)."""

from __future__ import annotations

import json

import pytest

from jackpot.domain.cards import Game
from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.table import UNKNOWN_LIMITS, Limits, Phase, Table, limits_in_force
from jackpot.domain.table_messages import (
    AddCredits,
    CancelBet,
    CashOut,
    ExchangeCards,
    Fold,
    LampFault,
    LampRepaired,
    Lock,
    LockRound,
    OpenRound,
    PlaceBet,
    Results,
    RoundLockedFact,
    RoundResultFact,
    RoundVoidedFact,
    SeatAnswer,
    SeatClosedFact,
    SeatForfeitedFact,
    SeatOpenedFact,
    SeatRefusedFact,
    SettleRound,
    VoidRound,
)

LIMITS = Limits(min_bet=1000, max_bet=5000, credit_value=1000)
ROYAL = ["AS", "KS", "QS", "JS", "TS"]
NOTHING = ["2H", "7D", "9C", "JD", "4C"]


def table(game: Game = Game.CARIBBEAN) -> Table:
    t = Table("T1", game, LIMITS)
    t.apply(OpenRound("R1"))
    return t


def refused(t: Table, event: object, reason: Reason) -> DomainError:
    with pytest.raises(DomainError) as caught:
        t.apply(event)  # type: ignore[arg-type]
    assert caught.value.reason is reason
    return caught.value


def test_a_whole_round_publishes_lock_and_result() -> None:
    t = table()
    t.apply(AddCredits(1, 5))
    t.apply(AddCredits(3, 2))
    t.apply(PlaceBet(1, 2))
    t.apply(PlaceBet(3, 1))
    [locked] = t.apply(Lock())
    assert locked == RoundLockedFact("R1", ((1, 2000), (3, 1000)))
    [result] = t.apply(Results({1: ROYAL, 3: NOTHING}))
    assert isinstance(result, RoundResultFact)
    assert result.hands == ((1, tuple(ROYAL)), (3, tuple(NOTHING)))
    assert t.phase is Phase.IDLE
    assert t.seats[1].credits == 3  # the staked credits were consumed by the lock (C1)


def test_E6_bet_needs_credits_on_the_counter() -> None:
    t = table()
    t.apply(AddCredits(2, 1))
    error = refused(t, PlaceBet(2, 2), Reason.INSUFFICIENT_CREDITS)
    assert "seat 2" in error.detail
    assert t.seats[2].credits == 1


def test_E1_bet_outside_the_pot_limits() -> None:
    t = table()
    t.apply(AddCredits(1, 10))
    refused(t, PlaceBet(1, 6), Reason.BET_OUT_OF_LIMITS)
    t.apply(PlaceBet(1, 3))
    refused(t, PlaceBet(1, 3), Reason.BET_OUT_OF_LIMITS)  # 6 credits in all: above 5000
    assert t.seats[1].bet_credits == 3


def test_E1_D1_bet_after_lock_is_refused() -> None:
    t = table()
    t.apply(AddCredits(1, 5))
    t.apply(Lock())
    refused(t, PlaceBet(1, 1), Reason.BET_AFTER_LOCK)
    refused(t, CancelBet(1), Reason.BET_AFTER_LOCK)


def test_E5_lamp_fault_closes_the_seat_and_refunds_an_unlocked_bet() -> None:
    t = table()
    t.apply(AddCredits(4, 3))
    t.apply(PlaceBet(4, 2))
    assert t.apply(LampFault(4)) == [SeatClosedFact(4, "lamp fault")]
    assert (t.seats[4].credits, t.seats[4].bet_credits) == (3, 0)
    refused(t, PlaceBet(4, 1), Reason.SEAT_CLOSED)
    assert t.apply(LampRepaired(4)) == [SeatOpenedFact(4)]
    assert t.apply(PlaceBet(4, 1)) == []


def test_D5_progressive_closed_refuses_bets() -> None:
    t = table()
    t.apply(AddCredits(1, 3))
    t.progressive_open = False
    refused(t, PlaceBet(1, 1), Reason.PROGRESSIVE_CLOSED)


def test_seat_outside_the_game() -> None:
    refused(table(Game.DRAW), AddCredits(7, 1), Reason.SEAT_OUT_OF_RANGE)  # Draw has 6 seats
    refused(table(Game.CARIBBEAN), AddCredits(8, 1), Reason.SEAT_OUT_OF_RANGE)
    refused(table(Game.CARIBBEAN), AddCredits(0, 1), Reason.SEAT_OUT_OF_RANGE)


def test_E2_exchange_forfeits_in_draw_only() -> None:
    t = table(Game.DRAW)
    t.apply(AddCredits(2, 1))
    t.apply(PlaceBet(2, 1))
    t.apply(Lock())
    assert t.apply(ExchangeCards(2)) == [SeatForfeitedFact("R1", 2, "CARD_EXCHANGE")]
    c = table(Game.CARIBBEAN)
    c.apply(AddCredits(2, 1))
    c.apply(PlaceBet(2, 1))
    c.apply(Lock())
    refused(c, ExchangeCards(2), Reason.INVALID_STATE)


def test_E3_fold_needs_a_bet_and_a_lock() -> None:
    t = table()
    t.apply(AddCredits(1, 1))
    t.apply(PlaceBet(1, 1))
    refused(t, Fold(1), Reason.ROUND_NOT_LOCKED)
    t.apply(Lock())
    refused(t, Fold(2), Reason.NO_BET)
    assert t.apply(Fold(1)) == [SeatForfeitedFact("R1", 1, "FOLD")]


def test_C1_void_before_lock_refunds_and_after_lock_is_refused() -> None:
    t = table()
    t.apply(AddCredits(1, 4))
    t.apply(PlaceBet(1, 3))
    assert t.apply(VoidRound("misdeal")) == [RoundVoidedFact("R1", "misdeal", ((1, 3),))]
    assert t.seats[1].credits == 4
    t.apply(OpenRound("R2"))
    t.apply(PlaceBet(1, 1))
    t.apply(Lock())
    refused(t, VoidRound("late"), Reason.INVALID_STATE)


def test_results_are_checked_before_anything_changes() -> None:
    t = table()
    t.apply(AddCredits(1, 1))
    t.apply(AddCredits(2, 1))
    refused(t, Results({1: ROYAL}), Reason.ROUND_NOT_LOCKED)
    t.apply(PlaceBet(1, 1))
    t.apply(PlaceBet(2, 1))
    t.apply(Lock())
    refused(t, Results({3: NOTHING}), Reason.NO_BET)
    refused(t, Results({1: [*ROYAL, "2C"]}), Reason.WRONG_CARD_COUNT)  # six cards
    refused(t, Results({1: ROYAL, 2: ["AS", "2D", "3D", "4D", "5D"]}), Reason.DUPLICATE_CARD)
    refused(t, Results({1: ["AS", "KS", "QS", "JS", "1S"]}), Reason.INVALID_CARD)
    assert t.phase is Phase.LOCKED  # still waiting for a valid result
    assert t.apply(Results({1: ROYAL, 2: NOTHING}))


def test_go_poker_needs_two_community_cards() -> None:
    t = table(Game.GO_POKER)
    t.apply(AddCredits(1, 1))
    t.apply(PlaceBet(1, 1))
    t.apply(Lock())
    refused(t, Results({1: ["JS", "QS", "KS"]}, ["TS"]), Reason.WRONG_CARD_COUNT)
    refused(t, Results({1: ["JS", "QS", "KS"]}, ["TS", "KS"]), Reason.DUPLICATE_CARD)
    [result] = t.apply(Results({1: ["JS", "QS", "KS"]}, ["TS", "AS"]))
    assert isinstance(result, RoundResultFact)
    assert result.community == ("TS", "AS")


def test_blackjack_allows_repeated_cards_from_a_shoe() -> None:
    t = table(Game.BLACKJACK)
    for seat in (1, 2):
        t.apply(AddCredits(seat, 1))
        t.apply(PlaceBet(seat, 1))
    t.apply(Lock())
    assert t.apply(Results({1: ["AS", "AS", "AS", "AS"], 2: ["AS", "7D"]}))


def test_cash_out_cannot_exceed_the_counter() -> None:
    t = table()
    t.apply(AddCredits(1, 2))
    refused(t, CashOut(1, 3), Reason.INSUFFICIENT_CREDITS)
    t.apply(CashOut(1, 2))
    assert t.seats[1].credits == 0


def test_sequence_resend_gets_the_same_answer_once() -> None:
    t = Table("T1", Game.CARIBBEAN, LIMITS)
    t.accept(1, OpenRound("R1"))
    t.accept(2, AddCredits(1, 1))
    t.accept(3, PlaceBet(1, 1))
    first = t.accept(4, Lock())
    again = t.accept(4, Lock())
    assert again.duplicate
    assert first.facts
    assert again.facts == ()  # nothing is published twice
    assert t.phase is Phase.LOCKED
    with pytest.raises(DomainError) as replay:
        t.accept(3, PlaceBet(1, 5))
    assert replay.value.reason is Reason.SEQUENCE_REPLAYED
    with pytest.raises(DomainError) as gap:
        t.accept(6, Fold(1))
    assert gap.value.reason is Reason.SEQUENCE_OUT_OF_ORDER
    assert t.last_sequence == 4


def test_a_refused_input_does_not_use_up_its_sequence() -> None:
    t = Table("T1", Game.CARIBBEAN, LIMITS)
    t.accept(1, OpenRound("R1"))
    with pytest.raises(DomainError):
        t.accept(2, PlaceBet(1, 1))  # no credits
    assert t.last_sequence == 1
    t.accept(2, AddCredits(1, 1))
    assert t.last_sequence == 2


def test_round_ids_must_be_new() -> None:
    t = table()
    t.apply(Lock())
    t.apply(Results({}))
    refused(t, OpenRound("R1"), Reason.INVALID_STATE)
    refused(t, Lock(), Reason.INVALID_STATE)
    t.apply(OpenRound("R2"))
    refused(t, OpenRound("R3"), Reason.INVALID_STATE)


def test_state_survives_a_restart_including_remembered_sequences() -> None:
    t = Table("T1", Game.DRAW, LIMITS)
    t.accept(1, OpenRound("R1"), "f1")
    t.accept(2, AddCredits(6, 3), "f2")
    t.accept(3, PlaceBet(6, 2), "f3")
    t.accept(4, LampFault(2), "f4")
    t.accept(5, Lock(), "f5")
    restored = Table.from_state(json.loads(json.dumps(t.to_state())))
    assert restored.to_state() == t.to_state()
    assert restored.accept(5, Lock(), "f5").duplicate
    with pytest.raises(DomainError) as replay:
        restored.accept(5, Lock(), "other bytes")
    assert replay.value.reason is Reason.SEQUENCE_REPLAYED
    [forfeit] = restored.accept(6, ExchangeCards(6), "f6").facts
    assert forfeit == SeatForfeitedFact("R1", 6, "CARD_EXCHANGE")
    refused(restored, PlaceBet(2, 1), Reason.BET_AFTER_LOCK)


# ------------------------------------------------------------------ the round form (issue 26)


def test_C1_D1_lock_round_opens_bets_and_locks_in_one_input() -> None:
    t = Table("T1", Game.DRAW, LIMITS)
    t.apply(AddCredits(1, 5))
    t.apply(AddCredits(3, 5))
    facts = t.apply(LockRound("R1", {3: 2, 1: 1}))
    assert facts == [RoundLockedFact("R1", ((1, 1000), (3, 2000)))]
    assert (t.phase, t.round_id) == (Phase.LOCKED, "R1")
    assert (t.seats[1].credits, t.seats[3].credits) == (4, 3)  # E6: taken from the counters


def test_E1_E5_E6_lock_round_refuses_seat_by_seat_and_locks_the_rest() -> None:
    t = table(Game.DRAW)
    t.apply(AddCredits(1, 9))
    t.apply(AddCredits(4, 9))
    t.apply(LampFault(4))
    facts = t.apply(LockRound("R1", {1: 2, 2: 1, 4: 1, 5: 6}))
    assert facts[0] == RoundLockedFact("R1", ((1, 2000),))
    refused = {f.seat: f.reason for f in facts[1:] if isinstance(f, SeatRefusedFact)}
    assert refused == {
        2: Reason.INSUFFICIENT_CREDITS,
        4: Reason.SEAT_CLOSED,
        5: Reason.BET_OUT_OF_LIMITS,
    }
    assert t.seats[2].credits == 0
    assert t.seats[5].bet_credits == 0  # a refused seat keeps nothing staked


def test_lock_round_for_another_round_or_twice_is_refused_whole() -> None:
    t = table()
    refused(t, LockRound("R2", {}), Reason.INVALID_STATE)
    assert t.phase is Phase.BETTING
    t.apply(LockRound("R1", {}))
    refused(t, LockRound("R1", {}), Reason.INVALID_STATE)


def test_E2_E3_settle_round_judges_forfeits_by_seat_and_the_hands_whole() -> None:
    t = table(Game.CARIBBEAN)
    t.apply(AddCredits(1, 5))
    t.apply(AddCredits(2, 5))
    t.apply(LockRound("R1", {1: 1, 2: 1}))
    duplicate = SettleRound({2: "FOLD"}, {1: ROYAL, 2: ["AS", *NOTHING[1:]]})
    refused(t, duplicate, Reason.DUPLICATE_CARD)
    assert (t.phase, t.forfeited) == (Phase.LOCKED, {})  # nothing of it applied
    facts = t.apply(SettleRound({1: "CARD_EXCHANGE", 2: "FOLD"}, {1: ROYAL, 2: NOTHING}))
    assert facts[0] == SeatRefusedFact(1, Reason.INVALID_STATE, facts[0].detail)  # type: ignore[union-attr]
    assert facts[1:] == [
        SeatForfeitedFact("R1", 2, "FOLD"),
        RoundResultFact("R1", ((1, tuple(ROYAL)), (2, tuple(NOTHING))), ()),
    ]
    assert t.phase is Phase.IDLE


def test_a_resent_round_form_input_is_answered_with_its_seats_again() -> None:
    t = Table("T1", Game.DRAW, LIMITS)
    t.accept(1, AddCredits(1, 5))
    first = t.accept(2, LockRound("R1", {1: 1, 2: 1}), "lock")
    assert first.seat_answers == (
        SeatAnswer(1),
        SeatAnswer(2, Reason.INSUFFICIENT_CREDITS, first.seat_answers[1].detail),
    )
    restored = Table.from_state(json.loads(json.dumps(t.to_state())))
    again = restored.accept(2, LockRound("R1", {1: 1, 2: 1}), "lock")
    assert again.duplicate
    assert again.seat_answers == first.seat_answers
    assert restored.accept(1, AddCredits(1, 5), repr(AddCredits(1, 5))).seat_answers == ()


def test_E1_D5_a_table_takes_its_groups_limits_between_rounds_or_while_none_were_known() -> None:
    """A land and a studio table alike (``limits_in_force``): the group's limits are taken
    between rounds, or mid-round when the round opened before any were known (its bets were all
    refused as closed); mid-round otherwise the round keeps the limits it opened with."""
    old, new = Limits(1_000, 5_000, 1_000), Limits(2_000, 8_000, 1_000)
    assert limits_in_force(old, new, between_rounds=True) == new
    assert limits_in_force(old, new, between_rounds=False) == old
    assert limits_in_force(UNKNOWN_LIMITS, new, between_rounds=False) == new
    assert limits_in_force(old, None, between_rounds=True) == old  # not heard from yet
    assert limits_in_force(UNKNOWN_LIMITS, None, between_rounds=True) == UNKNOWN_LIMITS
