"""One test (or more) per rule of docs/rules.md, against the PotGroup engine.

Amounts are worked out by hand in the comments; ``pesos(n)`` is n whole pesos in minor units and
``parse_amount("x.y")`` an exact fractional balance. Rule E5 (a faulty lamp closes the seat) is
enforced by the gateway's table state machine, so its test is in test_table.py.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypedDict

import pytest

from jackpot.domain.cards import Game
from jackpot.domain.config import PotGroupConfig, load_config
from jackpot.domain.engine import PotGroup
from jackpot.domain.errors import ConservationError, DomainError, Reason
from jackpot.domain.events import (
    BetsCollected,
    ConfigActivated,
    ConfigProposed,
    Event,
    MysteryAwarded,
    MysteryCommitted,
    PotGroupOpened,
    PotReseeded,
    PrizeAwarded,
    RoundSettled,
    SeatForfeited,
)
from jackpot.domain.money import MINOR_PER_PESO, format_amount, parse_amount, pesos
from jackpot.domain.mystery import commitment, secure_trigger, verify_commitment
from jackpot.domain.paytable import builtin_paytable


class Limits(TypedDict):
    min_bet: int
    max_bet: int
    credit_value: int


LIMITS: Limits = {"min_bet": 1000, "max_bet": 5000, "credit_value": 1000}

# Hands (one deck: the constants used together in one round never share a card).
ROYAL_S = ["AS", "KS", "QS", "JS", "TS"]
ROYAL_H = ["TH", "JH", "QH", "KH", "AH"]
ROYAL_D = ["AD", "KD", "QD", "JD", "TD"]
SF_9K_H = ["9H", "TH", "JH", "QH", "KH"]
SF_WHEEL_S = ["AS", "2S", "3S", "4S", "5S"]
SF_5_9_C = ["5C", "6C", "7C", "8C", "9C"]
SF_8Q_D = ["8D", "9D", "TD", "JD", "QD"]
QUADS_7 = ["7S", "7H", "7D", "7C", "2D"]
FULL_3_4 = ["3S", "3H", "3D", "4C", "4S"]
FULL_2_9 = ["2H", "2D", "2C", "9S", "9H"]
FULL_T_Q = ["TS", "TD", "TC", "QC", "QD"]
FLUSH_H = ["2H", "5H", "8H", "JH", "KH"]
FLUSH_C = ["2C", "6C", "9C", "JC", "AC"]
NOTHING = ["3C", "7D", "8H", "JD", "4D"]
STRAIGHT = ["6S", "7H", "8C", "9D", "TC"]  # unsuited: pays nothing (P2)


def config(**overrides: Any) -> PotGroupConfig:
    data: dict[str, Any] = {
        "version": 1,
        "commission_percent": "10",
        "base": 0,
        "pots": [{"name": "main", "percent": 100}],
        "paytable": "scj-poker",
        **LIMITS,
    }
    data.update(overrides)
    return load_config(data)


def open_group(
    cfg: PotGroupConfig | None = None,
    balances: Mapping[str, int] | None = None,
    tables: Sequence[tuple[str, str]] = (("T1", "caribbean"),),
    **kwargs: Any,
) -> PotGroup:
    cfg = cfg or config()
    group, _ = PotGroup.open("G", cfg, balances, **kwargs)
    for table, game in tables:
        group.link_table(
            table,
            game,
            min_bet=cfg.min_bet,
            max_bet=cfg.max_bet,
            credit_value=cfg.credit_value,
        )
    return group


def awards(events: Sequence[Event]) -> list[tuple[int, str, int]]:
    return [(e.seat, e.prize, e.amount_pesos) for e in events if isinstance(e, PrizeAwarded)]


def only(events: Sequence[Event], kind: type[Any]) -> Any:
    found = [e for e in events if isinstance(e, kind)]
    assert len(found) == 1, events
    return found[0]


def identity_holds(group: PotGroup) -> bool:
    """M2 recomputed from the group's fields, independently of check_conservation."""
    return group.collected + group.house_advance == (
        group.commission + sum(group.balances.values()) + group.awarded
    )


@pytest.fixture
def refused() -> Callable[..., DomainError]:
    """Call a command that must be refused; assert nothing changed; return the error."""

    def check(group: PotGroup, reason: Reason, command: Callable[[], object]) -> DomainError:
        before = group.snapshot()
        with pytest.raises(DomainError) as caught:
            command()
        assert caught.value.reason is reason, caught.value
        assert group.snapshot() == before, "a refused command changed the state"
        return caught.value

    return check


# ---------------------------------------------------------------------------- money (M)


def test_M1_balances_are_exact_integers_and_boundaries_whole_pesos() -> None:
    """M1: pots may carry fractions, held exactly as ints; awards are whole pesos."""
    group = open_group(config(commission_percent="12.5"), balances={"main": pesos(0)})
    group.lock_round("T1", "R1", {1: 1000})
    # 1000 x 87.5 % = 875 pesos exactly; commission 125 pesos.
    assert group.main == pesos(875)
    assert all(type(v) is int for v in group.balances.values())
    assert type(group.collected) is int
    assert type(group.commission) is int
    events = group.resolve_round("T1", "R1", {1: FLUSH_H})
    award = only(events, PrizeAwarded)
    assert type(award.amount_pesos) is int
    assert award.amount_pesos == 50_000


def test_M2_conservation_after_every_command() -> None:
    """M2: collected + house_advances == commission + sum(pots) + awarded, after each event."""
    group = open_group(config(base=100_000))
    assert identity_holds(group)
    group.lock_round("T1", "R1", {1: 1000, 2: 5000})
    assert identity_holds(group)
    group.forfeit("T1", "R1", 2, "FOLD")
    assert identity_holds(group)
    group.resolve_round("T1", "R1", {1: QUADS_7, 2: ROYAL_S})
    assert identity_holds(group)
    group.check_conservation()
    # 100,000 + 5,400 (bets 6,000 less 10 %) - 500,000 (quads 500 x 1,000): 394,600 from the
    # house (S7), then back up to the 100,000 base, also from the house (S8).
    assert group.awarded == pesos(500_000)
    assert group.house_advance == pesos(100_000 + 394_600 + 100_000)
    assert group.main == pesos(100_000)


def test_M2_check_conservation_can_fail() -> None:
    """M2: the check is not vacuous: a peso out of nowhere or a negative pot is caught."""
    group = open_group(config(pots=[{"name": "main", "percent": 60}, {"name": "r", "percent": 40}]))
    group.lock_round("T1", "R1", {1: 1000})
    group.balances["main"] += 1  # one picopeso that no event explains
    with pytest.raises(ConservationError, match="M2"):
        group.check_conservation()
    group.balances["main"] -= 1
    group.check_conservation()
    group.balances["r"] -= pesos(1000)
    group.balances["main"] += pesos(1000)
    with pytest.raises(ConservationError, match="negative"):
        group.check_conservation()


def test_M3_sign_shows_main_floored_never_more() -> None:
    """M3: a sign shows the main pot floored to whole pesos."""
    group = open_group(balances={"main": parse_amount("1000.75")})
    assert group.sign_value == 1000
    assert pesos(group.sign_value) <= group.main
    group = open_group(balances={"main": parse_amount("0.999999999999")})
    assert group.sign_value == 0


# ------------------------------------------------------------------------ contributions (C)


def test_C1_bets_are_collected_when_the_round_is_locked(refused: Callable[..., Any]) -> None:
    """C1: linking or refusing does not collect; a lock collects every bet of the round."""
    group = open_group()
    assert group.collected == 0
    events = group.lock_round("T1", "R1", {3: 2000, 1: 1000})
    collected = only(events, BetsCollected)
    assert collected.bets == ((1, 1000), (3, 2000))
    assert collected.total_pesos == 3000
    # 3,000 collected; 10 % commission = 300; 2,700 to main.
    assert group.collected == pesos(3000)
    assert group.commission == pesos(300)
    assert group.main == pesos(2700)
    assert collected.transfers == (
        ("bets", "commission", pesos(300)),
        ("bets", "pot:main", pesos(2700)),
    )


def test_C1_a_refused_lock_changes_nothing(refused: Callable[..., Any]) -> None:
    """C1, E1: one invalid bet refuses the whole lock; nothing is collected, nothing locked."""
    group = open_group()
    refused(
        group, Reason.BET_OUT_OF_LIMITS, lambda: group.lock_round("T1", "R1", {1: 1000, 2: 500})
    )
    refused(
        group, Reason.SEAT_OUT_OF_RANGE, lambda: group.lock_round("T1", "R1", {1: 1000, 8: 1000})
    )
    assert group.collected == 0
    assert group.locked == {}
    # The same round can then lock with valid bets.
    group.lock_round("T1", "R1", {1: 1000})
    assert group.collected == pesos(1000)


def test_C1_lock_without_bets_collects_nothing() -> None:
    """C1: a round locked with no progressive bet collects nothing and settles with no award."""
    group = open_group()
    events = group.lock_round("T1", "R1", {})
    assert only(events, BetsCollected).total_pesos == 0
    assert group.collected == 0
    settled = only(group.resolve_round("T1", "R1", {}), RoundSettled)
    assert settled.award_ids == ()


def test_C2_C3_commission_and_three_pots_exact_with_fractions() -> None:
    """C2, C3: 12.5 % commission; 62.5 / 25 / 12.5 % to three pots; nothing rounded."""
    cfg = config(
        commission_percent="12.5",
        pots=[
            {"name": "main", "percent": "62.5"},
            {"name": "reserve1", "percent": 25},
            {"name": "reserve2", "percent": "12.5"},
        ],
        min_bet=1,
        max_bet=100,
        credit_value=1,
    )
    group = open_group(cfg)
    events = group.lock_round("T1", "R1", {1: 7, 2: 6})
    # Collected 13. Commission 12.5 % x 13 = 1.625. Net 11.375:
    #   main     62.5 % x 11.375 = 7.109375
    #   reserve1 25   % x 11.375 = 2.84375
    #   reserve2 12.5 % x 11.375 = 1.421875   (sum 11.375)
    assert group.commission == parse_amount("1.625")
    assert group.balances == {
        "main": parse_amount("7.109375"),
        "reserve1": parse_amount("2.84375"),
        "reserve2": parse_amount("1.421875"),
    }
    assert only(events, BetsCollected).increments == (
        ("main", parse_amount("7.109375")),
        ("reserve1", parse_amount("2.84375")),
        ("reserve2", parse_amount("1.421875")),
    )
    assert group.collected == pesos(13)
    assert identity_holds(group)
    assert group.sign_value == 7


def test_C2_C3_commission_12_5_and_pots_87_5_12_5() -> None:
    """C2, C3: 10 % commission on 3,000 then 87.5 / 12.5 % of 2,700: 2,362.5 and 337.5."""
    cfg = config(
        pots=[{"name": "main", "percent": "87.5"}, {"name": "reserve1", "percent": "12.5"}]
    )
    group = open_group(cfg)
    group.lock_round("T1", "R1", {1: 1000, 2: 2000})
    assert group.commission == pesos(300)
    assert group.main == parse_amount("2362.5")
    assert group.balances["reserve1"] == parse_amount("337.5")
    assert format_amount(group.main) == "2362.5"


def test_C3_pot_percentages_must_sum_to_100() -> None:
    """C3: shares that do not sum to exactly 100 % are refused as INVALID_CONFIG."""
    for pots in (
        [{"name": "main", "percent": "87.5"}, {"name": "r", "percent": "12.4999"}],
        [{"name": "main", "percent": 60}, {"name": "r", "percent": 41}],
        [{"name": "reserve", "percent": 100}],  # no main pot
    ):
        with pytest.raises(DomainError) as caught:
            config(pots=pots)
        assert caught.value.reason is Reason.INVALID_CONFIG


def test_C4_main_pot_opens_at_its_base() -> None:
    """C4: a new group's main pot starts at the non-zero base, advanced by the house."""
    group, events = PotGroup.open("G", config(base=500_000))
    assert group.main == pesos(500_000)
    assert group.house_advance == pesos(500_000)
    assert group.sign_value == 500_000
    opened = only(events, PotGroupOpened)
    assert opened.transfers == (("house", "pot:main", pesos(500_000)),)
    assert identity_holds(group)
    # Explicit opening balances replace the base (e.g. a migrated pot), also house-advanced.
    group, _ = PotGroup.open("G", config(base=500_000), {"main": parse_amount("1234.5")})
    assert group.main == parse_amount("1234.5")
    assert group.house_advance == parse_amount("1234.5")


def test_C4_opening_balances_are_validated() -> None:
    with pytest.raises(DomainError) as caught:
        PotGroup.open("G", config(), {"nope": pesos(1)})
    assert caught.value.reason is Reason.INVALID_CONFIG
    with pytest.raises(DomainError) as caught:
        PotGroup.open("G", config(), {"main": -1})
    assert caught.value.reason is Reason.INVALID_CONFIG


def test_C5_ceiling_overflows_to_named_pot() -> None:
    """C5: a reserve at its ceiling sends its share above the ceiling to the named pot."""
    cfg = config(
        commission_percent=0,
        pots=[
            {"name": "main", "percent": 70},
            {"name": "reserve1", "percent": 30, "ceiling": 1000, "overflow_to": "main"},
        ],
    )
    group = open_group(cfg)
    events = group.lock_round("T1", "R1", {1: 5000})
    # 5,000: main 3,500; reserve1 1,500 of which 1,000 fits under its ceiling, 500 overflows.
    assert group.balances == {"main": pesos(4000), "reserve1": pesos(1000)}
    collected = only(events, BetsCollected)
    assert collected.overflow == (("reserve1", "main", pesos(500)),)
    assert collected.increments == (
        ("main", pesos(3500)),
        ("reserve1", pesos(1000)),
        ("main", pesos(500)),
    )
    group.resolve_round("T1", "R1", {1: NOTHING})
    group.lock_round("T1", "R2", {1: 5000})
    # reserve1 is full: its whole 1,500 overflows. main 4,000 + 3,500 + 1,500 = 9,000.
    assert group.balances == {"main": pesos(9000), "reserve1": pesos(1000)}
    assert group.overflow == pesos(2000)
    assert identity_holds(group)


def test_C5_ceiling_overflow_chain() -> None:
    """C5: overflow follows a chain: reserve1 -> reserve2 -> main."""
    cfg = config(
        commission_percent=0,
        pots=[
            {"name": "main", "percent": 50},
            {"name": "reserve1", "percent": 30, "ceiling": 600, "overflow_to": "reserve2"},
            {"name": "reserve2", "percent": 20, "ceiling": 1000, "overflow_to": "main"},
        ],
    )
    group = open_group(cfg)
    events = group.lock_round("T1", "R1", {1: 5000})
    # main +2,500. reserve1 share 1,500: keeps 600, 900 -> reserve2 (900 <= 1,000).
    # reserve2 share 1,000: 900 + 1,000 > 1,000, keeps 100, 900 -> main. main 3,400.
    assert group.balances == {
        "main": pesos(3400),
        "reserve1": pesos(600),
        "reserve2": pesos(1000),
    }
    assert only(events, BetsCollected).overflow == (
        ("reserve1", "reserve2", pesos(900)),
        ("reserve2", "main", pesos(900)),
    )
    group.resolve_round("T1", "R1", {})
    events = group.lock_round("T1", "R2", {1: 5000})
    # Both reserves full: reserve1's 1,500 goes through reserve2 to main; reserve2's 1,000 too.
    # main 3,400 + 2,500 + 1,500 + 1,000 = 8,400.
    assert group.balances == {
        "main": pesos(8400),
        "reserve1": pesos(600),
        "reserve2": pesos(1000),
    }
    assert only(events, BetsCollected).overflow == (
        ("reserve1", "reserve2", pesos(1500)),
        ("reserve2", "main", pesos(1500)),
        ("reserve2", "main", pesos(1000)),
    )
    assert identity_holds(group)


@pytest.mark.parametrize(
    "pots",
    [
        [  # a loop
            {"name": "main", "percent": 50},
            {"name": "r1", "percent": 25, "ceiling": 10, "overflow_to": "r2"},
            {"name": "r2", "percent": 25, "ceiling": 10, "overflow_to": "r1"},
        ],
        [{"name": "main", "percent": 50}, {"name": "r1", "percent": 50, "ceiling": 10}],
        [{"name": "main", "percent": 50}, {"name": "r1", "percent": 50, "overflow_to": "main"}],
        [
            {"name": "main", "percent": 50},
            {"name": "r1", "percent": 50, "ceiling": 10, "overflow_to": "r9"},
        ],
    ],
)
def test_C5_invalid_ceiling_configuration_is_refused(pots: list[dict[str, Any]]) -> None:
    """C5: ceiling and overflow_to go together; the chain names pots of the group, no loops."""
    with pytest.raises(DomainError) as caught:
        config(pots=pots)
    assert caught.value.reason is Reason.INVALID_CONFIG


def test_C6_forfeited_bet_stays_collected() -> None:
    """C6: a folded seat loses the bet and the right to a prize; the contribution stays."""
    group = open_group(balances={"main": pesos(1_000_000)})
    group.lock_round("T1", "R1", {1: 1000, 2: 1000})
    # main 1,000,000 + 2,000 less 10 % = 1,001,800.
    assert group.main == pesos(1_001_800)
    events = group.forfeit("T1", "R1", 1, "FOLD")
    assert only(events, SeatForfeited).seat == 1
    assert group.collected == pesos(2000)
    events = group.resolve_round("T1", "R1", {1: ROYAL_S, 2: NOTHING})
    assert awards(events) == []
    assert group.collected == pesos(2000)
    assert group.commission == pesos(200)
    assert group.main == pesos(1_001_800)
    assert group.awarded == 0


def test_C7_config_change_applies_only_at_the_next_reset() -> None:
    """C7: a proposed version waits; a fixed prize does not apply it; a royal flush does.

    v1: commission 10 %, main 80 / reserve1 20, base 100,000.
    v2: commission 20 %, main 50 / reserve1 50, base 200,000.
    """
    v1 = config(
        pots=[{"name": "main", "percent": 80}, {"name": "reserve1", "percent": 20}], base=100_000
    )
    v2 = config(
        version=2,
        commission_percent=20,
        pots=[{"name": "main", "percent": 50}, {"name": "reserve1", "percent": 50}],
        base=200_000,
    )
    group = open_group(v1, balances={"main": pesos(1_000_000)})
    group.lock_round("T1", "R1", {1: 1000})
    # net 900: main +720, reserve1 +180.
    assert group.balances == {"main": pesos(1_000_720), "reserve1": pesos(180)}
    group.resolve_round("T1", "R1", {1: NOTHING})

    proposed = only(group.propose_config(v2, "ops@casino", "regulator approval 42"), ConfigProposed)
    assert proposed.version == 2
    assert proposed.changed_by == "ops@casino"
    assert group.config.version == 1

    group.lock_round("T1", "R2", {1: 1000})
    # Still v1 during play: main 1,001,440, reserve1 360.
    assert group.balances == {"main": pesos(1_001_440), "reserve1": pesos(360)}
    events = group.resolve_round("T1", "R2", {1: FLUSH_H})
    # A flush (50,000) leaves main at 951,440, above the base: no reset, v1 still in force.
    assert awards(events) == [(1, "FLUSH", 50_000)]
    assert not [e for e in events if isinstance(e, ConfigActivated)]
    assert group.config.version == 1

    group.lock_round("T1", "R3", {1: 1000})
    assert group.balances == {"main": pesos(952_160), "reserve1": pesos(540)}
    events = group.resolve_round("T1", "R3", {1: ROYAL_S})
    # Royal takes all 952,160 -> a reset: v2 becomes active, then main is reseeded to v2's base
    # 200,000: 540 from reserve1, 199,460 from the house.
    assert awards(events) == [(1, "ROYAL_FLUSH", 952_160)]
    kinds = [type(e) for e in events]
    assert kinds.index(ConfigActivated) < kinds.index(PotReseeded)
    assert only(events, ConfigActivated).version == 2
    reseed = only(events, PotReseeded)
    assert reseed.base == pesos(200_000)
    assert reseed.transfers == (
        ("pot:reserve1", "pot:main", pesos(540)),
        ("house", "pot:main", pesos(199_460)),
    )
    assert group.config.version == 2
    assert group.pending == []
    assert group.balances == {"main": pesos(200_000), "reserve1": 0}
    assert group.house_advance == pesos(1_000_000 + 199_460)

    group.lock_round("T1", "R4", {1: 1000})
    # v2 now: commission 200, net 800: main +400, reserve1 +400.
    assert group.balances == {"main": pesos(200_400), "reserve1": pesos(400)}
    assert group.commission == pesos(100 + 100 + 100 + 200)
    assert identity_holds(group)


def test_C7_newest_pending_version_wins() -> None:
    """C7: two proposals before a reset: only the newest takes effect."""
    group = open_group(config(base=0), balances={"main": pesos(10_000)})
    group.propose_config(config(version=2, commission_percent=20), "ops", "v2")
    group.propose_config(config(version=3, commission_percent=30), "ops", "v3")
    group.lock_round("T1", "R1", {1: 1000})
    assert group.commission == pesos(100)  # still v1
    events = group.resolve_round("T1", "R1", {1: ROYAL_H})
    assert only(events, ConfigActivated).version == 3
    group.lock_round("T1", "R2", {1: 1000})
    assert group.commission == pesos(100 + 300)


def test_C7_config_versions_are_checked_and_audited(refused: Callable[..., Any]) -> None:
    """C7, E1: a version must be newer, name who and why, keep limits and pots; else refused."""
    group = open_group(
        config(pots=[{"name": "main", "percent": 90}, {"name": "reserve1", "percent": 10}])
    )
    with_reserve = [{"name": "main", "percent": 90}, {"name": "reserve1", "percent": 10}]
    refused(
        group,
        Reason.INVALID_CONFIG,
        lambda: group.propose_config(config(version=1, pots=with_reserve), "ops", "same"),
    )
    refused(
        group,
        Reason.INVALID_CONFIG,
        lambda: group.propose_config(config(version=2, pots=with_reserve), "", "no who"),
    )
    refused(
        group,
        Reason.INVALID_CONFIG,
        lambda: group.propose_config(config(version=2, pots=with_reserve), "ops", ""),
    )
    refused(
        group,
        Reason.INVALID_CONFIG,
        lambda: group.propose_config(
            config(version=2, pots=with_reserve, max_bet=10_000), "ops", "limits"
        ),
    )
    refused(
        group,
        Reason.INVALID_CONFIG,
        lambda: group.propose_config(config(version=2), "ops", "drops reserve1"),
    )
    refused(
        group,
        Reason.INVALID_CONFIG,
        lambda: group.propose_config(
            config(version=2, pots=with_reserve, paytable="bj-aces-sevens"), "ops", "bj"
        ),
    )
    group.propose_config(config(version=2, pots=with_reserve), "ops", "ok")
    refused(
        group,
        Reason.INVALID_CONFIG,
        lambda: group.propose_config(config(version=2, pots=with_reserve), "ops", "again"),
    )


def test_C7_config_round_trips_through_its_data_form() -> None:
    """C7: the configuration reported to the regulator reads back to the same configuration."""
    cfg = config(
        commission_percent="12.5",
        base=123,
        pots=[
            {"name": "main", "percent": "62.5"},
            {"name": "reserve1", "percent": "25", "ceiling": 1000, "overflow_to": "main"},
            {"name": "mystery", "percent": "12.5"},
        ],
        mystery={"pot": "mystery", "min": 10, "max": 20},
    )
    assert load_config(cfg.to_config()) == cfg
    assert cfg.reserve_order == ("reserve1",)  # the mystery pot does not fund S7/S8


# ------------------------------------------------------------------------ eligibility (E)


@pytest.mark.parametrize("bet", [500, 999, 5001, 6000, 1500, 0, -1000])
def test_E1_bet_outside_limits_is_refused(bet: int, refused: Callable[..., Any]) -> None:
    """E1, E6: a bet below min, above max or not whole credits is BET_OUT_OF_LIMITS."""
    group = open_group()
    error = refused(group, Reason.BET_OUT_OF_LIMITS, lambda: group.lock_round("T1", "R1", {2: bet}))
    assert "seat 2" in error.detail


@pytest.mark.parametrize(
    "limits",
    [
        {"min_bet": 2000, "max_bet": 5000, "credit_value": 1000},
        {"min_bet": 1000, "max_bet": 10_000, "credit_value": 1000},
        {"min_bet": 1000, "max_bet": 5000, "credit_value": 500},
    ],
)
def test_E1_linking_a_table_with_other_limits_is_refused(
    limits: Limits, refused: Callable[..., Any]
) -> None:
    """E1: all tables linked to one pot share min, max and credit value."""
    group = open_group()
    refused(group, Reason.INVALID_CONFIG, lambda: group.link_table("T2", "caribbean", **limits))
    assert "T2" not in group.tables
    group.link_table("T2", "caribbean", **LIMITS)
    assert "T2" in group.tables


def test_E1_limits_must_be_consistent_in_config() -> None:
    """E1, E6: min above max, or limits that are not whole credits, are INVALID_CONFIG."""
    for bad in (
        {"min_bet": 5000, "max_bet": 1000, "credit_value": 1000},
        {"min_bet": 1500, "max_bet": 5000, "credit_value": 1000},
    ):
        with pytest.raises(DomainError) as caught:
            config(**bad)
        assert caught.value.reason is Reason.INVALID_CONFIG


def test_E2_draw_card_exchange_forfeits() -> None:
    """E2: in Draw Poker, a player who exchanges cards forfeits; only kept hands can win."""
    group = open_group(balances={"main": pesos(1_000_000)}, tables=[("T1", "draw")])
    group.lock_round("T1", "R1", {1: 1000, 2: 1000})
    events = group.forfeit("T1", "R1", 1, "CARD_EXCHANGE")
    assert only(events, SeatForfeited).reason == "CARD_EXCHANGE"
    events = group.resolve_round("T1", "R1", {1: ROYAL_S, 2: FLUSH_H})
    assert awards(events) == [(2, "FLUSH", 50_000)]  # the exchanged royal wins nothing


def test_E2_E3_forfeit_reasons_depend_on_the_game(refused: Callable[..., Any]) -> None:
    """E2, E3: Caribbean has no exchange; blackjack has neither; unknown reasons are malformed."""
    group = open_group(config(paytable="bj-aces-sevens"), tables=[("BJ", "blackjack")])
    group.lock_round("BJ", "R1", {1: 1000})
    refused(group, Reason.INVALID_STATE, lambda: group.forfeit("BJ", "R1", 1, "FOLD"))
    refused(group, Reason.INVALID_STATE, lambda: group.forfeit("BJ", "R1", 1, "CARD_EXCHANGE"))

    group = open_group(tables=[("T1", "caribbean"), ("G1", "go_poker")])
    group.lock_round("T1", "R1", {1: 1000})
    group.lock_round("G1", "R1", {1: 1000})
    refused(group, Reason.INVALID_STATE, lambda: group.forfeit("T1", "R1", 1, "CARD_EXCHANGE"))
    refused(group, Reason.INVALID_STATE, lambda: group.forfeit("G1", "R1", 1, "CARD_EXCHANGE"))
    refused(group, Reason.MALFORMED, lambda: group.forfeit("T1", "R1", 1, "SURRENDER"))
    refused(group, Reason.NO_BET, lambda: group.forfeit("T1", "R1", 2, "FOLD"))
    refused(group, Reason.SEAT_OUT_OF_RANGE, lambda: group.forfeit("T1", "R1", 8, "FOLD"))
    refused(group, Reason.INVALID_STATE, lambda: group.forfeit("T1", "R9", 1, "FOLD"))
    group.forfeit("G1", "R1", 1, "FOLD")  # Go Poker players may fold


def test_E3_caribbean_fold_forfeits() -> None:
    """E3: a player who folds forfeits the progressive bet (scenario 07's shape)."""
    group = open_group(balances={"main": pesos(5_000_000)})
    group.lock_round("T1", "R1", {1: 1000, 3: 1000})
    group.forfeit("T1", "R1", 1, "FOLD")
    events = group.resolve_round("T1", "R1", {1: ROYAL_S, 3: FLUSH_C})
    # 5,000,000 + 1,800 - 50,000 = 4,951,800.
    assert awards(events) == [(3, "FLUSH", 50_000)]
    assert group.main == pesos(4_951_800)


def test_E4_dealer_hand_plays_no_part() -> None:
    """E4: results carry no dealer hand; a winner is paid whatever the dealer had."""
    params = inspect.signature(PotGroup.resolve_round).parameters
    assert not any("dealer" in name for name in params)
    group = open_group(balances={"main": pesos(1_000_000)})
    group.lock_round("T1", "R1", {4: 1000})
    events = group.resolve_round("T1", "R1", {4: FULL_2_9})
    assert awards(events) == [(4, "FULL_HOUSE", 100_000)]


# --------------------------------------------------------------------------- paytable (P)


def test_P_default_paytable_and_resolution_order() -> None:
    """P, S1, S2: the default paytable's prizes, fixed first by multiple, then by percentage."""
    table = builtin_paytable("scj-poker")
    assert table.fixed_order == ("FLUSH", "FULL_HOUSE", "FOUR_OF_A_KIND")
    assert table.percent_order == ("STRAIGHT_FLUSH", "ROYAL_FLUSH")
    assert [table.prizes[h].multiple for h in table.fixed_order] == [50, 100, 500]
    assert table.prizes["STRAIGHT_FLUSH"].percent_ppm == 100_000
    assert table.prizes["STRAIGHT_FLUSH"].cap_multiple == 5000
    assert table.prizes["ROYAL_FLUSH"].percent_ppm == 1_000_000
    assert table.prizes["ROYAL_FLUSH"].cap_multiple is None


def test_P1_the_stake_is_not_returned() -> None:
    """P1: a flush on 2,000 pays 50 x 2,000 = 100,000, not 102,000."""
    group = open_group(balances={"main": pesos(1_000_000)})
    group.adopt_locked_round("T1", "R1", {1: 2000})
    events = group.resolve_round("T1", "R1", {1: FLUSH_H})
    assert awards(events) == [(1, "FLUSH", 100_000)]
    assert group.awarded == pesos(100_000)
    assert group.main == pesos(900_000)


def test_P2_straights_and_lower_hands_win_nothing() -> None:
    """P2: an unsuited straight, trips and two pair win nothing from the progressive."""
    group = open_group(balances={"main": pesos(1_000_000)})
    group.adopt_locked_round("T1", "R1", {1: 1000, 2: 1000, 3: 1000})
    events = group.resolve_round(
        "T1",
        "R1",
        {1: STRAIGHT, 2: ["AS", "AH", "AD", "2C", "3D"], 3: ["KS", "KH", "4D", "4C", "5S"]},
    )
    assert awards(events) == []
    assert group.main == pesos(1_000_000)


def test_P3_draw_uses_the_players_five_cards() -> None:
    """P3: Draw Poker: the player's five kept cards; a straight flush 10 % of 1,000,000."""
    group = open_group(balances={"main": pesos(1_000_000)}, tables=[("D1", "draw")])
    group.adopt_locked_round("D1", "R1", {6: 1000})
    events = group.resolve_round("D1", "R1", {6: SF_9K_H})
    assert awards(events) == [(6, "STRAIGHT_FLUSH", 100_000)]


def test_P4_blackjack_four_aces_same_suit_takes_the_main_pot() -> None:
    """P4: bj-aces-sevens: four aces of one suit = 100 % of main; multi-deck repeats allowed.

    main 1,234,567 + bets 2,000 less 10 % = 1,236,367. S1 first: seat 2's two aces of spades
    (the same cards as seat 1's: several decks) 10 x 1,000 = 10,000 -> 1,226,367. Then seat 1
    takes all that remains: 1,226,367. Base 0: no reseed.
    """
    cfg = config(paytable="bj-aces-sevens")
    group = open_group(cfg, balances={"main": pesos(1_234_567)}, tables=[("BJ", "blackjack")])
    group.lock_round("BJ", "R1", {1: 1000, 2: 1000})
    events = group.resolve_round("BJ", "R1", {1: ["AS", "AS", "AS", "AS"], 2: ["AS", "AS"]})
    assert awards(events) == [
        (2, "TWO_ACES_SAME_SUIT", 10_000),
        (1, "FOUR_ACES_SAME_SUIT", 1_226_367),
    ]
    assert group.main == 0
    assert identity_holds(group)


def test_P4_blackjack_other_categories_and_card_counts(refused: Callable[..., Any]) -> None:
    """P4: three sevens of a suit pay 500 x bet; four aces of mixed suits 10 % (capped)."""
    cfg = config(paytable="bj-aces-sevens")
    group = open_group(cfg, balances={"main": pesos(1_000_000)}, tables=[("BJ", "blackjack")])
    group.adopt_locked_round("BJ", "R1", {1: 1000, 3: 2000, 5: 1000})
    refused(group, Reason.WRONG_CARD_COUNT, lambda: group.resolve_round("BJ", "R1", {1: ["AS"]}))
    refused(
        group,
        Reason.WRONG_CARD_COUNT,
        lambda: group.resolve_round("BJ", "R1", {1: ["AS"] * 5}),
    )
    events = group.resolve_round(
        "BJ", "R1", {1: ["7D", "7D", "7D"], 3: ["AS", "AH", "AD", "AC"], 5: ["KS", "QS"]}
    )
    # S1: 500 x 1,000 = 500,000 -> main 500,000. S2: four aces 10 % = 50,000 (cap 10,000,000).
    assert awards(events) == [
        (1, "THREE_SEVENS_SAME_SUIT", 500_000),
        (3, "FOUR_ACES", 50_000),
    ]
    assert group.main == pesos(450_000)


def test_P4_custom_paytable_orders_prizes_by_size() -> None:
    """P4, S1: a paytable is configuration; fixed prizes are paid smaller multiple first, and a
    hand the paytable does not list pays nothing (here: four of a kind)."""
    paytable = {
        "name": "house-special",
        "evaluator": "poker",
        "prizes": [
            {"hand": "FLUSH", "multiple": 200},
            {"hand": "FULL_HOUSE", "multiple": 150},
            {"hand": "ROYAL_FLUSH", "percent": "50"},
        ],
    }
    group = open_group(config(paytable=paytable), balances={"main": pesos(10_000_000)})
    group.adopt_locked_round("T1", "R1", {1: 1000, 2: 1000, 3: 1000, 4: 1000})
    events = group.resolve_round("T1", "R1", {1: FLUSH_C, 2: FULL_3_4, 3: QUADS_7, 4: ROYAL_H})
    # full house 150,000 first, then flush 200,000: 9,650,000; royal 50 % = 4,825,000.
    assert awards(events) == [
        (2, "FULL_HOUSE", 150_000),
        (1, "FLUSH", 200_000),
        (4, "ROYAL_FLUSH", 4_825_000),
    ]
    assert group.main == pesos(4_825_000)


@pytest.mark.parametrize(
    "prizes",
    [
        [],
        [{"hand": "STRAIGHT", "multiple": 5}],  # not a paying category (P2)
        [{"hand": "FLUSH", "multiple": 50}, {"hand": "FLUSH", "multiple": 60}],
        [{"hand": "FLUSH", "multiple": 50, "percent": "10"}],
        [{"hand": "FLUSH"}],
        [{"hand": "FLUSH", "multiple": 50, "cap_multiple": 10}],
        [{"hand": "FLUSH", "multiple": 0}],
        [{"hand": "FLUSH", "multiple": 1.5}],
        [{"hand": "ROYAL_FLUSH", "percent": "0"}],
        [{"hand": "ROYAL_FLUSH", "percent": "100.5"}],
        [{"hand": "STRAIGHT_FLUSH", "percent": 10}, {"hand": "ROYAL_FLUSH", "percent": 10}],
        [{"hand": "FOUR_ACES", "multiple": 10}],  # a blackjack hand in a poker paytable
        [{"hand": "FLUSH", "multiple": 50, "bonus": 1}],
    ],
)
def test_P4_invalid_paytable_is_refused(prizes: list[dict[str, Any]]) -> None:
    with pytest.raises(DomainError) as caught:
        config(paytable={"name": "bad", "evaluator": "poker", "prizes": prizes})
    assert caught.value.reason is Reason.INVALID_CONFIG


def test_P4_paytable_must_pay_the_tables_game(refused: Callable[..., Any]) -> None:
    """P4: a blackjack paytable pays blackjack hands only, and the poker one poker only."""
    group = open_group(config(paytable="bj-aces-sevens"), tables=[])
    refused(group, Reason.UNKNOWN_GAME, lambda: group.link_table("T1", "caribbean", **LIMITS))
    group = open_group(tables=[])
    refused(group, Reason.UNKNOWN_GAME, lambda: group.link_table("T1", Game.BLACKJACK, **LIMITS))
    refused(group, Reason.UNKNOWN_GAME, lambda: group.link_table("T1", "baccarat", **LIMITS))


# ------------------------------------------------------------------------- resolution (S)


def test_S1_fixed_prizes_smaller_first_each_by_own_bet() -> None:
    """S1: flush, full house, four of a kind, in that order, each x the winner's own bet."""
    group = open_group(balances={"main": pesos(10_000_000)})
    group.adopt_locked_round("T1", "R1", {1: 1000, 2: 5000, 3: 2000})
    events = group.resolve_round("T1", "R1", {1: QUADS_7, 2: FLUSH_H, 3: FULL_3_4})
    # flush 50 x 5,000 = 250,000; full 100 x 2,000 = 200,000; quads 500 x 1,000 = 500,000.
    assert awards(events) == [
        (2, "FLUSH", 250_000),
        (3, "FULL_HOUSE", 200_000),
        (1, "FOUR_OF_A_KIND", 500_000),
    ]
    assert group.main == pesos(10_000_000 - 950_000)
    for event in events:
        if isinstance(event, PrizeAwarded):
            assert event.transfers == (("pot:main", "awards", pesos(event.amount_pesos)),)


def test_S2_percentage_prizes_on_what_remains() -> None:
    """S2: after S1, the straight flush takes 10 % of what remains, the royal all of the rest.

    main 3,000,001: flush 50 x 2,000 = 100,000 -> 2,900,001.
    straight flush 10 % of 2,900,001 = 290,000.1 -> 290,000 (S6) -> 2,610,001.
    royal flush: 100 % of 2,610,001 -> main 0 (base 0, no reseed).
    """
    group = open_group(balances={"main": pesos(3_000_001)})
    group.adopt_locked_round("T1", "R1", {1: 2000, 2: 1000, 3: 1000})
    events = group.resolve_round("T1", "R1", {3: ROYAL_S, 2: SF_8Q_D, 1: FLUSH_H})
    assert awards(events) == [
        (1, "FLUSH", 100_000),
        (2, "STRAIGHT_FLUSH", 290_000),
        (3, "ROYAL_FLUSH", 2_610_001),
    ]
    assert group.main == 0
    assert group.awarded == pesos(3_000_001)


def test_S2_everything_in_one_round_with_reseed() -> None:
    """S1, S2, S8: scenario 04's numbers through the engine API."""
    group = open_group(
        config(
            pots=[{"name": "main", "percent": 90}, {"name": "reserve1", "percent": 10}],
            base=1_000_000,
        ),
        balances={"main": pesos(10_000_000), "reserve1": pesos(3_000_000)},
    )
    group.adopt_locked_round("T1", "R1", {1: 1000, 2: 1000, 3: 1000, 5: 1000, 6: 1000})
    events = group.resolve_round(
        "T1",
        "R1",
        {
            1: FLUSH_H,
            2: FULL_3_4,
            3: QUADS_7,
            5: SF_8Q_D,
            6: ["TC", "JC", "QC", "KC", "AC"],
        },
    )
    # 10,000,000 - 50,000 - 100,000 - 500,000 = 9,350,000; SF 935,000; royal 8,415,000;
    # reseed 1,000,000 from reserve1 (3,000,000 -> 2,000,000).
    assert awards(events) == [
        (1, "FLUSH", 50_000),
        (2, "FULL_HOUSE", 100_000),
        (3, "FOUR_OF_A_KIND", 500_000),
        (5, "STRAIGHT_FLUSH", 935_000),
        (6, "ROYAL_FLUSH", 8_415_000),
    ]
    assert group.balances == {"main": pesos(1_000_000), "reserve1": pesos(2_000_000)}


def test_S3_odd_peso_goes_to_lowest_seat() -> None:
    """S3: two royals split 1,000,001: seat 3 gets 500,001, seat 5 gets 500,000."""
    group = open_group(config(base=200_000), balances={"main": pesos(1_000_001)})
    group.adopt_locked_round("T1", "R1", {5: 1000, 3: 1000})
    events = group.resolve_round("T1", "R1", {5: ROYAL_H, 3: ROYAL_D})
    assert awards(events) == [(3, "ROYAL_FLUSH", 500_001), (5, "ROYAL_FLUSH", 500_000)]


def test_S3_whole_remainder_goes_to_lowest_seat() -> None:
    """S3: three straight flushes split 10 % of 1,000,010 = 100,001: 33,335 / 33,333 / 33,333."""
    group = open_group(balances={"main": pesos(1_000_010)})
    group.adopt_locked_round("T1", "R1", {7: 1000, 2: 1000, 4: 1000})
    events = group.resolve_round("T1", "R1", {7: SF_5_9_C, 2: SF_WHEEL_S, 4: SF_9K_H})
    assert awards(events) == [
        (2, "STRAIGHT_FLUSH", 33_335),
        (4, "STRAIGHT_FLUSH", 33_333),
        (7, "STRAIGHT_FLUSH", 33_333),
    ]
    assert group.main == pesos(900_009)


def test_S4_straight_flush_capped_at_5000_times_bet() -> None:
    """S4: 10 % of 100,000,000 = 10,000,000, capped at 5,000 x 1,000; the rest stays."""
    group = open_group(balances={"main": pesos(100_000_000)})
    group.adopt_locked_round("T1", "R1", {1: 1000})
    events = group.resolve_round("T1", "R1", {1: SF_8Q_D})
    assert awards(events) == [(1, "STRAIGHT_FLUSH", 5_000_000)]
    assert group.main == pesos(95_000_000)


def test_S4_cap_applies_to_each_share_after_the_split() -> None:
    """S4: pool 15,000,000 splits 7,500,000 each; seat 1 (bet 1,000) capped at 5,000,000,
    seat 2 (bet 2,000, cap 10,000,000) keeps 7,500,000; the 2,500,000 cut stays in main."""
    group = open_group(balances={"main": pesos(150_000_000)})
    group.adopt_locked_round("T1", "R1", {1: 1000, 2: 2000})
    events = group.resolve_round("T1", "R1", {1: SF_8Q_D, 2: SF_9K_H})
    assert awards(events) == [(1, "STRAIGHT_FLUSH", 5_000_000), (2, "STRAIGHT_FLUSH", 7_500_000)]
    assert group.main == pesos(150_000_000 - 12_500_000)


def test_S5_award_order_by_prize_then_from_seat_1() -> None:
    """S5: winners are paid seat 1 first, within each prize (S1: smaller prizes first)."""
    group = open_group(balances={"main": pesos(10_000_000)})
    group.adopt_locked_round("T1", "R1", {6: 1000, 4: 1000, 2: 1000, 1: 1000})
    events = group.resolve_round(
        "T1",
        "R1",
        {6: FLUSH_C, 4: FULL_3_4, 2: FLUSH_H, 1: FULL_T_Q},  # deliberately out of order
    )
    assert awards(events) == [
        (2, "FLUSH", 50_000),
        (6, "FLUSH", 50_000),
        (1, "FULL_HOUSE", 100_000),
        (4, "FULL_HOUSE", 100_000),
    ]
    settled = only(events, RoundSettled)
    assert [a.split("/")[3:] for a in settled.award_ids] == [
        ["2", "FLUSH"],
        ["6", "FLUSH"],
        ["1", "FULL_HOUSE"],
        ["4", "FULL_HOUSE"],
    ]
    assert events[-1] is settled


def test_S6_fraction_of_a_peso_stays_in_the_pot() -> None:
    """S6: 10 % of 1,000.75 = 100.075 -> 100 paid, 900.75 stays; royal pays 900, 0.75 stays."""
    group = open_group(balances={"main": parse_amount("1000.75")})
    group.adopt_locked_round("T1", "R1", {1: 1000})
    events = group.resolve_round("T1", "R1", {1: SF_9K_H})
    assert awards(events) == [(1, "STRAIGHT_FLUSH", 100)]
    assert format_amount(group.main) == "900.75"
    assert group.sign_value == 900
    group.adopt_locked_round("T1", "R2", {1: 1000})
    events = group.resolve_round("T1", "R2", {1: ROYAL_S})
    assert awards(events) == [(1, "ROYAL_FLUSH", 900)]
    assert group.main == parse_amount("0.75")
    assert group.sign_value == 0
    assert identity_holds(group)


def test_S7_shortfall_from_reserves_in_order_then_house_advance() -> None:
    """S7: quads 500 x 1,000 = 500,000 against main 300,000: reserve2 (first in order) 50,000,
    reserve1 100,000, the house 50,000. No pot goes negative."""
    cfg = config(
        pots=[
            {"name": "main", "percent": 80},
            {"name": "reserve1", "percent": 10},
            {"name": "reserve2", "percent": 10},
        ],
        reserve_order=["reserve2", "reserve1"],
    )
    group = open_group(
        cfg,
        balances={
            "main": pesos(300_000),
            "reserve1": pesos(100_000),
            "reserve2": pesos(50_000),
        },
    )
    house_before = group.house_advance
    group.adopt_locked_round("T1", "R1", {2: 1000})
    events = group.resolve_round("T1", "R1", {2: QUADS_7})
    award = only(events, PrizeAwarded)
    assert award.amount_pesos == 500_000
    assert award.transfers == (
        ("pot:main", "awards", pesos(300_000)),
        ("pot:reserve2", "awards", pesos(50_000)),
        ("pot:reserve1", "awards", pesos(100_000)),
        ("house", "awards", pesos(50_000)),
    )
    assert group.house_advance - house_before == pesos(50_000)
    assert group.house_advance - house_before > 0
    assert group.balances == {"main": 0, "reserve1": 0, "reserve2": 0}
    assert not [e for e in events if isinstance(e, PotReseeded)]  # base 0
    assert identity_holds(group)


def test_S7_S8_shortfall_then_reseed_from_the_house() -> None:
    """S7, S8: main 300,000 + reserve 100,000 cannot pay 500,000: the house advances 100,000;
    then main is topped up to base 200,000, also by the house."""
    cfg = config(
        pots=[{"name": "main", "percent": 90}, {"name": "reserve1", "percent": 10}],
        base=200_000,
    )
    group = open_group(cfg, balances={"main": pesos(300_000), "reserve1": pesos(100_000)})
    group.adopt_locked_round("T1", "R1", {2: 1000})
    events = group.resolve_round("T1", "R1", {2: QUADS_7})
    assert awards(events) == [(2, "FOUR_OF_A_KIND", 500_000)]
    assert only(events, PotReseeded).transfers == (("house", "pot:main", pesos(200_000)),)
    assert group.balances == {"main": pesos(200_000), "reserve1": 0}
    assert group.house_advance == pesos(400_000 + 100_000 + 200_000)


def test_S8_top_up_to_base_from_reserves_then_house() -> None:
    """S8: a flush 50 x 5,000 = 250,000 leaves main 50,000 below base 200,000: 150,000 comes
    from reserve1 (100,000), reserve2 (30,000) and the house (20,000)."""
    cfg = config(
        pots=[
            {"name": "main", "percent": 80},
            {"name": "reserve1", "percent": 10},
            {"name": "reserve2", "percent": 10},
        ],
        base=200_000,
    )
    group = open_group(
        cfg,
        balances={"main": pesos(300_000), "reserve1": pesos(100_000), "reserve2": pesos(30_000)},
    )
    group.adopt_locked_round("T1", "R1", {3: 5000})
    events = group.resolve_round("T1", "R1", {3: FLUSH_H})
    reseed = only(events, PotReseeded)
    assert reseed.base == pesos(200_000)
    assert reseed.transfers == (
        ("pot:reserve1", "pot:main", pesos(100_000)),
        ("pot:reserve2", "pot:main", pesos(30_000)),
        ("house", "pot:main", pesos(20_000)),
    )
    assert group.balances == {"main": pesos(200_000), "reserve1": 0, "reserve2": 0}
    assert group.house_advance == pesos(430_000 + 20_000)


def test_S8_no_top_up_when_main_stays_at_or_above_base() -> None:
    """S8: a prize that leaves main exactly at base needs no top-up."""
    cfg = config(
        pots=[{"name": "main", "percent": 90}, {"name": "reserve1", "percent": 10}],
        base=200_000,
    )
    group = open_group(cfg, balances={"main": pesos(300_000), "reserve1": pesos(100_000)})
    group.adopt_locked_round("T1", "R1", {1: 1000})
    events = group.resolve_round("T1", "R1", {1: FULL_2_9})  # 100,000 -> main 200,000
    assert not [e for e in events if isinstance(e, PotReseeded)]
    assert group.balances == {"main": pesos(200_000), "reserve1": pesos(100_000)}


def test_S9_two_tables_sequentially_on_one_pot() -> None:
    """S9: rounds of linked tables resolve in commit order; the later sees what the earlier left.

    main 1,000,000, base 100,000. T1 and T2 each lock 1,000 (900 each to main): 1,001,800.
    T2 resolves first: royal takes 1,001,800; reseed 100,000 from the house.
    T1 then: its straight flush is 10 % of 100,000 = 10,000, not of the old 1,001,800;
    main 90,000 is below base: the house tops it up by 10,000.
    """
    group = open_group(
        config(base=100_000),
        balances={"main": pesos(1_000_000)},
        tables=[("T1", "caribbean"), ("T2", "caribbean")],
    )
    group.lock_round("T1", "A", {1: 1000})
    group.lock_round("T2", "B", {1: 1000})
    assert group.main == pesos(1_001_800)
    first = group.resolve_round("T2", "B", {1: ROYAL_S})
    assert awards(first) == [(1, "ROYAL_FLUSH", 1_001_800)]
    second = group.resolve_round("T1", "A", {1: SF_9K_H})
    assert awards(second) == [(1, "STRAIGHT_FLUSH", 10_000)]
    assert group.main == pesos(100_000)
    assert group.house_advance == pesos(1_000_000 + 100_000 + 10_000)
    assert identity_holds(group)


# ------------------------------------------------------------------ mystery prize (X1, X2)


class FixedTriggers:
    """A deterministic trigger source: the given triggers in turn, each with its own salt."""

    def __init__(self, *values: int) -> None:
        self.values = list(values)
        self.calls: list[tuple[int, int]] = []

    def __call__(self, low: int, high: int) -> tuple[int, bytes]:
        self.calls.append((low, high))
        value = self.values[len(self.calls) - 1]
        return value, bytes([len(self.calls)]) * 16


def mystery_config() -> PotGroupConfig:
    return config(
        commission_percent=0,
        pots=[{"name": "main", "percent": 90}, {"name": "mystery", "percent": 10}],
        mystery={"pot": "mystery", "min": 150, "max": 400},
    )


def test_X2_mystery_prize_paid_to_the_crossing_seat_and_verifiable() -> None:
    """X1, X2: the hidden trigger is committed at draw, paid to the bet that crosses it, and
    revealed so anyone can verify the commitment; a wrong salt or value does not verify.

    Trigger 250. Bets seat 1: 2,000, seat 2: 1,000, seat 3: 2,000; 10 % to the mystery pot:
    running 200, 300 (>= 250: seat 2 crosses), 500. Pays 250; 250 stays; next trigger 300.
    """
    triggers = FixedTriggers(250, 300, 400)
    group, opened = PotGroup.open("G", mystery_config(), trigger_source=triggers)
    group.link_table("T1", "caribbean", **LIMITS)
    published = only(opened, MysteryCommitted).commitment
    assert published == commitment(250, b"\x01" * 16)
    assert triggers.calls == [(150, 400)]

    events = group.lock_round("T1", "R1", {3: 2000, 1: 2000, 2: 1000})
    award = only(events, MysteryAwarded)
    assert award.seat == 2
    assert award.amount_pesos == 250
    assert award.trigger_pesos == 250
    assert award.commitment == published
    assert verify_commitment(award.trigger_pesos, bytes.fromhex(award.salt_hex), published)
    assert not verify_commitment(award.trigger_pesos, b"\x02" * 16, published)  # wrong salt
    assert not verify_commitment(251, bytes.fromhex(award.salt_hex), published)  # wrong value
    assert award.transfers == (("pot:mystery", "awards", pesos(250)),)
    kinds = [type(e) for e in events]
    assert kinds == [BetsCollected, MysteryAwarded, MysteryCommitted]
    committed = events[-1]
    assert isinstance(committed, MysteryCommitted)
    assert committed.commitment == commitment(300, b"\x02" * 16)  # the next trigger, committed
    assert group.balances == {"main": pesos(4500), "mystery": pesos(250)}
    assert group.awarded == pesos(250)
    assert identity_holds(group)

    group.resolve_round("T1", "R1", {})
    events = group.lock_round("T1", "R2", {1: 1000, 2: 1000})
    # 250 + 100 = 350 >= 300: seat 1 crosses. 250 + 200 - 300 = 150 stays.
    award = only(events, MysteryAwarded)
    assert (award.seat, award.amount_pesos) == (1, 300)
    assert group.balances["mystery"] == pesos(150)
    assert triggers.calls == [(150, 400)] * 3


def test_X2_no_mystery_prize_below_the_trigger() -> None:
    """X2: nothing is paid while the pot stays below the hidden trigger."""
    group, _ = PotGroup.open("G", mystery_config(), trigger_source=FixedTriggers(400))
    group.link_table("T1", "caribbean", **LIMITS)
    events = group.lock_round("T1", "R1", {1: 3000})  # mystery pot 300 < 400
    assert not [e for e in events if isinstance(e, MysteryAwarded)]
    assert group.balances["mystery"] == pesos(300)


def test_X2_secure_trigger_is_within_bounds_with_fresh_salt() -> None:
    """X2: the default source draws within [min, max] and never reuses a salt."""
    draws = [secure_trigger(150, 160) for _ in range(300)]
    assert {value for value, _ in draws} <= set(range(150, 161))
    assert len({value for value, _ in draws}) > 1
    assert all(len(salt) == 16 for _, salt in draws)
    assert len({salt for _, salt in draws}) == len(draws)
    assert secure_trigger(7, 7)[0] == 7


def test_X2_mystery_pot_fed_by_overflow_pays_and_does_not_crash() -> None:
    """X2, C5: a mystery pot may hold money it did not get as a direct share: overflow from a
    full reserve (C5) or an opening balance. When that money crosses the trigger, the lock must
    pay the mystery prize like any other crossing, and must never fail half-way.

    Config: commission 0; main 80 %, reserve1 20 % with ceiling 0 overflowing to the mystery pot,
    mystery 0 % of its own. Trigger 150. Seat 1 bets 1,000: main +800, reserve1's 200 all
    overflows to the mystery pot: 200 >= 150, so seat 1's bet crosses the trigger: it wins 150
    and 50 stays in the mystery pot.

    Refusing such a configuration up front (INVALID_CONFIG) would also honour the contract.
    """
    refused_up_front: Reason | None = None
    try:
        cfg = config(
            commission_percent=0,
            pots=[
                {"name": "main", "percent": 80},
                {"name": "reserve1", "percent": 20, "ceiling": 0, "overflow_to": "mystery"},
                {"name": "mystery", "percent": 0},
            ],
            mystery={"pot": "mystery", "min": 150, "max": 400},
        )
    except DomainError as refusal:
        refused_up_front = refusal.reason
    if refused_up_front is not None:
        assert refused_up_front is Reason.INVALID_CONFIG
        return
    group, _ = PotGroup.open("G", cfg, trigger_source=FixedTriggers(150, 300))
    group.link_table("T1", "caribbean", **LIMITS)
    try:
        events = group.lock_round("T1", "R1", {1: 1000})
    except DomainError:
        raise
    except Exception as error:  # the engine's own contract: DomainError or success, nothing else
        pytest.fail(
            f"lock_round raised {type(error).__name__} after collecting the bets "
            f"(collected={group.collected}, balances={group.balances}, locked={group.locked})"
        )
    award = only(events, MysteryAwarded)
    assert (award.seat, award.amount_pesos) == (1, 150)
    assert group.balances == {"main": pesos(800), "reserve1": 0, "mystery": pesos(50)}


def test_X2_crossing_seat_counts_overflow_into_the_mystery_pot() -> None:
    """X2, C5: the mystery prize goes to the bet whose contribution crossed the trigger, overflow
    included.

    Config: commission 0; main 50 %, reserve1 40 % with ceiling 0 overflowing to the mystery pot,
    mystery 10 %. Trigger 250. Per peso bet, the mystery pot receives 10 % directly plus 40 %
    overflow = 50 %. Seat 1 bets 2,000 -> +1,000: seat 1 alone crosses 250 (seat 2 at 1,000
    and seat 3 at 2,000 come after it).
    """
    cfg = config(
        commission_percent=0,
        pots=[
            {"name": "main", "percent": 50},
            {"name": "reserve1", "percent": 40, "ceiling": 0, "overflow_to": "mystery"},
            {"name": "mystery", "percent": 10},
        ],
        mystery={"pot": "mystery", "min": 250, "max": 250},
    )
    group, _ = PotGroup.open("G", cfg, trigger_source=FixedTriggers(250, 250))
    group.link_table("T1", "caribbean", **LIMITS)
    events = group.lock_round("T1", "R1", {1: 2000, 2: 1000, 3: 2000})
    award = only(events, MysteryAwarded)
    assert award.amount_pesos == 250
    assert award.seat == 1, f"mystery prize paid to seat {award.seat}; seat 1 crossed the trigger"


@pytest.mark.parametrize(
    "mystery",
    [
        {"pot": "main", "min": 1, "max": 2},
        {"pot": "nope", "min": 1, "max": 2},
        {"pot": "mystery", "min": 5, "max": 2},
        {"pot": "mystery", "min": 0, "max": 2},
    ],
)
def test_X1_mystery_configuration_is_validated(mystery: dict[str, Any]) -> None:
    with pytest.raises(DomainError) as caught:
        config(
            pots=[{"name": "main", "percent": 90}, {"name": "mystery", "percent": 10}],
            mystery=mystery,
        )
    assert caught.value.reason is Reason.INVALID_CONFIG


def test_E3_X1_a_folded_seat_keeps_its_mystery_prize() -> None:
    """E3, X1: folding forfeits the progressive, but a complementary prize stays won.

    Trigger 250; commission 0, mystery pot 10 % of each bet, seat 1 first: seat 1's 1,000 adds
    100 (100 < 250), seat 3's 2,000 adds 200: 300 crosses 250, seat 3 wins 250 at the lock and
    50 stays. Seat 3 then folds: its royal flush wins nothing; main keeps 90 % of 3,000 = 2,700.
    """
    group, _ = PotGroup.open("G", mystery_config(), trigger_source=FixedTriggers(250, 400))
    group.link_table("T1", "caribbean", **LIMITS)
    locked = group.lock_round("T1", "R1", {1: 1000, 3: 2000})
    award = only(locked, MysteryAwarded)
    assert (award.seat, award.amount_pesos) == (3, 250)
    group.forfeit("T1", "R1", 3, "FOLD")
    events = group.resolve_round("T1", "R1", {1: NOTHING, 3: ROYAL_S})
    assert awards(events) == []
    assert group.awarded == pesos(250)
    assert group.balances == {"main": pesos(2700), "mystery": pesos(50)}
    assert identity_holds(group)


# --------------------------------------------------------------- refused inputs (device errors)


def test_duplicate_card_refuses_the_whole_round(refused: Callable[..., Any]) -> None:
    """One deck per round: a card at two seats refuses the round; no balance changes at all,
    and the round stays locked so corrected results can still resolve it."""
    group = open_group(balances={"main": pesos(1_000_000)})
    group.lock_round("T1", "R1", {1: 1000, 2: 1000})
    error = refused(
        group,
        Reason.DUPLICATE_CARD,
        lambda: group.resolve_round("T1", "R1", {1: ROYAL_S, 2: ["AS", "AD", "AH", "2C", "2D"]}),
    )
    assert "AS" in error.detail
    assert group.locked["T1"].round_id == "R1"
    events = group.resolve_round("T1", "R1", {1: ROYAL_S, 2: ["AC", "AD", "AH", "2C", "2D"]})
    assert awards(events) == [(2, "FULL_HOUSE", 100_000), (1, "ROYAL_FLUSH", 901_800)]


def test_result_for_seat_without_bet_is_no_bet(refused: Callable[..., Any]) -> None:
    group = open_group(balances={"main": pesos(1_000_000)})
    group.lock_round("T1", "R1", {1: 1000})
    error = refused(
        group, Reason.NO_BET, lambda: group.resolve_round("T1", "R1", {1: NOTHING, 2: ROYAL_S})
    )
    assert "seat 2" in error.detail


def test_result_before_lock_is_round_not_locked(refused: Callable[..., Any]) -> None:
    group = open_group(balances={"main": pesos(1_000_000)})
    refused(group, Reason.ROUND_NOT_LOCKED, lambda: group.resolve_round("T1", "R1", {1: ROYAL_S}))
    refused(group, Reason.ROUND_NOT_LOCKED, lambda: group.forfeit("T1", "R1", 1, "FOLD"))
    group.lock_round("T1", "R1", {1: 1000})
    group.resolve_round("T1", "R1", {1: NOTHING})
    # Settled: a second result for the same round is refused too.
    refused(group, Reason.ROUND_NOT_LOCKED, lambda: group.resolve_round("T1", "R1", {1: ROYAL_S}))


def test_six_cards_is_wrong_card_count(refused: Callable[..., Any]) -> None:
    group = open_group(balances={"main": pesos(1_000_000)})
    group.lock_round("T1", "R1", {1: 1000})
    refused(
        group,
        Reason.WRONG_CARD_COUNT,
        lambda: group.resolve_round("T1", "R1", {1: [*ROYAL_S, "2C"]}),
    )
    refused(
        group,
        Reason.WRONG_CARD_COUNT,
        lambda: group.resolve_round("T1", "R1", {1: ROYAL_S[:4]}),
    )
    refused(  # Caribbean has no community cards
        group,
        Reason.WRONG_CARD_COUNT,
        lambda: group.resolve_round("T1", "R1", {1: ROYAL_S}, community=["2C", "3C"]),
    )


def test_seat_7_at_draw_is_seat_out_of_range(refused: Callable[..., Any]) -> None:
    """Draw Poker has six seats: seat 7 is refused at lock and at resolution."""
    group = open_group(tables=[("D1", "draw")])
    refused(group, Reason.SEAT_OUT_OF_RANGE, lambda: group.lock_round("D1", "R1", {7: 1000}))
    refused(group, Reason.SEAT_OUT_OF_RANGE, lambda: group.lock_round("D1", "R1", {0: 1000}))
    group.lock_round("D1", "R1", {6: 1000})
    refused(group, Reason.SEAT_OUT_OF_RANGE, lambda: group.resolve_round("D1", "R1", {7: ROYAL_S}))


def test_unknown_table_is_refused(refused: Callable[..., Any]) -> None:
    group = open_group()
    refused(group, Reason.UNKNOWN_TABLE, lambda: group.lock_round("T9", "R1", {1: 1000}))
    refused(group, Reason.UNKNOWN_TABLE, lambda: group.forfeit("T9", "R1", 1, "FOLD"))
    refused(group, Reason.UNKNOWN_TABLE, lambda: group.resolve_round("T9", "R1", {1: ROYAL_S}))
    refused(group, Reason.UNKNOWN_TABLE, lambda: group.unlink_table("T9"))


def test_invalid_card_in_results_refuses_the_round(refused: Callable[..., Any]) -> None:
    group = open_group(balances={"main": pesos(1_000_000)})
    group.lock_round("T1", "R1", {1: 1000, 2: 1000})
    error = refused(
        group,
        Reason.INVALID_CARD,
        lambda: group.resolve_round("T1", "R1", {1: ROYAL_S, 2: ["2C", "3C", "4C", "5C", "10C"]}),
    )
    assert "seat 2" in error.detail


def test_round_state_machine(refused: Callable[..., Any]) -> None:
    """A table has one locked round at a time; the wrong round id is refused; unlink waits."""
    group = open_group()
    group.lock_round("T1", "R1", {1: 1000})
    refused(group, Reason.INVALID_STATE, lambda: group.lock_round("T1", "R2", {1: 1000}))
    refused(group, Reason.INVALID_STATE, lambda: group.resolve_round("T1", "R2", {1: NOTHING}))
    refused(group, Reason.INVALID_STATE, lambda: group.unlink_table("T1"))
    refused(group, Reason.INVALID_STATE, lambda: group.link_table("T1", "draw", **LIMITS))
    refused(group, Reason.INVALID_STATE, lambda: group.adopt_locked_round("T1", "R2", {1: 1000}))
    group.resolve_round("T1", "R1", {1: NOTHING})
    group.unlink_table("T1")
    assert group.tables == {}


def test_snapshot_round_trip_and_unknown_format() -> None:
    """D4: a snapshot restores the exact state; an unknown format is refused as MALFORMED."""
    group = open_group(
        config(pots=[{"name": "main", "percent": "87.5"}, {"name": "r1", "percent": "12.5"}])
    )
    group.lock_round("T1", "R1", {1: 1000, 2: 3000})
    group.forfeit("T1", "R1", 2, "FOLD")
    group.propose_config(
        config(
            version=2,
            pots=[{"name": "main", "percent": 50}, {"name": "r1", "percent": 50}],
        ),
        "ops",
        "why",
    )
    data = group.snapshot()
    copy = PotGroup.from_snapshot(data)
    assert copy.snapshot() == data
    assert copy.balances == group.balances
    assert copy.locked["T1"].forfeited == {2: "FOLD"}
    assert copy.pending[0][0].version == 2
    with pytest.raises(DomainError) as caught:
        PotGroup.from_snapshot(data.replace(b'"format":1', b'"format":2'))
    assert caught.value.reason is Reason.MALFORMED
    assert MINOR_PER_PESO == 10**12


def test_D4_the_events_alone_rebuild_every_balance_and_configuration() -> None:
    """D4: every contribution, prize, reseed, base and percentage is in the events, so an auditor
    holding only the events rebuilds each account exactly.

    v1: commission 10 %, main 80 / reserve1 20, base 100,000; main opened at 1,000,000 (house).
    R1: bets 1,000 + 2,000: commission 300, main +2,160, reserve1 +540; seat 2's flush 50 x 2,000
    = 100,000 -> main 902,160. v2 proposed: commission 20 %, 50 / 50, base 200,000.
    R2: bet 1,000: commission 100, main +720 = 902,880, reserve1 +180 = 720; royal takes 902,880;
    v2 takes effect; reseed to 200,000: 720 from reserve1, 199,280 from the house.
    """
    v1 = config(
        pots=[{"name": "main", "percent": 80}, {"name": "reserve1", "percent": 20}], base=100_000
    )
    v2 = config(
        version=2,
        commission_percent=20,
        pots=[{"name": "main", "percent": 50}, {"name": "reserve1", "percent": 50}],
        base=200_000,
    )
    group, events = PotGroup.open("G", v1, {"main": pesos(1_000_000)})
    events += group.link_table("T1", "caribbean", **LIMITS)
    events += group.lock_round("T1", "R1", {1: 1000, 2: 2000})
    events += group.resolve_round("T1", "R1", {1: NOTHING, 2: FLUSH_C})
    events += group.propose_config(v2, "ops@casino", "regulator approval 43")
    events += group.lock_round("T1", "R2", {1: 1000})
    events += group.resolve_round("T1", "R2", {1: ROYAL_S})

    accounts: dict[str, int] = {}
    for event in events:
        for source, target, amount in getattr(event, "transfers", ()):
            accounts[source] = accounts.get(source, 0) - amount
            accounts[target] = accounts.get(target, 0) + amount
    assert accounts == {
        "house": -pesos(1_000_000 + 199_280),
        "bets": -pesos(4000),
        "commission": pesos(400),
        "awards": pesos(100_000 + 902_880),
        "pot:main": pesos(200_000),
        "pot:reserve1": 0,
    }
    assert accounts["pot:main"] == group.main
    assert accounts["house"] == -group.house_advance
    assert accounts["awards"] == group.awarded
    for event in events:  # each prize names its bet and cards, and is funded exactly
        if isinstance(event, PrizeAwarded):
            assert sum(a for _, _, a in event.transfers) == pesos(event.amount_pesos)
            assert event.bet_pesos > 0
            assert len(event.cards) == 5
    # The configuration in force at every moment is in the events too: v1 at the opening, and
    # v2's percentages and base, with who and why, when proposed and when it took effect.
    assert only(events, PotGroupOpened).config_version == 1
    proposed = only(events, ConfigProposed)
    assert (proposed.changed_by, proposed.reason) == ("ops@casino", "regulator approval 43")
    assert load_config(only(events, ConfigActivated).config) == v2
    assert only(events, PotReseeded).base == pesos(200_000)
    assert identity_holds(group)


def test_C1_a_settled_round_cannot_be_locked_and_collected_again() -> None:
    """C1: each round's bets are collected once, even if its lock is sent again later."""
    config = load_config(
        {
            "pots": [{"name": "main", "percent": 100}],
            "min_bet": 1000,
            "max_bet": 5000,
            "credit_value": 1000,
        }
    )
    group, _ = PotGroup.open("g", config)
    group.link_table("T1", "caribbean", min_bet=1000, max_bet=5000, credit_value=1000)
    group.lock_round("T1", "R1", {1: 1000})
    group.resolve_round("T1", "R1", {})
    before = group.snapshot()
    with pytest.raises(DomainError) as again:
        group.lock_round("T1", "R1", {1: 1000})
    assert again.value.reason is Reason.INVALID_STATE
    assert group.snapshot() == before
    restored = PotGroup.from_snapshot(before)
    with pytest.raises(DomainError):
        restored.lock_round("T1", "R1", {1: 1000})
    restored.lock_round("T1", "R2", {1: 1000})
    assert restored.collected == 2000 * 10**12
