"""Cards, games and seats (rules P, P3, E2, E3).

A card is two characters: rank ``2-9 T J Q K A`` and suit ``S H D C`` (``"AS"``, ``"TD"``).
Internally a card is the integer ``rank * 4 + suit`` with rank 0 (deuce) to 12 (ace).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from jackpot.domain.errors import DomainError, Reason

RANKS = "23456789TJQKA"
SUITS = "SHDC"
ACE = 12
SEVEN = 5

CARD_CODES: dict[str, int] = {
    rank + suit: r * 4 + s for r, rank in enumerate(RANKS) for s, suit in enumerate(SUITS)
}
CARD_NAMES: dict[int, str] = {code: name for name, code in CARD_CODES.items()}


class Game(Enum):
    """The games a table can run; the value is the name used in configuration and scenarios."""

    CARIBBEAN = "caribbean"
    DRAW = "draw"
    GO_POKER = "go_poker"
    BLACKJACK = "blackjack"


@dataclass(frozen=True, slots=True)
class GameRules:
    """What differs between games for the progressive."""

    seats: int
    own_cards: tuple[int, int]  # allowed number of the player's own cards in a result (min, max)
    community_cards: int
    one_deck: bool  # a card may appear once per round (False for multi-deck blackjack)
    can_fold: bool  # E3: folding forfeits the progressive bet (Go Poker players may fold too)
    can_exchange: bool  # E2: exchanging cards forfeits the progressive bet


GAME_RULES: dict[Game, GameRules] = {
    Game.CARIBBEAN: GameRules(7, (5, 5), 0, True, True, False),
    Game.DRAW: GameRules(6, (5, 5), 0, True, True, True),
    Game.GO_POKER: GameRules(7, (3, 3), 2, True, True, False),
    # The blackjack paytable reads the player's first cards (up to four), from a multi-deck shoe.
    Game.BLACKJACK: GameRules(7, (2, 4), 0, False, False, False),
}


def parse_game(name: str) -> Game:
    try:
        return Game(name)
    except ValueError:
        known = ", ".join(g.value for g in Game)
        raise DomainError(Reason.UNKNOWN_GAME, f"unknown game {name!r} (known: {known})") from None


def parse_card(text: str, where: str = "") -> int:
    """One two-character card to its code; a clear error otherwise."""
    code = CARD_CODES.get(text) if isinstance(text, str) else None
    if code is None:
        at = f" at {where}" if where else ""
        raise DomainError(
            Reason.INVALID_CARD,
            f"invalid card {text!r}{at}: expected rank 2-9 T J Q K A and suit S H D C, like 'AS'",
        )
    return code


def parse_cards(texts: Iterable[str], where: str = "") -> tuple[int, ...]:
    try:
        return tuple([CARD_CODES[t] for t in texts])
    except (KeyError, TypeError):
        return tuple(parse_card(t, where) for t in texts)  # raises, naming the bad card


def check_seat(game: Game, seat: int, seats: int | None = None) -> None:
    """``seat`` is one of the table's: 1 to the game's seats, or to ``seats`` (a studio, O1)."""
    highest = GAME_RULES[game].seats if seats is None else seats
    if not 1 <= seat <= highest:
        where = f"{game.value}'s seats" if seats is None else "the studio table's seats"
        raise DomainError(Reason.SEAT_OUT_OF_RANGE, f"seat {seat} is outside {where} 1-{highest}")


def check_hand_size(game: Game, seat: int, cards: Sequence[int]) -> None:
    low, high = GAME_RULES[game].own_cards
    if not low <= len(cards) <= high:
        wanted = str(low) if low == high else f"{low} to {high}"
        raise DomainError(
            Reason.WRONG_CARD_COUNT,
            f"seat {seat} has {len(cards)} cards; {game.value} needs {wanted}",
        )


def check_one_deck(hands: Mapping[int, Sequence[int]], community: Sequence[int]) -> None:
    """A card seen twice in one round of a one-deck game is a device error: refuse the round."""
    count = len(community) + sum(len(cards) for cards in hands.values())
    if len(set(community).union(*hands.values())) == count:
        return
    seen: dict[int, str] = {}
    places = [("community", community), *((f"seat {seat}", hands[seat]) for seat in sorted(hands))]
    for place, cards in places:
        for card in cards:
            if card in seen:
                raise DomainError(
                    Reason.DUPLICATE_CARD,
                    f"card {CARD_NAMES[card]} appears at {seen[card]} and at {place}: "
                    "one deck per round",
                )
            seen[card] = place
