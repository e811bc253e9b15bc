"""The shape of a pot group's state: the :class:`Group` its rules, its contributions, its round
resolution and its persistence all work on (the engine's ``PotGroup`` is one), and the parts of
it that are values: its linked tables, its locked rounds and its hidden mystery trigger (X2).
:mod:`jackpot.domain.engine` holds the commands, :mod:`jackpot.domain.contributions` and
:mod:`jackpot.domain.round_resolution` the money they move, :mod:`jackpot.domain.group_persistence`
how it is written down and replayed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from jackpot.domain.cards import GAME_RULES, Game, check_seat
from jackpot.domain.config import PotGroupConfig
from jackpot.domain.events import Event

SETTLED_ROUNDS_REMEMBERED = 64  # per table: a round settled this recently cannot lock again
REMEMBERED_AWARDS = 25  # the last awards a group keeps (GetPotGroup shows them)


@dataclass(slots=True)
class LockedRound:
    """A round whose bets were collected and whose results are awaited."""

    round_id: str
    bets: dict[int, int]  # seat -> bet in whole pesos
    forfeited: dict[int, str] = field(default_factory=dict)  # seat -> reason
    players: dict[int, str] = field(default_factory=dict)  # O1: a studio seat -> its player


@dataclass(frozen=True, slots=True)
class LinkedTable:
    """A table of the group: a land table, or a studio table with ``studio_seats`` seats (O1)."""

    table_id: str
    game: Game
    site: str
    studio_seats: int = 0  # O1: 0 for a land table

    @property
    def seats(self) -> int:
        """The highest seat number (E1 at a land table: the game's seats; O1 at a studio)."""
        return self.studio_seats or GAME_RULES[self.game].seats

    def check_seat(self, seat: int) -> None:
        """SEAT_OUT_OF_RANGE unless ``seat`` is one of this table's."""
        if not 1 <= seat <= self.seats:
            check_seat(self.game, seat, self.studio_seats or None)


@dataclass(slots=True)
class MysteryState:
    trigger_pesos: int
    salt: bytes
    commitment: str


# Per pot with a share: (pot, minor units per whole peso collected, ceiling, overflow pot).
Allocation = tuple[tuple[str, int, int | None, str | None], ...]


class Group(Protocol):
    """A pot group's state as the modules beside the engine see it: the balances and the M2
    counters in minor units, the tables and rounds, and the few commands they call back."""

    group_id: str
    config: PotGroupConfig
    allocation: Allocation
    pending: list[tuple[PotGroupConfig, str, str]]
    balances: dict[str, int]
    collected: int
    commission: int
    awarded: int
    house_advance: int
    overflow: int
    tables: dict[str, LinkedTable]
    locked: dict[str, LockedRound]
    settled: dict[str, list[str]]
    hits: dict[str, int]
    wins: dict[str, int]
    last_awards: list[dict[str, Any]]
    mystery: MysteryState | None

    def check_conservation(self) -> None: ...
    def remember_award(self, award: dict[str, Any]) -> None: ...
    def adopt_config(self, config: PotGroupConfig) -> None: ...
    def activate_pending(self) -> list[Event]: ...
    def draw_mystery(self) -> list[Event]: ...
