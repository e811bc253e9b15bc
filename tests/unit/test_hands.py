"""Cards and the progressive category of a hand (rules P, P2, P3, P4): cards.py and hands.py."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jackpot.domain.cards import (
    CARD_CODES,
    CARD_NAMES,
    Game,
    check_one_deck,
    parse_card,
    parse_cards,
    parse_game,
)
from jackpot.domain.config import load_config
from jackpot.domain.engine import PotGroup
from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.events import PrizeAwarded
from jackpot.domain.hands import blackjack_category, categorise, poker_category
from jackpot.domain.money import pesos

RANKS = "23456789TJQKA"
SUITS = "SHDC"
DECK = [rank + suit for rank in RANKS for suit in SUITS]


def codes(*cards: str) -> tuple[int, ...]:
    return tuple(parse_card(c) for c in cards)


def poker(*cards: str) -> str | None:
    return poker_category(codes(*cards))


# ------------------------------------------------------------------------- a reference


def reference_poker_category(cards: Sequence[str]) -> str | None:
    """A brute-force evaluator written from the rules page's paytable, on card *names*.

    Independent of hands.py: no precomputed tables, no bit tricks on card codes.
    """
    assert len(cards) == 5
    ranks = sorted(RANKS.index(card[0]) for card in cards)
    suits = {card[1] for card in cards}
    counts = sorted(Counter(ranks).values(), reverse=True)
    flush = len(suits) == 1
    distinct = len(set(ranks)) == 5
    straight = distinct and (ranks[4] - ranks[0] == 4 or ranks == [0, 1, 2, 3, 12])
    if flush and straight:
        return "ROYAL_FLUSH" if ranks == [8, 9, 10, 11, 12] else "STRAIGHT_FLUSH"
    if counts[0] == 4:
        return "FOUR_OF_A_KIND"
    if counts == [3, 2]:
        return "FULL_HOUSE"
    if flush:
        return "FLUSH"
    return None  # P2: straights, three of a kind, two pair, pairs and high cards pay nothing


# ------------------------------------------------------------------------------ card parsing


def test_card_codes_cover_one_deck() -> None:
    """52 distinct two-character cards, rank 2-9 T J Q K A, suit S H D C."""
    assert len(CARD_CODES) == 52
    assert sorted(CARD_CODES) == sorted(DECK)
    assert sorted(CARD_CODES.values()) == list(range(52))
    assert all(CARD_NAMES[CARD_CODES[name]] == name for name in DECK)


@pytest.mark.parametrize("bad", ["1S", "AX", "10H", "as", "", "AS ", " AS", "A", "ASS", "0H"])
def test_invalid_card_is_refused_with_reason(bad: str) -> None:
    """A card that is not rank 2-9 T J Q K A + suit S H D C is refused as INVALID_CARD."""
    with pytest.raises(DomainError) as caught:
        parse_card(bad, "seat 3")
    assert caught.value.reason is Reason.INVALID_CARD
    assert repr(bad) in str(caught.value)  # the message names the culprit...
    assert "seat 3" in str(caught.value)  # ...and where it was seen


@pytest.mark.parametrize("bad", [None, 12, b"AS", ["AS"]])
def test_non_string_card_is_refused(bad: Any) -> None:
    with pytest.raises(DomainError) as caught:
        parse_card(bad)
    assert caught.value.reason is Reason.INVALID_CARD


def test_parse_cards_names_the_bad_card_among_good_ones() -> None:
    with pytest.raises(DomainError) as caught:
        parse_cards(["AS", "KS", "10S", "JS", "TS"], "seat 4")
    assert caught.value.reason is Reason.INVALID_CARD
    assert "'10S'" in caught.value.detail
    assert "seat 4" in caught.value.detail
    assert parse_cards(["AS", "2C"]) == (CARD_CODES["AS"], CARD_CODES["2C"])


def test_unknown_game_is_refused() -> None:
    assert parse_game("go_poker") is Game.GO_POKER
    with pytest.raises(DomainError) as caught:
        parse_game("baccarat")
    assert caught.value.reason is Reason.UNKNOWN_GAME


def test_one_deck_duplicate_names_both_places() -> None:
    """One deck per round: the second sighting of a card is a DUPLICATE_CARD naming both places."""
    hands = {2: codes("AS", "AD", "AH", "2C", "2D"), 1: codes("AS", "KS", "QS", "JS", "TS")}
    with pytest.raises(DomainError) as caught:
        check_one_deck(hands, ())
    assert caught.value.reason is Reason.DUPLICATE_CARD
    assert "AS" in caught.value.detail
    assert "seat 1" in caught.value.detail
    assert "seat 2" in caught.value.detail
    with pytest.raises(DomainError) as caught:
        check_one_deck({3: codes("TS", "JS", "QS")}, codes("TS", "AS"))
    assert caught.value.reason is Reason.DUPLICATE_CARD
    assert "community" in caught.value.detail
    check_one_deck({1: codes("JS", "QS", "KS"), 4: codes("2H", "2D", "9C")}, codes("TS", "AS"))


# ------------------------------------------------------------------------ poker categories


@pytest.mark.parametrize(
    ("cards", "category"),
    [
        (("TS", "JS", "QS", "KS", "AS"), "ROYAL_FLUSH"),
        (("AH", "KH", "QH", "JH", "TH"), "ROYAL_FLUSH"),  # order does not matter
        (("TD", "QD", "AD", "JD", "KD"), "ROYAL_FLUSH"),
        (("TC", "JC", "QC", "KC", "AC"), "ROYAL_FLUSH"),
        (("AS", "2S", "3S", "4S", "5S"), "STRAIGHT_FLUSH"),  # the wheel, suited
        (("5C", "4C", "3C", "2C", "AC"), "STRAIGHT_FLUSH"),
        (("2H", "3H", "4H", "5H", "6H"), "STRAIGHT_FLUSH"),
        (("9H", "TH", "JH", "QH", "KH"), "STRAIGHT_FLUSH"),  # 9-K: the highest straight flush
        (("8D", "9D", "TD", "JD", "QD"), "STRAIGHT_FLUSH"),
        (("7S", "7H", "7D", "7C", "2D"), "FOUR_OF_A_KIND"),
        (("AS", "AH", "AD", "AC", "KS"), "FOUR_OF_A_KIND"),
        (("2S", "2H", "2D", "2C", "3S"), "FOUR_OF_A_KIND"),
        (("3S", "3H", "3D", "4C", "4S"), "FULL_HOUSE"),
        (("2H", "2D", "2C", "9S", "9H"), "FULL_HOUSE"),
        (("AS", "AH", "KD", "KC", "KS"), "FULL_HOUSE"),
        (("2H", "5H", "8H", "JH", "KH"), "FLUSH"),
        (("2C", "6C", "9C", "JC", "AC"), "FLUSH"),
        (("AS", "2S", "3S", "4S", "6S"), "FLUSH"),  # almost a wheel
        (("JS", "QS", "KS", "AS", "2S"), "FLUSH"),  # no wrap-around straight
        (("9S", "TS", "JS", "QS", "AS"), "FLUSH"),
    ],
)
def test_P_poker_categories(cards: tuple[str, ...], category: str) -> None:
    """P: every paying category, including A-2-3-4-5 and 9-K straight flushes and T-A royal."""
    assert poker(*cards) == category
    assert reference_poker_category(cards) == category
    assert categorise("poker", codes(*cards)) == category


@pytest.mark.parametrize(
    "cards",
    [
        ("AS", "2H", "3S", "4S", "5S"),  # wheel straight, not suited
        ("TS", "JS", "QS", "KS", "AH"),  # broadway straight, not suited: no royal
        ("9H", "TH", "JH", "QH", "KD"),  # 9-K straight, not suited
        ("2C", "3D", "4H", "5S", "6C"),  # plain straight
        ("JC", "QD", "KH", "AS", "2C"),  # not a straight at all (no wrap)
        ("7S", "7H", "7D", "2C", "9S"),  # three of a kind
        ("7S", "7H", "2D", "2C", "9S"),  # two pair
        ("AS", "AH", "2D", "5C", "9S"),  # one pair
        ("2S", "5H", "8D", "JC", "KS"),  # high card
    ],
)
def test_P2_hands_below_a_flush_pay_nothing(cards: tuple[str, ...]) -> None:
    """P2: straights (unsuited), three of a kind, two pair and below win nothing."""
    assert poker(*cards) is None
    assert reference_poker_category(cards) is None


def test_P2_no_suit_ranks_above_another() -> None:
    """P2: the same ranks give the same category in every suit."""
    for ranks in (("T", "J", "Q", "K", "A"), ("A", "2", "3", "4", "5"), ("2", "5", "8", "J", "K")):
        categories = {poker(*(r + s for r in ranks)) for s in SUITS}
        assert len(categories) == 1


def test_P_exhaustive_category_counts_over_one_deck() -> None:
    """P: all C(52,5) hands; the counts are the well-known ones (4 royal, 36 straight flushes)."""
    counts = Counter(poker_category(h) for h in itertools.combinations(range(52), 5))
    assert counts == {
        "ROYAL_FLUSH": 4,
        "STRAIGHT_FLUSH": 36,
        "FOUR_OF_A_KIND": 624,
        "FULL_HOUSE": 3744,
        "FLUSH": 5108,
        None: 2598960 - 4 - 36 - 624 - 3744 - 5108,
    }


@settings(max_examples=500, deadline=None)
@given(st.permutations(DECK))
def test_P_poker_category_matches_brute_force_reference(deck: list[str]) -> None:
    """P, P2: poker_category agrees with the reference evaluator on random one-deck samples."""
    for start in range(0, 50, 5):  # ten disjoint hands from one shuffled deck
        hand = deck[start : start + 5]
        assert poker_category(codes(*hand)) == reference_poker_category(hand), hand


flush_ranks = st.sets(st.sampled_from(RANKS), min_size=5, max_size=5)


@settings(max_examples=200, deadline=None)
@given(flush_ranks, st.sampled_from(SUITS), st.permutations(range(5)))
def test_P_suited_hands_match_reference(ranks: set[str], suit: str, order: list[int]) -> None:
    """P: suited hands (rare among random samples) agree with the reference too, in any order."""
    cards = [r + suit for r in sorted(ranks)]
    hand = [cards[i] for i in order]
    assert poker(*hand) == reference_poker_category(hand)
    assert poker(*hand) in {"FLUSH", "STRAIGHT_FLUSH", "ROYAL_FLUSH"}


# ---------------------------------------------------------------------- Go Poker (rule P3)

GO_CONFIG = {
    "base": 250_000,
    "pots": [{"name": "main", "percent": 100}],
    "min_bet": 1000,
    "max_bet": 1000,
    "credit_value": 1000,
}


def _go_poker_group(main: int) -> PotGroup:
    group, _ = PotGroup.open("G", load_config(GO_CONFIG), {"main": pesos(main)})
    group.link_table("T1", "go_poker", min_bet=1000, max_bet=1000, credit_value=1000)
    return group


def _awards(events: list[Any]) -> list[tuple[int, str, int]]:
    return [(e.seat, e.prize, e.amount_pesos) for e in events if isinstance(e, PrizeAwarded)]


def test_P3_go_poker_three_own_cards_plus_two_community() -> None:
    """P3: Go Poker: seat 1's J-Q-K of spades + community T-A of spades is a royal flush.

    Main 2,000,000 (bets adopted as already collected): royal takes 100% = 2,000,000, then the
    main pot is reseeded to base 250,000 by the house (no reserves).
    """
    group = _go_poker_group(2_000_000)
    group.adopt_locked_round("T1", "R1", {1: 1000, 4: 1000, 6: 1000})
    events = group.resolve_round(
        "T1",
        "R1",
        {1: ["JS", "QS", "KS"], 4: ["2H", "2D", "9C"], 6: ["TH", "TD", "4C"]},
        community=["TS", "AS"],
    )
    # Seat 4: 2-2-9 + T-A: one pair, nothing. Seat 6: T-T-4 + T-A: three tens, nothing (P2).
    assert _awards(events) == [(1, "ROYAL_FLUSH", 2_000_000)]
    assert group.main == pesos(250_000)


def test_P3_go_poker_community_completes_a_full_house() -> None:
    """P3: the community pair with three own kings is a full house: 100 x 1,000 = 100,000."""
    group = _go_poker_group(1_000_000)
    group.adopt_locked_round("T1", "R1", {3: 1000})
    events = group.resolve_round("T1", "R1", {3: ["KS", "KH", "KD"]}, community=["4S", "4H"])
    assert _awards(events) == [(3, "FULL_HOUSE", 100_000)]
    assert group.main == pesos(900_000)


def test_P3_go_poker_card_counts() -> None:
    """P3: Go Poker needs exactly 3 own cards and 2 community cards; otherwise WRONG_CARD_COUNT."""
    group = _go_poker_group(1_000_000)
    group.adopt_locked_round("T1", "R1", {1: 1000})
    before = group.snapshot()
    for hands, community in (
        ({1: ["JS", "QS", "KS", "TS", "AS"]}, []),
        ({1: ["JS", "QS", "KS"]}, ["TS"]),
        ({1: ["JS", "QS", "KS"]}, []),
        ({1: ["JS", "QS"]}, ["TS", "AS"]),
    ):
        with pytest.raises(DomainError) as caught:
            group.resolve_round("T1", "R1", hands, community=community)
        assert caught.value.reason is Reason.WRONG_CARD_COUNT
        assert group.snapshot() == before


def test_P3_go_poker_duplicate_between_community_and_seat_is_refused() -> None:
    group = _go_poker_group(1_000_000)
    group.adopt_locked_round("T1", "R1", {1: 1000})
    before = group.snapshot()
    with pytest.raises(DomainError) as caught:
        group.resolve_round("T1", "R1", {1: ["JS", "QS", "AS"]}, community=["TS", "AS"])
    assert caught.value.reason is Reason.DUPLICATE_CARD
    assert group.snapshot() == before


# ----------------------------------------------------------------- blackjack (rule P4)


@pytest.mark.parametrize(
    ("cards", "category"),
    [
        (("AS", "AS", "AS", "AS"), "FOUR_ACES_SAME_SUIT"),  # multi-deck shoe: repeats allowed
        (("AD", "AD", "AD", "AD"), "FOUR_ACES_SAME_SUIT"),
        (("AS", "AH", "AD", "AC"), "FOUR_ACES"),
        (("AS", "AS", "AS", "AH"), "FOUR_ACES"),
        (("7D", "7D", "7D"), "THREE_SEVENS_SAME_SUIT"),
        (("7D", "7D", "7D", "KS"), "THREE_SEVENS_SAME_SUIT"),
        (("AS", "AS", "AS"), "THREE_ACES_SAME_SUIT"),
        (("AS", "KS", "AS", "AS"), "THREE_ACES_SAME_SUIT"),  # aces among the first four
        (("AS", "AH", "AS"), "THREE_ACES"),
        (("AC", "AH", "5S", "AD"), "THREE_ACES"),
        (("7D", "7H", "7D"), "THREE_SEVENS"),
        (("7S", "7H", "7C", "2D"), "THREE_SEVENS"),
        (("AS", "AS"), "TWO_ACES_SAME_SUIT"),
        (("AH", "9C", "AH"), "TWO_ACES_SAME_SUIT"),
        (("AS", "AH"), None),  # two aces, different suits
        (("7S", "7S"), None),  # sevens need three
        (("KS", "7S", "7S", "7S"), None),  # sevens count among the first three only
        (("AS", "KD", "QH", "JC"), None),
        (("AS", "AS", "KS", "QS", "AS", "AS"), "TWO_ACES_SAME_SUIT"),  # only the first four
    ],
)
def test_P4_blackjack_categories(cards: tuple[str, ...], category: str | None) -> None:
    """P4 (seed 003): aces in the first four cards, sevens in the first three, suits matter."""
    assert blackjack_category(codes(*cards)) == category
    assert categorise("blackjack", codes(*cards)) == category
