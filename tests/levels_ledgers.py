"""A ledger of a group with two levels and envy bonuses, made by the real pot processor, for the
books' tests (`jackpot audit`, `jackpot report`; rules L1-L4, V1-V3).

The floor is the round oracle's (tests/unit/test_round_oracle.py, ``levels_floor``): the levels
``royal`` (pot main, reserve reserve1) and ``sf`` (pot sf, reserve sf_reserve, base 50,000); two
tables. T02 locks R-a (seat 2 folds); T01's R-royal has a royal flush (seat 1: a linked envy bonus
of 2,000 from the sf level to T01's seats 2 and 4 and T02's seats 1 and 3), a straight flush (seat
2: 100 % of the sf level, an envy bonus of 1,000 from the royal level to seats 1 and 4) and four of
a kind (seat 4, from the sf level); both levels are emptied and topped up. Then T02's R-a (a flush,
from the royal level) and T01's R-split (two straight flushes split the refilled sf level).

:func:`one_level_ledger` is the same floor on a configuration without levels or envy bonuses.
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, field
from typing import Any

from jackpot.domain.cards import Game
from jackpot.pot import commands
from jackpot.pot.pot_book import InputRecord, PotBook
from jackpot.v1 import pot_pb2, table_events_pb2
from tests.unit.test_restore import GROUP
from tests.unit.test_round_oracle import (
    LEVELS_CONFIG,
    QUADS_CARDS,
    ROYAL_AT,
    ROYAL_S_CARDS,
    TABLE,
    Table,
)

START_NS = 1_780_000_000 * 10**9
STEP_NS = 10**9  # one second per table event
SF_8Q_D = ["8D", "9D", "TD", "JD", "QD"]
SF_5_9_S = ["5S", "6S", "7S", "8S", "9S"]

__all__ = ["GROUP", "LEVELS_CONFIG", "ROYAL_AT", "TABLE", "LevelsFloor", "levels_ledger"]


@dataclass
class LevelsFloor:
    """The pot processor of one partition, its ledger and its last pot update."""

    processor: PotBook = field(init=False)
    ledger: list[pot_pb2.LedgerEntry] = field(default_factory=list)
    update: pot_pb2.PotUpdate | None = None
    offset: int = 0

    checkpoint_entries: int = 10_000

    def __post_init__(self) -> None:
        clock = itertools.count(START_NS, STEP_NS)
        self.book = PotBook(
            0, clock_ns=lambda: next(clock), checkpoint_entries=self.checkpoint_entries
        )

    def play(self, events: list[table_events_pb2.TableEvent]) -> None:
        for event in events:
            out = self.book.apply_batch(
                [InputRecord(event.SerializeToString(), "t", 0, self.offset, GROUP.encode())]
            )
            self.book.commit(out)
            self.offset += 1
            assert not out.dead_letters, out.dead_letters
            self.ledger += out.ledger
            if out.pot_updates:
                self.update = out.pot_updates[-1]


def floor_events(config: dict[str, Any]) -> list[table_events_pb2.TableEvent]:
    one, two = Table(TABLE, Game.CARIBBEAN), Table("T02", Game.CARIBBEAN)
    fold = table_events_pb2.SeatForfeited(seat=2, reason=table_events_pb2.FORFEIT_REASON_FOLD)
    return [
        commands.create_group(GROUP, config, requested_by="ana", reason="open"),
        one.link(),
        two.link(),
        two._event("R-a", round_locked=commands.locked({1: 1000, 2: 2000, 3: 1000})),
        two._event("R-a", seat_forfeited=fold),
        *one.round(
            ROYAL_AT,
            {1: 1000, 2: 3000, 4: 1000},
            {1: ROYAL_S_CARDS, 2: SF_8Q_D, 4: QUADS_CARDS},
        ),
        two._event(
            "R-a",
            round_result=commands.result(
                {1: ["2C", "6C", "9C", "JC", "AC"], 3: ["3D", "8S", "5H", "JD", "4S"]}
            ),
        ),
        *one.round("R-split", {1: 1000, 2: 1000}, {1: SF_5_9_S, 2: SF_8Q_D}),
    ]


def levels_ledger(checkpoint_entries: int = 10_000) -> LevelsFloor:
    floor = LevelsFloor(checkpoint_entries=checkpoint_entries)
    floor.play(floor_events(LEVELS_CONFIG))
    return floor


def one_level_config() -> dict[str, Any]:
    """LEVELS_CONFIG without its levels and envy bonuses, the straight flush 10 % of the main
    pot: the group of the SCJ rules."""
    config = copy.deepcopy(LEVELS_CONFIG)
    del config["levels"]
    for prize in config["paytable"]["prizes"]:
        prize.pop("level", None)
        prize.pop("envy", None)
        if prize["hand"] == "STRAIGHT_FLUSH":  # one level: two 100 % prizes would have no order
            prize["percent"] = "10"
    return config


def one_level_ledger() -> LevelsFloor:
    floor = LevelsFloor()
    floor.play(floor_events(one_level_config()))
    return floor
