"""The demo's floor: its two pot groups' configurations and its tables, by site and game.

What `jackpot demo` plays, and with it the fault suites, the load test and the history bench
(:func:`floor_tables`): poker tables of three games linked across sites A and B in `scl-poker`
(five levels and an envy bonus for the demo, ``LEVELS_POKER_CONFIG``; ``POKER_CONFIG`` for the
suites) and blackjack tables in `scl-blackjack`.
"""

from __future__ import annotations

from dataclasses import dataclass

from jackpot.domain.cards import Game

POKER_GROUP = "scl-poker"
BLACKJACK_GROUP = "scl-blackjack"
LIMITS = {"min_bet": 1000, "max_bet": 5000, "credit_value": 1000}
POKER_CONFIG = {
    "version": 1,
    "commission_percent": "10",
    "base": 500_000,
    "pots": [
        {"name": "main", "percent": "75"},
        {"name": "reserve1", "percent": "20", "ceiling": 20_000_000, "overflow_to": "main"},
        {"name": "mystery", "percent": "5"},
    ],
    "paytable": "scj-poker",
    "mystery": {"pot": "mystery", "min": 20_000, "max": 60_000},
    **LIMITS,
}
# `jackpot demo`'s poker group (the linked one) pays from five levels, STAX-like (rule L1), with an
# envy bonus on the top two (V1; the royal's paid at every linked table too, V2); the labels are
# what the Spanish signs show. The fault suite and the load test keep POKER_CONFIG.
LEVELS_POKER_CONFIG = {
    "version": 1,
    "commission_percent": "10",
    "base": 500_000,
    "pots": [
        {"name": "main", "percent": "45"},
        {"name": "sf", "percent": "15"},
        {"name": "quads", "percent": "10"},
        {"name": "full", "percent": "7"},
        {"name": "flush", "percent": "3"},
        {"name": "reserve1", "percent": "15", "ceiling": 20_000_000, "overflow_to": "main"},
        {"name": "mystery", "percent": "5"},
    ],
    "levels": [
        {"name": "royal", "label": "Escalera real", "pot": "main"},
        {"name": "sf", "label": "Escalera de color", "pot": "sf", "base": 100_000},
        {"name": "quads", "label": "Póker", "pot": "quads", "base": 25_000},
        {"name": "full", "label": "Full", "pot": "full", "base": 10_000},
        {"name": "flush", "label": "Color", "pot": "flush", "base": 5_000},
    ],
    "paytable": {
        "name": "scl-five-levels",
        "evaluator": "poker",
        "prizes": [
            {"hand": "FLUSH", "percent": "100", "level": "flush"},
            {"hand": "FULL_HOUSE", "percent": "100", "level": "full"},
            {"hand": "FOUR_OF_A_KIND", "percent": "100", "level": "quads"},
            {
                "hand": "STRAIGHT_FLUSH",
                "percent": "100",
                "level": "sf",
                "envy": {"amount": 1_000},
            },
            {
                "hand": "ROYAL_FLUSH",
                "percent": "100",
                "level": "royal",
                "envy": {"amount": 5_000, "linked": True},
            },
        ],
    },
    "mystery": {"pot": "mystery", "min": 20_000, "max": 60_000},
    **LIMITS,
}
BLACKJACK_CONFIG = {
    "version": 1,
    "commission_percent": "12.5",
    "base": 200_000,
    "pots": [{"name": "main", "percent": "80"}, {"name": "reserve1", "percent": "20"}],
    "paytable": "bj-aces-sevens",
    **LIMITS,
}


@dataclass(frozen=True)
class DemoTable:
    table_id: str
    game: Game
    site: str
    group: str

    @property
    def credential(self) -> str:
        return f"demo-credential-{self.table_id.lower()}"


def floor_tables(count: int) -> list[DemoTable]:
    """About two thirds at site A, the rest at site B; one table in five is blackjack (site A)."""
    kinds = [Game.CARIBBEAN, Game.DRAW, Game.GO_POKER, Game.CARIBBEAN, Game.BLACKJACK]
    tables = []
    for n in range(count):
        game = kinds[n % len(kinds)]
        site = "A" if game is Game.BLACKJACK or n % 3 != 2 else "B"
        group = BLACKJACK_GROUP if game is Game.BLACKJACK else POKER_GROUP
        prefix = {Game.CARIBBEAN: "CAR", Game.DRAW: "DRW", Game.GO_POKER: "GOP"}.get(game, "BJ")
        tables.append(DemoTable(f"{site}-{prefix}-{n + 1:02d}", game, site, group))
    return tables


# The demo's studio table (rules O1-O9) plays in its own group: the demo's poker group pays envy
# bonuses, which no group with a studio table may (O8). The load test's studio tables join the
# land tables' `scl-poker` (POKER_CONFIG pays none): one pot shared by land and studio (O6).
STUDIO_GROUP = "scl-studio"
STUDIO_PLAYERS = 2_000  # `jackpot demo`'s online players, one bet each per round


@dataclass(frozen=True)
class DemoStudio:
    """A studio table of the demo floor: its gateway's site, its group, the players the simulated
    platform seats each round, and the studio whose platform certificate drives it."""

    table_id: str
    group: str
    players: int
    site: str = "A"
    studio: str = "studio-live"
    round_seconds: float = 20.0  # a round starts this often
    rig_rate: float = 0.1  # share of rounds dealt a made hand (every bet wins it)
    decision_seconds: float = 0.0  # the round locked while players decide (a real studio: 15-30)

    @property
    def seats(self) -> int:
        """The table's seats (O1): room for every player, at least 10,000."""
        return max(10_000, self.players)


def studio_tables(
    count: int,
    players: int,
    group: str,
    round_seconds: float = 20.0,
    rig_rate: float = 0.1,
    decision_seconds: float = 0.0,
) -> list[DemoStudio]:
    """``count`` studio tables of ``players`` each in ``group``, at site A."""
    return [
        DemoStudio(
            f"S-LIVE-{n + 1}",
            group,
            players,
            round_seconds=round_seconds,
            rig_rate=rig_rate,
            decision_seconds=decision_seconds,
        )
        for n in range(count)
    ]
