"""Stateful fuzzing of the table's round state machine (issue 9, "Bad input").

A hypothesis state machine drives one :class:`jackpot.domain.table.Table` of a random game with
random sequences of every DeviceInput, plausible and hostile (seats far outside the table, zero,
negative and huge credit amounts, arbitrary cards and round ids, replayed and out-of-order
sequence numbers, resends), while the gateway's levers move too: the pot's limits change between
rounds, the progressive opens and closes (D5), and the gateway restarts from ``to_state()``.

After every step: credits and bets are never negative; a bet is 0 or within the limits (E1); the
phase agrees with the round id, the bets and the forfeits; credits are conserved (added - cashed
out - collected at lock); ``to_state``/``from_state`` round-trip exactly, through JSON too; and a
refused input (a DomainError naming a reason and a detail) changed nothing at all.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from jackpot.domain.cards import CARD_CODES, GAME_RULES, Game
from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.table import REMEMBERED_OUTCOMES, Limits, Phase, Table
from jackpot.domain.table_messages import (
    AddCredits,
    CancelBet,
    CashOut,
    DeviceInput,
    ExchangeCards,
    Fold,
    LampFault,
    LampRepaired,
    Lock,
    OpenRound,
    PlaceBet,
    Results,
    RoundLockedFact,
    VoidRound,
)

DECK = sorted(CARD_CODES)
CHARS = st.characters(codec="utf-8")
SEATS = st.one_of(
    st.integers(1, 3),
    st.integers(-2, 9),
    st.integers(0, 1000),
    st.just(2**32 - 1),
    st.integers(-(2**63), 2**64),
)
CREDITS = st.one_of(
    st.integers(1, 6),
    st.integers(-3, 12),
    st.integers(0, 2**32 - 1),
    st.just(2**32 - 1),
    st.integers(-(2**63), 2**64),
)
ROUND_IDS = st.one_of(st.sampled_from(["R1", "R2", "R3", ""]), st.text(CHARS, max_size=8))
CARD = st.one_of(st.sampled_from(DECK), st.text(CHARS, max_size=3), st.sampled_from(["as", "10S"]))
STANDARD = Limits(1000, 5000, 1000)
LIMITS = st.sampled_from(
    [STANDARD, STANDARD, STANDARD, Limits(500, 500, 500), Limits(1, 10**9, 1), Limits(0, 0, 1)]
)


def json_round_trip(state: dict[str, Any]) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(json.dumps(state))
    return loaded


class TableMachine(RuleBasedStateMachine):
    table: Table

    @initialize(
        game=st.sampled_from(list(Game)),
        limits=LIMITS,
        progressive=st.sampled_from([True, True, True, False]),
    )
    def start(self, game: Game, limits: Limits, progressive: bool) -> None:
        self.table = Table("T-FUZZ", game, limits, progressive_open=progressive)
        self.credits_in = 0
        self.credits_out = 0
        self.collected = 0  # credits collected by locked rounds
        self.accepted: list[tuple[int, DeviceInput]] = []

    # ------------------------------------------------------------------------ submitting

    def submit(self, device_input: DeviceInput, sequence: int | None = None) -> None:
        table = self.table
        before = table.to_state()
        credit_value = table.limits.credit_value
        if sequence is None:
            sequence = table.last_sequence + 1
        refusal: DomainError | None = None
        try:
            outcome = table.accept(sequence, device_input)
        except DomainError as error:
            refusal = error
        if refusal is not None:
            assert isinstance(refusal.reason, Reason)
            assert refusal.detail
            assert table.to_state() == before, f"refused ({refusal}) but the table changed"
            return
        if outcome.duplicate:
            assert table.to_state() == before
            return
        assert sequence == table.last_sequence
        event(f"accepted {type(device_input).__name__}")
        self.accepted.append((sequence, device_input))
        if isinstance(device_input, AddCredits):
            self.credits_in += device_input.credits
        elif isinstance(device_input, CashOut):
            self.credits_out += device_input.credits
        for fact in outcome.facts:
            if isinstance(fact, RoundLockedFact):
                for _, pesos in fact.bets:
                    assert pesos > 0
                    assert pesos % credit_value == 0
                    self.collected += pesos // credit_value

    def plausible_seat(self, data: st.DataObject) -> int:
        return data.draw(st.integers(1, GAME_RULES[self.table.game].seats), label="seat")

    # ------------------------------------------------------------------------------ rules

    @rule(round_id=ROUND_IDS)
    def open_round(self, round_id: str) -> None:
        self.submit(OpenRound(round_id))

    @rule(seat=SEATS, credits=CREDITS)
    def add_credits(self, seat: int, credits: int) -> None:
        self.submit(AddCredits(seat, credits))

    @rule(seat=SEATS, credits=CREDITS)
    def cash_out(self, seat: int, credits: int) -> None:
        self.submit(CashOut(seat, credits))

    @rule(seat=SEATS, credits=CREDITS)
    def place_bet(self, seat: int, credits: int) -> None:
        self.submit(PlaceBet(seat, credits))

    @rule(data=st.data(), credits=st.integers(1, 6))
    def plausible_credits_and_bet(self, data: st.DataObject, credits: int) -> None:
        seat = self.plausible_seat(data)
        self.submit(AddCredits(seat, credits + 2))
        self.submit(PlaceBet(seat, credits))

    def dealer_moves_on(self, data: st.DataObject) -> None:
        """What a real table would do next: a fresh round, bets, a lock, forfeits, results."""
        table = self.table
        move = data.draw(st.integers(0, 5), label="move")
        seat = self.plausible_seat(data)
        if table.phase is Phase.IDLE:
            if move == 0:
                self.submit(CashOut(seat, max(table.seats[seat].credits, 1)))
            else:
                self.submit(OpenRound(f"R{table.last_sequence + 1}"))
        elif table.phase is Phase.BETTING:
            if move == 0:
                self.submit(Lock())
            elif move == 2:
                self.submit(CancelBet(seat))
            else:
                self.submit(AddCredits(seat, 5))
                self.submit(PlaceBet(seat, data.draw(st.integers(1, 5), label="bet")))
        elif move == 0:
            self.submit(Fold(seat))
        elif move == 1:
            self.submit(ExchangeCards(seat))
        else:
            self.plausible_results(data)

    @rule(data=st.data())
    def dealer(self, data: st.DataObject) -> None:
        self.dealer_moves_on(data)

    @rule(data=st.data())
    def dealer_again(self, data: st.DataObject) -> None:  # weighs the plausible path double
        self.dealer_moves_on(data)

    @rule(seat=SEATS)
    def cancel_bet(self, seat: int) -> None:
        self.submit(CancelBet(seat))

    @rule(seat=SEATS)
    def lamp_fault(self, seat: int) -> None:
        self.submit(LampFault(seat))

    @rule(seat=SEATS)
    def lamp_repaired(self, seat: int) -> None:
        self.submit(LampRepaired(seat))

    @rule()
    def lock(self) -> None:
        self.submit(Lock())

    @rule(seat=SEATS)
    def fold(self, seat: int) -> None:
        self.submit(Fold(seat))

    @rule(seat=SEATS)
    def exchange_cards(self, seat: int) -> None:
        self.submit(ExchangeCards(seat))

    @rule(reason=st.text(CHARS, max_size=10))
    def void(self, reason: str) -> None:
        self.submit(VoidRound(reason))

    @rule(data=st.data())
    def plausible_results(self, data: st.DataObject) -> None:
        rules = GAME_RULES[self.table.game]
        deck = data.draw(st.permutations(DECK), label="deck")
        bettors = sorted(s for s, seat in self.table.seats.items() if seat.bet_credits)
        seats = data.draw(st.lists(st.sampled_from(bettors), unique=True)) if bettors else []
        size = data.draw(st.integers(*rules.own_cards), label="own cards")
        hands = {seat: deck[i * size : (i + 1) * size] for i, seat in enumerate(seats)}
        community = deck[len(deck) - rules.community_cards :] if rules.community_cards else []
        self.submit(Results(hands, community))

    @rule(
        hands=st.dictionaries(
            SEATS,
            st.one_of(
                st.lists(CARD, max_size=10),
                st.lists(st.sampled_from(DECK[:6]), min_size=2, max_size=6),  # duplicates
            ),
            max_size=8,
        ),
        community=st.lists(CARD, max_size=4),
    )
    def hostile_results(self, hands: dict[int, list[str]], community: list[str]) -> None:
        self.submit(Results(hands, community))

    @precondition(lambda self: bool(self.accepted))
    @rule(data=st.data())
    def resend(self, data: st.DataObject) -> None:
        """The same sequence and content again: a harmless duplicate (if still remembered)."""
        sequence, device_input = data.draw(st.sampled_from(self.accepted), label="resent")
        before = self.table.to_state()
        outcome = self.table.accept(sequence, device_input)
        assert outcome.duplicate
        assert outcome.facts == ()
        assert self.table.to_state() == before

    @rule(
        sequence=st.one_of(st.integers(-5, 60), st.integers(-(2**63), 2**64)),
        seat=SEATS,
        credits=CREDITS,
    )
    def out_of_order(self, sequence: int, seat: int, credits: int) -> None:
        self.submit(AddCredits(seat, credits), sequence=sequence)

    @precondition(lambda self: self.table.phase is Phase.IDLE)
    @rule(limits=LIMITS)
    def pot_limits_change(self, limits: Limits) -> None:
        """The gateway adopts the pot's limits only between rounds."""
        self.table.limits = limits

    @rule(is_open=st.booleans())
    def progressive_status(self, is_open: bool) -> None:
        """D5: the pot group fell silent, or was heard from again."""
        self.table.progressive_open = is_open

    @rule()
    def gateway_restart(self) -> None:
        """The gateway resumes from its spooled state (JSON in SQLite)."""
        restored = Table.from_state(json_round_trip(self.table.to_state()))
        restored.progressive_open = self.table.progressive_open
        assert restored == self.table
        self.table = restored

    # ------------------------------------------------------------------------- invariants

    @invariant()
    def seats_never_negative_and_bets_within_limits(self) -> None:
        limits = self.table.limits
        for seat in self.table.seats.values():
            assert seat.credits >= 0
            assert seat.bet_credits >= 0
            if seat.bet_credits:
                assert limits.min_bet <= seat.bet_credits * limits.credit_value <= limits.max_bet
        assert set(self.table.seats) == set(range(1, GAME_RULES[self.table.game].seats + 1))

    @invariant()
    def phase_is_consistent(self) -> None:
        table = self.table
        bettors = {s for s, seat in table.seats.items() if seat.bet_credits}
        if table.phase is Phase.IDLE:
            assert table.round_id == ""
            assert not bettors
            assert not table.forfeited
        else:
            assert table.round_id
            assert table.round_id != table.last_round_id
        if table.phase is Phase.BETTING:
            assert not table.forfeited
            assert not any(table.seats[s].closed for s in bettors)  # E5: a lamp fault refunds
        if table.phase is Phase.LOCKED:
            assert set(table.forfeited) <= bettors
            assert set(table.forfeited.values()) <= {"FOLD", "CARD_EXCHANGE"}

    @invariant()
    def credits_are_conserved(self) -> None:
        table = self.table
        on_counters = sum(seat.credits for seat in table.seats.values())
        staked = sum(seat.bet_credits for seat in table.seats.values())
        if table.phase is Phase.LOCKED:
            staked = 0  # collected at lock, already counted in self.collected
        assert on_counters + staked == self.credits_in - self.credits_out - self.collected

    @invariant()
    def state_round_trips_exactly(self) -> None:
        state = self.table.to_state()
        assert Table.from_state(state).to_state() == state
        assert Table.from_state(json_round_trip(state)).to_state() == state
        assert len(state["seen"]) <= REMEMBERED_OUTCOMES
        assert json_round_trip(state) == json.loads(json.dumps(state))


TableMachine.TestCase.settings = settings(
    max_examples=120,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestFuzzTableStateMachine = TableMachine.TestCase
