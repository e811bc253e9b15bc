"""The studio sign's state (issue 39, rules O2-O5): the pot's update of a group with a studio table
carries the locked round's bets and each bet's share of the top prize, the board shows it only
when its parts fit in the pot (M3), on the web overlay and on the hardware signs' gRPC state alike,
and the round's prizes make one banner counting its winners.
"""

from __future__ import annotations

import pytest

from jackpot.display.board import Board, Sign
from jackpot.display.feed import apply_record, counted_awards
from jackpot.display.grpc_api import to_proto
from jackpot.display.settings import DisplaySettings
from jackpot.platform.bundles import bundle_awards
from jackpot.pot import commands
from jackpot.v1 import pot_pb2, table_events_pb2
from tests.book_pot import BookPot, caribbean

pytestmark = pytest.mark.unit

GROUP, STUDIO, LAND = "studio-g", "S-1", "CAR-1"
CONFIG = {
    "version": 1,
    "commission_percent": "0",
    "base": 0,
    "pots": [{"name": "main", "percent": 100}],
    "paytable": "scj-poker",
    "min_bet": 1000,
    "max_bet": 5000,
    "credit_value": 1000,
}
ROYAL = ["AH", "KH", "QH", "JH", "TH"]


def studio_pot() -> BookPot:
    """The group in the real pot book: a studio table of 10,000 seats and a land table."""
    return BookPot(GROUP, CONFIG, [caribbean(STUDIO, studio_seats=10_000), caribbean(LAND)])


def fed(board: Board, updates: list[pot_pb2.PotUpdate], awards: list[pot_pb2.Award]) -> Sign:
    settings = DisplaySettings()
    for update in updates:
        apply_record(board, settings.pot_updates_topic, update.SerializeToString(), settings)
    for award in awards:
        apply_record(board, settings.awards_topic, award.SerializeToString(), settings)
    return board.signs[GROUP]


def test_O4_S3_the_sign_shows_the_locked_rounds_bets_and_each_bets_share_of_the_top_prize() -> None:
    pot = studio_pot()
    bets = {seat: 1000 for seat in range(3, 2004)}  # 2,001 bets from seat 3
    players = {seat: f"player-{seat}" for seat in bets}  # O1: the platform names each bet's
    pot.apply(pot.event(STUDIO, 1, round_locked=commands.locked(bets, players)))
    pot.apply(pot.event(LAND, 1, round_locked=commands.locked({1: 5000})))
    sign = fed(Board(5.0, 5.0), pot.updates, [])
    # no commission, 100 % to main: 2,001,000 + 5,000 = 2,006,000 = 2,001 x 1,002 + 998
    assert sign.amount == 2_006_000
    [studio] = sign.studio
    assert (studio.table_id, studio.round_id, studio.bets, studio.bet_total) == (
        STUDIO,
        "R1",
        2001,
        2_001_000,
    )
    assert (studio.prize, studio.share, studio.odd_pesos, studio.lowest_seat) == (
        "ROYAL_FLUSH",
        1002,
        998,
        3,
    )
    assert sign.to_json()["studio"][0]["share"] == 1002

    # the hand is dealt: the sign's figure was exactly what the royal paid (O4, S3)
    pot.apply(pot.event(STUDIO, 2, round_result=table_events_pb2.RoundResult(shared_hand=ROYAL)))
    paid = {award.seat: award.amount for award in pot.awards}
    assert paid[3] == 1002 + 998
    assert set(paid.values()) == {1002, 2000}
    sign = fed(Board(5.0, 5.0), pot.updates, pot.awards)
    assert sign.studio == ()  # no round awaits its hand
    assert sign.winner is not None
    assert (sign.winner.studio_winners, sign.winner.studio_total) == (2001, 2_006_000)
    shown = sign.to_json()["winner"]
    assert (shown["round_id"], shown["studio_winners"], shown["prize"]) == (
        "R1",
        2001,
        "ROYAL_FLUSH",
    )


def test_M3_a_share_whose_parts_are_more_than_the_pot_holds_is_not_shown() -> None:
    pot = studio_pot()
    pot.apply(pot.event(STUDIO, 1, round_locked=commands.locked({1: 1000, 2: 1000})))
    update = pot.updates[-1]
    assert fed(Board(5.0, 5.0), [update], []).studio  # as the pot sent it: shown
    broken = pot_pb2.PotUpdate()
    broken.CopyFrom(update)
    broken.studio_rounds[0].share += 1  # two parts one peso each over what main holds
    assert fed(Board(5.0, 5.0), [broken], []).studio == ()
    fixed = pot_pb2.PotUpdate()
    fixed.CopyFrom(update)
    fixed.studio_rounds[0].multiple = 5000  # a fixed prize is the bet's multiple, not the pot's
    fixed.studio_rounds[0].share = 10**9
    assert fed(Board(5.0, 5.0), [fixed], []).studio


def grpc_rounds(sign: Sign) -> list[dict[str, object]]:
    """The studio rounds of the sign's gRPC state, each by its fields' names (the overlay's)."""
    return [
        {field.name: getattr(shown, field.name) for field in shown.DESCRIPTOR.fields}
        for shown in to_proto(sign).studio_rounds
    ]


def grpc_winner(sign: Sign) -> dict[str, object]:
    """The winner banner of the sign's gRPC state, each field by its name (the overlay's)."""
    shown = to_proto(sign).winner
    return {
        field.name: list(getattr(shown, field.name))
        if field.is_repeated
        else getattr(shown, field.name)
        for field in shown.DESCRIPTOR.fields
    }


def land_award() -> pot_pb2.Award:
    """A flush at the land table's round R1, seat 1 (no player: not a studio round's, O9)."""
    return pot_pb2.Award(
        award_id="a",
        pot_group_id=GROUP,
        table_id=LAND,
        round_id="R1",
        seat=1,
        prize="FLUSH",
        amount=50_000,
    )


def test_O4_M3_a_hardware_sign_gets_the_rounds_and_the_banner_the_overlay_shows() -> None:
    """SignState.studio_rounds carries each locked studio round's bets, their total and each
    bet's share of the top prize, figure for figure what the web overlay shows; a round whose
    parts are more than the pot holds is on neither (M3), and a fixed prize's is on both. Once
    the hand hits, SignState.winner is the round's one banner as the overlay counts it: its
    round, its winners and their total; a land table's hit then is its one seat's (0, 0)."""
    pot = studio_pot()
    bets = {seat: 1000 for seat in range(3, 2004)}
    players = {seat: f"player-{seat}" for seat in bets}  # O1, O9: a studio round's prizes
    pot.apply(pot.event(STUDIO, 1, round_locked=commands.locked(bets, players)))
    pot.apply(pot.event(LAND, 1, round_locked=commands.locked({1: 5000})))
    sign = fed(Board(5.0, 5.0), pot.updates, [])
    assert grpc_rounds(sign) == sign.to_json()["studio"]
    [shown] = to_proto(sign).studio_rounds
    assert (shown.table_id, shown.round_id, shown.bets, shown.bet_total) == (
        STUDIO,
        "R1",
        2001,
        2_001_000,
    )
    assert (shown.prize, shown.share, shown.odd_pesos, shown.lowest_seat) == (
        "ROYAL_FLUSH",
        1002,
        998,
        3,
    )

    broken = pot_pb2.PotUpdate()
    broken.CopyFrom(pot.updates[-1])
    broken.studio_rounds[0].share += 1  # 2,001 parts of 1,003 + 998: over the 2,006,000 held
    refused = fed(Board(5.0, 5.0), [broken], [])
    assert (refused.amount, grpc_rounds(refused)) == (2_006_000, [])
    assert "studio" not in refused.to_json()
    broken.studio_rounds[0].multiple = 5000  # a fixed prize: each bet times 5,000, not the pot
    fixed = fed(Board(5.0, 5.0), [broken], [])
    assert [r["multiple"] for r in grpc_rounds(fixed)] == [5000]
    assert grpc_rounds(fixed) == fixed.to_json()["studio"]

    pot.apply(pot.event(STUDIO, 2, round_result=table_events_pb2.RoundResult(shared_hand=ROYAL)))
    board = Board(5.0, 5.0)
    hit = fed(board, pot.updates, pot.awards)
    overlay, banner = hit.to_json()["winner"], grpc_winner(hit)
    assert {name: banner[name] for name in overlay} == overlay
    # 2,001 winners share the 2,006,000: seat 3 first (S5), with its 998 odd pesos (S3)
    assert (banner["round_id"], banner["studio_winners"], banner["studio_total"]) == (
        "R1",
        2001,
        2_006_000,
    )
    assert (banner["seat"], banner["amount"]) == (3, 1002 + 998)
    land = fed(board, [], [land_award()])
    overlay, banner = land.to_json()["winner"], grpc_winner(land)
    assert {name: banner[name] for name in overlay} == overlay
    assert (banner["round_id"], banner["studio_winners"], banner["studio_total"]) == ("R1", 0, 0)


def test_a_land_groups_update_and_sign_are_as_before() -> None:
    pot = studio_pot()
    pot.apply(pot.event(LAND, 1, round_locked=commands.locked({1: 5000})))
    assert not pot.updates[-1].studio_rounds
    sign = fed(Board(5.0, 5.0), pot.updates, [])
    assert "studio" not in sign.to_json()
    assert not to_proto(sign).studio_rounds
    sign = fed(Board(5.0, 5.0), [], [land_award()])
    assert "studio_winners" not in sign.to_json()["winner"]


def test_O4_a_bundle_of_a_studio_round_s_prizes_is_one_banner_change_with_every_prize() -> None:
    """The pot writes a studio round's 2,001 prizes as a bundle (jackpot.platform.bundles): the
    sign counts every prize of it into the round's banner, as from 2,001 records, and tells its
    watchers once, not 2,001 times (each told change is a push to every sign of the group)."""
    pot = studio_pot()
    bets = {seat: 1000 for seat in range(3, 2004)}
    players = {seat: f"player-{seat}" for seat in bets}
    pot.apply(pot.event(STUDIO, 1, round_locked=commands.locked(bets, players)))
    pot.apply(pot.event(STUDIO, 2, round_result=table_events_pb2.RoundResult(shared_hand=ROYAL)))
    settings = DisplaySettings()
    banners, pushes = [], []
    for records in (
        [a.SerializeToString() for a in pot.awards],
        [value for _, value in bundle_awards(pot.awards)],
    ):
        board = Board(5.0, 5.0)
        fed(board, pot.updates, [])
        told: list[str] = []
        board.subscribe(told.append)
        for value in records:
            apply_record(board, settings.awards_topic, value, settings)
        banners.append(board.signs[GROUP].to_json()["winner"])
        pushes.append(len(told))
    assert banners[0] == banners[1]
    assert (banners[1]["studio_winners"], banners[1]["studio_total"]) == (2001, 2_001_000)
    assert pushes == [2001, 1]


def studio_award(seat: int, prize: str = "ROYAL_FLUSH", round_id: str = "R1") -> pot_pb2.Award:
    return pot_pb2.Award(
        award_id=f"{round_id}-{seat}-{prize}",
        pot_group_id=GROUP,
        table_id=STUDIO,
        round_id=round_id,
        seat=seat,
        prize=prize,
        amount=1000 + seat,
        player=f"player-{seat}",
    )


def test_O4_a_bundles_prizes_are_counted_run_by_run_as_one_by_one_and_a_malformed_one_refused() -> (
    None
):
    """The display counts a run of one studio round's prizes of one hand at once (its bundle
    holds 10,000: one change of the board, not 10,000, issue 39 item 6); the runs end where the
    round, the hand or the kind of prize changes, a malformed award in a run is refused alone, and
    every banner is what the prizes applied one by one make of it."""
    malformed = studio_award(9)
    malformed.amount = -1
    awards = [
        *(studio_award(seat) for seat in (3, 4, 5)),
        malformed,
        *(studio_award(seat) for seat in (6, 7)),
        studio_award(3, prize="MYSTERY"),
        studio_award(8, round_id="R2"),
        land_award(),
        studio_award(2, round_id="R2"),
    ]
    runs = [(a.seat, a.prize, a.round_id, studio) for a, studio in counted_awards(awards, "t")]
    assert runs == [
        (3, "ROYAL_FLUSH", "R1", (5, 5000 + 3 + 4 + 5 + 6 + 7)),
        (3, "MYSTERY", "R1", (1, 1003)),
        (8, "ROYAL_FLUSH", "R2", (1, 1008)),
        (1, "FLUSH", "R1", None),
        (2, "ROYAL_FLUSH", "R2", (1, 1002)),
    ]
    settings = DisplaySettings()
    banners = []
    for cut in range(1, len(awards) + 1):  # every prefix: the banner after each prize
        bundled, one_by_one = Board(5.0, 5.0), Board(5.0, 5.0)
        value = pot_pb2.Award(
            pot_group_id=GROUP, bundled=[a.SerializeToString() for a in awards[:cut]]
        ).SerializeToString()  # one bundle of them all, as jackpot.platform.bundles writes one
        apply_record(bundled, settings.awards_topic, value, settings)
        for award in awards[:cut]:
            apply_record(one_by_one, settings.awards_topic, award.SerializeToString(), settings)
        assert bundled.signs[GROUP].to_json() == one_by_one.signs[GROUP].to_json()
        banners.append(bundled.signs[GROUP].to_json()["winner"])
    assert (banners[2]["studio_winners"], banners[2]["studio_total"]) == (3, 3012)
    assert (banners[5]["studio_winners"], banners[5]["studio_total"]) == (5, 5025)  # -1 refused
    assert (banners[-1]["round_id"], banners[-1]["studio_winners"]) == ("R2", 1)
