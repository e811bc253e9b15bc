"""Levels and envy bonuses (docs/rules.md, L1-L4 and V1-V3), against the PotGroup engine.

These are the operator's options beside the SCJ rules: several level pots paid from one side bet,
and an envy bonus for the other seats when one seat hits. Amounts are worked out by hand in the
docstrings; ``pesos(n)`` is n whole pesos in minor units. Every command below is followed by the
engine's own M2 check; the figures asserted are the hand-worked ones.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from jackpot.domain.config import load_config
from jackpot.domain.engine import PotGroup
from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.events import (
    BetsCollected,
    Event,
    MysteryAwarded,
    PotGroupOpened,
    PotReseeded,
    PrizeAwarded,
    RoundSettled,
)
from jackpot.domain.level_figures import level_figures, level_increments, level_sign_values
from jackpot.domain.money import parse_amount, pesos

LIMITS = {"min_bet": 1000, "max_bet": 5000, "credit_value": 1000}
ROYAL_S = ["AS", "KS", "QS", "JS", "TS"]
ROYAL_H = ["AH", "KH", "QH", "JH", "TH"]
SF_5_9_C = ["5C", "6C", "7C", "8C", "9C"]
SF_8Q_D = ["8D", "9D", "TD", "JD", "QD"]
QUADS_7 = ["7S", "7H", "7D", "7C", "2D"]
FLUSH_H = ["2H", "5H", "8H", "JH", "KH"]
FULL_3_4 = ["3S", "3H", "3D", "4C", "4S"]
NOTHING = ["3C", "7D", "8H", "JD", "4D"]
NOTHING_2 = ["2S", "5D", "9H", "KC", "6H"]
NOTHING_3 = ["4H", "6C", "8S", "TC", "QC"]


def prizes(**changes: dict[str, Any]) -> list[dict[str, Any]]:
    """The SCJ poker paytable (rule P), with per-hand changes (a level, an envy bonus)."""
    table: list[dict[str, Any]] = [
        {"hand": "FLUSH", "multiple": 50},
        {"hand": "FULL_HOUSE", "multiple": 100},
        {"hand": "FOUR_OF_A_KIND", "multiple": 500},
        {"hand": "STRAIGHT_FLUSH", "percent": "10", "cap_multiple": 5000},
        {"hand": "ROYAL_FLUSH", "percent": "100"},
    ]
    return [{**entry, **changes.get(entry["hand"], {})} for entry in table]


def leveled(prize_changes: dict[str, dict[str, Any]] | None = None, **overrides: Any) -> Any:
    """Configuration data: commission 0; main 80 %, sf 20 %; the royal level (main, reserve1,
    base 100,000) and the sf level (sf, sf_reserve, base 20,000) paying the straight flush."""
    changes = {"STRAIGHT_FLUSH": {"level": "sf"}} if prize_changes is None else prize_changes
    data: dict[str, Any] = {
        "commission_percent": "0",
        "base": 100_000,
        "pots": [
            {"name": "main", "percent": "80"},
            {"name": "sf", "percent": "20"},
            {"name": "reserve1", "percent": "0"},
            {"name": "sf_reserve", "percent": "0"},
        ],
        "levels": [
            {"name": "royal", "label": "Royal Flush", "reserve_order": ["reserve1"]},
            {
                "name": "sf",
                "label": "Straight Flush",
                "pot": "sf",
                "base": 20_000,
                "reserve_order": ["sf_reserve"],
            },
        ],
        "paytable": {"name": "levels", "evaluator": "poker", "prizes": prizes(**changes)},
        **LIMITS,
    }
    data.update(overrides)
    return data


def open_group(
    data: dict[str, Any], balances: dict[str, int], tables: Sequence[str] = ("T1",)
) -> PotGroup:
    cfg = load_config(data)
    group, _ = PotGroup.open("G", cfg, {pot: pesos(n) for pot, n in balances.items()})
    for table in tables:
        group.link_table(table, "caribbean", **LIMITS)
    return group


def awards(events: Sequence[Event]) -> list[tuple[str, int, str, int, str]]:
    return [
        (e.table_id, e.seat, e.prize, e.amount_pesos, e.level)
        for e in events
        if isinstance(e, PrizeAwarded)
    ]


def balances_in_pesos(group: PotGroup) -> dict[str, int]:
    return {pot: balance // pesos(1) for pot, balance in group.balances.items()}


# ------------------------------------------------------------------------------- levels (L1)


CLASSIC = {
    "commission_percent": "10",
    "base": 100_000,
    "pots": [{"name": "main", "percent": "80"}, {"name": "reserve1", "percent": "20"}],
    **LIMITS,
}
# The fields each event wrote before levels existed; a one-level group writes exactly these.
FIELDS_BEFORE_LEVELS = {
    "PotGroupOpened": {
        "group_id",
        "config_version",
        "transfers",
        "config",
        "changed_by",
        "reason",
    },
    "BetsCollected": {
        "group_id",
        "table_id",
        "round_id",
        "bets",
        "total_pesos",
        "commission",
        "increments",
        "overflow",
        "transfers",
    },
    "PrizeAwarded": {
        "award_id",
        "group_id",
        "table_id",
        "round_id",
        "seat",
        "prize",
        "bet_pesos",
        "amount_pesos",
        "cards",
        "transfers",
    },
    "PotReseeded": {"group_id", "table_id", "round_id", "base", "transfers"},
    "RoundSettled": {"group_id", "table_id", "round_id", "award_ids", "main_balance"},
}


def test_L1_a_configuration_without_levels_is_todays_exactly() -> None:
    """L1: no ``levels`` is one level, the main pot, with the group's base and reserves; its
    configuration data has no levels field, so its snapshot is the one it always was."""
    cfg = load_config(CLASSIC)
    assert not cfg.has_levels
    assert [(lv.name, lv.pot, lv.base, lv.reserve_order) for lv in cfg.levels] == [
        ("main", "main", pesos(100_000), ("reserve1",))
    ]
    assert "levels" not in cfg.to_config()
    assert all("level" not in json.dumps(p.to_config()) for p in cfg.paytable.prizes.values())
    group, _ = PotGroup.open("G", cfg)
    group.link_table("T1", "caribbean", **LIMITS)
    group.lock_round("T1", "R1", {1: 1000})
    group.resolve_round("T1", "R1", {1: ROYAL_S})
    assert b"level" not in group.snapshot()
    assert load_config(cfg.to_config()) == cfg


def test_L1_C4_every_level_opens_at_its_base_advanced_by_the_house() -> None:
    group, [opened] = PotGroup.open("G", load_config(leveled()))
    assert balances_in_pesos(group) == {
        "main": 100_000,
        "sf": 20_000,
        "reserve1": 0,
        "sf_reserve": 0,
    }
    assert group.house_advance == pesos(120_000)  # M2 holds from the first event
    assert opened.transfers == (
        ("house", "pot:main", pesos(100_000)),
        ("house", "pot:sf", pesos(20_000)),
    )
    assert opened.transfer_levels == ("royal", "sf")
    group.check_conservation()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"levels": []}, "'levels' must be a non-empty list"),
        ({"levels": [{"name": "royal", "pot": "sf"}]}, "levels[0] is the main level"),
        ({"levels": [{"name": "royal"}, {"name": "royal", "pot": "sf"}]}, "unique"),
        ({"levels": [{"name": "royal"}, {"name": "sf", "pot": "main"}]}, "a pot of its own"),
        ({"levels": [{"name": "royal"}, {"name": "sf", "pot": "nowhere"}]}, "levels[1].pot"),
        ({"levels": [{"name": "royal"}, {"name": "sf"}]}, "levels[1].pot must be"),
        ({"levels": [{"name": "royal", "colour": "red"}]}, "levels[0] has unknown fields"),
        ({"levels": [{"name": "royal", "base": 5}]}, "levels[0].base 5 is not the group's"),
        ({"levels": [{"name": "royal", "label": ""}]}, "levels[0].label"),
        ({"levels": [{"name": "royal"}, {"name": "sf", "pot": "sf", "base": -1}]}, "base"),
        (
            {"levels": [{"name": "royal"}, {"name": "sf", "pot": "sf", "reserve_order": ["sf"]}]},
            "the pot of a level",
        ),
        (
            {
                "levels": [
                    {"name": "royal", "reserve_order": ["reserve1"]},
                    {"name": "sf", "pot": "sf", "reserve_order": ["reserve1"]},
                ]
            },
            "reserve of two levels",
        ),
    ],
)
def test_L1_a_bad_level_setting_is_refused_naming_the_field(
    change: dict[str, Any], message: str
) -> None:
    with pytest.raises(DomainError) as refused:
        load_config(leveled(**change))
    assert refused.value.reason is Reason.INVALID_CONFIG
    assert message in refused.value.detail
    assert "\n" not in refused.value.detail


def test_L1_levels_survive_to_config_and_a_snapshot() -> None:
    """L1: the levels (names, labels, pots, bases, reserves) come back from the configuration's
    data, and a group with levels restores from its snapshot to the same bytes."""
    cfg = load_config(leveled())
    assert cfg.has_levels
    assert [(lv.name, lv.label, lv.pot, lv.base, lv.reserve_order) for lv in cfg.levels] == [
        ("royal", "Royal Flush", "main", pesos(100_000), ("reserve1",)),
        ("sf", "Straight Flush", "sf", pesos(20_000), ("sf_reserve",)),
    ]
    assert load_config(cfg.to_config()) == cfg
    group = open_group(leveled(), {"main": 200_000, "sf": 30_000})
    group.lock_round("T1", "R1", {1: 1000})
    snapshot = group.snapshot()
    assert PotGroup.from_snapshot(snapshot).snapshot() == snapshot


# ---------------------------------------------------------------------- paying by level (L2)


def test_L2_each_prize_is_paid_from_its_own_level() -> None:
    """L2: the flush (royal level) from main, the straight flush 10 % of the sf level.

    Lock 1,000 + 1,000: main 200,000 + 1,600 = 201,600; sf 30,000 + 400 = 30,400.
    Seat 1's flush: 50 x 1,000 = 50,000 from main: 151,600. Seat 2's straight flush: 10 % of
    sf 30,400 = 3,040 (not of main): sf 27,360. Both levels stay above their bases.
    """
    group = open_group(leveled(), {"main": 200_000, "sf": 30_000})
    group.lock_round("T1", "R1", {1: 1000, 2: 1000})
    events = group.resolve_round("T1", "R1", {1: FLUSH_H, 2: SF_5_9_C})
    assert awards(events) == [
        ("T1", 1, "FLUSH", 50_000, "royal"),
        ("T1", 2, "STRAIGHT_FLUSH", 3_040, "sf"),
    ]
    assert balances_in_pesos(group) == {
        "main": 151_600,
        "sf": 27_360,
        "reserve1": 0,
        "sf_reserve": 0,
    }
    assert not [e for e in events if isinstance(e, PotReseeded)]


def test_L2_S3_a_split_on_one_level_gives_the_odd_peso_to_the_seat_nearest_seat_1() -> None:
    """L2, S3: two straight flushes share 10 % of the sf level.

    Lock 2 x 1,000: sf 30,015 + 400 = 30,415; 10 % = 3,041.5, floored to 3,041 (S6: the half
    peso stays); 3,041 / 2 = 1,520 remainder 1: 1,521 to seat 2 (nearer seat 1), 1,520 to seat
    5; sf 30,415 - 3,041 = 27,374; main 200,000 + 1,600 = 201,600, untouched by the prizes.
    """
    group = open_group(leveled(), {"main": 200_000, "sf": 30_015})
    group.lock_round("T1", "R1", {5: 1000, 2: 1000})
    events = group.resolve_round("T1", "R1", {5: SF_8Q_D, 2: SF_5_9_C})
    assert awards(events) == [
        ("T1", 2, "STRAIGHT_FLUSH", 1_521, "sf"),
        ("T1", 5, "STRAIGHT_FLUSH", 1_520, "sf"),
    ]
    assert group.balances["sf"] == pesos(27_374)
    assert group.balances["main"] == pesos(201_600)


def test_L2_S7_a_shortfall_on_one_level_leaves_the_others_untouched() -> None:
    """L2, S7: four of a kind on the sf level pays 500 x 1,000 = 500,000.

    sf 30,000 + 200 = 30,200, then sf_reserve 100,000, then the house 369,800; main 500,800 and
    reserve1 400,000 pay nothing. L3: sf is then topped up to 20,000 by the house (its reserve is
    empty): the house advances 369,800 + 20,000 in all.
    """
    data = leveled({"FOUR_OF_A_KIND": {"level": "sf"}})
    group = open_group(
        data, {"main": 500_000, "sf": 30_000, "reserve1": 400_000, "sf_reserve": 100_000}
    )
    house = group.house_advance
    group.lock_round("T1", "R1", {1: 1000})
    events = group.resolve_round("T1", "R1", {1: QUADS_7})
    award = next(e for e in events if isinstance(e, PrizeAwarded))
    assert award.transfers == (
        ("pot:sf", "awards", pesos(30_200)),
        ("pot:sf_reserve", "awards", pesos(100_000)),
        ("house", "awards", pesos(369_800)),
    )
    assert balances_in_pesos(group) == {
        "main": 500_800,
        "sf": 20_000,
        "reserve1": 400_000,
        "sf_reserve": 0,
    }
    assert group.house_advance - house == pesos(369_800 + 20_000)


def test_L2_same_percent_on_one_level_is_refused_on_two_levels_listed_order() -> None:
    """L2: 100 % of sf and 100 % of main tie and keep the listed order; the same percentage
    twice on one level has no order and is refused."""
    cfg = load_config(leveled({"STRAIGHT_FLUSH": {"percent": "100", "level": "sf"}}))
    assert cfg.paytable.percent_order == ("STRAIGHT_FLUSH", "ROYAL_FLUSH")
    with pytest.raises(DomainError) as refused:
        load_config(leveled({"STRAIGHT_FLUSH": {"percent": "100", "cap_multiple": 5000}}))
    assert "two percentage prizes of one level" in refused.value.detail
    with pytest.raises(DomainError) as unknown:
        load_config(leveled({"FLUSH": {"level": "minor"}}))
    assert "FLUSH.level 'minor' is not a level of the group" in unknown.value.detail


# ----------------------------------------------------------------------- back to base (L3)


def test_L3_each_level_that_paid_is_topped_up_from_its_own_reserves() -> None:
    """L3: a straight flush of 100 % of the sf level empties it; it is topped up to its base
    20,000 from sf_reserve 5,000, then the house 15,000 (reserve1 belongs to the royal level and
    is not touched); the main level paid nothing and is not topped up, though it is below its
    base."""
    data = leveled({"STRAIGHT_FLUSH": {"percent": "100", "level": "sf"}})
    group = open_group(
        data, {"main": 50_000, "sf": 30_000, "reserve1": 70_000, "sf_reserve": 5_000}
    )
    group.lock_round("T1", "R1", {1: 1000})
    events = group.resolve_round("T1", "R1", {1: SF_5_9_C})
    assert awards(events) == [("T1", 1, "STRAIGHT_FLUSH", 30_200, "sf")]
    reseed = next(e for e in events if isinstance(e, PotReseeded))
    assert (reseed.level, reseed.base) == ("sf", pesos(20_000))
    assert reseed.transfers == (
        ("pot:sf_reserve", "pot:sf", pesos(5_000)),
        ("house", "pot:sf", pesos(15_000)),
    )
    assert balances_in_pesos(group) == {
        "main": 50_800,
        "sf": 20_000,
        "reserve1": 70_000,
        "sf_reserve": 0,
    }


def test_L3_C7_only_the_main_levels_reset_activates_a_pending_configuration() -> None:
    """L3, C7: emptying the sf level is not a reset of the main pot: version 2 waits; the royal
    flush's 100 % of main is, and version 2 takes effect then."""
    data = leveled({"STRAIGHT_FLUSH": {"percent": "100", "level": "sf"}})
    group = open_group(data, {"main": 150_000, "sf": 30_000})
    group.propose_config(load_config({**data, "version": 2}), "ops", "new meters")
    group.lock_round("T1", "R1", {1: 1000})
    group.resolve_round("T1", "R1", {1: SF_5_9_C})
    assert group.config.version == 1
    group.lock_round("T1", "R2", {1: 1000})
    group.resolve_round("T1", "R2", {1: ROYAL_S})
    assert group.config.version == 2


# ----------------------------------------------------------------- every level shows (L4)


def test_L4_every_transfer_and_award_names_its_level() -> None:
    """L4: the opening, the lock's transfers (commission: no level), each prize and each
    top-up name their level, one name per transfer."""
    data = leveled(commission_percent="10")
    cfg = load_config(data)
    group, events = PotGroup.open("G", cfg, {"main": pesos(100_000), "sf_reserve": pesos(10)})
    group.link_table("T1", "caribbean", **LIMITS)
    events += group.lock_round("T1", "R1", {1: 1000, 2: 1000})
    events += group.resolve_round("T1", "R1", {1: ROYAL_S, 2: SF_5_9_C})
    opened = next(e for e in events if isinstance(e, PotGroupOpened))
    assert opened.transfer_levels == ("royal", "sf")
    collected = next(e for e in events if isinstance(e, BetsCollected))
    assert [t[1] for t in collected.transfers] == ["commission", "pot:main", "pot:sf"]
    assert collected.transfer_levels == ("", "royal", "sf")
    paid = [e for e in events if isinstance(e, PrizeAwarded | PotReseeded)]
    assert paid
    for event in paid:
        assert event.level in ("royal", "sf")
        assert event.transfer_levels == (event.level,) * len(event.transfers)
        assert event.to_dict()["level"] == event.level


def test_L4_a_one_level_groups_events_are_written_as_before() -> None:
    """L4: with one level the new fields hold their defaults and are left out: each event's
    dictionary (the ledger's detail, the snapshot's last awards) has the fields it had before
    levels existed, and a mystery prize too."""
    cfg = load_config(
        {
            **CLASSIC,
            "pots": [*CLASSIC["pots"], {"name": "mystery", "percent": "0"}],
            "reserve_order": ["reserve1"],
            "mystery": {"pot": "mystery", "min": 1, "max": 1},
        }
    )
    group, events = PotGroup.open("G", cfg, {"main": pesos(1_000), "mystery": pesos(5)})
    group.link_table("T1", "caribbean", **LIMITS)
    events += group.lock_round("T1", "R1", {1: 1000})
    events += group.resolve_round("T1", "R1", {1: ROYAL_S})
    seen = {type(e).__name__ for e in events}
    assert {"PrizeAwarded", "PotReseeded", "MysteryAwarded", "RoundSettled"} <= seen
    for event in events:
        written = set(event.to_dict()) - {"type"}
        name = type(event).__name__
        if name in FIELDS_BEFORE_LEVELS:
            assert written == FIELDS_BEFORE_LEVELS[name], name
        assert not written & {"level", "transfer_levels", "envy_of"}, name
        assert set(event.detail()) == set(event.to_dict()) - {"transfers"}
    mystery = next(e for e in events if isinstance(e, MysteryAwarded))
    assert mystery.transfer_levels == ()


def test_L4_M3_each_levels_sign_is_its_pot_floored() -> None:
    """L4, M3: commission 12.5 %: a 1,000 bet leaves 875 for the pots, main 80 % = 700, sf 20 %
    = 175; with sf opened at 0.75 a peso it holds 175.75 and its sign shows 175, never more."""
    data = leveled(commission_percent="12.5")
    cfg = load_config(data)
    opening = {"main": pesos(100_000), "sf": parse_amount("0.75"), "sf_reserve": pesos(9)}
    group, _ = PotGroup.open("G", cfg, opening)
    group.link_table("T1", "caribbean", **LIMITS)
    collected = next(
        e for e in group.lock_round("T1", "R1", {1: 1000}) if isinstance(e, BetsCollected)
    )
    assert level_sign_values(group) == {"royal": 100_700, "sf": 175}
    assert level_increments(group.config, collected) == {"royal": pesos(700), "sf": pesos(175)}
    royal, sf = level_figures(group)
    assert (royal.name, royal.label, royal.pot, royal.sign_value) == (
        "royal",
        "Royal Flush",
        "main",
        group.sign_value,
    )
    assert (sf.balance, sf.sign_value, sf.base, sf.reserves) == (
        parse_amount("175.75"),
        175,
        pesos(20_000),
        pesos(9),
    )
    assert (sf.share_ppm, sf.ceiling) == (200_000, None)
    for level in level_figures(group):
        assert pesos(level.sign_value) <= level.balance < pesos(level.sign_value + 1)


def test_L4_D4_the_ledger_alone_rebuilds_a_group_with_levels() -> None:
    """L4, D4: the events of a group with levels and envy rebuild it exactly (from_ledger)."""
    data = leveled({"ROYAL_FLUSH": {"envy": {"amount": 500, "level": "sf", "linked": True}}})
    cfg = load_config(data)
    group, events = PotGroup.open("G", cfg, {"main": pesos(100_000), "sf": pesos(5_000)})
    for table in ("T1", "T2"):
        events += group.link_table(table, "caribbean", **LIMITS)
    events += group.lock_round("T2", "R1", {3: 1000})
    events += group.lock_round("T1", "R1", {1: 1000, 2: 1000})
    events += group.resolve_round("T1", "R1", {1: ROYAL_S, 2: NOTHING})
    events += group.resolve_round("T2", "R1", {3: SF_5_9_C})
    rebuilt, _ = PotGroup.from_ledger("G", [e.to_dict() for e in events])
    assert rebuilt.snapshot(public=True) == group.snapshot(public=True)


# ------------------------------------------------------------------------------- envy (V)


def envy_config(linked: bool = False, amount: int = 1_000, level: str = "sf") -> Any:
    envy = {"amount": amount, "level": level, "linked": linked}
    return leveled({"STRAIGHT_FLUSH": {"level": "sf"}, "ROYAL_FLUSH": {"envy": envy}})


def test_V1_every_other_eligible_seat_is_paid_the_envy_bonus_not_a_forfeited_one() -> None:
    """V1: seat 4's royal flush pays 1,000 from the sf level to seats 1, 2 and 6; seat 5
    folded (E3) and gets nothing; seat 6 had no result reported, but its bet stands.

    sf 30,000 + 5 x 200 = 31,000 - 3,000 = 28,000; main 100,000 + 5 x 800 = 104,000 is the
    royal's 100 %; then main is topped up to its base 100,000 by the house."""
    group = open_group(envy_config(), {"main": 100_000, "sf": 30_000})
    group.lock_round("T1", "R1", dict.fromkeys((1, 2, 4, 5, 6), 1000))
    group.forfeit("T1", "R1", 5, "FOLD")
    events = group.resolve_round("T1", "R1", {1: NOTHING, 2: NOTHING_2, 4: ROYAL_S, 5: NOTHING_3})
    assert awards(events) == [
        ("T1", 1, "ENVY_ROYAL_FLUSH", 1_000, "sf"),
        ("T1", 2, "ENVY_ROYAL_FLUSH", 1_000, "sf"),
        ("T1", 6, "ENVY_ROYAL_FLUSH", 1_000, "sf"),
        ("T1", 4, "ROYAL_FLUSH", 104_000, "royal"),
    ]
    envy = [e for e in events if isinstance(e, PrizeAwarded) and e.envy_of is not None]
    assert {e.envy_of for e in envy} == {("T1", "R1", 4)}
    assert envy[0].cards == tuple(ROYAL_S)
    assert group.balances["sf"] == pesos(28_000)
    settled = next(e for e in events if isinstance(e, RoundSettled))
    assert len(settled.award_ids) == len(set(settled.award_ids)) == 4


def test_V1_two_winners_each_earn_the_bonus_for_the_other() -> None:
    """V1: two straight flushes with a 300 envy bonus: seat 3 (no prize) is paid for each hit,
    each winner for the other's: 1 <- 3's hit, 3 <- 1's and 5's, 5 <- 1's; four bonuses."""
    data = leveled({"STRAIGHT_FLUSH": {"level": "sf", "envy": {"amount": 300}}})
    group = open_group(data, {"main": 100_000, "sf": 30_000})
    group.lock_round("T1", "R1", {1: 1000, 3: 1000, 5: 1000})
    events = group.resolve_round("T1", "R1", {1: SF_5_9_C, 3: NOTHING_2, 5: SF_8Q_D})
    envy = [
        (e.seat, e.envy_of)
        for e in events
        if isinstance(e, PrizeAwarded) and e.prize == "ENVY_STRAIGHT_FLUSH"
    ]
    assert envy == [
        (3, ("T1", "R1", 1)),
        (5, ("T1", "R1", 1)),
        (1, ("T1", "R1", 5)),
        (3, ("T1", "R1", 5)),
    ]


@pytest.mark.parametrize(
    ("envy", "message"),
    [
        ({"amount": 0}, "ROYAL_FLUSH.envy.amount must be whole pesos"),
        ({"amount": 1.5}, "ROYAL_FLUSH.envy.amount must be whole pesos"),
        ({"amount": True}, "ROYAL_FLUSH.envy.amount must be whole pesos"),
        ({"amount": 10, "linked": "yes"}, "ROYAL_FLUSH.envy.linked must be true or false"),
        ({"amount": 10, "level": "minor"}, "ROYAL_FLUSH.envy.level 'minor' is not a level"),
        ({"amount": 10, "seats": 3}, "ROYAL_FLUSH.envy has unknown fields ['seats']"),
        ([10], "ROYAL_FLUSH.envy must be an object"),
    ],
)
def test_V1_a_bad_envy_setting_is_refused_naming_the_field(envy: Any, message: str) -> None:
    with pytest.raises(DomainError) as refused:
        load_config(leveled({"ROYAL_FLUSH": {"envy": envy}}))
    assert refused.value.reason is Reason.INVALID_CONFIG
    assert message in refused.value.detail


def test_V2_linked_envy_pays_the_locked_unforfeited_seats_of_every_other_table() -> None:
    """V2: T1's royal pays the linked bonus at T1 (seat 2), at T2 in its locked round R7
    (seats 1 and 4; seat 3 folded) and at T3 nothing: its round is not locked (R3 was settled
    before). Without ``linked``, only T1's seat 2 is paid."""
    for linked, expected in (
        (True, [("T1", 2), ("T2", 1), ("T2", 4)]),
        (False, [("T1", 2)]),
    ):
        group = open_group(envy_config(linked), {"main": 100_000, "sf": 30_000}, ("T1", "T2", "T3"))
        group.lock_round("T3", "R3", {1: 1000})
        group.resolve_round("T3", "R3", {1: NOTHING_3})
        group.lock_round("T2", "R7", {1: 1000, 3: 1000, 4: 2000})
        group.forfeit("T2", "R7", 3, "FOLD")
        group.lock_round("T1", "R1", {1: 1000, 2: 1000})
        events = group.resolve_round("T1", "R1", {1: ROYAL_H, 2: NOTHING})
        envy = [e for e in events if isinstance(e, PrizeAwarded) and e.envy_of is not None]
        assert [(e.table_id, e.seat) for e in envy] == expected
        for award in envy:
            assert award.round_id == {"T1": "R1", "T2": "R7"}[award.table_id]
            assert award.award_id.startswith(f"G/{award.table_id}/{award.round_id}/")
            assert award.bet_pesos == group_bet(award)
        assert "T2" in group.locked  # the other table's round is still to be resolved


def group_bet(award: PrizeAwarded) -> int:
    """The bet each seat of the V2 test placed."""
    return 2000 if (award.table_id, award.seat) == ("T2", 4) else 1000


def test_V3_envy_is_paid_after_the_multiples_and_before_the_percentages() -> None:
    """V3: the bonus from the royal level is paid after seat 3's full house and before the royal
    flush, which takes what is left.

    Lock 3 x 1,000: main 100,000 + 2,400 = 102,400. Full house 100 x 1,000 = 100,000: 2,400.
    Envy 1,000 to seats 2 and 3 (seat 3 won a full house; its bet still makes it eligible): 400.
    The royal's 100 % is then 400."""
    group = open_group(envy_config(level="royal"), {"main": 100_000, "sf": 30_000})
    group.lock_round("T1", "R1", {1: 1000, 2: 1000, 3: 1000})
    events = group.resolve_round("T1", "R1", {1: ROYAL_S, 2: NOTHING, 3: FULL_3_4})
    assert [(seat, prize, amount) for _, seat, prize, amount, _ in awards(events)] == [
        (3, "FULL_HOUSE", 100_000),
        (2, "ENVY_ROYAL_FLUSH", 1_000),
        (3, "ENVY_ROYAL_FLUSH", 1_000),
        (1, "ROYAL_FLUSH", 400),
    ]


def test_V3_S7_an_envy_shortfall_comes_from_its_levels_reserves_then_the_house() -> None:
    """V3, S7: a 20,000 bonus from the sf level, which holds 5,000 + 200 + 200 = 5,400 and whose
    reserve holds 10,000: seat 2 is paid 5,400 from sf, 10,000 from sf_reserve, 4,600 from the
    house; main (the royal level) and reserve1 pay nothing for it. Then L3 tops sf up to
    20,000 from the house."""
    group = open_group(
        envy_config(amount=20_000),
        {"main": 100_000, "sf": 5_000, "reserve1": 50_000, "sf_reserve": 10_000},
    )
    house = group.house_advance
    group.lock_round("T1", "R1", {1: 1000, 2: 1000})
    events = group.resolve_round("T1", "R1", {1: ROYAL_S, 2: NOTHING})
    envy = next(e for e in events if isinstance(e, PrizeAwarded) and e.envy_of is not None)
    assert envy.transfers == (
        ("pot:sf", "awards", pesos(5_400)),
        ("pot:sf_reserve", "awards", pesos(10_000)),
        ("house", "awards", pesos(4_600)),
    )
    royal = next(e for e in events if isinstance(e, PrizeAwarded) and e.prize == "ROYAL_FLUSH")
    assert royal.amount_pesos == 101_600
    # main 0 -> its base 100,000 from reserve1 50,000 and the house 50,000; sf -> 20,000 house.
    assert group.house_advance - house == pesos(4_600 + 50_000 + 20_000)
    assert level_figures(group)[1].balance == pesos(20_000)


def test_V1_envy_with_a_one_level_group_is_written_without_levels() -> None:
    """V1, L4: an envy bonus needs no levels: on a one-level group it is paid from the main pot
    and its events carry no level (only the hit it is paid for)."""
    data = {
        **CLASSIC,
        "paytable": {
            "name": "envy",
            "evaluator": "poker",
            "prizes": prizes(ROYAL_FLUSH={"envy": {"amount": 700}}),
        },
    }
    group = open_group(data, {"main": 10_000})
    group.lock_round("T1", "R1", {1: 1000, 2: 1000})
    events = group.resolve_round("T1", "R1", {1: ROYAL_S})
    envy = next(e for e in events if isinstance(e, PrizeAwarded) and e.envy_of is not None)
    assert (envy.seat, envy.amount_pesos, envy.level) == (2, 700, "")
    assert envy.transfers == (("pot:main", "awards", pesos(700)),)
    assert "level" not in envy.to_dict()
    assert envy.to_dict()["envy_of"] == ("T1", "R1", 1)


def test_L1_a_level_config_is_accepted_by_propose_config_and_refuses_removing_a_pot() -> None:
    """L1, C7: a version that adds a level on a new pot is accepted; one without a pot refused."""
    group = open_group(dict(CLASSIC), {"main": 100_000})
    grown = {
        **CLASSIC,
        "version": 2,
        "pots": [
            {"name": "main", "percent": "70"},
            {"name": "reserve1", "percent": "20"},
            {"name": "sf", "percent": "10"},
        ],
        "levels": [{"name": "main"}, {"name": "sf", "pot": "sf", "base": 1_000}],
        "paytable": {  # the new meter pays a prize: a level no prize pays is refused (L1, L2)
            "name": "levels",
            "evaluator": "poker",
            "prizes": prizes(STRAIGHT_FLUSH={"level": "sf"}),
        },
    }
    group.propose_config(load_config(grown), "ops", "a second meter")
    shrunk = {**CLASSIC, "version": 3, "pots": [{"name": "main", "percent": "100"}]}
    with pytest.raises(DomainError) as refused:
        group.propose_config(load_config(shrunk), "ops", "drop the reserve")
    assert "cannot remove a pot" in refused.value.detail
    waiting = group.pending[-1][0]
    assert [(lv.name, lv.pot, lv.reserve_order) for lv in waiting.levels] == [
        ("main", "main", ("reserve1",)),
        ("sf", "sf", ()),
    ]
