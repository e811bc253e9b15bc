"""A local broker of a test's own (deploy/local/kafka.sh with KAFKA_PORT and JACKPOT_STATE): a
test may stop and start it without disturbing the session's broker."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import KAFKA_SH


@contextlib.contextmanager
def own_broker(port: int, state: Path) -> Iterator[dict[str, str]]:
    """A broker on 127.0.0.1:``port`` with its data under ``state``, up for the block; the
    environment that names it to kafka.sh (:func:`kafka_sh`)."""
    env = {**os.environ, "KAFKA_PORT": str(port), "JACKPOT_STATE": str(state)}
    subprocess.run([KAFKA_SH, "up"], check=True, env=env)
    try:
        yield env
    finally:
        subprocess.run([KAFKA_SH, "down"], check=False, env=env)


def all_threads_stopped(pid: int) -> bool:
    """Whether every thread of ``pid`` is stopped (state T in /proc): SIGSTOP is delivered to
    each thread when it next enters the kernel, so a JVM thread on the other core may still
    answer a request for a moment after ``os.kill`` returned."""
    tasks = Path(f"/proc/{pid}/task")
    states = []
    for stat in tasks.glob("*/stat"):
        with contextlib.suppress(FileNotFoundError):  # a thread that ended meanwhile
            states.append(stat.read_text().rpartition(")")[2].split()[0])
    return bool(states) and all(state in ("T", "t") for state in states)


async def kafka_sh(command: str, env: dict[str, str]) -> None:
    """``kafka.sh command`` (up, down) on the broker ``env`` names."""
    await asyncio.to_thread(subprocess.run, [KAFKA_SH, command], check=True, env=env)
