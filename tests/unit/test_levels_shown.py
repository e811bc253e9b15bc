"""Every level where a pot shows (issue 37 item 2; rules L4, V1, V2): the payout an award gets
keeps its level and envy hit, through the payout's transitions and its protobuf form; the query
API's PotGroup gives every level as the group's last pot update did; the dealer terminal's screen
gives the page every level and names each prize's level and envy hit; the pot's metrics give each
level's sign and base. A one-level group's payouts, groups and screens are as before.

The five-level group is `jackpot demo`'s (``LEVELS_POKER_CONFIG``), fed through the real pot
book (tests/unit/test_pot_levels.py), so the awards judged are the ones the pot writes.
"""

from __future__ import annotations

from loadtest.rounds import CONFIG
from prometheus_client import CollectorRegistry

from jackpot.domain.level_figures import level_figures
from jackpot.domain.payout import approve, pay
from jackpot.payout.codec import from_proto, payout_for_award, to_proto
from jackpot.pot import commands, records
from jackpot.pot.metrics import PotMetrics
from jackpot.terminal.screen import Screen, envy_text, payout_json
from jackpot.v1 import device_pb2, payout_pb2, pot_pb2
from tests.unit.test_pot_book import (
    GROUP,
    NOTHING,
    Feeder,
    link,
    lock,
    make_book,
    resolve,
)
from tests.unit.test_pot_book import state_of as state_of_group
from tests.unit.test_pot_levels import LABELS, LEVELS, ROYAL, levels_feed

THRESHOLD = 1_000_000
FLUSH = ["2H", "5H", "9H", "JH", "KH"]


def envy_round() -> list[pot_pb2.Award]:
    """A royal flush at T1 with an envy bonus to T1's other seat and, linked (V2), to T2's."""
    feed = levels_feed()
    feed(lock(1, "R1", {1: 1000, 2: 1000}), lock(1, "R9", {3: 2000}, table_id="T2"))
    return list(feed(resolve(2, "R1", {1: ROYAL, 2: NOTHING})).awards)


def test_L4_V1_V2_a_payout_keeps_its_awards_level_and_envy_hit() -> None:
    """The payout service's mapping (payout_for_award) copies the level that pays the prize and
    the hit an envy bonus is paid for; approving and paying it keep them; its protobuf form (the
    payouts topic, the terminal's stream) carries them both ways."""
    awards = envy_round()
    assert [(a.prize, a.level, a.HasField("envy_of")) for a in awards] == [
        ("ENVY_ROYAL_FLUSH", "royal", True),
        ("ENVY_ROYAL_FLUSH", "royal", True),  # T2's seat 3, for T1's hit (V2)
        ("ROYAL_FLUSH", "royal", False),
    ]
    for order, award in enumerate(awards):
        payout = payout_for_award(award, order, THRESHOLD, at_ns=1_000)
        hit = award.envy_of
        expected = (hit.table_id, hit.round_id, hit.seat) if award.HasField("envy_of") else None
        assert (payout.level, payout.envy_of) == (award.level, expected)
        settled = pay(payout, "dealer-ana", 3_000)
        if award.amount >= THRESHOLD:
            settled = pay(approve(payout, "sup-luis", 2_000), "dealer-ana", 3_000)
        message = to_proto(settled)
        assert message.level == award.level
        assert message.HasField("envy_of") == award.HasField("envy_of")
        assert message.envy_of == award.envy_of
        assert from_proto(payout_pb2.Payout.FromString(message.SerializeToString())) == settled
    linked = payout_for_award(awards[1], 1, THRESHOLD, at_ns=1_000)
    assert (linked.table_id, linked.envy_of) == ("T2", ("T1", "R1", 1))  # paid at T2 for T1's hit


def test_L4_a_one_level_groups_payout_is_written_as_before() -> None:
    """A one-level group's award has no level and no envy hit: its payout neither, and its
    message sets neither field (the record is the bytes it was before levels reached payouts)."""
    feed = Feeder(make_book())
    feed(commands.create_group(GROUP, CONFIG), link())
    feed(lock(1, "R1", {1: 1000, 2: 2000}))
    (award,) = feed(resolve(2, "R1", {1: NOTHING, 2: FLUSH})).awards
    payout = payout_for_award(award, 0, THRESHOLD, at_ns=1_000)
    assert (payout.level, payout.envy_of) == ("", None)
    message = to_proto(payout)
    assert {field.name for field, _ in message.ListFields()}.isdisjoint({"level", "envy_of"})
    assert from_proto(message) == payout


def test_L4_GetPotGroup_gives_every_level_as_the_last_pot_update() -> None:
    """The query API's PotGroup (GetPotGroup, ListPotGroups) gives each level's name, label,
    sign, rise, base and pot, as the group's last pot update with a change did; a one-level
    group's gives none."""
    feed = levels_feed()
    (update,) = feed(lock(1, "R1", {1: 1000, 2: 3000})).pot_updates
    group = feed.book.groups[GROUP].group
    shown = records.pot_group_message(state_of_group(feed.book), group)
    assert [(v.name, v.label) for v in shown.levels] == list(zip(LEVELS, LABELS, strict=True))
    assert list(shown.levels) == list(update.levels)
    assert [v.increment for v in shown.levels] == [1620, 540, 360, 252, 108]  # the lock's rises
    assert shown.levels[0].sign_value == shown.sign_value  # the main level is the group's sign

    single = Feeder(make_book())
    single(commands.create_group(GROUP, CONFIG), link(), lock(1, "R1", {1: 1000}))
    one = single.book.groups[GROUP].group
    assert not records.pot_group_message(state_of_group(single.book), one).levels


def table_view(*levels: tuple[str, str, int]) -> device_pb2.TableView:
    return device_pb2.TableView(
        table_id="T1",
        sign_value=levels[0][2] if levels else 1_000_000,
        levels=[device_pb2.TableLevel(name=n, label=lb, sign_value=v) for n, lb, v in levels],
    )


def test_L4_V2_the_terminal_screen_gives_every_level_and_names_each_prizes_level() -> None:
    """The page's state: the table's levels (main first) for the "Pozo"; each prize's level by
    its label (the view's; a level the view does not know by its name) and an envy bonus's hit,
    in Spanish: at this table by seat, at a linked table by table and seat."""
    awards = envy_round()
    payouts = [to_proto(payout_for_award(a, n, THRESHOLD, 1_000)) for n, a in enumerate(awards)]
    screen = Screen("T1", "ana")
    screen.table_view(table_view(("royal", "Escalera real", 500_000), ("sf", "Color", 100_000)))
    screen.open_payouts([payouts[0], payouts[2]])
    state = screen.to_json()
    assert state["table"]["levels"] == [
        {"name": "royal", "label": "Escalera real", "sign_value": 500_000},
        {"name": "sf", "label": "Color", "sign_value": 100_000},
    ]
    envy, royal = state["payouts"]
    assert (envy["level"], envy["level_text"]) == ("royal", "Escalera real")
    assert envy["envy_of"] == {"table_id": "T1", "round_id": "R1", "seat": 1}
    assert envy["envy_text"] == "por la posición 1"
    assert (royal["level_text"], royal["envy_of"], royal["envy_text"]) == (
        "Escalera real",
        None,
        "",
    )
    assert envy_text(payouts[1]) == "por la mesa T1, posición 1"  # T2's bonus, for T1's hit
    assert payout_json(payouts[0])["level"] == "royal"
    assert payout_json(payouts[0])["level_text"] == ""  # no view yet: no label to show

    one_level = Screen("T1", "ana")
    one_level.table_view(table_view())
    one_level.open_payouts([payout_pb2.Payout(award_id="a", seat=2, prize="FLUSH", amount=9)])
    state = one_level.to_json()
    assert state["table"]["levels"] == []
    assert (state["payouts"][0]["level_text"], state["payouts"][0]["envy_text"]) == ("", "")


def test_L3_L4_each_levels_sign_and_base_are_gauges_labelled_by_the_level() -> None:
    """jackpot_level_sign_value_pesos and jackpot_level_base_pesos per level (what the alert
    JackpotLevelBelowBase compares); a one-level group's one level is "main"; a level the
    configuration dropped, and a group this instance no longer owns, lose their series."""
    feed = levels_feed()
    group = feed.book.groups[GROUP].group
    registry = CollectorRegistry()
    metrics = PotMetrics(registry)
    metrics.set_levels(GROUP, level_figures(group))

    def sample(name: str, level: str) -> float | None:
        return registry.get_sample_value(name, {"pot_group": GROUP, "level": level})

    bases = [500_000, 100_000, 25_000, 10_000, 5_000]
    assert [sample("jackpot_level_base_pesos", n) for n in LEVELS] == bases
    assert [sample("jackpot_level_sign_value_pesos", n) for n in LEVELS] == bases  # C4, L1
    metrics.set_levels(GROUP, level_figures(group)[:2])  # three levels went (C7)
    assert sample("jackpot_level_base_pesos", "sf") == 100_000
    assert sample("jackpot_level_base_pesos", "quads") is None
    assert sample("jackpot_level_sign_value_pesos", "flush") is None
    metrics.forget_group(GROUP, group.balances)
    assert sample("jackpot_level_sign_value_pesos", "royal") is None

    single = Feeder(make_book())
    single(commands.create_group(GROUP, CONFIG))
    one = single.book.groups[GROUP].group
    metrics.set_levels(GROUP, level_figures(one))
    assert sample("jackpot_level_sign_value_pesos", "main") == one.sign_value
    assert sample("jackpot_level_base_pesos", "main") == CONFIG["base"]
