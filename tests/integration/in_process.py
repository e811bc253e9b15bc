"""A service's real composition root run in the test's event loop, as ``jackpot <service>`` runs
it (``compose_<service>`` under the supervised runtime), started and stopped where a test wants."""

from __future__ import annotations

import asyncio
import time
from functools import partial
from typing import cast

from prometheus_client import CollectorRegistry

from jackpot.platform.grpc_server import GrpcServer
from jackpot.platform.runtime import Compose, Supervisor, serve
from jackpot.pot.main import compose_pot
from jackpot.pot.settings import PotSettings

START_TIMEOUT_SECONDS = 60.0


class InProcess:
    """``start`` returns once the service is composed (its gRPC server serving); ``stop`` is the
    graceful stop SIGTERM makes, and returns the exit status."""

    def __init__(self, name: str, compose: Compose) -> None:
        self.name = name
        self._compose = compose
        self._stop = asyncio.Event()
        self._supervisor: Supervisor | None = None
        self._task: asyncio.Task[int] | None = None

    async def start(self, within: float = START_TIMEOUT_SECONDS) -> None:
        async def composed(supervisor: Supervisor) -> None:
            await self._compose(supervisor)
            self._supervisor = supervisor

        self._task = asyncio.create_task(serve(self.name, composed, self._stop))
        deadline = time.monotonic() + within
        while self._supervisor is None:
            if self._task.done():
                status = self._task.result()
                raise AssertionError(f"{self.name} ended while starting: exit {status}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name} did not start within {within:g} s")
            await asyncio.sleep(0.02)

    @property
    def supervisor(self) -> Supervisor:
        assert self._supervisor is not None, "not started"
        return self._supervisor

    @property
    def server(self) -> GrpcServer:
        """The service's gRPC server (the one whose health reports for it)."""
        return cast(GrpcServer, self.supervisor.health_servers[0])

    @property
    def grpc_port(self) -> int:
        return int(self.server.port)

    async def stop(self, within: float = 60.0) -> int:
        """Stop as SIGTERM does; the exit status (0 unless a part had failed)."""
        assert self._task is not None, "not started"
        self._stop.set()
        return await asyncio.wait_for(self._task, within)


def pot_in_process(settings: PotSettings) -> InProcess:
    """``jackpot pot`` with ``settings``, its metrics in a registry of its own."""
    return InProcess("pot", partial(compose_pot, settings, registry=CollectorRegistry()))
