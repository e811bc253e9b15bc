"""Simulated table rounds as the gateways would publish them, for tests and benchmarks.

A :class:`SimulatedTable` deals real one-deck hands for its game (Caribbean, Draw, Go Poker) and
numbers its events with a per-table sequence. Prizes from random hands are rare, so a share of the
rounds can be given a flush, or now and then a royal flush (a reset of the main pot), at a random
seat. Everything is driven by a seeded ``random.Random``: the same seed gives the same events.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from jackpot.domain.cards import GAME_RULES, RANKS, SUITS, Game
from jackpot.platform.codec import game_to_proto
from jackpot.pot import commands
from jackpot.v1 import table_events_pb2

DECK = tuple(rank + suit for rank in RANKS for suit in SUITS)
FLUSH = ("2H", "5H", "9H", "JH", "KH")
ROYAL_FLUSH = ("TS", "JS", "QS", "KS", "AS")

# One bet limit for every simulated group (rule E1: linked tables share it).
MIN_BET, MAX_BET, CREDIT_VALUE = 1000, 5000, 1000

CONFIG: dict[str, object] = {
    "version": 1,
    "commission_percent": "12.5",
    "base": 500_000,
    "pots": [
        {"name": "main", "percent": "70"},
        {"name": "reserve1", "percent": "30", "ceiling": 2_000_000, "overflow_to": "main"},
    ],
    "min_bet": MIN_BET,
    "max_bet": MAX_BET,
    "credit_value": CREDIT_VALUE,
}


@dataclass
class SimulatedTable:
    """One table of one game feeding one pot group."""

    table_id: str
    game: Game
    pot_group_id: str
    rng: random.Random
    flush_rate: float = 0.02
    royal_rate: float = 0.002
    forfeit_rate: float = 0.05
    sequence: int = 0
    rounds: int = 0
    events: list[table_events_pb2.TableEvent] = field(default_factory=list)

    def link_command(self) -> table_events_pb2.TableEvent:
        return commands.link_table(self.pot_group_id, table_link(self.table_id, self.game))

    def _event(self, round_id: str, **payload: Any) -> table_events_pb2.TableEvent:
        self.sequence += 1
        return commands.table_event(
            self.pot_group_id,
            self.table_id,
            round_id,
            self.sequence,
            game_to_proto(self.game),
            **payload,
        )

    def next_round(self) -> list[table_events_pb2.TableEvent]:
        """Lock, forfeits and result of one round, numbered after the table's last event."""
        rng = self.rng
        rules = GAME_RULES[self.game]
        self.rounds += 1
        round_id = f"{self.table_id}-R{self.rounds}"
        seats = sorted(rng.sample(range(1, rules.seats + 1), rng.randint(1, rules.seats)))
        bets = {seat: CREDIT_VALUE * rng.randint(1, MAX_BET // CREDIT_VALUE) for seat in seats}
        own = rules.own_cards[1]
        forced: tuple[str, ...] = ()
        draw = rng.random()
        if draw < self.royal_rate:
            forced = ROYAL_FLUSH
        elif draw < self.royal_rate + self.flush_rate:
            forced = FLUSH
        deck = [card for card in DECK if card not in forced]
        rng.shuffle(deck)
        community: list[str] = []
        if rules.community_cards:
            community = list(forced[own:]) if forced else [deck.pop() for _ in range(2)]
        hands = {seat: [deck.pop() for _ in range(own)] for seat in seats}
        if forced:
            hands[rng.choice(seats)] = list(forced[:own])
        events = [self._event(round_id, round_locked=commands.locked(bets))]
        for seat in seats:
            if rules.can_fold and rng.random() < self.forfeit_rate:
                reason = table_events_pb2.FORFEIT_REASON_FOLD
                if rules.can_exchange and rng.random() < 0.5:
                    reason = table_events_pb2.FORFEIT_REASON_CARD_EXCHANGE
                events.append(
                    self._event(
                        round_id,
                        seat_forfeited=table_events_pb2.SeatForfeited(seat=seat, reason=reason),
                    )
                )
        events.append(self._event(round_id, round_result=commands.result(hands, community)))
        return events


def simulated_tables(
    pot_group_id: str, games: list[Game], rng: random.Random, prefix: str = "T"
) -> list[SimulatedTable]:
    return [
        SimulatedTable(f"{prefix}{n:02d}-{game.value}", game, pot_group_id, rng)
        for n, game in enumerate(games, start=1)
    ]


def interleaved_rounds(
    tables: list[SimulatedTable], rounds_per_table: int, rng: random.Random
) -> list[table_events_pb2.TableEvent]:
    """Rounds of several tables, interleaved at random round by round (each table in order)."""
    pending = {table.table_id: rounds_per_table for table in tables}
    by_id = {table.table_id: table for table in tables}
    events: list[table_events_pb2.TableEvent] = []
    while pending:
        table_id = rng.choice(sorted(pending))
        events.extend(by_id[table_id].next_round())
        pending[table_id] -= 1
        if not pending[table_id]:
            del pending[table_id]
    return events


def table_link(
    table_id: str, game: Game = Game.CARIBBEAN, site: str = "SIM", studio_seats: int = 0
) -> table_events_pb2.LinkTable:
    """A table linked with :data:`CONFIG`'s limits (E1); ``studio_seats``: a studio table's (O1)."""
    return table_events_pb2.LinkTable(
        table_id=table_id,
        game=game_to_proto(game),
        site=site,
        studio_seats=studio_seats,
        min_bet=MIN_BET,
        max_bet=MAX_BET,
        credit_value=CREDIT_VALUE,
    )
