"""Every ``jackpot <service>`` under the supervised runtime, on real Kafka (issue 13): a part
that raises turns the service's gRPC health NOT_SERVING and makes it exit 1, within 2 s.

Each test runs the service's real composition root in-process (what its ``main`` runs) and makes
one of its real parts fail: the pot's state view, the payout's processor, the gateway's
watchdog, the display's clock. The health is watched over gRPC the way a probe sees it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from prometheus_client import CollectorRegistry

from jackpot.display import main as display_main
from jackpot.display.settings import DisplaySettings
from jackpot.domain.access import Role
from jackpot.gateway.main import compose_gateway
from jackpot.gateway.service import Gateway
from jackpot.payout.main import compose_payout
from jackpot.payout.service import PayoutService
from jackpot.payout.settings import PayoutSettings
from jackpot.platform.authz import AccessSettings
from jackpot.platform.runtime import Supervisor, serve
from jackpot.pot.main import compose_pot
from jackpot.pot.view import PotStateView
from jackpot.v1 import payout_pb2, payout_pb2_grpc
from tests.integration.gateway_harness import settings_for, wait_health, wait_until
from tests.integration.test_pot_service import pot_settings

pytestmark = pytest.mark.integration

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
EXIT_BOUND_SECONDS = 2.0
START_TIMEOUT_SECONDS = 60.0


def payout_settings(kafka_bootstrap: str, unique: str) -> PayoutSettings:
    return PayoutSettings(
        bootstrap_servers=kafka_bootstrap,
        grpc_address="127.0.0.1:0",
        metrics_port=0,
        processor={
            "consumer_group": f"payout-{unique}",
            "transactional_id_prefix": f"payout-{unique}",
        },
        awards_topic=f"test.awards.{unique}",
        payouts_topic=f"test.payouts.{unique}",
        ledger_topic=f"test.ledger.{unique}",
        access=AccessSettings(
            audit_topic=f"test.audit.{unique}", insecure_roles=frozenset({Role.SUPERVISOR})
        ),
    )


Compose = Callable[[Supervisor], Awaitable[None]]


class Fault:
    """A part's body that runs until told to fail, then raises."""

    def __init__(self) -> None:
        self.now = asyncio.Event()

    async def part(self, *_: object, **__: object) -> None:
        await self.now.wait()
        raise RuntimeError("injected fault")


async def health_statuses(port: int, serving: asyncio.Event, seen: list[int]) -> None:
    """Watch the service's overall health until it says NOT_SERVING."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)  # type: ignore[no-untyped-call]
        async for response in stub.Watch(health_pb2.HealthCheckRequest(service="")):
            seen.append(response.status)
            if response.status == SERVING:
                serving.set()
            if response.status == NOT_SERVING:
                return


async def assert_fails_closed(compose: Compose, fault: Fault, part: str) -> None:
    composed: list[Supervisor] = []

    async def watched(supervisor: Supervisor) -> None:
        await compose(supervisor)
        composed.append(supervisor)

    service = asyncio.create_task(serve("under-test", watched, asyncio.Event()))
    serving = asyncio.Event()
    seen: list[int] = []
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while not composed:
        assert not service.done(), f"the service ended while starting: {service.result()}"
        assert time.monotonic() < deadline, "the service never started"
        await asyncio.sleep(0.05)
    (supervisor,) = composed
    port = supervisor.health_servers[0].port  # type: ignore[attr-defined]
    watcher = asyncio.create_task(health_statuses(port, serving, seen))
    await asyncio.wait_for(serving.wait(), START_TIMEOUT_SECONDS)
    injected = time.monotonic()
    fault.now.set()
    await asyncio.wait_for(watcher, EXIT_BOUND_SECONDS)
    status = await asyncio.wait_for(service, EXIT_BOUND_SECONDS)
    took = time.monotonic() - injected
    assert seen[0] == SERVING
    assert seen[-1] == NOT_SERVING
    assert status == 1
    assert took <= EXIT_BOUND_SECONDS
    assert supervisor.failed is not None
    assert supervisor.failed[0] == part
    assert "injected fault" in repr(supervisor.failed[1])


async def test_the_pot_service_exits_1_when_its_state_view_fails(
    kafka_bootstrap: str, unique: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fault = Fault()
    monkeypatch.setattr(PotStateView, "run", fault.part)
    settings = pot_settings(kafka_bootstrap, unique, partitions=1)
    compose = partial(compose_pot, settings, registry=CollectorRegistry())
    await assert_fails_closed(compose, fault, "pot-view")


async def test_the_payout_service_exits_1_when_its_processor_fails(
    kafka_bootstrap: str, unique: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fault = Fault()
    monkeypatch.setattr(PayoutService, "run", fault.part)
    settings = payout_settings(kafka_bootstrap, unique)
    compose = partial(compose_payout, settings, registry=CollectorRegistry())
    await assert_fails_closed(compose, fault, "payout-processor")


async def test_a_gateway_exits_1_when_its_watchdog_fails(
    kafka_bootstrap: str, unique: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fault = Fault()
    monkeypatch.setattr(Gateway, "_watchdog", fault.part)
    settings = settings_for(kafka_bootstrap, unique, tmp_path / "spool.sqlite")
    await assert_fails_closed(partial(compose_gateway, settings), fault, "gateway-watchdog")


async def test_the_display_exits_1_when_its_clock_fails(
    kafka_bootstrap: str, unique: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fault = Fault()
    monkeypatch.setattr(display_main, "clock", fault.part)
    settings = DisplaySettings(
        bootstrap_servers=kafka_bootstrap,
        grpc_address="127.0.0.1:0",
        http_port=0,
        metrics_port=0,
        pot_updates_topic=f"test.pot-updates.{unique}",
        awards_topic=f"test.awards.{unique}",
        access=AccessSettings(audit_topic=f"test.audit.{unique}"),
    )
    compose = partial(display_main.compose_display, settings)
    await assert_fails_closed(compose, fault, "display-clock")


async def test_a_stopping_payout_ends_its_terminal_streams_and_leaves_at_once(
    kafka_bootstrap: str, unique: str
) -> None:
    """SIGTERM: the dealer terminals are told UNAVAILABLE (reconnect elsewhere) before the gRPC
    grace, so the instance leaves the group at once instead of after the 5 s grace."""
    settings = payout_settings(kafka_bootstrap, unique)
    composed: list[Supervisor] = []

    async def compose(supervisor: Supervisor) -> None:
        await compose_payout(settings, supervisor, registry=CollectorRegistry())
        composed.append(supervisor)

    stop = asyncio.Event()
    service = asyncio.create_task(serve("payout", compose, stop))
    await wait_until(lambda: bool(composed) or service.done(), within=START_TIMEOUT_SECONDS)
    port = composed[0].health_servers[0].port  # type: ignore[attr-defined]
    await wait_health(f"127.0.0.1:{port}", api="jackpot.v1.PayoutService")  # it owns the payouts
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = payout_pb2_grpc.PayoutServiceStub(channel)  # type: ignore[no-untyped-call]
        hello = payout_pb2.TerminalHello(table_id="T1", dealer="ana")
        held_open = asyncio.Event()  # the terminal keeps its side of the stream open

        async def requests() -> AsyncIterator[payout_pb2.DealerTerminalRequest]:
            yield payout_pb2.DealerTerminalRequest(hello=hello)
            await held_open.wait()

        terminal = stub.DealerTerminal(requests())
        first = await terminal.read()
        assert list(first.open) == []
        stopped = time.monotonic()
        stop.set()
        with pytest.raises(grpc.aio.AioRpcError) as ended:
            await terminal.read()
        assert ended.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "reconnect" in (ended.value.details() or "")
    assert await asyncio.wait_for(service, 5) == 0
    assert time.monotonic() - stopped < 3.0
