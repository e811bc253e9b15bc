"""Where the pot service shows levels and envy (rules L4, M3, D2, V1, V2): its pot updates, its
awards, its meters, its state and its metrics; a one-level group's are exactly as before.

The five-level group is `jackpot demo`'s (``LEVELS_POKER_CONFIG``), so the configuration the demo
creates is the one judged here.
"""

from __future__ import annotations

from collections.abc import Mapping

from loadtest.rounds import CONFIG
from prometheus_client import CollectorRegistry

from jackpot.domain.level_figures import level_sign_values
from jackpot.domain.money import MINOR_PER_PESO
from jackpot.platform import codec
from jackpot.pot import commands, records
from jackpot.pot.metrics import PotMetrics
from jackpot.tools.demo_tables import LEVELS_POKER_CONFIG
from jackpot.v1 import pot_pb2
from tests.unit.test_pot_book import (
    GROUP,
    NOTHING,
    FakeClock,
    Feeder,
    link,
    lock,
    make_book,
    resolve,
    state_of,
)

LEVELS = ("royal", "sf", "quads", "full", "flush")
LABELS = ("Escalera real", "Escalera de color", "Póker", "Full", "Color")
LEVEL_POTS = {"royal": "main", "sf": "sf", "quads": "quads", "full": "full", "flush": "flush"}
ROYAL = ["AS", "KS", "QS", "JS", "TS"]


def levels_feed(clock: FakeClock | None = None) -> Feeder:
    feeder = Feeder(make_book(clock))
    feeder(commands.create_group(GROUP, LEVELS_POKER_CONFIG), link("T1"), link("T2"))
    return feeder


def balances(update: pot_pb2.PotUpdate) -> dict[str, int]:
    return {pot.name: codec.minor_units(pot.balance) for pot in update.pots}


def judge_levels(update: pot_pb2.PotUpdate, previous: Mapping[str, int]) -> list[str]:
    """What is wrong with an update's levels (L4, M3, D2): each is its pot floored, never more
    than the pot holds, and its increment is its rise since ``previous`` (name -> sign value)."""
    problems = []
    held = balances(update)
    for level in update.levels:
        pot = held[LEVEL_POTS[level.name]]
        if level.sign_value != pot // MINOR_PER_PESO or level.sign_value * MINOR_PER_PESO > pot:
            problems.append(f"{level.name}: sign {level.sign_value} for a pot of {pot} (M3)")
        rise = level.sign_value - previous.get(level.name, level.sign_value)
        if level.increment != rise:
            problems.append(f"{level.name}: increment {level.increment}, rose {rise} (D2)")
    return problems


def test_L4_M3_D2_a_pot_update_carries_every_level_floored_with_its_rise() -> None:
    feed = levels_feed()
    before = level_sign_values(feed.book.groups[GROUP].group)
    (update,) = feed(lock(1, "R1", {1: 1000, 2: 3000})).pot_updates
    assert [(v.name, v.label) for v in update.levels] == list(zip(LEVELS, LABELS, strict=True))
    assert [v.base for v in update.levels] == [500_000, 100_000, 25_000, 10_000, 5_000]
    assert judge_levels(update, before) == []
    # 4000 in bets, 10 % commission, then 45/15/10/7/3 % of the 3600 left to the five levels
    assert [v.increment for v in update.levels] == [1620, 540, 360, 252, 108]
    main = update.levels[0]  # the main level is the group's sign (M3, D2)
    assert (main.sign_value, main.increment) == (update.sign_value, update.increment)


def test_L4_M3_D2_the_level_judge_refuses_a_sign_above_its_pot_and_a_wrong_rise() -> None:
    feed = levels_feed()
    before = level_sign_values(feed.book.groups[GROUP].group)
    (update,) = feed(lock(1, "R1", {1: 1000, 2: 3000})).pot_updates
    broken = pot_pb2.PotUpdate()
    broken.CopyFrom(update)
    broken.levels[2].sign_value += 1  # a peso the quads pot does not hold
    broken.levels[4].increment += 1
    quads = balances(update)[LEVEL_POTS["quads"]]  # its base (L1) and the lock's 360
    assert quads == (25_000 + 360) * MINOR_PER_PESO
    assert judge_levels(broken, before) == [
        f"quads: sign 25361 for a pot of {quads} (M3)",
        "quads: increment 360, rose 361 (D2)",
        "flush: increment 109, rose 108 (D2)",
    ]


def test_L4_D2_heartbeats_and_a_restore_repeat_each_levels_last_increment() -> None:
    clock = FakeClock()
    feed = levels_feed(clock)
    (changed,) = feed(lock(1, "R1", {1: 5000})).pot_updates
    clock.monotonic_s += 1
    (beat,) = feed.book.heartbeat([GROUP]).pot_updates
    assert beat.heartbeat
    assert list(beat.levels) == list(changed.levels)
    restored = make_book(clock)
    restored.restore([feed.book.snapshot(GROUP)], feed.offset)
    (after_restore,) = restored.heartbeat([GROUP]).pot_updates
    assert list(after_restore.levels) == list(changed.levels)
    assert dict(state_of(restored).last_level_increments) == {
        level.name: level.increment for level in changed.levels
    }


def test_V1_V2_L4_envy_awards_name_their_level_and_the_hit_they_are_paid_for() -> None:
    feed = levels_feed()
    feed(lock(1, "R1", {1: 1000, 2: 1000}), lock(1, "R9", {3: 2000}, table_id="T2"))
    out = feed(resolve(2, "R1", {1: ROYAL, 2: NOTHING}))
    shown = [(a.table_id, a.seat, a.prize, a.level) for a in out.awards]
    assert shown == [  # V3: the envy bonuses first (fixed), then the royal (a percentage)
        ("T1", 2, "ENVY_ROYAL_FLUSH", "royal"),
        ("T2", 3, "ENVY_ROYAL_FLUSH", "royal"),  # linked (V2): the locked round of T2
        ("T1", 1, "ROYAL_FLUSH", "royal"),
    ]
    hit = pot_pb2.EnvyHit(table_id="T1", round_id="R1", seat=1)
    assert [a.envy_of for a in out.awards[:2]] == [hit, hit]
    assert out.awards[1].round_id == "R9"
    assert out.awards[1].amount == 5000
    assert not out.awards[2].HasField("envy_of")


def test_L4_a_one_level_groups_update_award_and_state_are_as_before() -> None:
    feed = Feeder(make_book())
    feed(commands.create_group(GROUP, CONFIG), link())
    (update,) = feed(lock(1, "R1", {1: 1000, 2: 2000})).pot_updates
    assert not update.levels
    out = feed(resolve(2, "R1", {1: NOTHING, 2: ["2H", "5H", "9H", "JH", "KH"]}))
    (award,) = out.awards
    assert award.level == ""
    assert not award.HasField("envy_of")
    assert {field.name for field, _ in award.ListFields()}.isdisjoint({"level", "envy_of"})
    state = state_of(feed.book)
    assert not state.last_level_sign_values
    assert not state.last_level_increments
    group = feed.book.groups[GROUP].group
    assert not records.meters_message(group).levels
    assert records.pot_levels(group) == {}


def test_L4_V1_the_meters_show_each_level_with_the_prizes_it_pays() -> None:
    feed = levels_feed()
    feed(lock(1, "R1", {1: 1000, 2: 1000}))
    feed(resolve(2, "R1", {1: ROYAL, 2: NOTHING}))
    group = feed.book.groups[GROUP].group
    meters = records.meters_message(group).levels
    assert [m.name for m in meters] == list(LEVELS)
    royal = meters[0]
    assert (royal.pot, royal.label, royal.sign_value) == ("main", "Escalera real", 500_000)
    assert codec.minor_units(royal.base) == 500_000 * MINOR_PER_PESO
    assert [(p.prize, p.hits) for p in royal.prizes] == [
        ("ROYAL_FLUSH", 1),
        ("ENVY_ROYAL_FLUSH", 1),
    ]
    assert [p.prize for p in meters[1].prizes] == ["STRAIGHT_FLUSH", "ENVY_STRAIGHT_FLUSH"]
    for meter in meters:  # M3: each is its pot floored
        assert meter.sign_value == codec.minor_units(meter.balance) // MINOR_PER_PESO


def test_L4_V1_the_balance_gauge_names_each_pots_level_and_envy_is_counted() -> None:
    feed = levels_feed()
    group = feed.book.groups[GROUP].group
    registry = CollectorRegistry()
    metrics = PotMetrics(registry)
    metrics.set_balances(GROUP, group.balances, records.pot_levels(group))
    metrics.envy_awarded(GROUP, "royal")

    def sample(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, {"pot_group": GROUP, **labels})

    assert sample("jackpot_pot_balance_pesos", pot="main", level="royal") == 500_000
    assert sample("jackpot_pot_balance_pesos", pot="reserve1", level="royal") == 0  # its reserve
    # every level opens at its base (C4, L1)
    assert sample("jackpot_pot_balance_pesos", pot="flush", level="flush") == 5_000
    assert sample("jackpot_pot_balance_pesos", pot="mystery", level="") is not None
    assert sample("jackpot_envy_awards_total", level="royal") == 1
    level_values = {
        s.labels["level"]
        for family in registry.collect()
        if family.name == "jackpot_pot_balance_pesos"
        for s in family.samples
    }
    assert level_values == {*LEVELS, ""}  # bounded by the configuration
    metrics.set_balances(GROUP, group.balances)  # the levels went (C7): old series removed
    assert sample("jackpot_pot_balance_pesos", pot="main", level="royal") is None
    metrics.forget_group(GROUP, group.balances)
    assert sample("jackpot_pot_balance_pesos", pot="main", level="") is None
