"""The table gateway against a real broker, driven through the real gRPC device stream (#4)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from jackpot.domain.cards import Game
from jackpot.v1 import common_pb2, dead_letter_pb2, device_pb2
from tests.integration.gateway_harness import (
    GROUP,
    Device,
    PotHeartbeat,
    RunningGateway,
    create_topics,
    read_topic,
    serving,
    settings_for,
    start_gateway,
    table_events,
    wait_until,
)

pytestmark = pytest.mark.integration

R = common_pb2.RejectReason


@pytest.fixture
async def running(
    kafka_bootstrap: str, unique: str, tmp_path: Path
) -> AsyncIterator[tuple[RunningGateway, PotHeartbeat]]:
    async with serving(kafka_bootstrap, unique, tmp_path / "spool.sqlite") as both:
        yield both


async def connected(gateway: RunningGateway, table_id: str, game: Game) -> Device:
    device = Device(gateway.target, table_id, game)
    welcome = await device.connect()
    assert welcome.progressive_open
    assert (welcome.min_bet, welcome.max_bet, welcome.credit_value) == (1000, 5000, 1000)
    return device


ROUNDS = {
    Game.CARIBBEAN: ({1: ["AS", "KS", "QS", "JS", "TS"], 3: ["2H", "2D", "2C", "9S", "9H"]}, []),
    Game.DRAW: ({1: ["AS", "KS", "QS", "JS", "TS"], 3: ["2H", "2D", "2C", "9S", "9H"]}, []),
    Game.GO_POKER: ({1: ["JS", "QS", "KS"], 3: ["2H", "2D", "9C"]}, ["TS", "AS"]),
    Game.BLACKJACK: ({1: ["AS", "AS", "AS", "AS"], 3: ["7D", "7D", "7D"]}, []),
}


@pytest.mark.parametrize("game", list(ROUNDS), ids=lambda g: g.value)
async def test_a_whole_round_reaches_kafka(
    running: tuple[RunningGateway, PotHeartbeat], game: Game
) -> None:
    gateway, _ = running
    table_id = next(t.table_id for t in gateway.settings.tables if t.game == game)
    device = await connected(gateway, table_id, game)
    hands, community = ROUNDS[game]
    try:
        assert (await device.open_round("R1")).accepted
        for seat in (1, 3, 5):
            assert (await device.credits(seat, 5)).accepted
            assert (await device.bet(seat, 2)).accepted
        assert (await device.lock()).accepted
        if game in (Game.CARIBBEAN, Game.DRAW):
            assert (await device.send(folded=device_pb2.Folded(seat=5))).accepted
        assert (await device.results(hands, community)).accepted
    finally:
        await device.close()
    assert await gateway.gateway.drained()

    records = await read_topic(
        gateway.settings.bootstrap_servers, gateway.settings.table_events_topic, 3
    )
    events = [e for e in table_events(records) if e.table_id == table_id]
    assert all(r.key == GROUP.encode() for r in records)
    kinds = [e.WhichOneof("payload") for e in events]
    expected = ["round_locked", "round_result"]
    if game in (Game.CARIBBEAN, Game.DRAW):
        expected.insert(1, "seat_forfeited")
    assert kinds == expected
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))
    assert len({e.event_id for e in events}) == len(events)
    locked = events[0].round_locked
    assert [(b.seat, b.bet) for b in locked.bets] == [(1, 2000), (3, 2000), (5, 2000)]
    result = events[-1].round_result
    assert {h.seat: list(h.cards) for h in result.hands} == hands
    assert list(result.community_cards) == community
    assert all(
        e.round_id == "R1" and e.game == common_pb2.Game.Value(f"GAME_{game.name}") for e in events
    )


async def test_bad_input_gets_specific_reasons_and_dead_letters(
    running: tuple[RunningGateway, PotHeartbeat],
) -> None:
    gateway, _ = running
    device = await connected(gateway, "DRW-1", Game.DRAW)
    try:
        malformed = await device.send_raw(b"\xff\xff\xff not protobuf")
        assert (malformed.accepted, malformed.reason) == (False, R.REJECT_REASON_MALFORMED)
        assert (await device.open_round("R1")).accepted
        seat7 = await device.credits(7, 1)  # Draw Poker has six seats
        assert seat7.reason == R.REJECT_REASON_SEAT_OUT_OF_RANGE
        assert (await device.credits(1, 10)).accepted
        no_credits = await device.bet(2, 1)
        assert no_credits.reason == R.REJECT_REASON_INSUFFICIENT_CREDITS
        too_big = await device.bet(1, 6)
        assert too_big.reason == R.REJECT_REASON_BET_OUT_OF_LIMITS
        assert (await device.bet(1, 1)).accepted
        other_table = await device.send_event(
            device.event(table_id="CAR-1", bet_placed=device_pb2.BetPlaced(seat=1, credits=1))
        )
        assert other_table.reason == R.REJECT_REASON_TABLE_MISMATCH
        gap = await device.send_event(
            device.event(sequence=device.sequence + 5, dealer_lock=device_pb2.DealerLock())
        )
        assert gap.reason == R.REJECT_REASON_SEQUENCE_OUT_OF_ORDER
        assert (await device.lock()).accepted
        after_lock = await device.bet(1, 1)
        assert after_lock.reason == R.REJECT_REASON_BET_AFTER_LOCK
        replayed = await device.send_event(
            device.event(
                sequence=device.sequence, bet_placed=device_pb2.BetPlaced(seat=1, credits=1)
            )
        )
        assert replayed.reason == R.REJECT_REASON_SEQUENCE_REPLAYED
        no_bet = await device.results({2: ["2H", "7D", "9C", "JD", "4C"]})
        assert no_bet.reason == R.REJECT_REASON_NO_BET
        six = await device.results({1: ["2H", "7D", "9C", "JD", "4C", "5C"]})
        assert six.reason == R.REJECT_REASON_WRONG_CARD_COUNT
        assert "seat 1" in six.detail
        bad_card = await device.results({1: ["2H", "7D", "9C", "JD", "1C"]})
        assert bad_card.reason == R.REJECT_REASON_INVALID_CARD
        assert "'1C'" in bad_card.detail
        assert (await device.results({1: ["2H", "7D", "9C", "JD", "4C"]})).accepted
    finally:
        await device.close()

    # the gateway keeps serving: another table plays on
    other = await connected(gateway, "CAR-1", Game.CARIBBEAN)
    try:
        assert (await other.open_round("X1")).accepted
    finally:
        await other.close()

    assert await gateway.gateway.drained()
    letters = [
        dead_letter_pb2.DeadLetter.FromString(r.value)
        for r in await read_topic(
            gateway.settings.bootstrap_servers, gateway.settings.dead_letter_topic, 12
        )
    ]
    reasons = [R.Name(letter.reason) for letter in letters]
    assert reasons == [
        "REJECT_REASON_MALFORMED",
        "REJECT_REASON_SEAT_OUT_OF_RANGE",
        "REJECT_REASON_INSUFFICIENT_CREDITS",
        "REJECT_REASON_BET_OUT_OF_LIMITS",
        "REJECT_REASON_TABLE_MISMATCH",
        "REJECT_REASON_SEQUENCE_OUT_OF_ORDER",
        "REJECT_REASON_BET_AFTER_LOCK",
        "REJECT_REASON_SEQUENCE_REPLAYED",
        "REJECT_REASON_NO_BET",
        "REJECT_REASON_WRONG_CARD_COUNT",
        "REJECT_REASON_INVALID_CARD",
    ]
    assert letters[0].original == b"\xff\xff\xff not protobuf"
    assert all(letter.source == f"gateway:{gateway.settings.name}" for letter in letters)
    assert all(letter.table_id == "DRW-1" for letter in letters)


async def test_hello_is_checked(running: tuple[RunningGateway, PotHeartbeat]) -> None:
    gateway, _ = running
    cases = [
        (
            Device(gateway.target, "NOPE-1", Game.CARIBBEAN),
            "device-secret-0123456789",
            grpc.StatusCode.NOT_FOUND,
        ),
        (
            Device(gateway.target, "CAR-1", Game.CARIBBEAN),
            "wrong-secret-000000000",
            grpc.StatusCode.UNAUTHENTICATED,
        ),
        (
            Device(gateway.target, "CAR-1", Game.DRAW),
            "device-secret-0123456789",
            grpc.StatusCode.FAILED_PRECONDITION,
        ),
    ]
    for device, credential, status in cases:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await device.connect(credential)
        assert refused.value.code() == status
        await device.close()


async def test_a_resent_event_is_answered_again_and_published_once(
    running: tuple[RunningGateway, PotHeartbeat],
) -> None:
    gateway, _ = running
    device = await connected(gateway, "CAR-1", Game.CARIBBEAN)
    try:
        await device.open_round("R1")
        await device.credits(1, 2)
        await device.bet(1, 1)
        lock = device.event(dealer_lock=device_pb2.DealerLock())
        first = await device.send_event(lock)
        again = await device.send_event(lock)
        assert first.accepted
        assert not first.duplicate
        assert again.accepted
        assert again.duplicate
        assert again.sequence == first.sequence
    finally:
        await device.close()
    assert await gateway.gateway.drained()
    records = await read_topic(
        gateway.settings.bootstrap_servers, gateway.settings.table_events_topic, 2, quiet_ms=1500
    )
    assert [e.WhichOneof("payload") for e in table_events(records)] == ["round_locked"]


async def test_fails_closed_without_pot_heartbeats_and_reopens(
    running: tuple[RunningGateway, PotHeartbeat],
) -> None:
    gateway, beat = running
    device = await connected(gateway, "CAR-1", Game.CARIBBEAN)
    try:
        await device.open_round("R1")
        await device.credits(1, 5)
        await beat.stop()
        loop = asyncio.get_running_loop()
        stopped_at = loop.time()

        def closed_pushed() -> bool:
            return any(
                c.WhichOneof("message") == "progressive_status" and not c.progressive_status.open
                for c in device.commands
            )

        await wait_until(closed_pushed, within=5)
        assert loop.time() - stopped_at <= gateway.settings.heartbeat_timeout_seconds + 1.0
        refused = await device.bet(1, 1)
        assert refused.reason == R.REJECT_REASON_PROGRESSIVE_CLOSED
        beat.start()
        await wait_until(lambda: gateway.gateway.tables["CAR-1"].progressive_open, within=5)
        assert device.commands[-1].progressive_status.open
        assert (await device.bet(1, 1)).accepted
    finally:
        await device.close()


async def test_R13_a_site_restored_after_a_cut_off_shows_the_central_pot(
    running: tuple[RunningGateway, PotHeartbeat],
) -> None:
    """R13, D5: a site that stops hearing the central pot (its updates cut off) closes; the pot
    moves on meanwhile; once the updates reach the site again its devices are shown the central
    amount, not the one from before the cut. (The WAN cut itself, by network namespaces, is
    tests/e2e/test_site_cutoff.py; this checks what the site shows after it.)"""
    gateway, beat = running
    device = await connected(gateway, "CAR-1", Game.CARIBBEAN)
    try:
        assert gateway.gateway.pots[GROUP].sign_value == 1_000_000  # before the cut
        await beat.stop()
        await wait_until(lambda: not gateway.gateway.tables["CAR-1"].progressive_open, within=10)
        beat.sign_value = 1_234_567  # the central pot grew while the site was cut off
        beat.start()

        def pot_values() -> list[int]:
            return [
                c.pot_value.sign_value
                for c in device.commands
                if c.WhichOneof("message") == "pot_value"
            ]

        await wait_until(lambda: 1_234_567 in pot_values(), within=10)
        await wait_until(lambda: gateway.gateway.tables["CAR-1"].progressive_open, within=10)
        assert pot_values()[-1] == 1_234_567  # the device shows the central pot, nothing older
        assert gateway.gateway.pots[GROUP].sign_value == 1_234_567
    finally:
        await device.close()


async def test_a_restarted_gateway_resumes_the_round_from_its_spool(
    kafka_bootstrap: str, unique: str, tmp_path: Path
) -> None:
    settings = settings_for(kafka_bootstrap, unique, tmp_path / "spool.sqlite")
    await create_topics(settings)
    beat = PotHeartbeat(settings)
    beat.start()
    try:
        first = await start_gateway(settings)
        await wait_until(lambda: first.gateway.tables["GOP-1"].progressive_open)
        device = await connected(first, "GOP-1", Game.GO_POKER)
        await device.open_round("R9")
        await device.credits(2, 3)
        await device.bet(2, 3)
        await device.lock()
        await device.close()
        await first.stop()

        second = await start_gateway(settings)
        try:
            await wait_until(lambda: second.gateway.tables["GOP-1"].progressive_open)
            device = Device(second.target, "GOP-1", Game.GO_POKER)
            welcome = await device.connect()
            assert (welcome.last_sequence, welcome.round_id) == (4, "R9")
            device.round_id = "R9"
            resend = await device.send_event(
                device.event(sequence=4, dealer_lock=device_pb2.DealerLock())
            )
            assert resend.duplicate
            assert (await device.results({2: ["JS", "QS", "KS"]}, ["TS", "AS"])).accepted
            await device.close()
            assert await second.gateway.drained()
        finally:
            await second.stop()
    finally:
        await beat.stop()
    records = await read_topic(kafka_bootstrap, settings.table_events_topic, 2)
    events = table_events(records)
    assert [e.WhichOneof("payload") for e in events] == ["round_locked", "round_result"]
    assert [e.sequence for e in events] == [1, 2]
