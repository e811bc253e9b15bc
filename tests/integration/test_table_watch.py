"""The gateway's read-only watch of one table for its dealer terminal (rule D3), over real Kafka
and gRPC: the bets of a locked round, lamps, the sign's amount and progressive open; under mutual
TLS only that table's terminal certificate may watch it, every other caller is refused and
audited (a terminal certificate for table A never sees table B)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest

from jackpot.domain.cards import Game
from jackpot.platform.service_settings import AccessSettings
from jackpot.platform.tls import TlsSettings, secure_channel
from jackpot.tools.pki import issue_dev
from jackpot.v1 import device_pb2, device_pb2_grpc
from tests.integration.gateway_harness import (
    Device,
    PotHeartbeat,
    create_topics,
    settings_for,
    start_gateway,
    wait_until,
)
from tests.integration.test_security import wait_for_entries

pytestmark = pytest.mark.integration


async def next_view(
    stream: grpc.aio.UnaryStreamCall[device_pb2.WatchTableRequest, device_pb2.WatchTableResponse],
    wanted: Callable[[device_pb2.TableView], bool],
    within: float = 15.0,
) -> device_pb2.TableView:
    """The first view ``wanted`` accepts (views come after every change), within a deadline."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        remaining = deadline - loop.time()
        assert remaining > 0, "the watch never showed the expected view"
        view = (await asyncio.wait_for(stream.read(), remaining)).view
        if wanted(view):
            return view


async def test_D3_the_watch_shows_a_locked_rounds_bets_lamps_and_the_pot(
    kafka_bootstrap: str, unique: str, tmp_path: Path
) -> None:
    settings = settings_for(kafka_bootstrap, unique, tmp_path / "spool.sqlite")
    await create_topics(settings)
    heartbeat = PotHeartbeat(settings)
    heartbeat.start()
    running = await start_gateway(settings)
    device = Device(running.target, "CAR-1", Game.CARIBBEAN)
    try:
        await wait_until(lambda: running.gateway.tables["CAR-1"].progressive_open, within=20)
        await device.connect()
        async with grpc.aio.insecure_channel(running.target) as channel:
            stub = device_pb2_grpc.TableDeviceServiceStub(channel)
            stream = stub.WatchTable(device_pb2.WatchTableRequest(table_id="CAR-1"))
            first = await next_view(stream, lambda v: v.progressive_open)
            assert (first.table_id, first.pot_group_id, first.sign_value) == (
                "CAR-1",
                "scl-main",
                1_000_000,
            )
            assert first.device_connected
            assert [s.seat for s in first.seats] == list(range(1, 8))
            await device.open_round("R1")
            await device.credits(2, 5)
            await device.bet(2, 2)
            betting = await next_view(stream, lambda v: v.seats[1].lamp)
            assert betting.round_state == device_pb2.ROUND_STATE_OPEN
            assert (betting.seats[1].bet_credits, betting.seats[1].bet) == (2, 2000)
            assert not betting.seats[1].locked
            await device.lock()
            locked = await next_view(
                stream, lambda v: v.round_state == device_pb2.ROUND_STATE_LOCKED
            )
            assert locked.round_id == "R1"
            assert [(s.seat, s.bet, s.lamp, s.locked) for s in locked.seats if s.bet] == [
                (2, 2000, True, True)
            ]
            assert not any(s.lamp or s.locked for s in locked.seats if s.seat != 2)
            stream.cancel()
            unknown = stub.WatchTable(device_pb2.WatchTableRequest(table_id="NOPE"))
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await unknown.read()
            assert refused.value.code() == grpc.StatusCode.NOT_FOUND
    finally:
        await device.close()
        await running.stop()
        await heartbeat.stop()


async def test_a_terminal_certificate_for_one_table_never_sees_another(
    kafka_bootstrap: str, unique: str, tmp_path: Path
) -> None:
    """Only CAR-1's terminal certificate watches CAR-1; CAR-1's terminal asking for DRW-1 and
    CAR-1's bet acceptor (a device, not a terminal) are refused PERMISSION_DENIED and audited."""
    pki = tmp_path / "pki"
    issue_dev(pki, ["CAR-1"])
    access = AccessSettings(
        tls=TlsSettings.for_name(pki, "gateway"), audit_topic=f"test.audit.{unique}"
    )
    settings = settings_for(kafka_bootstrap, unique, tmp_path / "spool.sqlite").replace(
        access=access
    )
    gateway = await start_gateway(settings, access_logged=True)
    target = gateway.tls_target

    async def watch(holder: str, table_id: str) -> device_pb2.TableView:
        async with secure_channel(target, TlsSettings.for_name(pki, holder)) as channel:
            stub = device_pb2_grpc.TableDeviceServiceStub(channel)
            stream = stub.WatchTable(device_pb2.WatchTableRequest(table_id=table_id))
            view = (await stream.read()).view
            stream.cancel()
            return view

    try:
        assert (await watch("terminal-CAR-1", "CAR-1")).table_id == "CAR-1"
        for holder, table_id in (("terminal-CAR-1", "DRW-1"), ("device-CAR-1", "CAR-1")):
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await watch(holder, table_id)
            assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
        entries = await wait_for_entries(kafka_bootstrap, access.audit_topic, 3)
    finally:
        await gateway.stop()
    seen = {(e.action, e.outcome, e.target) for e in entries}
    assert ("watch_table", "allowed", "CAR-1") in seen
    assert ("watch_table", "refused", "DRW-1") in seen
    refused_device = [e for e in entries if e.outcome == "refused" and e.target == "CAR-1"]
    assert refused_device, "the device certificate's attempt is on the access log's chain"
    assert "needs the role terminal" in refused_device[0].detail
