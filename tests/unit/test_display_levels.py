"""The signs of a group with levels (rules L4, M3, D2) and their winner banners with the envy
bonuses (V1, V2, V3), from the pot service's records to the board, the web JSON and the gRPC sign;
a one-level group's sign is what it was before levels existed (jackpot.display)."""

from __future__ import annotations

from jackpot.display.board import Board, Sign, SignLevel, SignReading, Winner
from jackpot.display.feed import apply_record
from jackpot.display.grpc_api import to_proto
from jackpot.display.settings import DisplaySettings
from jackpot.domain.money import MINOR_PER_PESO
from jackpot.v1 import common_pb2, pot_pb2

GROUP = "scl-poker"
ROYAL = ("AS", "KS", "QS", "JS", "TS")
LEVELS = [
    ("royal", "Escalera real", "main", 612_345),
    ("sf", "Escalera de color", "sf", 104_000),
    ("quads", "Póker", "quads", 25_700),
    ("full", "Full", "full", 10_250),
    ("flush", "Color", "flush", 5_090),
]


def update(increments: int = 0, held: dict[str, int] | None = None) -> pot_pb2.PotUpdate:
    """A five-level group's pot update; ``held`` overrides what a pot holds (minor units)."""
    held = held or {}
    return pot_pb2.PotUpdate(
        pot_group_id=GROUP,
        sign_value=LEVELS[0][3],
        increment=increments,
        min_bet=1000,
        max_bet=5000,
        pots=[
            pot_pb2.PotBalance(
                name=pot,
                balance=common_pb2.ExactAmount(
                    numerator=held.get(pot, value * MINOR_PER_PESO), denominator=MINOR_PER_PESO
                ),
            )
            for _, _, pot, value in LEVELS
        ],
        levels=[
            pot_pb2.LevelValue(name=n, label=lb, sign_value=v, increment=increments, pot=p)
            for n, lb, p, v in LEVELS
        ],
    )


def fed(board: Board, *records: tuple[str, bytes]) -> Sign:
    settings = DisplaySettings()
    for topic, value in records:
        topic = {"pot": settings.pot_updates_topic, "award": settings.awards_topic}[topic]
        apply_record(board, topic, value, settings)
    return board.signs[GROUP]


def award(
    seat: int, prize: str, amount: int, envy_of: pot_pb2.EnvyHit | None = None, table: str = "T1"
) -> tuple[str, bytes]:
    message = pot_pb2.Award(
        award_id=f"{GROUP}/{table}/R1/{seat}/{prize}",
        pot_group_id=GROUP,
        table_id=table,
        round_id="R1",
        seat=seat,
        prize=prize,
        amount=amount,
        cards=list(ROYAL),
        level="royal",
        envy_of=envy_of,
    )
    return ("award", message.SerializeToString())


def test_L4_D2_every_level_is_on_the_sign_with_its_label_amount_and_increment() -> None:
    sign = fed(Board(5, 10), ("pot", update(increments=12).SerializeToString()))
    assert sign.levels == tuple(SignLevel(n, lb, v, 12) for n, lb, _, v in LEVELS)
    assert sign.amount == LEVELS[0][3]  # the main level is the drums
    shown = sign.to_json()["levels"]
    assert [(s["label"], s["amount"], s["increment"]) for s in shown] == [
        (lb, v, 12) for _, lb, _, v in LEVELS
    ]
    assert [(s.label, s.amount) for s in to_proto(sign).levels] == [
        (lb, v) for _, lb, _, v in LEVELS
    ]


def test_M3_a_level_never_shows_more_than_its_pot_holds() -> None:
    """A sign value above its pot (a fault upstream) is shown as the pot floored."""
    held = {"quads": 25_699 * MINOR_PER_PESO + MINOR_PER_PESO // 2}
    sign = fed(Board(5, 10), ("pot", update(held=held).SerializeToString()))
    assert [level.amount for level in sign.levels] == [612_345, 104_000, 25_699, 10_250, 5_090]


def test_D2_a_level_keeps_its_last_increase_on_an_update_that_did_not_raise_it() -> None:
    board = Board(5, 10)
    fed(board, ("pot", update(increments=40).SerializeToString()))
    sign = fed(board, ("pot", update(increments=0).SerializeToString()))
    assert [level.increment for level in sign.levels] == [40] * 5


def test_L4_V1_V3_the_banner_names_the_level_and_gathers_the_envy_paid_before_the_hit() -> None:
    board = Board(5, 10)
    hit = pot_pb2.EnvyHit(table_id="T1", round_id="R1", seat=1)
    sign = fed(
        board,
        ("pot", update().SerializeToString()),
        award(2, "ENVY_ROYAL_FLUSH", 5000, hit),  # V3: the bonuses come first
        award(3, "ENVY_ROYAL_FLUSH", 5000, hit, table="T2"),  # V2: another linked table
    )
    waiting = sign.winner
    assert waiting is not None
    assert (waiting.table_id, waiting.seat, waiting.prize, waiting.amount) == (
        "T1",
        1,
        "ROYAL_FLUSH",
        0,
    )
    sign = fed(board, award(1, "ROYAL_FLUSH", 612_345))
    winner = sign.winner
    assert winner is not None
    assert (winner.prize, winner.amount, winner.level_label) == (
        "ROYAL_FLUSH",
        612_345,
        "Escalera real",
    )
    assert [(e.table_id, e.seat, e.prize, e.amount) for e in winner.envy] == [
        ("T1", 2, "ENVY_ROYAL_FLUSH", 5000),
        ("T2", 3, "ENVY_ROYAL_FLUSH", 5000),
    ]
    banner = to_proto(sign).winner
    assert banner.level_label == "Escalera real"
    assert [e.seat for e in banner.envy] == [2, 3]
    assert sign.to_json()["winner"]["envy"][1]["table_id"] == "T2"


def test_V1_a_new_hit_starts_its_own_banner_without_the_last_hits_envy() -> None:
    board = Board(5, 10)
    hit = pot_pb2.EnvyHit(table_id="T1", round_id="R1", seat=1)
    fed(board, ("pot", update().SerializeToString()), award(2, "ENVY_ROYAL_FLUSH", 5000, hit))
    sign = fed(board, award(1, "ROYAL_FLUSH", 600_000), award(4, "FLUSH", 5_090, table="T3"))
    assert sign.winner is not None
    assert (sign.winner.table_id, sign.winner.envy) == ("T3", ())


def test_L4_a_one_level_groups_sign_is_as_before() -> None:
    """No levels, no level label, no envy: the JSON's keys, the gRPC state and the banner are
    those of a sign before levels existed."""
    board = Board(5, 10)
    board.pot_update(SignReading(GROUP, 1000, 5, 1000, 5000), 0, 1.0)
    winner = Winner("T1", 3, "ROYAL_FLUSH", 1000, ROYAL, "a1")
    board.award(GROUP, winner, now=1)
    sign = board.signs[GROUP]
    assert set(sign.to_json()) == {
        "pot_group_id",
        "amount",
        "increment",
        "min_bet",
        "max_bet",
        "live",
        "closed_reason",
        "winner",
        "pending",
        "updated_at",
    }
    assert set(sign.to_json()["winner"]) == {
        "table_id",
        "seat",
        "prize",
        "amount",
        "cards",
        "award_id",
    }
    state = to_proto(sign)
    assert not state.levels
    assert (state.winner.level_label, list(state.winner.envy)) == ("", [])


def test_L4_a_plain_update_after_levels_clears_them() -> None:
    """A configuration without levels took effect (C7): the sign is a one-level sign again."""
    board = Board(5, 10)
    fed(board, ("pot", update().SerializeToString()))
    plain = update()
    del plain.levels[:]
    sign = fed(board, ("pot", plain.SerializeToString()))
    assert sign.levels == ()
    assert "levels" not in sign.to_json()
