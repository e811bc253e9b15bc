"""Store and forward: the broker stops mid-round, the table closes, the spool fills, and every
event is delivered exactly once when the broker is back (issue #4, rule D5).

Uses its own local broker on port 9492 (deploy/local/kafka.sh with KAFKA_PORT and JACKPOT_STATE),
so stopping it does not disturb the session's broker.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from jackpot.domain.cards import Game
from jackpot.v1 import common_pb2, device_pb2
from tests.integration.gateway_harness import (
    Device,
    PotHeartbeat,
    create_topics,
    read_topic,
    settings_for,
    start_gateway,
    table_events,
    wait_until,
)
from tests.integration.own_broker import kafka_sh, own_broker

pytestmark = pytest.mark.integration

PORT = 9492


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[dict[str, str]]:
    with own_broker(PORT, tmp_path / "state") as env:
        yield env


async def test_broker_outage_mid_round(broker: dict[str, str], unique: str, tmp_path: Path) -> None:
    bootstrap = f"127.0.0.1:{PORT}"
    settings = settings_for(bootstrap, unique, tmp_path / "spool.sqlite", heartbeat_timeout=2.0)
    await create_topics(settings)
    beat = PotHeartbeat(settings)
    beat.start()
    gateway = await start_gateway(settings)
    device = Device(gateway.target, "CAR-1", Game.CARIBBEAN)
    try:
        await wait_until(lambda: gateway.gateway.tables["CAR-1"].progressive_open)
        await device.connect()
        await device.open_round("R1")
        for seat in (1, 2):
            assert (await device.credits(seat, 3)).accepted
            assert (await device.bet(seat, 2)).accepted
        assert (await device.lock()).accepted
        assert await gateway.gateway.drained()

        await kafka_sh("down", broker)
        loop = asyncio.get_running_loop()
        stopped = loop.time()
        await wait_until(lambda: not gateway.gateway.tables["CAR-1"].progressive_open, within=6)
        closed_after = loop.time() - stopped
        assert closed_after <= settings.heartbeat_timeout_seconds + 1.0
        # The device is told too (the push may still be on its way when the state flips).
        await wait_until(
            lambda: any(
                c.WhichOneof("message") == "progressive_status" and not c.progressive_status.open
                for c in device.commands
            ),
            within=3,
        )
        # The locked round goes on: its fold and results are spooled and acknowledged.
        assert (await device.send(folded=device_pb2.Folded(seat=2))).accepted
        hands = {1: ["AS", "KS", "QS", "JS", "TS"], 2: ["2H", "2D", "2C", "9S", "9H"]}
        assert (await device.results(hands)).accepted
        assert gateway.spool.depth() == 2
        # New rounds open, but progressive bets are refused while closed (fail closed).
        await device.open_round("R2")
        refused = await device.bet(1, 1)
        assert refused.reason == common_pb2.REJECT_REASON_PROGRESSIVE_CLOSED

        await kafka_sh("up", broker)
        # aiokafka's clients reconnect with back-off: allow a loaded machine some time
        assert await gateway.gateway.drained(within_seconds=60)
        await wait_until(lambda: gateway.gateway.tables["CAR-1"].progressive_open, within=60)
        assert (await device.bet(1, 1)).accepted
    finally:
        await device.close()
        await beat.stop()
        await gateway.stop()

    events = table_events(await read_topic(bootstrap, settings.table_events_topic, 4))
    assert [e.WhichOneof("payload") for e in events] == [
        "round_locked",
        "seat_forfeited",
        "round_result",
    ]
    assert [e.sequence for e in events] == [1, 2, 3]
    assert len({e.event_id for e in events}) == 3
