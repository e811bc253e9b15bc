"""The one mapping between the domain's enumerations and the jackpot.v1 protobuf enums.

Every edge that writes or reads a game, a refusal reason, a payout state, a forfeit reason or a
ledger entry type converts through here, so a device, the dead-letter topic, the ledger and a log
line all name the same thing. The tables pair members by name (``Game.DRAW`` with ``GAME_DRAW``,
``Reason.MALFORMED`` with ``REJECT_REASON_MALFORMED``) and are built at import: a domain member
without a protobuf counterpart fails the import, never a request.

Encoding a domain value cannot fail. Decoding a protobuf number the domain does not know, the
``*_UNSPECIFIED`` zero included, raises :class:`~jackpot.domain.errors.DomainError` naming the
number: ``UNKNOWN_GAME`` for a game, ``MALFORMED`` for everything else.

Pure: protobuf messages and the domain only, no I/O (the pot's book imports it).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TypeVar, cast

from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper
from google.protobuf.timestamp_pb2 import Timestamp

from jackpot.domain.cards import Game
from jackpot.domain.engine import FORFEIT_REASONS
from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.events import (
    BetsCollected,
    ConfigActivated,
    ConfigProposed,
    Event,
    MysteryAwarded,
    MysteryCommitted,
    PotGroupOpened,
    PotReseeded,
    PrizeAwarded,
    RoundSettled,
    SeatForfeited,
    TableLinked,
    TableUnlinked,
)
from jackpot.domain.money import MINOR_PER_PESO
from jackpot.domain.payout import PayoutState
from jackpot.v1 import common_pb2, payout_pb2, pot_pb2, table_events_pb2

Key = TypeVar("Key")


def _numbers(members: Mapping[str, Key], prefix: str, wrapper: EnumTypeWrapper) -> dict[Key, int]:
    """Each member paired with the protobuf number named ``prefix`` + the member's name."""
    return {member: wrapper.Value(prefix + name) for name, member in members.items()}


def _inverse(table: Mapping[Key, int]) -> dict[int, Key]:
    inverse = {value: key for key, value in table.items()}
    if len(inverse) != len(table):
        raise ValueError(f"two members share a protobuf number: {table}")
    return inverse


def _unknown(what: str, value: int, wrapper: EnumTypeWrapper, known: Iterable[int]) -> str:
    """A refusal's detail: the number, its protobuf name when it has one, and what is known."""
    try:
        named = f"{what} {value} ({wrapper.Name(value)})"
    except ValueError:
        named = f"{what} {value}"
    return f"{named} is not one the domain knows (known: {', '.join(map(wrapper.Name, known))})"


# ------------------------------------------------------------------------------------ games

_GAME_TO_PROTO = cast(
    dict[Game, "common_pb2.Game"], _numbers(Game.__members__, "GAME_", common_pb2.Game)
)
_GAME_FROM_PROTO = _inverse(_GAME_TO_PROTO)


def game_to_proto(game: Game) -> common_pb2.Game:
    return _GAME_TO_PROTO[game]


def game_of(value: int) -> Game | None:
    """The domain game of a jackpot.v1.Game number; None for GAME_UNSPECIFIED or unknown numbers."""
    return _GAME_FROM_PROTO.get(value)


def game_from_proto(value: int) -> Game:
    """The domain game of a jackpot.v1.Game number; ``UNKNOWN_GAME`` naming it otherwise."""
    game = _GAME_FROM_PROTO.get(value)
    if game is None:
        raise DomainError(
            Reason.UNKNOWN_GAME, _unknown("game", value, common_pb2.Game, _GAME_FROM_PROTO)
        )
    return game


def game_name(value: int) -> str:
    """A jackpot.v1.Game number for a message: its protobuf name, or ``unknown game <n>``."""
    try:
        return common_pb2.Game.Name(value)
    except ValueError:
        return f"unknown game {value}"


# ---------------------------------------------------------------------- refusal reasons

_REASON_TO_PROTO = cast(
    dict[Reason, "common_pb2.RejectReason"],
    _numbers(Reason.__members__, "REJECT_REASON_", common_pb2.RejectReason),
)
_REASON_FROM_PROTO = _inverse(_REASON_TO_PROTO)


def reason_to_proto(reason: Reason) -> common_pb2.RejectReason:
    return _REASON_TO_PROTO[reason]


def reason_from_proto(value: int) -> Reason:
    reason = _REASON_FROM_PROTO.get(value)
    if reason is None:
        raise DomainError(
            Reason.MALFORMED,
            _unknown("reject reason", value, common_pb2.RejectReason, _REASON_FROM_PROTO),
        )
    return reason


# ------------------------------------------------------------------------ payout states

_PAYOUT_STATE_TO_PROTO = cast(
    dict[PayoutState, "payout_pb2.PayoutState"],
    _numbers(PayoutState.__members__, "PAYOUT_STATE_", payout_pb2.PayoutState),
)
_PAYOUT_STATE_FROM_PROTO = _inverse(_PAYOUT_STATE_TO_PROTO)
_PAYOUT_LEDGER_TYPES = cast(
    dict[PayoutState, "pot_pb2.LedgerEntryType"],
    _numbers(PayoutState.__members__, "LEDGER_ENTRY_TYPE_PAYOUT_", pot_pb2.LedgerEntryType),
)


def payout_state_to_proto(state: PayoutState) -> payout_pb2.PayoutState:
    return _PAYOUT_STATE_TO_PROTO[state]


def payout_state_from_proto(value: int) -> PayoutState:
    state = _PAYOUT_STATE_FROM_PROTO.get(value)
    if state is None:
        raise DomainError(
            Reason.MALFORMED,
            _unknown("payout state", value, payout_pb2.PayoutState, _PAYOUT_STATE_FROM_PROTO),
        )
    return state


def payout_ledger_type(state: PayoutState) -> pot_pb2.LedgerEntryType:
    """The ledger entry type that records a payout's transition to ``state``."""
    return _PAYOUT_LEDGER_TYPES[state]


# ----------------------------------------------------------------------- forfeit reasons

_FORFEIT_TO_PROTO = cast(
    dict[str, "table_events_pb2.ForfeitReason"],
    _numbers({r: r for r in FORFEIT_REASONS}, "FORFEIT_REASON_", table_events_pb2.ForfeitReason),
)
_FORFEIT_FROM_PROTO = _inverse(_FORFEIT_TO_PROTO)


def forfeit_reason_to_proto(reason: str) -> table_events_pb2.ForfeitReason:
    """A domain forfeit reason (``FOLD``, ``CARD_EXCHANGE``) as its protobuf number."""
    return _FORFEIT_TO_PROTO[reason]


def forfeit_reason_from_proto(value: int) -> str:
    """The domain forfeit reason of a protobuf number; ``MALFORMED`` naming it otherwise."""
    reason = _FORFEIT_FROM_PROTO.get(value)
    if reason is not None:
        return reason
    if value == table_events_pb2.FORFEIT_REASON_UNSPECIFIED:
        raise DomainError(Reason.MALFORMED, "forfeit has no reason")
    raise DomainError(Reason.MALFORMED, f"forfeit reason {value} unknown")


# ------------------------------------------------------------------- ledger entry types

_LEDGER_TYPES: dict[type[Event], pot_pb2.LedgerEntryType] = {
    PotGroupOpened: pot_pb2.LEDGER_ENTRY_TYPE_POT_GROUP_OPENED,
    TableLinked: pot_pb2.LEDGER_ENTRY_TYPE_TABLE_LINKED,
    TableUnlinked: pot_pb2.LEDGER_ENTRY_TYPE_TABLE_UNLINKED,
    BetsCollected: pot_pb2.LEDGER_ENTRY_TYPE_BETS_COLLECTED,
    SeatForfeited: pot_pb2.LEDGER_ENTRY_TYPE_SEAT_FORFEITED,
    PrizeAwarded: pot_pb2.LEDGER_ENTRY_TYPE_PRIZE_AWARDED,
    PotReseeded: pot_pb2.LEDGER_ENTRY_TYPE_POT_RESEEDED,
    RoundSettled: pot_pb2.LEDGER_ENTRY_TYPE_ROUND_SETTLED,
    ConfigProposed: pot_pb2.LEDGER_ENTRY_TYPE_CONFIG_PROPOSED,
    ConfigActivated: pot_pb2.LEDGER_ENTRY_TYPE_CONFIG_ACTIVATED,
    MysteryCommitted: pot_pb2.LEDGER_ENTRY_TYPE_MYSTERY_COMMITTED,
    MysteryAwarded: pot_pb2.LEDGER_ENTRY_TYPE_MYSTERY_AWARDED,
}


def ledger_type(event: Event) -> pot_pb2.LedgerEntryType:
    """The ledger entry type that records a pot group's domain event."""
    return _LEDGER_TYPES[type(event)]


def timestamp_ns(nanoseconds: int) -> Timestamp:
    """The protobuf Timestamp of ``nanoseconds`` since the epoch: every service's one conversion."""
    seconds, nanos = divmod(nanoseconds, 1_000_000_000)
    return Timestamp(seconds=seconds, nanos=nanos)


# ------------------------------------------------------------------------- exact amounts (M1)

INT64_MAX = 2**63 - 1


class AmountOverflowError(OverflowError):
    """An exact amount does not fit the int64 fields of ExactAmount (a bug or an absurd pot)."""


def exact_amount(minor: int) -> common_pb2.ExactAmount:
    """Picopesos to an ExactAmount in lowest terms, never rounded.

    Engine amounts are multiples of 10^4 picopesos (percentages have four decimals at most), so
    the denominator divides 10^8 and int64 holds balances up to about 92 billion pesos; an amount
    that does not fit raises rather than being rounded.
    """
    if not minor % MINOR_PER_PESO:  # whole pesos, most amounts: no gcd
        pesos = minor // MINOR_PER_PESO
        if abs(pesos) > INT64_MAX:
            raise AmountOverflowError(f"{minor} picopesos does not fit an int64 fraction")
        return common_pb2.ExactAmount(numerator=pesos, denominator=1)
    divisor = math.gcd(minor, MINOR_PER_PESO)
    numerator, denominator = minor // divisor, MINOR_PER_PESO // divisor
    if abs(numerator) > INT64_MAX:
        raise AmountOverflowError(f"{minor} picopesos does not fit an int64 fraction")
    return common_pb2.ExactAmount(numerator=numerator, denominator=denominator)


def minor_units(amount: common_pb2.ExactAmount, *, floor: bool = False) -> int:
    """An ExactAmount back to picopesos; ValueError when it is not a whole number of them
    (``floor``: rounded down instead, as a sign's M3 check may) or not a fraction at all."""
    if amount.denominator == 1:  # whole pesos, as the pot writes most: no division
        return int(amount.numerator) * MINOR_PER_PESO
    if amount.denominator <= 0:
        raise ValueError(f"ExactAmount with denominator {amount.denominator}")
    minor, remainder = divmod(amount.numerator * MINOR_PER_PESO, amount.denominator)
    if remainder and not floor:
        raise ValueError(f"{amount.numerator}/{amount.denominator} pesos is finer than a picopeso")
    return minor
