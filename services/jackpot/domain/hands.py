"""The progressive category of a hand (rules P, P2, P3, P4).

Poker (Caribbean, Draw, Go Poker): five cards, best category first: ROYAL_FLUSH (T-J-Q-K-A
suited), STRAIGHT_FLUSH (A-2-3-4-5 up to 9-T-J-Q-K suited), FOUR_OF_A_KIND, FULL_HOUSE, FLUSH.
Nothing below a flush pays (P2), and no suit ranks above another.

Progressive blackjack (P4, seed 003): the player's first cards from a multi-deck shoe (up to four).
Aces count among the first four cards, sevens among the first three: FOUR_ACES_SAME_SUIT,
FOUR_ACES, THREE_SEVENS_SAME_SUIT, THREE_ACES_SAME_SUIT, THREE_ACES, THREE_SEVENS,
TWO_ACES_SAME_SUIT. Which of them pay, and how much, is the paytable's business.

Evaluation is table-driven (every sorted rank tuple precomputed at import) because the pot
service resolves tens of thousands of rounds per second.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import combinations_with_replacement
from typing import Literal

from jackpot.domain.cards import ACE, SEVEN

Evaluator = Literal["poker", "blackjack"]

POKER_CATEGORIES = ("FLUSH", "FULL_HOUSE", "FOUR_OF_A_KIND", "STRAIGHT_FLUSH", "ROYAL_FLUSH")
BLACKJACK_CATEGORIES = (
    "TWO_ACES_SAME_SUIT",
    "THREE_SEVENS",
    "THREE_ACES",
    "THREE_ACES_SAME_SUIT",
    "THREE_SEVENS_SAME_SUIT",
    "FOUR_ACES",
    "FOUR_ACES_SAME_SUIT",
)
CATEGORIES: dict[str, tuple[str, ...]] = {
    "poker": POKER_CATEGORIES,
    "blackjack": BLACKJACK_CATEGORIES,
}
MYSTERY = "MYSTERY"  # the mystery prize's name where a hand's would be (X2)
# What the floor calls each prize, (Spanish, English): the signs, the dealer's screen and the
# period report show these; the rules' own Spanish names for the poker hands (P).
PRIZE_NAMES: dict[str, tuple[str, str]] = {
    "FLUSH": ("Color", "Flush"),
    "FULL_HOUSE": ("Full", "Full house"),
    "FOUR_OF_A_KIND": ("Póker", "Four of a kind"),
    "STRAIGHT_FLUSH": ("Escalera de color", "Straight flush"),
    "ROYAL_FLUSH": ("Escalera real", "Royal flush"),
    "TWO_ACES_SAME_SUIT": ("Dos ases del mismo palo", "Two aces of one suit"),
    "THREE_SEVENS": ("Tres sietes", "Three sevens"),
    "THREE_ACES": ("Tres ases", "Three aces"),
    "THREE_ACES_SAME_SUIT": ("Tres ases del mismo palo", "Three aces of one suit"),
    "THREE_SEVENS_SAME_SUIT": ("Tres sietes del mismo palo", "Three sevens of one suit"),
    "FOUR_ACES": ("Cuatro ases", "Four aces"),
    "FOUR_ACES_SAME_SUIT": ("Cuatro ases del mismo palo", "Four aces of one suit"),
    MYSTERY: ("Premio misterioso", "Mystery prize"),
}

# An envy bonus (rule V1) is the prize ENVY_<hand>, named after the hand that earned it.
ENVY_PREFIX = "ENVY_"
ENVY_WORDS = ("Envidia", "Envy")  # (Spanish, English): "Envidia: Escalera real"


def prize_name(prize: str, language: int) -> str | None:
    """What the floor calls a prize in a language (0 Spanish, 1 English), an envy bonus as
    ``Envidia: <the hand>`` (V1); None for a prize it does not know."""
    if prize in PRIZE_NAMES:
        return PRIZE_NAMES[prize][language]
    hand = prize.removeprefix(ENVY_PREFIX)
    if hand != prize and hand in PRIZE_NAMES:
        return f"{ENVY_WORDS[language]}: {PRIZE_NAMES[hand][language]}"
    return None


_ROYAL = (8, 9, 10, 11, 12)
_STRAIGHTS = {tuple(range(low, low + 5)) for low in range(0, 8)} | {(0, 1, 2, 3, 12)}


def _build_tables() -> tuple[dict[tuple[int, ...], str], dict[tuple[int, ...], str]]:
    suited: dict[tuple[int, ...], str] = {}
    unsuited: dict[tuple[int, ...], str] = {}
    for ranks in combinations_with_replacement(range(13), 5):
        counts = sorted(Counter(ranks).values(), reverse=True)
        if counts[0] > 4:
            continue
        if ranks == _ROYAL:
            suited[ranks] = "ROYAL_FLUSH"
        elif ranks in _STRAIGHTS:
            suited[ranks] = "STRAIGHT_FLUSH"
        else:
            suited[ranks] = "FLUSH"
        if counts[0] == 4:
            unsuited[ranks] = "FOUR_OF_A_KIND"
        elif counts[:2] == [3, 2]:
            unsuited[ranks] = "FULL_HOUSE"
    return suited, unsuited


_SUITED, _UNSUITED = _build_tables()


def poker_category(cards: Sequence[int]) -> str | None:
    """Category of exactly five card codes, or None when the hand pays nothing."""
    c0, c1, c2, c3, c4 = cards
    ranks = tuple(sorted((c0 >> 2, c1 >> 2, c2 >> 2, c3 >> 2, c4 >> 2)))
    suit = c0 & 3
    if c1 & 3 == suit and c2 & 3 == suit and c3 & 3 == suit and c4 & 3 == suit:
        return _SUITED[ranks]
    return _UNSUITED.get(ranks)


def blackjack_category(cards: Sequence[int]) -> str | None:
    """Best aces/sevens category of a blackjack hand's first cards, or None."""
    first4 = cards[:4]
    aces = [c for c in first4 if c >> 2 == ACE]
    ace_suits = {c & 3 for c in aces}
    first3 = cards[:3]
    sevens = len(first3) == 3 and all(c >> 2 == SEVEN for c in first3)
    if len(aces) == 4:
        return "FOUR_ACES_SAME_SUIT" if len(ace_suits) == 1 else "FOUR_ACES"
    if sevens and len({c & 3 for c in first3}) == 1:
        return "THREE_SEVENS_SAME_SUIT"
    if len(aces) == 3:
        return "THREE_ACES_SAME_SUIT" if len(ace_suits) == 1 else "THREE_ACES"
    if sevens:
        return "THREE_SEVENS"
    if len(aces) == 2 and len(ace_suits) == 1:
        return "TWO_ACES_SAME_SUIT"
    return None


def categorise(evaluator: Evaluator, cards: Sequence[int]) -> str | None:
    if evaluator == "poker":
        return poker_category(cards)
    return blackjack_category(cards)
