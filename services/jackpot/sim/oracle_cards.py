"""The round oracle's cards, hands and paytables (rules P, P1-P4), written apart from the engine's.

:mod:`jackpot.sim.oracle` judges rounds with them: what a result of each game holds
(:data:`GAMES`), the hands (:func:`poker_hand`, :func:`blackjack_hand`) and the paytables, the
rules page's own (:data:`RULES_PAYTABLES`) or a configuration's (:func:`read_paytable`). Like the
rest of the oracle it shares no code with ``jackpot.domain``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

RANKS = "23456789TJQKA"
SUITS = "SHDC"


@dataclass(frozen=True, slots=True)
class GameCards:
    """What a result of one game holds (P3): seats, own cards (fewest, most), community cards,
    whether one deck is used (a card seen twice is refused) and which hands it is judged by."""

    seats: int
    own: tuple[int, int]
    community: int
    one_deck: bool
    evaluator: str


GAMES = {
    "caribbean": GameCards(7, (5, 5), 0, True, "poker"),
    "draw": GameCards(6, (5, 5), 0, True, "poker"),
    "go_poker": GameCards(7, (3, 3), 2, True, "poker"),
    "blackjack": GameCards(7, (2, 4), 0, False, "blackjack"),
}


# --------------------------------------------------------------------------- hands (P, P4)


def poker_hand(cards: Sequence[str]) -> str | None:
    """P, P2: the category of five cards, best first; None below a flush (no suit is better)."""
    ranks = sorted(RANKS.index(card[0]) for card in cards)
    suited = len({card[1] for card in cards}) == 1
    wheel = ranks == [0, 1, 2, 3, 12]  # A-2-3-4-5
    in_sequence = len(set(ranks)) == 5 and (ranks[4] - ranks[0] == 4 or wheel)
    counts = sorted(Counter(ranks).values(), reverse=True)
    if suited and in_sequence:
        return "ROYAL_FLUSH" if ranks[0] == RANKS.index("T") else "STRAIGHT_FLUSH"
    if counts[0] == 4:
        return "FOUR_OF_A_KIND"
    if counts[:2] == [3, 2]:
        return "FULL_HOUSE"
    return "FLUSH" if suited else None


def _one_suit(cards: Sequence[str]) -> bool:
    return len({card[1] for card in cards}) == 1


def blackjack_hand(cards: Sequence[str]) -> str | None:
    """P4: aces count among the first four cards, sevens among the first three; the best
    category the hand makes (from the biggest prize of ``bj-aces-sevens`` down), or None."""
    aces = [card for card in cards[:4] if card[0] == "A"]
    sevens = len(cards) >= 3 and all(card[0] == "7" for card in cards[:3])
    if len(aces) == 4:
        return "FOUR_ACES_SAME_SUIT" if _one_suit(aces) else "FOUR_ACES"
    if sevens and _one_suit(cards[:3]):
        return "THREE_SEVENS_SAME_SUIT"
    if len(aces) == 3:
        return "THREE_ACES_SAME_SUIT" if _one_suit(aces) else "THREE_ACES"
    if sevens:
        return "THREE_SEVENS"
    if len(aces) == 2 and _one_suit(aces):
        return "TWO_ACES_SAME_SUIT"
    return None


HANDS = {"poker": poker_hand, "blackjack": blackjack_hand}


# ------------------------------------------------------------------ paytables and configuration


@dataclass(frozen=True, slots=True)
class Prize:
    hand: str
    multiple: int = 0  # a fixed prize: this many times the winner's own bet (S1)
    percent: Fraction = Fraction(0)  # a percentage prize: this share of its level's pot (S2)
    cap: int | None = None  # S4: each winner's part at most this many times their bet
    level: str | None = None  # L2: the level that pays it (None: the main level)
    envy: tuple[int, str | None, bool] | None = None  # V1, V2: (pesos, level, linked)


@dataclass(frozen=True, slots=True)
class Paytable:
    name: str
    evaluator: str
    fixed: tuple[Prize, ...]  # S1: by multiple, smallest first
    percent: tuple[Prize, ...]  # S2: by percentage, smallest first

    @property
    def hands(self) -> frozenset[str]:
        return frozenset(prize.hand for prize in self.fixed + self.percent)


def paytable(name: str, evaluator: str, prizes: Iterable[Prize]) -> Paytable:
    """The prizes in the order they are paid (S1, S2)."""
    listed = list(prizes)
    fixed = sorted((p for p in listed if p.multiple), key=lambda p: p.multiple)
    percent = sorted((p for p in listed if not p.multiple), key=lambda p: p.percent)
    return Paytable(name, evaluator, tuple(fixed), tuple(percent))


def percent(value: object) -> Fraction:
    """A percentage as configured (``"12.5"``, ``10``) as an exact fraction of one."""
    return Fraction(str(value)) / 100


RULES_PAYTABLES = {
    # P: the default poker paytable, as the rules page states it.
    "scj-poker": paytable(
        "scj-poker",
        "poker",
        [
            Prize("FLUSH", 50),
            Prize("FULL_HOUSE", 100),
            Prize("FOUR_OF_A_KIND", 500),
            Prize("STRAIGHT_FLUSH", percent=percent(10), cap=5000),
            Prize("ROYAL_FLUSH", percent=percent(100)),
        ],
    ),
    # P4: progressive blackjack, aces and sevens.
    "bj-aces-sevens": paytable(
        "bj-aces-sevens",
        "blackjack",
        [
            Prize("TWO_ACES_SAME_SUIT", 10),
            Prize("THREE_SEVENS", 25),
            Prize("THREE_ACES", 50),
            Prize("THREE_ACES_SAME_SUIT", 200),
            Prize("THREE_SEVENS_SAME_SUIT", 500),
            Prize("FOUR_ACES", percent=percent(10), cap=5000),
            Prize("FOUR_ACES_SAME_SUIT", percent=percent(100)),
        ],
    ),
}


def read_paytable(data: str | Mapping[str, Any]) -> Paytable:
    """A built-in paytable by name, or a configuration's own (``{"name", "evaluator",
    "prizes": [{"hand", "multiple"} | {"hand", "percent", "cap_multiple"?}]}``)."""
    if isinstance(data, str):
        return RULES_PAYTABLES[data]
    prizes = [
        Prize(
            str(entry["hand"]),
            int(entry.get("multiple", 0)),
            percent(entry.get("percent", 0)),
            None if entry.get("cap_multiple") is None else int(entry["cap_multiple"]),
            entry.get("level"),
            _envy(entry.get("envy")),
        )
        for entry in data["prizes"]
    ]
    return paytable(str(data["name"]), str(data.get("evaluator", "poker")), prizes)


def _envy(data: Mapping[str, Any] | None) -> tuple[int, str | None, bool] | None:
    if data is None:
        return None
    return int(data["amount"]), data.get("level"), bool(data.get("linked", False))
