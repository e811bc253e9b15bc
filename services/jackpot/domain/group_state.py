"""The parts of a pot group's state that are values: its linked tables, its locked rounds and
its hidden mystery trigger (X2), shared by the engine (:mod:`jackpot.domain.engine`) and its
persistence (:mod:`jackpot.domain.group_persistence`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from jackpot.domain.cards import Game

SETTLED_ROUNDS_REMEMBERED = 64  # per table: a round settled this recently cannot lock again


@dataclass(slots=True)
class LockedRound:
    """A round whose bets were collected and whose results are awaited."""

    round_id: str
    bets: dict[int, int]  # seat -> bet in whole pesos
    forfeited: dict[int, str] = field(default_factory=dict)  # seat -> reason


@dataclass(frozen=True, slots=True)
class LinkedTable:
    table_id: str
    game: Game
    site: str


@dataclass(slots=True)
class MysteryState:
    trigger_pesos: int
    salt: bytes
    commitment: str
