"""R14, R2: the pot state topic is lost mid-floor and rebuilt from the ledger alone.

A real floor (``Demo``: Kafka, every service as a process, 5 tables over mutual TLS) plays; the
pot service is killed, the state topic deleted and created again empty. The pot service started on
it refuses to run the groups whose state is gone (log ``restored_state_refused``, their tables
stay closed); `jackpot restore --from-ledger` rebuilds them from the ledger; the pot service
started again resumes, the floor plays on, and the books, the audit and the report of the whole
run match to the peso.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from aiokafka.admin import AIOKafkaAdminClient

from jackpot.platform.kafka import ensure_topics
from jackpot.sim.books import judge
from jackpot.sim.floor import Floor
from jackpot.sim.floor_stats import FloorStats
from jackpot.tools.demo_floor import (
    REPO,
    Demo,
    sim_config,
    wait_progressive_open,
)
from jackpot.tools.demo_report import report as demo_report
from jackpot.tools.report_figures import compute
from jackpot.tools.report_model import Period
from jackpot.topics import POT_STATE, TopicSpec
from tests.polling import eventually
from tests.report_ledgers import read_whole_ledger

pytestmark = pytest.mark.integration


async def until(check: Callable[[], object], what: str, within: float) -> None:
    await eventually(check, what, within, step=0.25)


async def recreate_empty(bootstrap: str, topic: str) -> None:
    """Delete ``topic`` and create it again, empty: the state is lost."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.delete_topics([topic])
        deadline = time.monotonic() + 60
        while topic in await admin.list_topics():
            assert time.monotonic() < deadline, f"{topic} was never deleted"
            await asyncio.sleep(0.25)
    finally:
        await admin.close()
    spec = TopicSpec(topic, POT_STATE.partitions, POT_STATE.config)
    deadline = time.monotonic() + 60
    while True:  # the broker may still be removing the old one's partitions
        try:
            await ensure_topics(bootstrap, [spec])
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)


def pot_log(demo: Demo) -> str:
    return (demo.state / "pot.log").read_text(errors="replace")


async def test_R14_state_topic_deleted_mid_floor_is_rebuilt_from_the_ledger(
    kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", kafka_bootstrap)
    run_id = uuid.uuid4().hex[:8]
    demo = Demo(5, REPO / ".run" / "test-restore" / run_id, run_id)
    demo.start_kafka()
    await demo.create_topics()
    demo.start_services()
    floor: Floor | None = None
    playing: asyncio.Task[FloorStats] | None = None
    try:
        await demo.wait_healthy(within_seconds=120)
        await demo.create_groups()
        await wait_progressive_open(demo, within_seconds=60)
        floor = Floor(sim_config(demo, rig_rate=0.2, rounds_per_minute=90))
        playing = asyncio.create_task(floor.run())
        stats = floor.stats
        await until(lambda: stats.rounds >= 10, "10 rounds played", 60)

        demo.kill("pot")
        await recreate_empty(demo.bootstrap, demo.topic("pot-state"))
        demo.restart("pot")
        await until(
            lambda: "restored_state_refused" in pot_log(demo),
            "the pot service refusing the groups whose state is gone",
            90,
        )
        assert "no stored state for scl-" in pot_log(demo)
        demo.kill("pot")

        _, env = demo._commands["pot"]
        done = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "jackpot.cli", "restore", "--from-ledger"],
            env={**os.environ, **demo.service_env(env)},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "restored scl-poker from the ledger" in done.stdout
        assert "restored scl-blackjack from the ledger" in done.stdout
        rounds_at_restore = stats.rounds
        demo.restart("pot")
        await demo.wait_serving("pot", within_seconds=90)
        await until(lambda: stats.rounds >= rounds_at_restore + 10, "10 rounds after it", 90)
        floor.stop()
        stats = await playing
        books = await judge(demo, stats, await demo_report(demo, stats))
        records = await read_whole_ledger(
            {"bootstrap_servers": demo.bootstrap}, demo.topic("ledger")
        )
    finally:
        if floor is not None:
            floor.stop()
        if playing is not None and not playing.done():
            playing.cancel()
        demo.stop_services()
    assert books["audit_ok"], books["audit_problems"]
    assert books["books_ok"], books
    assert books["lost"] == 0
    assert books["duplicated"] == 0
    assert pot_log(demo).count("restored_state_refused") >= 1
    report = compute(records, Period(0, 2**62))
    assert report.reconciles, [g.problems for g in report.groups]
