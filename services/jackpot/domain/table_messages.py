"""What a table hears and what it says: the device inputs a table controller sends (one event at a
time, or a round in its round form: :class:`LockRound`, :class:`SettleRound`) and what an accepted
input causes (:class:`Outcome`): the facts published for the pot service, and for a round-form
input an answer per seat. :class:`~jackpot.domain.table.Table` judges the one against the rules and
returns the other."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from jackpot.domain.errors import DomainError, Reason

V = TypeVar("V")


def one_per_seat(entries: Iterable[tuple[int, V]], what: str) -> dict[int, V]:
    """Seat -> value of a message's seat list (bets, hands, forfeits); a seat named twice makes
    the whole message malformed (a device's message at the gateway, a table event at the pot)."""
    by_seat: dict[int, V] = {}
    for seat, value in entries:
        if seat in by_seat:
            raise DomainError(Reason.MALFORMED, f"seat {seat} is named twice in the {what}")
        by_seat[seat] = value
    return by_seat


# ------------------------------------------------------------------------------ device inputs


@dataclass(frozen=True, slots=True)
class OpenRound:
    round_id: str


@dataclass(frozen=True, slots=True)
class AddCredits:
    """The dealer activated credits on a seat's counter after a chip exchange (E6)."""

    seat: int
    credits: int


@dataclass(frozen=True, slots=True)
class CashOut:
    seat: int
    credits: int


@dataclass(frozen=True, slots=True)
class PlaceBet:
    """The player pressed the bet button for ``credits`` credits; the lamp lights (E1, D1)."""

    seat: int
    credits: int


@dataclass(frozen=True, slots=True)
class CancelBet:
    seat: int


@dataclass(frozen=True, slots=True)
class LampFault:
    seat: int


@dataclass(frozen=True, slots=True)
class LampRepaired:
    seat: int


@dataclass(frozen=True, slots=True)
class Lock:
    """The dealer's "no more bets" (D1)."""


@dataclass(frozen=True, slots=True)
class Fold:
    seat: int


@dataclass(frozen=True, slots=True)
class ExchangeCards:
    seat: int


@dataclass(frozen=True, slots=True)
class VoidRound:
    reason: str


@dataclass(frozen=True, slots=True)
class Results:
    hands: Mapping[int, Sequence[str]]
    community: Sequence[str] = ()


@dataclass(frozen=True, slots=True)
class LockRound:
    """The dealer's "no more bets" with the round's bets, seat -> credits (C1, D1, E1, E6); opens
    ``round_id`` first when no round is open. Each credits stake adds to any bet the seat placed
    earlier in the round."""

    round_id: str
    bets: Mapping[int, int]


@dataclass(frozen=True, slots=True)
class SettleRound:
    """The locked round's forfeits, seat -> ``FOLD`` or ``CARD_EXCHANGE`` (E2, E3), and its
    final hands."""

    forfeits: Mapping[int, str]
    hands: Mapping[int, Sequence[str]]
    community: Sequence[str] = ()


DeviceInput = (
    OpenRound
    | AddCredits
    | CashOut
    | PlaceBet
    | CancelBet
    | LampFault
    | LampRepaired
    | Lock
    | Fold
    | ExchangeCards
    | VoidRound
    | Results
    | LockRound
    | SettleRound
)

# ------------------------------------------------------------------ facts for the pot service


@dataclass(frozen=True, slots=True)
class RoundLockedFact:
    round_id: str
    bets: tuple[tuple[int, int], ...]  # (seat, pesos)
    players: tuple[tuple[int, str], ...] = ()  # (seat, player) of a studio round (O1)


@dataclass(frozen=True, slots=True)
class SeatForfeitedFact:
    round_id: str
    seat: int
    reason: str  # FOLD or CARD_EXCHANGE


@dataclass(frozen=True, slots=True)
class RoundResultFact:
    round_id: str
    hands: tuple[tuple[int, tuple[str, ...]], ...]
    community: tuple[str, ...]
    shared_hand: tuple[str, ...] = ()  # a studio table's one hand for every bet (O2)


@dataclass(frozen=True, slots=True)
class RoundVoidedFact:
    round_id: str
    reason: str
    refunds: tuple[tuple[int, int], ...]  # (seat, credits returned to the counter)


@dataclass(frozen=True, slots=True)
class SeatClosedFact:
    seat: int
    reason: str


@dataclass(frozen=True, slots=True)
class SeatOpenedFact:
    seat: int


@dataclass(frozen=True, slots=True)
class SeatRefusedFact:
    """One seat of a round-form input was refused; the rest of the input stands."""

    seat: int
    reason: Reason
    detail: str


Fact = (
    RoundLockedFact
    | SeatForfeitedFact
    | RoundResultFact
    | RoundVoidedFact
    | SeatClosedFact
    | SeatOpenedFact
    | SeatRefusedFact
)


@dataclass(frozen=True, slots=True)
class SeatAnswer:
    """What became of one seat a round-form input named: accepted when ``reason`` is None."""

    seat: int
    reason: Reason | None = None
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one accepted input caused; ``duplicate`` when it was a harmless resend."""

    sequence: int
    facts: tuple[Fact, ...]
    duplicate: bool = False
    # per seat named, for LockRound and SettleRound (a resend of the last of them gets them too)
    seat_answers: tuple[SeatAnswer, ...] = ()
    # the oldest (sequence, fingerprint) pairs this input pushed out of the remembered window
    forgotten: tuple[tuple[int, str], ...] = ()
