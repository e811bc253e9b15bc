"""`make bench`: benchmarks that print figures (never pass/fail timing assertions).

1. Domain core, in-process on one core: contributions collected per second (lock_round) and
   rounds resolved per second (resolve_round with seven real shuffled hands).

Figures vary with the machine; compare ratios measured in one run.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable

from jackpot.domain.cards import RANKS, SUITS
from jackpot.domain.config import load_config
from jackpot.domain.engine import PotGroup

DECK = [r + s for r in RANKS for s in SUITS]
CONFIG = {
    "commission_percent": "12.5",
    "base": 500_000,
    "pots": [
        {"name": "main", "percent": "70"},
        {"name": "reserve1", "percent": "30", "ceiling": 50_000_000, "overflow_to": "main"},
    ],
    "min_bet": 1000,
    "max_bet": 5000,
    "credit_value": 1000,
}


def _group(tables: int) -> PotGroup:
    group, _ = PotGroup.open("bench", load_config(CONFIG))
    for t in range(tables):
        group.link_table(f"T{t}", "caribbean", min_bet=1000, max_bet=5000, credit_value=1000)
    return group


def _timed(action: Callable[[], None]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def bench_contributions(tables: int = 2000, repeats: int = 10, seats: int = 1) -> dict[str, float]:
    """Bets collected per second by lock_round, `seats` bets per lock."""
    group = _group(tables)
    bets = {s: 1000 * (1 + s % 5) for s in range(1, seats + 1)}
    elapsed = 0.0
    for r in range(repeats):
        round_id = f"R{r}"

        def lock_all(round_id: str = round_id) -> None:
            for t in range(tables):
                group.lock_round(f"T{t}", round_id, bets)

        elapsed += _timed(lock_all)
        for t in range(tables):
            group.resolve_round(f"T{t}", round_id, {})
    locks = tables * repeats
    return {"locks_per_s": locks / elapsed, "contributions_per_s": locks * seats / elapsed}


def bench_resolution(tables: int = 2000, repeats: int = 5, seats: int = 7) -> dict[str, float]:
    """Rounds resolved per second: seven seats, real shuffled one-deck hands, every rule applied."""
    rng = random.Random(20261129)
    group = _group(tables)
    elapsed = 0.0
    hits = 0
    for r in range(repeats):
        round_id = f"R{r}"
        hands = []
        for t in range(tables):
            group.lock_round(f"T{t}", round_id, dict.fromkeys(range(1, seats + 1), 1000))
            deck = rng.sample(DECK, 5 * seats)
            hands.append({s: deck[5 * (s - 1) : 5 * s] for s in range(1, seats + 1)})

        def resolve_all(round_id: str = round_id, hands: list = hands) -> None:  # type: ignore[type-arg]
            for t in range(tables):
                group.resolve_round(f"T{t}", round_id, hands[t])

        elapsed += _timed(resolve_all)
    hits = sum(group.hits.values())
    rounds = tables * repeats
    return {"rounds_per_s": rounds / elapsed, "hands_per_s": rounds * seats / elapsed, "hits": hits}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    single = bench_contributions(seats=1)
    full = bench_contributions(seats=7)
    resolution = bench_resolution()
    rows = [
        ("domain: contributions/s (1 bet per lock)", single["contributions_per_s"], 200_000),
        ("domain: contributions/s (7 bets per lock)", full["contributions_per_s"], 200_000),
        ("domain: locks/s (7 bets per lock)", full["locks_per_s"], None),
        ("domain: rounds resolved/s (7 seats)", resolution["rounds_per_s"], 50_000),
    ]
    print(f"{'benchmark':48} {'figure':>14} {'target':>10} {'ratio':>7}")
    for name, value, target in rows:
        ratio = f"{value / target:.2f}x" if target else ""
        print(f"{name:48} {value:14,.0f} {target or '':>10} {ratio:>7}")
    print(f"(hands evaluated/s {resolution['hands_per_s']:,.0f}; prizes hit {resolution['hits']})")
    if args.json:
        figures = {name: value for name, value, _ in rows}
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(figures, out, indent=2)


if __name__ == "__main__":
    main()
