"""Failover in seconds (issue 13): a second running instance of the pot or the payout service
takes over the partitions of one killed with ``kill -9`` within 5 s, without a restart.

Two real processes with the same settings share the input partitions; one is killed (it never
leaves the consumer group, so the group notices only when its 3 s session expires); the survivor
must own every partition within the bound, as its ``jackpot_partitions_owned`` metric says. Why
that is safe: every partition's transactional id fences its previous owner before its state is
restored (docs/architecture.md, "The one exactly-once processor").
"""

from __future__ import annotations

import asyncio
import re
import signal
import sys
import time
from pathlib import Path

import aiohttp
import pytest

from tests.integration.test_payout import free_port, payout_environment, payout_settings
from tests.integration.test_pot_service import create_topics, environment, pot_settings

pytestmark = pytest.mark.integration

TAKEOVER_BOUND_SECONDS = 5.0
START_SECONDS = 60.0
OWNED = re.compile(r"^jackpot_partitions_owned (\S+)$", re.MULTILINE)


def tail(logs: Path) -> str:
    return "\n".join(
        f"--- {path.name}\n{path.read_text(errors='replace')[-2000:]}"
        for path in sorted(logs.glob("*.log"))
    )


async def partitions_owned(session: aiohttp.ClientSession, port: int) -> int:
    try:
        async with session.get(f"http://127.0.0.1:{port}/metrics") as response:
            found = OWNED.search(await response.text())
    except aiohttp.ClientError:
        return 0
    return int(float(found.group(1))) if found else 0


async def kill_one_and_time_the_takeover(
    command: list[str],
    environments: list[dict[str, str]],
    ports: list[int],
    partitions: int,
    logs: Path,
    shared: bool = True,
) -> float:
    """Seconds from the kill -9 of an owning instance until the other owns every partition.
    ``shared``: the instances split the partitions (the pot); else one owns them all and the
    other stands by (the payout)."""
    processes = []
    for index, env in enumerate(environments):
        with (logs / f"instance-{index}.log").open("wb") as log:
            processes.append(
                await asyncio.create_subprocess_exec(*command, env=env, stdout=log, stderr=log)
            )
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session:
            deadline = time.monotonic() + START_SECONDS
            while True:  # both serve (shared), or one owns everything and one stands by
                owned = [await partitions_owned(session, port) for port in ports]
                if sum(owned) == partitions and (all(owned) if shared else 0 in owned):
                    break
                assert all(p.returncode is None for p in processes), "an instance died"
                assert time.monotonic() < deadline, f"the instances never shared: {owned}\n" + tail(
                    logs
                )
                await asyncio.sleep(0.1)
            victim = owned.index(max(owned))
            survivor = 1 - victim
            processes[victim].send_signal(signal.SIGKILL)
            await processes[victim].wait()
            killed = time.monotonic()
            while await partitions_owned(session, ports[survivor]) < partitions:
                assert time.monotonic() - killed < 4 * TAKEOVER_BOUND_SECONDS, tail(logs)
                await asyncio.sleep(0.05)
            return time.monotonic() - killed
    finally:
        for process in processes:
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
                await asyncio.wait_for(process.wait(), 30)


async def test_a_running_pot_instance_takes_over_a_killed_ones_partitions_in_seconds(
    kafka_bootstrap: str, unique: str, tmp_path: Path
) -> None:
    settings = pot_settings(
        kafka_bootstrap, unique, partitions=4, session_timeout_ms=3_000, heartbeat_ms=500
    )
    await create_topics(settings)
    ports = [free_port(), free_port()]
    environments = []
    for index, port in enumerate(ports):
        env = environment(settings)
        env.update(
            JACKPOT_METRICS_PORT=str(port),
            JACKPOT_GRPC_ADDRESS=f"127.0.0.1:{free_port()}",
            JACKPOT_INSTANCE_ID=f"pot-{index}",
            JACKPOT_LOG_LEVEL="INFO",
        )
        environments.append(env)
    took = await kill_one_and_time_the_takeover(
        [sys.executable, "-m", "jackpot.cli", "pot"], environments, ports, 4, tmp_path
    )
    print(f"pot takeover after kill -9: {took:.2f} s (bound {TAKEOVER_BOUND_SECONDS:g} s)")
    assert took <= TAKEOVER_BOUND_SECONDS


async def test_a_running_payout_instance_takes_over_a_killed_ones_partitions_in_seconds(
    kafka_bootstrap: str, unique: str, tmp_path: Path
) -> None:
    settings = await payout_settings(kafka_bootstrap, unique)
    ports = [free_port(), free_port()]
    environments = []
    for index, port in enumerate(ports):
        env = payout_environment(settings)
        env.update(
            JACKPOT_PAYOUT_METRICS_PORT=str(port),
            JACKPOT_PAYOUT_GRPC=f"127.0.0.1:{free_port()}",
            JACKPOT_PAYOUT_INSTANCE_ID=f"payout-{index}",
        )
        environments.append(env)
    took = await kill_one_and_time_the_takeover(
        [sys.executable, "-m", "jackpot.cli", "payout"],
        environments,
        ports,
        2,
        tmp_path,
        shared=False,  # one owner, one standby (issue 19)
    )
    print(f"payout takeover after kill -9: {took:.2f} s (bound {TAKEOVER_BOUND_SECONDS:g} s)")
    assert took <= TAKEOVER_BOUND_SECONDS
