"""Exact money (rules M1, M3, C2, C3, S3, S6): jackpot.domain.money."""

from __future__ import annotations

from fractions import Fraction
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jackpot.domain.config import load_config
from jackpot.domain.engine import PotGroup
from jackpot.domain.events import BetsCollected
from jackpot.domain.money import (
    MINOR_PER_PESO,
    PPM,
    MoneyError,
    as_fraction,
    floor_pesos,
    format_amount,
    format_percent,
    parse_amount,
    parse_percent,
    percent_of_floored,
    pesos,
    split_equally,
)

# ------------------------------------------------------------------------ amounts (M1)


@pytest.mark.parametrize(
    ("text", "minor"),
    [
        (0, 0),
        (1, MINOR_PER_PESO),
        (500000, 500000 * MINOR_PER_PESO),
        ("0", 0),
        ("1000.75", 1000 * MINOR_PER_PESO + 750_000_000_000),
        ("1000.750", 1000 * MINOR_PER_PESO + 750_000_000_000),
        ("0.5", 500_000_000_000),
        ("0.000000000001", 1),  # exactly one picopeso: 12 decimals is the finest allowed
        ("123456789012.999999999999", 123456789012 * MINOR_PER_PESO + 999_999_999_999),
    ],
)
def test_M1_parse_amount_is_exact(text: int | str, minor: int) -> None:
    """M1: whole pesos or exact decimal strings become exact integer minor units."""
    assert parse_amount(text) == minor


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("1000.75", "1000.75"),
        ("1000.750", "1000.75"),
        (1000, "1000"),
        ("500000", "500000"),
        ("0", "0"),
        ("0.000000000001", "0.000000000001"),
        ("7.1", "7.1"),
    ],
)
def test_M1_format_amount_round_trip(value: int | str, text: str) -> None:
    """M1: format_amount(parse_amount(x)) is the canonical decimal, and parses back exactly."""
    minor = parse_amount(value)
    assert format_amount(minor) == text
    assert parse_amount(format_amount(minor)) == minor


def test_M1_format_amount_negative_and_fractions() -> None:
    """M1: negative minor amounts format with a sign; no trailing zeros, no float artefacts."""
    assert format_amount(-500_000_000_000) == "-0.5"
    assert format_amount(-pesos(3)) == "-3"
    assert format_amount(1) == "0.000000000001"
    assert format_amount(pesos(1) // 3) == "0.333333333333"


@given(st.integers(min_value=0, max_value=10**30))
def test_M1_format_then_parse_round_trips_any_minor_amount(minor: int) -> None:
    """M1: every non-negative minor amount has an exact decimal text that parses back."""
    assert parse_amount(format_amount(minor)) == minor


def test_M1_as_fraction_is_the_exact_amount_in_pesos() -> None:
    """M1: reports see exact rational pesos (values worked out by hand)."""
    assert as_fraction(parse_amount("1000.75")) == Fraction(4003, 4)
    assert as_fraction(1) == Fraction(1, 1_000_000_000_000)  # one picopeso
    assert as_fraction(pesos(1) // 3) == Fraction(333_333_333_333, 1_000_000_000_000)
    assert as_fraction(pesos(500_000)) == 500_000
    assert as_fraction(-500_000_000_000) == Fraction(-1, 2)


@pytest.mark.parametrize(
    "bad",
    [
        -1,  # negative int
        "-1",  # negative text
        "-0.5",
        1.5,  # a binary float, even a "nice" one
        1000.0,
        True,  # bool is an int subclass but never money
        False,
        "1.0000000000001",  # 13 decimals: finer than the picopeso
        "0.0000000000001",
        "",
        "abc",
        "1e3",
        "1,000",
        "1.",
        ".5",
        None,
        [1],
    ],
)
def test_M1_parse_amount_refuses(bad: Any) -> None:
    """M1: negative, float, bool, too fine or non-numeric amounts are refused with MoneyError."""
    with pytest.raises(MoneyError):
        parse_amount(bad)


def test_M1_money_error_is_a_value_error() -> None:
    """Callers that catch ValueError also catch MoneyError (e.g. the resolve tool)."""
    with pytest.raises(ValueError, match="more than 12 decimals"):
        parse_amount("0.1234567890123")


def test_M3_floor_pesos_never_rounds_up() -> None:
    """M3: the whole-peso view of a balance is floored, never more than the balance holds."""
    assert floor_pesos(parse_amount("1000.75")) == 1000
    assert floor_pesos(parse_amount("1000.999999999999")) == 1000
    assert floor_pesos(pesos(1000)) == 1000
    assert floor_pesos(0) == 0
    assert floor_pesos(MINOR_PER_PESO - 1) == 0


# ---------------------------------------------------------------------------- percentages


@pytest.mark.parametrize(
    ("text", "ppm"),
    [
        ("12.5", 125_000),
        ("87.5", 875_000),
        (10, 100_000),
        ("10", 100_000),
        ("0", 0),
        (0, 0),
        ("100", PPM),
        (100, PPM),
        ("100.0000", PPM),
        ("0.0001", 1),  # four decimals: the finest percentage, 0.0001 % == 1 ppm
        ("0.01", 100),
        ("33.3333", 333_333),
        ("12.3456", 123_456),
    ],
)
def test_C2_parse_percent(text: int | str, ppm: int) -> None:
    """C2/C3: percentages are exact integers in parts per million."""
    assert parse_percent(text) == ppm


@pytest.mark.parametrize(
    "bad",
    [
        "12.34567",  # five decimals
        "0.00001",
        "100.0001",  # above 100
        101,
        "1000",
        -1,
        "-5",
        12.5,  # float
        True,
        "",
        "ten",
        None,
    ],
)
def test_C2_parse_percent_refuses(bad: Any) -> None:
    """C2/C3: more than four decimals, above 100, negative, float or bool are refused."""
    with pytest.raises(MoneyError):
        parse_percent(bad)


@given(st.integers(min_value=0, max_value=PPM))
def test_C7_format_percent_round_trips(ppm: int) -> None:
    """C7: a configuration written back (format_percent) reads back to the same ppm."""
    assert parse_percent(format_percent(ppm)) == ppm


def test_format_percent_examples() -> None:
    assert format_percent(125_000) == "12.5"
    assert format_percent(PPM) == "100"
    assert format_percent(100) == "0.01"
    assert format_percent(1) == "0.0001"
    assert format_percent(333_333) == "33.3333"


# --------------------------------------------------------------------- percentage prizes (S6)


def test_S6_percent_of_floored_floors_to_whole_pesos() -> None:
    """S6: a percentage prize is computed on the exact balance and floored; the fraction stays."""
    main = parse_amount("1000.75")
    # 100% of 1000.75 = 1000.75 -> 1000 pesos paid, 0.75 stays.
    assert percent_of_floored(main, PPM) == 1000
    # 10% of 1000.75 = 100.075 -> 100.
    assert percent_of_floored(main, 100_000) == 100
    # 12.5% of 1000.75 = 125.09375 -> 125.
    assert percent_of_floored(main, 125_000) == 125
    # 10% of 9.99 = 0.999 -> 0.
    assert percent_of_floored(parse_amount("9.99"), 100_000) == 0
    # 10% of 1_000_010 = 100_001 exactly.
    assert percent_of_floored(pesos(1_000_010), 100_000) == 100_001
    assert percent_of_floored(0, PPM) == 0


@given(
    st.integers(min_value=0, max_value=10**28),
    st.integers(min_value=0, max_value=PPM),
)
def test_S6_percent_of_floored_is_the_exact_floor(minor: int, ppm: int) -> None:
    """S6: result == floor(balance x percent) exactly, and never more than the balance."""
    exact = Fraction(minor, MINOR_PER_PESO) * Fraction(ppm, PPM)
    result = percent_of_floored(minor, ppm)
    assert result == exact.numerator // exact.denominator
    assert 0 <= exact - result < 1
    assert pesos(result) <= minor


# ---------------------------------------------------------------------------- splits (S3)


def test_S3_split_odd_peso_goes_to_lowest_seat() -> None:
    """S3: 1,000,001 between seats 5 and 3: seat 3 (nearest seat 1) gets the odd peso."""
    assert split_equally(1_000_001, [5, 3]) == {3: 500_001, 5: 500_000}


def test_S3_split_whole_remainder_to_lowest_seat() -> None:
    """S3: 100,001 between seats 7, 2, 4: 33,333 each, remainder 2 all to seat 2."""
    assert split_equally(100_001, [7, 2, 4]) == {2: 33_335, 4: 33_333, 7: 33_333}


def test_S3_split_single_winner_and_zero() -> None:
    assert split_equally(12_345, [6]) == {6: 12_345}
    assert split_equally(0, [1, 2]) == {1: 0, 2: 0}
    assert split_equally(2, [4, 3, 1]) == {1: 2, 3: 0, 4: 0}


@given(
    st.integers(min_value=0, max_value=10**15),
    st.sets(st.integers(min_value=1, max_value=7), min_size=1, max_size=7),
)
def test_S3_split_properties(amount: int, seat_set: set[int]) -> None:
    """S3: parts are equal whole pesos, the whole remainder (< n) goes to the lowest seat.

    Checked from the parts alone (not by dividing again): every seat but the lowest gets the
    same part, nothing is left over, and the lowest seat's extra is less than one peso per seat,
    which leaves exactly one possible split."""
    seats = sorted(seat_set, reverse=True)  # order of the input must not matter
    parts = split_equally(amount, seats)
    assert set(parts) == seat_set
    assert all(isinstance(part, int) and part >= 0 for part in parts.values())
    assert sum(parts.values()) == amount
    lowest, *others = sorted(seat_set)
    equal = parts[others[0]] if others else parts[lowest]
    assert all(parts[seat] == equal for seat in others)
    assert 0 <= parts[lowest] - equal < len(seats)


# ----------------------------------------------------------- exactness identity (C2, C3)

shares_strategy = st.lists(st.integers(min_value=0, max_value=PPM), min_size=0, max_size=4).map(
    lambda cuts: _partition(cuts)
)


def _partition(cuts: list[int]) -> list[int]:
    """Random shares in ppm that sum to exactly 100 %."""
    points = sorted({0, PPM, *cuts})
    return [b - a for a, b in pairwise(points)]


def _lock(
    bets: list[int], commission: int, shares: list[int]
) -> tuple[PotGroup, BetsCollected, list[str]]:
    """One lock of ``bets`` (seats 1, 2, ...) on a fresh group; the group, its BetsCollected and
    the pot names (main, r1, r2, ...) in share order."""
    names = ["main", *(f"r{i}" for i in range(1, len(shares)))]
    config = load_config(
        {
            "commission_percent": format_percent(commission),
            "pots": [
                {"name": n, "percent": format_percent(p)}
                for n, p in zip(names, shares, strict=True)
            ],
            "min_bet": 1,
            "max_bet": 10**9,
            "credit_value": 1,
        }
    )
    group, _ = PotGroup.open("G", config)
    group.link_table("T1", "caribbean", min_bet=1, max_bet=10**9, credit_value=1)
    events = group.lock_round("T1", "R1", {seat: bet for seat, bet in enumerate(bets, start=1)})
    return group, next(e for e in events if isinstance(e, BetsCollected)), names


@settings(max_examples=200, deadline=None)
@given(
    bets=st.lists(st.integers(min_value=1, max_value=10**9), min_size=1, max_size=7),
    commission=st.integers(min_value=0, max_value=PPM - 1),
    shares=shares_strategy,
)
def test_C2_C3_contribution_identity_is_exact(
    bets: list[int], commission: int, shares: list[int]
) -> None:
    """C2, C3 (money.py's docstring): whatever the commission and shares, the engine's lock
    moves exactly the bets: its commission and pot increments add up to what it collected, to
    the picopeso, and each is the exact rational part of the bets, nothing rounded."""
    group, collected, names = _lock(bets, commission, shares)
    b = sum(bets)
    increments = dict(collected.increments)
    assert collected.total_pesos == b
    assert collected.commission + sum(increments.values()) == group.collected == pesos(b)
    assert group.commission == collected.commission
    rate = Fraction(commission, PPM)
    assert as_fraction(collected.commission) == b * rate
    for name, share in zip(names, shares, strict=True):
        assert as_fraction(group.balances[name]) == b * (1 - rate) * Fraction(share, PPM)
        assert increments.get(name, 0) == group.balances[name]


@pytest.mark.parametrize(
    ("bets", "commission", "shares", "expected"),
    [
        # 1,000 at 12.5 %: 125 kept; 875 shared 87.5 / 12.5: 765.625 and 109.375.
        (
            [1000],
            "12.5",
            ["87.5", "12.5"],
            {"commission": "125", "main": "765.625", "r1": "109.375"},
        ),
        # 1 + 2 = 3 pesos, no commission, thirds to four decimals: 3 x 0.333333 = 0.999999
        # twice and 3 x 0.333334 = 1.000002; together exactly 3.
        (
            [1, 2],
            "0",
            ["33.3333", "33.3333", "33.3334"],
            {"commission": "0", "main": "0.999999", "r1": "0.999999", "r2": "1.000002"},
        ),
        # The finest commission, 0.0001 % of 7 pesos: 0.000007 kept, 6.999993 to main.
        ([7], "0.0001", ["100"], {"commission": "0.000007", "main": "6.999993"}),
        # 9,999 + 1 at 30 %: 3,000 kept; 7,000 shared 70 / 30: 4,900 and 2,100.
        ([9999, 1], "30", ["70", "30"], {"commission": "3000", "main": "4900", "r1": "2100"}),
        # 1 peso at 12.3456 %: 0.123456 kept; 0.876544 halved: 0.438272 each.
        (
            [1],
            "12.3456",
            ["50", "50"],
            {"commission": "0.123456", "main": "0.438272", "r1": "0.438272"},
        ),
        # Seven bets of 10,000 at 33.3333 %: 23,333.31 kept, 46,666.69 to main.
        ([10_000] * 7, "33.3333", ["100"], {"commission": "23333.31", "main": "46666.69"}),
    ],
)
def test_C2_C3_engine_collects_hand_worked_amounts(
    bets: list[int], commission: str, shares: list[str], expected: dict[str, str]
) -> None:
    """C2/C3: the engine's BetsCollected and balances, against amounts worked out by hand."""
    group, collected, names = _lock(
        bets, parse_percent(commission), [parse_percent(p) for p in shares]
    )
    assert collected.total_pesos == sum(bets)
    assert format_amount(collected.commission) == expected["commission"]
    assert {pot: format_amount(amount) for pot, amount in collected.increments} == {
        pot: amount for pot, amount in expected.items() if pot != "commission"
    }
    assert {pot: format_amount(group.balances[pot]) for pot in names} == {
        pot: amount for pot, amount in expected.items() if pot != "commission"
    }
    assert group.collected == pesos(sum(bets))
