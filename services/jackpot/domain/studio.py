"""Studio tables (rules O1-O9, docs/rules.md "Studio tables"): a live-dealer table whose players
play online, each in one seat of up to the table's configured number, all judged on the one
player hand the dealer deals face up.

Only who holds which cards and how many seats there are differ from a land table: a studio
round's bets are collected (C1-C5), forfeited (E3) and paid (S1-S9, L, M2) by the same code as a
land table's. This module says which studio tables a group may link and reads a studio round's
result: the shared hand checked once, then given to every bet of the round (O2).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from jackpot.domain.cards import GAME_RULES, Game, parse_cards
from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.group_state import LinkedTable
from jackpot.domain.paytable import Paytable

# O1: a studio table's seats are numbered 1 to its configured count, at most this many.
MAX_STUDIO_SEATS = 1_000_000
# O1: the games a studio deals one player hand for all (five cards, no community cards).
STUDIO_GAMES = frozenset({Game.CARIBBEAN})


def check_studio_link(table_id: str, game: Game, studio_seats: int, paytable: Paytable) -> None:
    """A studio table's link (O1, O8); nothing to check for a land table (``studio_seats`` 0)."""
    if studio_seats == 0:
        return
    if not 1 <= studio_seats <= MAX_STUDIO_SEATS:
        raise DomainError(
            Reason.INVALID_CONFIG,
            f"studio table {table_id} has {studio_seats} seats; a studio table has 1 to "
            f"{MAX_STUDIO_SEATS:,} (rule O1)",
        )
    if game not in STUDIO_GAMES:
        raise DomainError(
            Reason.INVALID_CONFIG,
            f"studio table {table_id} runs {game.value}; a studio table deals one shared hand "
            f"of {', '.join(sorted(g.value for g in STUDIO_GAMES))} (rule O1)",
        )
    check_no_envy(paytable, [table_id])


def check_no_envy(paytable: Paytable, studio_tables: Iterable[str]) -> None:
    """O8: no envy bonus in a group with a studio table (every bet there holds the hand that
    hit, so a bonus "to every other seat" would be paid to each winner by every other)."""
    studios = sorted(studio_tables)
    envied = [prize.hand for prize in paytable.prizes.values() if prize.envy is not None]
    if studios and envied:
        raise DomainError(
            Reason.INVALID_CONFIG,
            f"paytable {paytable.name} pays envy bonuses on {', '.join(envied)}; a group with "
            f"a studio table ({', '.join(studios)}) pays none (rule O8)",
        )


def studio_hand(
    table: LinkedTable, hands: Mapping[int, Sequence[str]], shared_hand: Sequence[str]
) -> tuple[int, ...] | None:
    """A studio round's one player hand, parsed and checked (O2: five cards of one deck, and no
    seat's own hand beside it); None for a land table, whose result must not give one."""
    if not table.studio_seats:
        if shared_hand:
            raise DomainError(
                Reason.MALFORMED,
                f"table {table.table_id} is a land table: its result gives each seat's hand, "
                "not one shared hand (rule O2)",
            )
        return None
    if hands:
        raise DomainError(
            Reason.MALFORMED,
            f"studio table {table.table_id} deals one shared hand; its result names no seat's "
            "hand (rule O2)",
        )
    cards = parse_cards(shared_hand, "the shared hand")
    low, high = GAME_RULES[table.game].own_cards
    if not low <= len(cards) <= high:
        raise DomainError(
            Reason.WRONG_CARD_COUNT,
            f"the shared hand has {len(cards)} cards; {table.game.value} needs {low} (rule O2)",
        )
    if len(set(cards)) != len(cards):
        twice = next(text for text in shared_hand if list(shared_hand).count(text) > 1)
        raise DomainError(
            Reason.DUPLICATE_CARD,
            f"card {twice} appears twice in the shared hand: one deck per round (rule O2)",
        )
    return cards
