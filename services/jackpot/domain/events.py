"""What the pot group engine reports: one immutable event per fact (rule D4).

Amounts named ``amount``/``balance`` are exact minor units (see ``jackpot.domain.money``); fields
ending in ``_pesos`` are whole pesos. Money-moving events carry ``transfers``: (source, target,
minor units) between the accounts ``bets`` (players' collected bets), ``house`` (advances),
``commission``, ``awards`` and ``pot:<name>``. The ledger is the sequence of these events; every
transfer is balanced, so the audit can recompute each account from the ledger alone.

Levels (rule L4): in a group with several levels, every money-moving event names, in
``transfer_levels``, the level of each of its transfers (one name per transfer, ``""`` for one
that belongs to no level, such as the commission or the mystery pot), and a prize or a reseed names
its ``level``. These fields are optional: they are empty in a one-level group and then omitted by
:meth:`Event.to_dict`, so that a one-level group's events serialise exactly as before levels
existed. An envy prize (rule V1) names the hit that earned it in ``envy_of``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

Transfer = tuple[str, str, int]
EnvyHit = tuple[str, str, int]  # (table, round, seat) of the hand that earned an envy prize (V1)
# The metadata of an optional field (L4): Event.to_dict leaves it out while it holds its default.
OPTIONAL = {"omitted_when_empty": True}


# Per event class: (name, whether omitted while it holds its default, the default) of each field.
# Computed once per class: every ledger entry writes an event's fields, and
# ``dataclasses.fields`` builds its answer anew on every call.
_FIELDS: dict[type, tuple[tuple[str, bool, Any], ...]] = {}


def _fields_of(event_type: type) -> tuple[tuple[str, bool, Any], ...]:
    fields = _FIELDS.get(event_type)
    if fields is None:
        fields = tuple(
            (f.name, bool(f.metadata.get("omitted_when_empty")), f.default)
            for f in dataclasses.fields(event_type)
        )
        _FIELDS[event_type] = fields
    return fields


@dataclass(frozen=True, slots=True)
class Event:
    def to_dict(self) -> dict[str, Any]:
        return self._fields_dict(None)

    def detail(self) -> dict[str, Any]:
        """:meth:`to_dict` without the transfers (a ledger entry types those itself)."""
        return self._fields_dict("transfers")

    def _fields_dict(self, left_out: str | None) -> dict[str, Any]:
        data = {}
        for name, optional, default in _fields_of(type(self)):
            value = getattr(self, name)
            if name != left_out and not (optional and value == default):
                data[name] = value
        data["type"] = type(self).__name__
        return data


@dataclass(frozen=True, slots=True)
class PotGroupOpened(Event):
    group_id: str
    config_version: int
    transfers: tuple[Transfer, ...]  # opening balances, advanced by the house (C4)
    config: dict[str, Any] = dataclasses.field(default_factory=dict)  # the first version (C7, D4)
    changed_by: str = ""
    reason: str = ""
    transfer_levels: tuple[str, ...] = dataclasses.field(
        default=(), metadata=OPTIONAL
    )  # L4: the level of each transfer


@dataclass(frozen=True, slots=True)
class TableLinked(Event):
    group_id: str
    table_id: str
    game: str
    site: str
    studio_seats: int = dataclasses.field(default=0, metadata=OPTIONAL)  # O1: 0 at a land table


@dataclass(frozen=True, slots=True)
class TableUnlinked(Event):
    group_id: str
    table_id: str


@dataclass(frozen=True, slots=True)
class BetsCollected(Event):
    """A locked round's valid bets were collected and allocated (C1-C3, C5)."""

    group_id: str
    table_id: str
    round_id: str
    bets: tuple[tuple[int, int], ...]  # (seat, bet_pesos)
    total_pesos: int
    commission: int
    increments: tuple[tuple[str, int], ...]  # (pot, amount) after overflow
    overflow: tuple[tuple[str, str, int], ...]  # (from pot, to pot, amount) (C5)
    transfers: tuple[Transfer, ...]
    transfer_levels: tuple[str, ...] = dataclasses.field(
        default=(), metadata=OPTIONAL
    )  # L4: the level of each transfer
    # O1: a studio round's (seat, player) of each bet; () at a land table
    players: tuple[tuple[int, str], ...] = dataclasses.field(default=(), metadata=OPTIONAL)


@dataclass(frozen=True, slots=True)
class SeatForfeited(Event):
    group_id: str
    table_id: str
    round_id: str
    seat: int
    reason: str


@dataclass(frozen=True, slots=True)
class PrizeAwarded(Event):
    """A prize to pay one seat (S1-S7); ``transfers`` say which pots (and the house) funded it."""

    award_id: str
    group_id: str
    table_id: str
    round_id: str
    seat: int
    prize: str
    bet_pesos: int
    amount_pesos: int
    cards: tuple[str, ...]
    transfers: tuple[Transfer, ...]
    level: str = dataclasses.field(default="", metadata=OPTIONAL)  # L4: the level that pays it
    transfer_levels: tuple[str, ...] = dataclasses.field(default=(), metadata=OPTIONAL)
    envy_of: EnvyHit | None = dataclasses.field(
        default=None, metadata=OPTIONAL
    )  # V1: the hit an envy prize is paid for
    player: str = dataclasses.field(default="", metadata=OPTIONAL)  # O1: a studio seat's player


@dataclass(frozen=True, slots=True)
class PotReseeded(Event):
    """The main pot was topped up to its base from the reserves, then the house (S8)."""

    group_id: str
    table_id: str
    round_id: str
    base: int
    transfers: tuple[Transfer, ...]
    level: str = dataclasses.field(
        default="", metadata=OPTIONAL
    )  # L4: the level topped up to its base (L3)
    transfer_levels: tuple[str, ...] = dataclasses.field(default=(), metadata=OPTIONAL)


@dataclass(frozen=True, slots=True)
class RoundSettled(Event):
    group_id: str
    table_id: str
    round_id: str
    award_ids: tuple[str, ...]
    main_balance: int


@dataclass(frozen=True, slots=True)
class ConfigProposed(Event):
    """A configuration version waiting for the next reset of the main pot (C7)."""

    group_id: str
    version: int
    config: dict[str, Any]
    changed_by: str
    reason: str


@dataclass(frozen=True, slots=True)
class ConfigActivated(Event):
    group_id: str
    version: int
    config: dict[str, Any]


@dataclass(frozen=True, slots=True)
class MysteryCommitted(Event):
    """A hidden mystery trigger was drawn; only its commitment is public (X2)."""

    group_id: str
    pot: str
    commitment: str


@dataclass(frozen=True, slots=True)
class MysteryAwarded(Event):
    """The mystery prize hit; the trigger and salt are revealed for verification (X2)."""

    award_id: str
    group_id: str
    table_id: str
    round_id: str
    seat: int
    amount_pesos: int
    trigger_pesos: int
    salt_hex: str
    commitment: str
    transfers: tuple[Transfer, ...]
    transfer_levels: tuple[str, ...] = dataclasses.field(default=(), metadata=OPTIONAL)  # L4
    player: str = dataclasses.field(default="", metadata=OPTIONAL)  # O9: a studio seat's player
