"""The studio sign's figure (issue 39): what each bet of a locked studio round would be paid if
the shared hand hit the top prize now, judged against the resolution that would pay it (O2-O5,
S1, S3, S4, S6, L2) over generated rounds, pots and paytables.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from jackpot.domain.engine import PotGroup
from jackpot.domain.events import PrizeAwarded
from jackpot.domain.money import pesos
from jackpot.domain.studio_share import TopPrizeShare, top_prize, top_prize_shares
from tests.unit.test_studio import LIMITS, ROYAL, config

pytestmark = pytest.mark.unit

PERCENT_ROYAL = {"hand": "ROYAL_FLUSH", "percent": "100"}
PAYTABLES: list[dict[str, Any]] = [
    {
        "name": "pct",
        "evaluator": "poker",
        "prizes": [{"hand": "FLUSH", "multiple": 50}, PERCENT_ROYAL],
    },
    {
        "name": "pct-capped",
        "evaluator": "poker",
        "prizes": [{"hand": "ROYAL_FLUSH", "percent": "50", "cap_multiple": 1}],
    },
    {"name": "fixed", "evaluator": "poker", "prizes": [{"hand": "ROYAL_FLUSH", "multiple": 2000}]},
    {
        "name": "no-royal",
        "evaluator": "poker",
        "prizes": [{"hand": "FLUSH", "multiple": 50}, {"hand": "STRAIGHT_FLUSH", "percent": "10"}],
    },
]
LEVELS: dict[str, Any] = {
    "pots": [{"name": "main", "percent": "70"}, {"name": "big", "percent": "30"}],
    "levels": [
        {"name": "small", "label": "Pozo"},
        {"name": "royal", "label": "Escalera real", "pot": "big"},
    ],
    "paytable": {
        "name": "levels",
        "evaluator": "poker",
        "prizes": [
            {"hand": "FLUSH", "multiple": 50},
            {"hand": "ROYAL_FLUSH", "percent": "100", "level": "royal"},
        ],
    },
}


def locked_group(rng: random.Random, overrides: dict[str, Any]) -> PotGroup:
    """S1 (a studio table) with a locked round of random bets and folds, L1 (land) beside it."""
    pots = {pot["name"]: pesos(rng.randrange(0, 3_000_000)) for pot in overrides.get("pots", [])}
    group, _ = PotGroup.open(
        "G", config(**overrides), pots or {"main": pesos(rng.randrange(3_000_000))}
    )
    group.link_table("S1", "caribbean", "studio", **LIMITS, studio_seats=20_000)
    group.link_table("L1", "caribbean", "SCL", **LIMITS)
    seats = rng.sample(range(1, 20_001), rng.randrange(1, 3_000))
    bets = {seat: rng.choice((1000, 2000, 5000)) for seat in seats}
    group.lock_round("S1", "R1", bets, {seat: f"p{seat}" for seat in seats})
    group.lock_round("L1", "R9", {1: 1000})
    for seat in rng.sample(seats, len(seats) // 10):
        group.forfeit("S1", "R1", seat, "FOLD")
    return group


def paid_by_resolution(group: PotGroup) -> dict[int, int]:
    """Seat -> what the shared royal pays it, resolved on a copy of the group."""
    copy = PotGroup.from_snapshot(group.snapshot())
    events = copy.resolve_round("S1", "R1", {}, shared_hand=ROYAL)
    return {e.seat: e.amount_pesos for e in events if isinstance(e, PrizeAwarded)}


def predicted(share: TopPrizeShare, group: PotGroup) -> dict[int, int]:
    locked = group.locked["S1"]
    playing = (seat for seat in locked.bets if seat not in locked.forfeited)
    return {seat: share.amount_for(seat, locked.bets[seat]) for seat in playing}


@pytest.mark.parametrize("seed", range(24))
def test_O4_S3_S4_the_signs_share_is_what_the_top_prize_would_pay_each_bet(seed: int) -> None:
    rng = random.Random(seed)
    shape = seed % 5
    overrides = LEVELS if shape == 4 else {"paytable": PAYTABLES[shape]}
    group = locked_group(rng, overrides)
    shares = top_prize_shares(group)
    if shape == 3:  # no royal: the paytable's best hand is the straight flush
        assert top_prize(group.config.paytable).hand == "STRAIGHT_FLUSH"  # type: ignore[union-attr]
        assert [s.prize for s in shares] == ["STRAIGHT_FLUSH"]
        return
    [share] = shares  # only the studio table's round; the land round is not a studio's
    assert (share.table_id, share.round_id, share.prize) == ("S1", "R1", "ROYAL_FLUSH")
    locked = group.locked["S1"]
    playing = [s for s in locked.bets if s not in locked.forfeited]
    assert share.bets == len(playing)
    assert share.bet_total == sum(locked.bets[s] for s in playing)
    expected = paid_by_resolution(group)
    assert predicted(share, group) == expected
    if shape == 4:
        assert share.level == "royal"


def test_S3_the_judge_refuses_a_share_with_the_odd_pesos_on_another_seat() -> None:
    """The comparison above can fail: the same preview with the odd pesos moved off the lowest
    seat (money still conserved) no longer matches the resolution."""
    group, _ = PotGroup.open("G", config(), {"main": pesos(1_000_003)})
    group.link_table("S1", "caribbean", "studio", **LIMITS, studio_seats=100)
    group.lock_round("S1", "R1", dict.fromkeys((7, 3, 50), 1000))
    [share] = top_prize_shares(group)
    # the three bets added 3,000 (no commission): 1,003,003 = 3 x 334,334 + 1, the odd peso to
    # seat 3, the lowest (S3)
    assert (share.share, share.odd_pesos, share.lowest_seat) == (334_334, 1, 3)
    assert (
        predicted(share, group)
        == paid_by_resolution(group)
        == {3: 334_335, 7: 334_334, 50: 334_334}
    )
    moved = TopPrizeShare(**{**_fields(share), "lowest_seat": 7})
    assert predicted(moved, group) != paid_by_resolution(group)


def test_O5_a_round_whose_every_bet_folded_and_a_land_group_show_no_share() -> None:
    group, _ = PotGroup.open("G", config(), {"main": pesos(1_000)})
    group.link_table("S1", "caribbean", "studio", **LIMITS, studio_seats=100)
    group.link_table("L1", "caribbean", "SCL", **LIMITS)
    assert top_prize_shares(group) == []  # no round locked
    group.lock_round("L1", "R1", {1: 1000})
    assert top_prize_shares(group) == []  # a land round
    group.lock_round("S1", "R1", {4: 1000})
    assert [s.bets for s in top_prize_shares(group)] == [1]
    group.forfeit("S1", "R1", 4, "FOLD")
    assert top_prize_shares(group) == []


def _fields(share: TopPrizeShare) -> dict[str, Any]:
    return {name: getattr(share, name) for name in share.__slots__}
