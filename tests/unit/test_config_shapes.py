"""Configurations that send money nowhere, and the other wrong level shapes, are refused.

docs/rules.md C3, C5, L1-L3, V1, X2: every pot of a group must be one that a prize or a reseed
takes money from, or its share (and any opening balance) is paid to nobody; a level needs a pot
of its own, a reserve order and an overflow chain must not come back on themselves, and an envy
bonus names a level of the group. Each wrong shape below is refused with one line naming what is
wrong. The property test judges ``load_config`` with the engine itself: for every pot, it plays
rounds with money in that pot only and looks for a prize or a reseed that takes from it.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from jackpot.domain.config import PotGroupConfig, load_config
from jackpot.domain.engine import PotGroup
from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.events import Event, MysteryAwarded, PotReseeded, PrizeAwarded
from jackpot.domain.money import format_percent, pesos

pytestmark = pytest.mark.unit

LIMITS = {"min_bet": 1000, "max_bet": 1000, "credit_value": 1000}
HANDS = {
    "FLUSH": ["2H", "5H", "8H", "JH", "KH"],
    "FULL_HOUSE": ["3S", "3H", "3D", "4C", "4S"],
    "FOUR_OF_A_KIND": ["7S", "7H", "7D", "7C", "2D"],
    "STRAIGHT_FLUSH": ["5C", "6C", "7C", "8C", "9C"],
    "ROYAL_FLUSH": ["AH", "KH", "QH", "JH", "TH"],
}
NOTHING = ["2C", "6D", "9S", "QD", "KC"]  # shares no card with any hand above


def paytable(**changes: dict[str, Any]) -> dict[str, Any]:
    """The SCJ poker paytable (rule P), with per-hand changes (a level, an envy bonus)."""
    prizes: list[dict[str, Any]] = [
        {"hand": "FLUSH", "multiple": 50},
        {"hand": "FULL_HOUSE", "multiple": 100},
        {"hand": "FOUR_OF_A_KIND", "multiple": 500},
        {"hand": "STRAIGHT_FLUSH", "percent": "10", "cap_multiple": 5000},
        {"hand": "ROYAL_FLUSH", "percent": "100"},
    ]
    prizes = [{**entry, **changes.get(entry["hand"], {})} for entry in prizes]
    return {"name": "shapes", "evaluator": "poker", "prizes": prizes}


def two_levels(**overrides: Any) -> dict[str, Any]:
    """A sound configuration: the royal level (main, reserve1) and the sf level (sf, sf_reserve)
    paying the straight flush, with a mystery pot (X2)."""
    data: dict[str, Any] = {
        "commission_percent": "10",
        "base": 100_000,
        "pots": [
            {"name": "main", "percent": "60"},
            {"name": "sf", "percent": "20"},
            {"name": "reserve1", "percent": "10"},
            {"name": "sf_reserve", "percent": "5"},
            {"name": "mystery", "percent": "5"},
        ],
        "levels": [
            {"name": "royal", "reserve_order": ["reserve1"]},
            {"name": "sf", "pot": "sf", "base": 20_000, "reserve_order": ["sf_reserve"]},
        ],
        "paytable": paytable(STRAIGHT_FLUSH={"level": "sf"}),
        "mystery": {"pot": "mystery", "min": 500, "max": 1000},
        **LIMITS,
    }
    data.update(overrides)
    return data


def with_pot(data: dict[str, Any], pot: dict[str, Any], take_from: str = "main") -> dict[str, Any]:
    """``data`` with one more pot, its percentage taken from ``take_from``'s."""
    pots = [dict(p) for p in data["pots"]]
    for entry in pots:
        if entry["name"] == take_from:
            entry["percent"] = str(int(entry["percent"]) - int(pot["percent"]))
    return {**data, "pots": [*pots, pot]}


ROYAL_SF = [{"name": "royal", "reserve_order": ["reserve1"]}]
SF_LEVEL = {"name": "sf", "pot": "sf", "base": 20_000, "reserve_order": ["sf_reserve"]}

# (what is wrong, the configuration, words the one-line reason must hold)
WRONG_SHAPES: list[tuple[str, dict[str, Any], str]] = [
    (
        "C3: a pot of no level and no reserve, given a share",
        with_pot(two_levels(), {"name": "extra", "percent": "5"}),
        "pot 'extra' is no level's pot, no level's reserve and not the mystery prize's pot",
    ),
    (
        "C3: the same without levels, left out of the stated reserve_order",
        {
            "base": 1000,
            "pots": [
                {"name": "main", "percent": "90"},
                {"name": "reserve1", "percent": "5"},
                {"name": "extra", "percent": "5"},
            ],
            "reserve_order": ["reserve1"],
            **LIMITS,
        },
        "pot 'extra' is no level's pot",
    ),
    (
        "C3, C4: such a pot with no share (an opening balance could still be put in it)",
        with_pot(two_levels(), {"name": "extra", "percent": "0"}),
        "pot 'extra' is no level's pot",
    ),
    (
        "C5: such a pot fed only by another pot's overflow",
        with_pot(
            two_levels(
                pots=[
                    {"name": "main", "percent": "60"},
                    {"name": "sf", "percent": "20", "ceiling": 50_000, "overflow_to": "extra"},
                    {"name": "reserve1", "percent": "10"},
                    {"name": "sf_reserve", "percent": "5"},
                    {"name": "mystery", "percent": "5"},
                ]
            ),
            {"name": "extra", "percent": "0"},
        ),
        "pot 'extra' is no level's pot",
    ),
    (
        "C5: such a pot that overflows to main (what stays under its ceiling is never paid)",
        with_pot(
            two_levels(), {"name": "extra", "percent": "5", "ceiling": 1, "overflow_to": "main"}
        ),
        "pot 'extra' is no level's pot",
    ),
    (
        "L1, L2: a level that no prize pays",
        two_levels(paytable=paytable()),
        "pot 'sf' is the pot of level 'sf', which no prize or envy bonus pays",
    ),
    (
        "L1, L2: the reserve of a level that no prize pays",
        two_levels(paytable=paytable()),
        "(rules L1, L2)",
    ),
    (
        "L3, S7, S8: the reserve of a level that never draws on it (base 0, percentages only)",
        two_levels(
            levels=[*ROYAL_SF, {**SF_LEVEL, "base": 0}],
            paytable=paytable(STRAIGHT_FLUSH={"level": "sf"}),
        ),
        "pot 'sf_reserve' is a reserve of level 'sf', which never draws on its reserves",
    ),
    (
        "L1: a level without a pot",
        two_levels(levels=[*ROYAL_SF, {"name": "sf", "reserve_order": ["sf_reserve"]}]),
        "levels[1].pot must be a non-empty name",
    ),
    (
        "L1: a level on a pot the group does not have",
        two_levels(levels=[*ROYAL_SF, {**SF_LEVEL, "pot": "nowhere"}]),
        "levels[1].pot 'nowhere' is not a pot of the group",
    ),
    (
        "L1: two levels on one pot",
        two_levels(levels=[*ROYAL_SF, SF_LEVEL, {"name": "sf2", "pot": "sf"}]),
        "each level needs a pot of its own",
    ),
    (
        "L1: a level on the mystery prize's pot",
        two_levels(levels=[*ROYAL_SF, {**SF_LEVEL, "pot": "mystery"}]),
        "the mystery prize's pot cannot be a level",
    ),
    (
        "C5: an overflow chain that loops",
        two_levels(
            pots=[
                {"name": "main", "percent": "60"},
                {"name": "sf", "percent": "20", "ceiling": 50_000, "overflow_to": "sf_reserve"},
                {"name": "reserve1", "percent": "10"},
                {"name": "sf_reserve", "percent": "5", "ceiling": 9_000, "overflow_to": "sf"},
                {"name": "mystery", "percent": "5"},
            ]
        ),
        "overflow chain loops back to sf (rule C5)",
    ),
    (
        "C5: an overflow to a pot the group does not have",
        two_levels(
            pots=[
                {"name": "main", "percent": "60"},
                {"name": "sf", "percent": "20", "ceiling": 50_000, "overflow_to": "nowhere"},
                {"name": "reserve1", "percent": "10"},
                {"name": "sf_reserve", "percent": "5"},
                {"name": "mystery", "percent": "5"},
            ]
        ),
        "pot sf overflows to unknown pot nowhere (rule C5)",
    ),
    (
        "L1, S7: a level's reserve order that comes back to a reserve",
        two_levels(levels=[*ROYAL_SF, {**SF_LEVEL, "reserve_order": ["sf_reserve", "sf_reserve"]}]),
        "levels[1].reserve_order lists a reserve twice",
    ),
    (
        "L1: a level's reserve that is its own pot",
        two_levels(levels=[*ROYAL_SF, {**SF_LEVEL, "reserve_order": ["sf"]}]),
        "names 'sf', the pot of a level or of the mystery",
    ),
    (
        "L3: one reserve for two levels",
        two_levels(levels=[*ROYAL_SF, {**SF_LEVEL, "reserve_order": ["reserve1"]}]),
        "'reserve1' is the reserve of two levels (rule L3)",
    ),
    (
        "L1, X2: the mystery prize's pot as the main pot's reserve",
        {
            "base": 1000,
            "pots": [{"name": "main", "percent": "90"}, {"name": "mystery", "percent": "10"}],
            "reserve_order": ["mystery"],
            "mystery": {"pot": "mystery", "min": 500, "max": 1000},
            **LIMITS,
        },
        "reserve_order names 'mystery', the mystery prize's pot",
    ),
    (
        "L2: a prize paid by a level that does not exist",
        two_levels(paytable=paytable(STRAIGHT_FLUSH={"level": "minor"})),
        "STRAIGHT_FLUSH.level 'minor' is not a level of the group",
    ),
    (
        "V1: an envy bonus on a level that does not exist",
        two_levels(
            paytable=paytable(
                STRAIGHT_FLUSH={"level": "sf"}, ROYAL_FLUSH={"envy": {"amount": 5, "level": "mi"}}
            )
        ),
        "ROYAL_FLUSH.envy.level 'mi' is not a level of the group",
    ),
]


def test_C3_L1_the_sound_configuration_of_these_tests_is_accepted() -> None:
    """Every wrong shape below is this configuration with one thing changed."""
    config = load_config(two_levels())
    assert [lv.pot for lv in config.levels] == ["main", "sf"]
    assert pots_the_engine_reads(config) == {p.name for p in config.pots}


@pytest.mark.parametrize(
    ("data", "reason"),
    [pytest.param(data, reason, id=what) for what, data, reason in WRONG_SHAPES],
)
def test_C3_C5_L1_V1_each_wrong_shape_is_refused_in_one_line_naming_it(
    data: dict[str, Any], reason: str
) -> None:
    with pytest.raises(DomainError) as refused:
        load_config(data)
    assert refused.value.reason is Reason.INVALID_CONFIG
    assert reason in refused.value.detail
    assert "\n" not in refused.value.detail


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(two_levels(paytable=paytable()), id="a level no prize pays"),
        pytest.param(with_pot(two_levels(), {"name": "extra", "percent": "5"}), id="orphan pot"),
    ],
)
def test_C3_C7_a_recorded_configuration_replays_though_refused_today(data: dict[str, Any]) -> None:
    """C7, D4: a configuration already on a ledger or in a snapshot was accepted when written;
    it is read back (``recorded``) and the group restores, so no history stops replaying."""
    with pytest.raises(DomainError):
        load_config(data)
    config = load_config(data, recorded=True)
    group, _ = PotGroup.open("G", config)
    group.link_table("T1", "caribbean", **LIMITS)
    group.lock_round("T1", "R1", {1: 1000})
    assert PotGroup.from_snapshot(group.snapshot()).snapshot() == group.snapshot()


def test_C3_C7_propose_config_never_sees_a_configuration_that_sends_money_nowhere() -> None:
    """C7: a version is loaded before it is proposed (the pot's command, the operators' API):
    the version that adds a pot of no level is refused there; made a reserve, it is queued."""
    group, _ = PotGroup.open("G", load_config(two_levels()))
    orphan = with_pot(two_levels(version=2), {"name": "extra", "percent": "5"})
    with pytest.raises(DomainError, match="pot 'extra' is no level's pot"):
        group.propose_config(load_config(orphan), "ops", "a new pot")
    levels = [ROYAL_SF[0], {**SF_LEVEL, "reserve_order": ["sf_reserve", "extra"]}]
    group.propose_config(load_config({**orphan, "levels": levels}), "ops", "a new reserve")
    assert group.pending[-1][0].level("sf").reserve_order == ("sf_reserve", "extra")


# ---------------------------------------------------------------- the engine as the judge


BIG = pesos(10_000_000)


def pots_the_engine_reads(config: PotGroupConfig) -> set[str]:
    """The pots some prize, bonus, mystery prize or reseed takes money from, found by playing.

    For each pot and each hand of the paytable: a new group holding money in that pot only,
    one round of two seats (the hand, and nothing), and the transfers of its events. A reserve
    is reached as S7 and S8 say: its level's pot holds only the round's contribution, less than
    any fixed prize or bonus here, and below any base here.
    """
    read: set[str] = set()
    for pot in config.pots:
        for hand in config.paytable.prizes:
            group, _ = PotGroup.open("G", config, {pot.name: BIG})
            group.link_table("T1", "caribbean", **LIMITS)
            events: list[Event] = list(group.lock_round("T1", "R1", {1: 1000, 2: 1000}))
            events += group.resolve_round("T1", "R1", {1: HANDS[hand], 2: NOTHING})
            paying = (PrizeAwarded, PotReseeded, MysteryAwarded)
            sources = {t[0] for e in events if isinstance(e, paying) for t in e.transfers}
            if f"pot:{pot.name}" in sources:
                read.add(pot.name)
                break
    return read


def share_destinations(config: PotGroupConfig) -> set[str]:
    """The pots a share can end in (C3): those with one, and down their overflow chains (C5)."""
    by_name = {p.name: p for p in config.pots}
    reached = {p.name for p in config.pots if p.share_ppm}
    for name in list(reached):
        while by_name[name].overflow_to is not None:
            name = by_name[name].overflow_to  # type: ignore[assignment]
            reached.add(name)
    return reached


@st.composite
def level_configurations(draw: st.DrawFn) -> dict[str, Any]:
    """Configurations of sound shape whose pots may or may not all be read: pots, shares,
    ceilings (C5, never looping), an optional mystery pot (X2), levels or a reserve order,
    reserves given to a level or to none, bases, and each hand paid by a drawn level."""
    others = [f"p{i}" for i in range(draw(st.integers(1, 4)))]
    mystery = others[-1] if draw(st.booleans()) else None
    names = ["main", *others]
    cuts = sorted(draw(st.lists(st.integers(0, 100), min_size=len(others), max_size=len(others))))
    shares = [b - a for a, b in zip([0, *cuts], [*cuts, 100], strict=True)]
    pots: list[dict[str, Any]] = []
    for index, (name, share) in enumerate(zip(names, shares, strict=True)):
        pot: dict[str, Any] = {"name": name, "percent": format_percent(share * 10_000)}
        if index and draw(st.integers(0, 3)) == 0:  # to main or a later pot: no loop (C5)
            pot["ceiling"] = draw(st.sampled_from([0, 5_000]))
            pot["overflow_to"] = draw(st.sampled_from(["main", *names[index + 1 :]]))
        pots.append(pot)
    free = [n for n in others if n != mystery]
    level_pots = draw(st.lists(st.sampled_from(free), unique=True)) if free else []
    levels = ["main", *level_pots]
    # a reserve's owner: a level's index, or len(levels): no level (money nowhere, C3)
    owner = {n: draw(st.integers(0, len(levels))) for n in free if n not in level_pots}
    reserves = [[n for n, o in owner.items() if o == i] for i in range(len(levels))]
    bases = [draw(st.sampled_from([0, 0, 20_000, 200_000])) for _ in levels]
    data: dict[str, Any] = {
        "commission_percent": draw(st.sampled_from(["0", "10", "12.5"])),
        "pots": pots,
        "base": bases[0],
        "reserve_order": reserves[0],
        **LIMITS,
    }
    if level_pots:
        data["levels"] = [
            {"name": "main", "reserve_order": reserves[0]},
            *(
                {"name": f"l_{pot}", "pot": pot, "base": base, "reserve_order": order}
                for pot, base, order in zip(level_pots, bases[1:], reserves[1:], strict=True)
            ),
        ]
    level_names = ["main", *(f"l_{pot}" for pot in level_pots)]
    # the fixed prizes from some levels only: the others pay percentages or nothing (L3)
    fixed_levels = draw(st.lists(st.sampled_from(level_names), min_size=1, unique=True))
    changes: dict[str, dict[str, Any]] = {}
    for hand in HANDS:
        fixed = hand in ("FLUSH", "FULL_HOUSE", "FOUR_OF_A_KIND")
        changes[hand] = {"level": draw(st.sampled_from(fixed_levels if fixed else level_names))}
        if draw(st.integers(0, 5)) == 0:
            envy_level = draw(st.sampled_from(level_names))
            changes[hand]["envy"] = {"amount": 50_000, "level": envy_level}
    data["paytable"] = paytable(**changes)
    if mystery is not None:
        data["mystery"] = {"pot": mystery, "min": 500, "max": 1000}
    return data


ACCEPTED_EXAMPLE = two_levels()
REFUSED_EXAMPLE = with_pot(two_levels(), {"name": "extra", "percent": "5"})
NEVER_DRAWS_EXAMPLE = two_levels(levels=[*ROYAL_SF, {**SF_LEVEL, "base": 0}])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=level_configurations())
@example(data=ACCEPTED_EXAMPLE)
@example(data=REFUSED_EXAMPLE)
@example(data=NEVER_DRAWS_EXAMPLE)
def test_C3_C5_L1_L2_V1_every_peso_of_an_accepted_configuration_reaches_a_prize(
    data: dict[str, Any],
) -> None:
    """C3, C5, L1-L3, V1, X2: ``load_config`` accepts a configuration exactly when the engine
    takes money from every one of its pots in a prize or a reseed; so every peso of every
    share, directly or down an overflow chain, lands where a prize or a reseed reads it. A
    refusal names a pot the engine never reads."""
    refusal = refused_reason(data)
    if refusal is not None:
        event("refused")
        named = re.match(r"pot '([^']+)' is ", refusal)
        assert named is not None, refusal
        assert named[1] not in pots_the_engine_reads(load_config(data, recorded=True))
        return
    event("accepted")
    config = load_config(data)
    read = pots_the_engine_reads(config)
    assert read == {p.name for p in config.pots}
    assert share_destinations(config) <= read


def refused_reason(data: dict[str, Any]) -> str | None:
    """Why ``load_config`` refuses ``data``, or None when it accepts it."""
    try:
        load_config(data)
    except DomainError as refused:
        return refused.detail
    return None
