"""`jackpot gateway --config FILE` as a real process: health, a device session, graceful stop."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

import pytest
from loadtest.free_ports import free_port

from jackpot.domain.cards import Game
from tests.integration.gateway_harness import (
    CREDENTIAL,
    Device,
    create_topics,
    settings_for,
    wait_health,
)

pytestmark = pytest.mark.integration


async def test_gateway_process_serves_health_and_devices_and_stops_on_sigterm(
    kafka_bootstrap: str, unique: str, tmp_path: Path
) -> None:
    settings = settings_for(kafka_bootstrap, unique, tmp_path / "spool.sqlite")
    await create_topics(settings)
    port = free_port()
    config = {
        "name": settings.name,
        "bootstrap_servers": kafka_bootstrap,
        "grpc_address": f"127.0.0.1:{port}",
        "spool_path": settings.spool_path,
        "table_events_topic": settings.table_events_topic,
        "pot_updates_topic": settings.pot_updates_topic,
        "dead_letter_topic": settings.dead_letter_topic,
        "tables": [
            {
                "table_id": "CAR-1",
                "game": "caribbean",
                "pot_group_id": "g",
                "credential": CREDENTIAL,
            }
        ],
    }
    path = tmp_path / "gateway.json"
    path.write_text(json.dumps(config))
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "jackpot.cli",
        "gateway",
        "--config",
        str(path),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        await wait_health(f"127.0.0.1:{port}", api="jackpot.v1.TableDeviceService", within=10)
        device = Device(f"127.0.0.1:{port}", "CAR-1", Game.CARIBBEAN)
        welcome = await device.connect()
        assert welcome.table_id == "CAR-1"
        assert welcome.seats == 7
        assert not welcome.progressive_open  # no pot update yet: fail closed (D5)
        await device.close()
    finally:
        process.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(process.wait(), 20)
        stderr = (await process.stderr.read()).decode() if process.stderr else ""
    assert code == 0, stderr
    assert "gateway_stopped" in stderr
