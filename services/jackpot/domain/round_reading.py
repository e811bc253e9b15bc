"""A locked round read against the rules, before any money moves: its cards validated (P3, one
deck), its winners per prize (S5; a forfeited seat wins nothing, E2-E4), and the seats an envy
bonus pays (V1, V2). Pure: :class:`~jackpot.domain.engine.PotGroup` pays what this finds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from jackpot.domain.cards import (
    CARD_NAMES,
    GAME_RULES,
    check_hand_size,
    check_one_deck,
    parse_cards,
)
from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.group_state import LinkedTable, LockedRound
from jackpot.domain.hands import categorise
from jackpot.domain.paytable import Paytable
from jackpot.domain.studio import studio_hand


@dataclass(frozen=True, slots=True)
class ResolvingRound:
    """A locked round with its validated cards, as each step of its resolution reads it."""

    table_id: str
    round_id: str
    locked: LockedRound
    hands: dict[int, tuple[int, ...]]  # seat -> its own cards (parsed, validated)
    community: tuple[int, ...]
    # a seat's own cards -> the names of the hand it won with, each named once (O2: a studio
    # round's bets all hold one hand)
    named: dict[tuple[int, ...], tuple[str, ...]] = field(default_factory=dict)


class Payee(NamedTuple):
    """The seat a prize is paid to: of the round being resolved, or of another linked table's
    locked round for a linked envy bonus (V2). A named tuple: a studio round makes one per bet
    (O3, O4)."""

    table_id: str
    round_id: str
    seat: int
    bet_pesos: int
    cards: tuple[str, ...]  # the hand that won it (for an envy bonus, the hand that earned it)
    player: str = ""  # O1: a studio seat's player, whose wallet is paid


def validated_round(
    table: LinkedTable,
    locked: LockedRound,
    hands: Mapping[int, Sequence[str]],
    community: Sequence[str],
    shared_hand: Sequence[str] = (),
) -> ResolvingRound:
    """The locked round with its parsed cards (P3; one deck where the game deals one; at a
    studio table the one shared hand for every bet, O2); a device error raises before anything
    changes."""
    table_id, round_id = table.table_id, locked.round_id
    rules = GAME_RULES[table.game]
    studio_cards = studio_hand(table, hands, shared_hand)
    if studio_cards is not None and not community:
        return ResolvingRound(
            table_id, round_id, locked, dict.fromkeys(locked.bets, studio_cards), ()
        )
    parsed: dict[int, tuple[int, ...]] = {}
    seat_count = rules.seats
    low, high = rules.own_cards
    for seat in sorted(hands):
        if not 1 <= seat <= seat_count:
            table.check_seat(seat)
        if seat not in locked.bets:
            raise DomainError(
                Reason.NO_BET,
                f"result for seat {seat}, which has no progressive bet in {round_id}",
            )
        cards = parse_cards(hands[seat], f"seat {seat}")
        if not low <= len(cards) <= high:
            check_hand_size(table.game, seat, cards)
        parsed[seat] = cards
    shared = parse_cards(community, "community")
    if len(shared) != rules.community_cards:
        raise DomainError(
            Reason.WRONG_CARD_COUNT,
            f"{len(shared)} community cards; {table.game.value} needs {rules.community_cards}",
        )
    if rules.one_deck:
        check_one_deck(parsed, shared)
    return ResolvingRound(table_id, round_id, locked, parsed, shared)


def winners(paytable: Paytable, resolving: ResolvingRound) -> dict[str, list[int]]:
    """Prize -> its winning seats, lowest seat first (S5); forfeited seats win nothing."""
    shared = resolving.community
    forfeited = resolving.locked.forfeited
    winners: dict[str, list[int]] = {}
    categories: dict[tuple[int, ...], str | None] = {}  # O2: a studio's one hand, judged once
    for seat, cards in resolving.hands.items():
        if seat in forfeited:
            continue  # E2, E3: no prize; E4: the dealer's hand plays no part at all
        if cards in categories:
            category = categories[cards]
        else:
            category = categories[cards] = categorise(paytable.evaluator, cards + shared)
        if category is not None and category in paytable.prizes:
            winners.setdefault(category, []).append(seat)
    return winners


def envy_payees(
    resolving: ResolvingRound,
    winner: int,
    cards: tuple[str, ...],
    locked_rounds: Mapping[str, LockedRound],
    *,
    linked: bool,
) -> list[Payee]:
    """V1, V2: the other seats with a locked bet they did not forfeit (E2, E3): of the
    winner's round; when linked, also of every other table's locked round."""
    rounds = [(resolving.table_id, resolving.locked)]
    if linked:
        rounds += sorted(
            (table, locked)
            for table, locked in locked_rounds.items()
            if table != resolving.table_id
        )
    return [
        Payee(table, locked.round_id, seat, bet, cards)
        for table, locked in rounds
        for seat, bet in sorted(locked.bets.items())
        if seat not in locked.forfeited and (table, seat) != (resolving.table_id, winner)
    ]


def seat_payee(resolving: ResolvingRound, seat: int) -> Payee:
    """The seat ``seat`` of the round being resolved, with the hand it won with."""
    own = resolving.hands[seat]
    cards = resolving.named.get(own)
    if cards is None:
        cards = resolving.named[own] = tuple(CARD_NAMES[c] for c in own + resolving.community)
    locked = resolving.locked
    player = locked.players.get(seat, "")
    return Payee(resolving.table_id, resolving.round_id, seat, locked.bets[seat], cards, player)
