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


async def kafka_sh(command: str, env: dict[str, str]) -> None:
    """``kafka.sh command`` (up, down) on the broker ``env`` names."""
    await asyncio.to_thread(subprocess.run, [KAFKA_SH, command], check=True, env=env)
