"""The device protocol's round form against a real broker (issue 26): RoundOpened, LockRound with
the round's bets, SettleRound with its forfeits and hands, through the real gRPC device stream.

The round form must publish exactly what the per-event form publishes for the same round (the
pot cannot tell them apart), judge and answer a LockRound's and a SettleRound's seats one by one
(rules E1, E2, E3, E5, E6), dead-letter every refused seat with its reason, refuse a settlement
whose hands are wrong as a whole with nothing applied, and answer a resend with the same seats.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from jackpot.domain.cards import Game
from jackpot.v1 import common_pb2, dead_letter_pb2, device_pb2
from tests.integration.gateway_harness import (
    Device,
    RunningGateway,
    read_topic,
    serving,
    table_events,
)

pytestmark = pytest.mark.integration

R = common_pb2.RejectReason
ROYAL = ["AS", "KS", "QS", "JS", "TS"]
TRIPS = ["2H", "2D", "2C", "9S", "9H"]
NOTHING = ["3H", "7D", "9C", "JD", "4C"]


@pytest.fixture
async def gateway(
    kafka_bootstrap: str, unique: str, tmp_path: Path
) -> AsyncIterator[RunningGateway]:
    async with serving(kafka_bootstrap, unique, tmp_path / "spool.sqlite") as (running, _):
        yield running


async def connected(gateway: RunningGateway, table_id: str, game: Game) -> Device:
    device = Device(gateway.target, table_id, game)
    assert (await device.connect()).progressive_open
    return device


def seats(reply: device_pb2.EventReply) -> dict[int, str]:
    """Seat -> ACCEPTED or the refusal reason's name."""
    return {
        s.seat: "ACCEPTED" if s.accepted else R.Name(s.reason).removeprefix("REJECT_REASON_")
        for s in reply.seats
    }


async def test_C1_D1_a_round_in_three_messages_publishes_what_the_per_event_form_does(
    gateway: RunningGateway,
) -> None:
    device = await connected(gateway, "DRW-1", Game.DRAW)
    try:
        for seat in (1, 3, 5):
            assert (await device.credits(seat, 10)).accepted  # chip exchanges, before the round
        assert (await device.open_round("R1")).accepted
        locked = await device.lock_round("R1", {1: 2, 3: 2, 5: 2})
        assert locked.accepted
        assert seats(locked) == dict.fromkeys((1, 3, 5), "ACCEPTED")
        settled = await device.settle_round({1: ROYAL, 3: TRIPS, 5: NOTHING}, {5: "CARD_EXCHANGE"})
        assert settled.accepted
        assert seats(settled) == {5: "ACCEPTED"}
        assert (await device.credits(1, 10)).accepted  # a chip exchange between rounds
        assert (await device.lock_round("R2", {1: 1})).accepted
    finally:
        await device.close()
    assert await gateway.gateway.drained()
    records = await read_topic(
        gateway.settings.bootstrap_servers, gateway.settings.table_events_topic, 4
    )
    events = [e for e in table_events(records) if e.table_id == "DRW-1"]
    assert [e.WhichOneof("payload") for e in events] == [
        "round_locked",
        "seat_forfeited",
        "round_result",
        "round_locked",  # R2, after the chip exchange between rounds
    ]
    assert [(b.seat, b.bet) for b in events[0].round_locked.bets] == [
        (1, 2000),
        (3, 2000),
        (5, 2000),
    ]
    assert events[1].seat_forfeited.seat == 5
    assert {h.seat: list(h.cards) for h in events[2].round_result.hands} == {
        1: ROYAL,
        3: TRIPS,
        5: NOTHING,
    }
    assert [e.sequence for e in events] == [1, 2, 3, 4]
    assert all(e.round_id == "R1" for e in events[:3])


async def test_E1_E5_E6_a_lock_judges_each_seat_and_locks_the_others(
    gateway: RunningGateway,
) -> None:
    device = await connected(gateway, "DRW-1", Game.DRAW)
    try:
        assert (await device.credits(1, 10)).accepted
        assert (await device.credits(2, 10)).accepted
        assert (await device.credits(4, 10)).accepted
        assert (await device.send(lamp_fault=device_pb2.LampFault(seat=4))).accepted
        # no RoundOpened: the lock opens its round (the controller may skip the opening)
        locked = await device.lock_round("R1", {1: 3, 2: 6, 3: 1, 4: 1, 9: 1})
        assert locked.accepted
        assert seats(locked) == {
            1: "ACCEPTED",
            2: "BET_OUT_OF_LIMITS",  # 6 credits of 1,000 pesos: above the 5,000 maximum (E1)
            3: "INSUFFICIENT_CREDITS",  # nothing on seat 3's counter (E6)
            4: "SEAT_CLOSED",  # its lamp is faulty (E5)
            9: "SEAT_OUT_OF_RANGE",  # Draw Poker has six seats
        }
        assert "5000" in locked.seats[1].detail
        again = await device.send_event(
            device.event(
                sequence=device.sequence,
                lock_round=device_pb2.LockRound(
                    bets=[
                        device_pb2.SeatWager(seat=s, credits=c)
                        for s, c in sorted({1: 3, 2: 6, 3: 1, 4: 1, 9: 1}.items())
                    ]
                ),
            )
        )
        assert again.accepted
        assert again.duplicate
        assert seats(again) == seats(locked)  # a resend hears the same seats
        after = await device.lock_round("R1", {1: 1})
        assert (after.accepted, after.reason) == (False, R.REJECT_REASON_INVALID_STATE)
    finally:
        await device.close()
    assert await gateway.gateway.drained()
    records = await read_topic(
        gateway.settings.bootstrap_servers, gateway.settings.table_events_topic, 1
    )
    events = [e for e in table_events(records) if e.table_id == "DRW-1"]
    assert [e.WhichOneof("payload") for e in events] == ["seat_closed", "round_locked"]
    lock = events[1]
    assert [(b.seat, b.bet) for b in lock.round_locked.bets] == [(1, 3000)]
    letters = [
        dead_letter_pb2.DeadLetter.FromString(r.value)
        for r in await read_topic(
            gateway.settings.bootstrap_servers, gateway.settings.dead_letter_topic, 5
        )
    ]
    assert [(R.Name(letter.reason), letter.detail.split(":")[0]) for letter in letters] == [
        ("REJECT_REASON_BET_OUT_OF_LIMITS", "seat 2"),
        ("REJECT_REASON_INSUFFICIENT_CREDITS", "seat 3"),
        ("REJECT_REASON_SEAT_CLOSED", "seat 4"),
        ("REJECT_REASON_SEAT_OUT_OF_RANGE", "seat 9"),
        ("REJECT_REASON_INVALID_STATE", "table DRW-1"),
    ]
    assert device_pb2.ConnectRequest.FromString(letters[0].original).event.HasField("lock_round")


async def test_E2_E3_a_settlement_judges_forfeits_seat_by_seat_and_hands_whole(
    gateway: RunningGateway,
) -> None:
    device = await connected(gateway, "CAR-1", Game.CARIBBEAN)
    try:
        assert (await device.credits(1, 10)).accepted
        assert (await device.credits(2, 10)).accepted
        assert (await device.lock_round("R1", {1: 1, 2: 1})).accepted
        duplicate_card = await device.settle_round({1: ROYAL, 2: ["AS", *TRIPS[1:]]}, {2: "FOLD"})
        assert (duplicate_card.accepted, duplicate_card.reason) == (
            False,
            R.REJECT_REASON_DUPLICATE_CARD,
        )
        assert not duplicate_card.seats  # refused whole: no seat was judged, nothing applied
        assert gateway.gateway.tables["CAR-1"].round_id == "R1"
        settled = await device.settle_round(
            {1: ROYAL, 2: TRIPS}, {2: "FOLD", 3: "FOLD", 1: "CARD_EXCHANGE"}
        )
        assert settled.accepted
        # Caribbean has no card exchange (E2); seat 3 had no bet; seat 2's fold stands (E3)
        assert seats(settled) == {1: "INVALID_STATE", 2: "ACCEPTED", 3: "NO_BET"}
    finally:
        await device.close()
    assert await gateway.gateway.drained()
    records = await read_topic(
        gateway.settings.bootstrap_servers, gateway.settings.table_events_topic, 3
    )
    events = [e for e in table_events(records) if e.table_id == "CAR-1"]
    assert [e.WhichOneof("payload") for e in events] == [
        "round_locked",
        "seat_forfeited",
        "round_result",
    ]
    assert events[1].seat_forfeited.seat == 2
