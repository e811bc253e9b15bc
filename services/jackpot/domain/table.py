"""One table's progressive round, as the gateway sees it (rules C1, D1, D5, E1-E6).

The flow is ``idle -> betting -> locked -> settled``: the dealer opens a round, players bet
credits on their seat's acceptor, the dealer locks (no more bets), players may fold or exchange
cards (forfeits), and the results settle the round. A table controller may send the round in its
round form instead: ``LockRound`` (the bets closed out at the lock, judged seat by seat: a
refused seat is a ``SeatRefusedFact`` and the others lock) and ``SettleRound`` (the forfeits,
judged seat by seat, and the hands, judged whole); the inputs and facts are
:mod:`jackpot.domain.table_messages`. A :class:`Table` validates each device input against that
flow and the pot's limits and either raises :class:`DomainError` (nothing changed) or returns the
facts to publish for the pot service.

Device inputs carry a per-table sequence number. :meth:`Table.accept` makes a resend harmless: the
same sequence with the same content (compared by a fingerprint of the device's bytes) is accepted
again as a duplicate without re-applying it or publishing anything, the same sequence with other
content is ``SEQUENCE_REPLAYED``, and a gap or a step back is ``SEQUENCE_OUT_OF_ORDER``. A refused
input does not use up its sequence number. :meth:`Table.to_state` / :meth:`Table.from_state` carry
all of it (the remembered fingerprints too) across a gateway restart.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from jackpot.domain.cards import (
    GAME_RULES,
    Game,
    check_hand_size,
    check_one_deck,
    check_seat,
    parse_cards,
)
from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.table_messages import (
    AddCredits,
    CancelBet,
    CashOut,
    DeviceInput,
    ExchangeCards,
    Fact,
    Fold,
    LampFault,
    LampRepaired,
    Lock,
    LockRound,
    OpenRound,
    Outcome,
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

REMEMBERED_OUTCOMES = 1024


class Phase(Enum):
    IDLE = "idle"  # no round yet, or the last one settled or voided
    BETTING = "betting"
    LOCKED = "locked"


# ------------------------------------------------------------------------------------ state


@dataclass(slots=True)
class Seat:
    credits: int = 0  # on the counter, not staked
    bet_credits: int = 0  # staked on the progressive in the current round
    closed: bool = False  # lamp fault (E5)


@dataclass(frozen=True, slots=True)
class Limits:
    """The pot group's bet limits and credit value, owned by the pot service (E1)."""

    min_bet: int
    max_bet: int
    credit_value: int


# A table's limits until its pot group is heard from: every bet refused (a land or studio table)
UNKNOWN_LIMITS = Limits(0, 0, 1)


def limits_in_force(current: Limits, group: Limits | None, between_rounds: bool) -> Limits:
    """A table's limits once its pot group's are heard (E1): the group's, taken between rounds,
    or in a round opened before any were known (each of its bets was refused as closed, D5:
    none was judged by other limits); else, mid-round, those the round opened with."""
    if group is not None and (between_rounds or current == UNKNOWN_LIMITS):
        return group
    return current


@dataclass(slots=True)
class Table:
    table_id: str
    game: Game
    limits: Limits
    progressive_open: bool = True  # D5: False while the pot's owner cannot be reached
    phase: Phase = Phase.IDLE
    round_id: str = ""
    last_round_id: str = ""
    seats: dict[int, Seat] = field(default_factory=dict)
    forfeited: dict[int, str] = field(default_factory=dict)
    last_sequence: int = 0
    published: int = 0  # sequence number of the last fact published for the pot service
    # the sequence of the last round-form input and its answers per seat (for its resend)
    seat_answers: tuple[int, tuple[SeatAnswer, ...]] = (0, ())
    _seen: OrderedDict[int, str] = field(default_factory=OrderedDict)  # sequence -> fingerprint

    def __post_init__(self) -> None:
        if not self.seats:
            self.seats = {s: Seat() for s in range(1, GAME_RULES[self.game].seats + 1)}

    # ------------------------------------------------------------------------- sequencing

    def accept(self, sequence: int, event: DeviceInput, fingerprint: str | None = None) -> Outcome:
        """Apply one sequenced device input exactly once (see the module docstring)."""
        fingerprint = repr(event) if fingerprint is None else fingerprint
        if sequence <= self.last_sequence:
            remembered = self._seen.get(sequence)
            if remembered is None:
                raise DomainError(
                    Reason.SEQUENCE_OUT_OF_ORDER,
                    f"table {self.table_id}: sequence {sequence} is older than the last "
                    f"{REMEMBERED_OUTCOMES} events (last {self.last_sequence})",
                )
            if remembered != fingerprint:
                raise DomainError(
                    Reason.SEQUENCE_REPLAYED,
                    f"table {self.table_id}: sequence {sequence} was already used for another "
                    "event",
                )
            answered, last_answers = self.seat_answers
            return Outcome(sequence, (), True, last_answers if answered == sequence else ())
        if sequence != self.last_sequence + 1:
            raise DomainError(
                Reason.SEQUENCE_OUT_OF_ORDER,
                f"table {self.table_id}: sequence {sequence} after {self.last_sequence}; "
                f"expected {self.last_sequence + 1}",
            )
        facts = tuple(self.apply(event))
        answers: tuple[SeatAnswer, ...] = ()
        if isinstance(event, LockRound | SettleRound):
            answers = _seat_answers(event, facts)
            self.seat_answers = (sequence, answers)
        self.last_sequence = sequence
        self._seen[sequence] = fingerprint
        forgotten = []
        while len(self._seen) > REMEMBERED_OUTCOMES:
            forgotten.append(self._seen.popitem(last=False))
        return Outcome(sequence, facts, seat_answers=answers, forgotten=tuple(forgotten))

    def seen_before(self, outcome: Outcome) -> list[tuple[int, str]]:
        """The remembered (sequence, fingerprint) pairs as they were before ``outcome`` was
        accepted: what undoing that accept restores (its durable write failed)."""
        if outcome.duplicate:
            return list(self._seen.items())
        kept = [(s, f) for s, f in self._seen.items() if s != outcome.sequence]
        return [*outcome.forgotten, *kept]

    def to_state(self, with_seen: bool = True) -> dict[str, Any]:
        """Everything needed to resume this table after a restart, as JSON-ready data; without
        the remembered fingerprints when ``with_seen`` is false (the gateway's spool keeps
        those a row each, and copying 1,024 of them per event was a fifth of its CPU)."""
        state: dict[str, Any] = {
            "table_id": self.table_id,
            "game": self.game.value,
            "limits": [self.limits.min_bet, self.limits.max_bet, self.limits.credit_value],
            "phase": self.phase.value,
            "round_id": self.round_id,
            "last_round_id": self.last_round_id,
            "seats": {s: [st.credits, st.bet_credits, st.closed] for s, st in self.seats.items()},
            "forfeited": self.forfeited,
            "last_sequence": self.last_sequence,
            "published": self.published,
        }
        if self.seat_answers[1]:
            answered, answers = self.seat_answers
            state["seat_answers"] = [
                answered,
                [[a.seat, a.reason.value if a.reason else None, a.detail] for a in answers],
            ]
        if with_seen:
            state["seen"] = list(self._seen.items())
        return state

    @classmethod
    def from_state(cls, data: Mapping[str, Any]) -> Table:
        table = cls(
            data["table_id"],
            Game(data["game"]),
            Limits(*data["limits"]),
            phase=Phase(data["phase"]),
            round_id=data["round_id"],
            last_round_id=data["last_round_id"],
            seats={int(s): Seat(c, b, closed) for s, (c, b, closed) in data["seats"].items()},
            forfeited={int(s): r for s, r in data["forfeited"].items()},
            last_sequence=data["last_sequence"],
            published=data["published"],
        )
        table._seen = OrderedDict((int(s), f) for s, f in data.get("seen", ()))
        if "seat_answers" in data:  # absent in states written before the round form
            answered, answers = data["seat_answers"]
            table.seat_answers = (
                answered,
                tuple(SeatAnswer(s, Reason(r) if r else None, d) for s, r, d in answers),
            )
        return table

    # ---------------------------------------------------------------------------- rules

    def apply(self, event: DeviceInput) -> list[Fact]:
        """Validate and apply one input; raises DomainError and changes nothing when refused."""
        match event:
            case OpenRound(round_id):
                return self._open(round_id)
            case AddCredits(seat, credits):
                self._positive(credits, "credits")
                self._seat(seat).credits += credits
                return []
            case CashOut(seat, credits):
                state = self._seat(seat)
                self._positive(credits, "credits")
                if credits > state.credits:
                    raise DomainError(
                        Reason.INSUFFICIENT_CREDITS,
                        f"seat {seat} cashes out {credits} credits but holds {state.credits}",
                    )
                state.credits -= credits
                return []
            case PlaceBet(seat, credits):
                return self._bet(seat, credits)
            case CancelBet(seat):
                state = self._seat(seat)
                self._phase(Phase.BETTING, Reason.BET_AFTER_LOCK, "cancel a bet")
                if not state.bet_credits:
                    raise DomainError(Reason.NO_BET, f"seat {seat} has no bet to cancel")
                state.credits += state.bet_credits
                state.bet_credits = 0
                return []
            case LampFault(seat):
                return self._lamp_fault(seat)
            case LampRepaired(seat):
                state = self._seat(seat)
                if not state.closed:
                    return []
                state.closed = False
                return [SeatOpenedFact(seat)]
            case Lock():
                return self._lock()
            case Fold(seat):
                return self._forfeit(seat, "FOLD")
            case ExchangeCards(seat):
                return self._forfeit(seat, "CARD_EXCHANGE")
            case VoidRound(reason):
                return self._void(reason)
            case Results(hands, community):
                return self._results(hands, community)
            case LockRound(round_id, bets):
                return self._lock_round(round_id, bets)
            case SettleRound(forfeits, hands, community):
                return self._settle_round(forfeits, hands, community)
        raise DomainError(Reason.MALFORMED, f"unknown device input {event!r}")

    def _open(self, round_id: str) -> list[Fact]:
        if self.phase is not Phase.IDLE:
            raise DomainError(
                Reason.INVALID_STATE,
                f"table {self.table_id}: round {self.round_id} is still {self.phase.value}",
            )
        if not round_id or round_id == self.last_round_id:
            raise DomainError(
                Reason.INVALID_STATE, f"table {self.table_id}: round id {round_id!r} is not new"
            )
        self.phase, self.round_id = Phase.BETTING, round_id
        self.forfeited = {}
        return []

    def _bet(self, seat: int, credits: int) -> list[Fact]:
        state = self._seat(seat)
        self._phase(Phase.BETTING, Reason.BET_AFTER_LOCK, "bet")
        if not self.progressive_open:
            raise DomainError(
                Reason.PROGRESSIVE_CLOSED,
                f"table {self.table_id}: the progressive is closed (pot owner unreachable, D5)",
            )
        if state.closed:
            raise DomainError(Reason.SEAT_CLOSED, f"seat {seat} is closed (lamp fault, rule E5)")
        self._positive(credits, "credits")
        total = state.bet_credits + credits
        pesos = total * self.limits.credit_value
        if not self.limits.min_bet <= pesos <= self.limits.max_bet:
            raise DomainError(
                Reason.BET_OUT_OF_LIMITS,
                f"seat {seat} bet of {pesos} pesos is outside {self.limits.min_bet}-"
                f"{self.limits.max_bet} (rule E1)",
            )
        if credits > state.credits:
            raise DomainError(
                Reason.INSUFFICIENT_CREDITS,
                f"seat {seat} bets {credits} credits but holds {state.credits} (rule E6)",
            )
        state.credits -= credits
        state.bet_credits = total
        return []

    def _lamp_fault(self, seat: int) -> list[Fact]:
        state = self._seat(seat)
        if state.closed:
            return []
        # E1: a bet counts only if the lamp signals it, so a bet not yet locked is refunded.
        if self.phase is Phase.BETTING and state.bet_credits:
            state.credits += state.bet_credits
            state.bet_credits = 0
        state.closed = True
        return [SeatClosedFact(seat, "lamp fault")]

    def _lock(self) -> list[Fact]:
        self._phase(Phase.BETTING, Reason.INVALID_STATE, "lock")
        bets = tuple(
            (seat, state.bet_credits * self.limits.credit_value)
            for seat, state in sorted(self.seats.items())
            if state.bet_credits
        )
        self.phase = Phase.LOCKED
        return [RoundLockedFact(self.round_id, bets)]

    def _lock_round(self, round_id: str, bets: Mapping[int, int]) -> list[Fact]:
        """Open the round if none is, judge each seat's bet on its own, then lock."""
        if self.phase is Phase.IDLE:
            self._open(round_id)
        elif self.phase is Phase.BETTING and round_id != self.round_id:
            raise DomainError(
                Reason.INVALID_STATE,
                f"table {self.table_id}: lock for round {round_id!r}; round {self.round_id} "
                "is open",
            )
        self._phase(Phase.BETTING, Reason.INVALID_STATE, "lock")
        refused = _each_seat(bets, self._bet)
        return [*self._lock(), *refused]

    def _settle_round(
        self,
        forfeits: Mapping[int, str],
        hands: Mapping[int, Sequence[str]],
        community: Sequence[str],
    ) -> list[Fact]:
        """Check the hands whole (nothing changes if one is wrong), then judge each forfeit on
        its own, then settle."""
        self._phase(Phase.LOCKED, Reason.ROUND_NOT_LOCKED, "settle")
        result = self._checked_results(hands, community)
        facts: list[Fact] = []
        for seat in sorted(forfeits):
            try:
                facts += self._forfeit(seat, forfeits[seat])
            except DomainError as refused:
                facts.append(SeatRefusedFact(seat, refused.reason, refused.detail))
        self._settle()
        return [*facts, result]

    def _forfeit(self, seat: int, reason: str) -> list[Fact]:
        state = self._seat(seat)
        rules = GAME_RULES[self.game]
        allowed = rules.can_exchange if reason == "CARD_EXCHANGE" else rules.can_fold
        if not allowed:
            raise DomainError(
                Reason.INVALID_STATE, f"{self.game.value} has no {reason.lower()} (rules E2, E3)"
            )
        self._phase(Phase.LOCKED, Reason.ROUND_NOT_LOCKED, reason.lower())
        if not state.bet_credits:
            raise DomainError(Reason.NO_BET, f"seat {seat} has no progressive bet this round")
        if seat in self.forfeited:
            return []
        self.forfeited[seat] = reason
        return [SeatForfeitedFact(self.round_id, seat, reason)]

    def _void(self, reason: str) -> list[Fact]:
        if self.phase is Phase.LOCKED:
            raise DomainError(
                Reason.INVALID_STATE,
                f"round {self.round_id} is locked: its bets are collected and cannot be "
                "voided (C1)",
            )
        self._phase(Phase.BETTING, Reason.INVALID_STATE, "void")
        refunds = []
        for seat, state in sorted(self.seats.items()):
            if state.bet_credits:
                refunds.append((seat, state.bet_credits))
                state.credits += state.bet_credits
                state.bet_credits = 0
        fact = RoundVoidedFact(self.round_id, reason, tuple(refunds))
        self._settle()
        return [fact]

    def _results(self, hands: Mapping[int, Sequence[str]], community: Sequence[str]) -> list[Fact]:
        self._phase(Phase.LOCKED, Reason.ROUND_NOT_LOCKED, "send results")
        fact = self._checked_results(hands, community)
        self._settle()
        return [fact]

    def _checked_results(
        self, hands: Mapping[int, Sequence[str]], community: Sequence[str]
    ) -> RoundResultFact:
        """The results as a fact; raises (nothing changed) when a hand or card is wrong."""
        rules = GAME_RULES[self.game]
        parsed = {}
        for seat in sorted(hands):
            state = self._seat(seat)
            if not state.bet_credits:
                raise DomainError(
                    Reason.NO_BET, f"result for seat {seat}, which has no progressive bet"
                )
            parsed[seat] = parse_cards(hands[seat], f"seat {seat}")
            check_hand_size(self.game, seat, parsed[seat])
        shared = parse_cards(community, "community")
        if len(shared) != rules.community_cards:
            raise DomainError(
                Reason.WRONG_CARD_COUNT,
                f"{len(shared)} community cards; {self.game.value} needs {rules.community_cards}",
            )
        if rules.one_deck:
            check_one_deck(parsed, shared)
        return RoundResultFact(
            self.round_id,
            tuple((seat, tuple(hands[seat])) for seat in sorted(hands)),
            tuple(community),
        )

    def _settle(self) -> None:
        for state in self.seats.values():
            state.bet_credits = 0
        self.last_round_id, self.round_id = self.round_id, ""
        self.phase = Phase.IDLE
        self.forfeited = {}

    # ---------------------------------------------------------------------------- helpers

    def _seat(self, seat: int) -> Seat:
        check_seat(self.game, seat)
        return self.seats[seat]

    def _phase(self, wanted: Phase, reason: Reason, action: str) -> None:
        if self.phase is not wanted:
            current = (
                f"round {self.round_id} is {self.phase.value}" if self.round_id else "no round"
            )
            raise DomainError(reason, f"table {self.table_id}: cannot {action}: {current}")

    @staticmethod
    def _positive(value: int, what: str) -> None:
        if value <= 0:
            raise DomainError(Reason.MALFORMED, f"{what} must be positive, got {value}")


def _each_seat(bets: Mapping[int, int], bet: Callable[[int, int], object]) -> list[Fact]:
    """Place each seat's bet on its own; a refused seat is a fact, the others go on."""
    refused: list[Fact] = []
    for seat in sorted(bets):
        try:
            bet(seat, bets[seat])
        except DomainError as error:
            refused.append(SeatRefusedFact(seat, error.reason, error.detail))
    return refused


def _seat_answers(
    event: LockRound | SettleRound, facts: tuple[Fact, ...]
) -> tuple[SeatAnswer, ...]:
    """Every seat the input named, in seat order: refused with its reason, or accepted."""
    refused = {f.seat: f for f in facts if isinstance(f, SeatRefusedFact)}
    named = event.bets if isinstance(event, LockRound) else event.forfeits
    return tuple(
        SeatAnswer(seat, refused[seat].reason, refused[seat].detail)
        if seat in refused
        else SeatAnswer(seat)
        for seat in sorted(named)
    )
