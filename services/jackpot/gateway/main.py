"""`jackpot gateway --config FILE`: the composition root of one table gateway (one pit)."""

from __future__ import annotations

import asyncio
from functools import partial

import structlog

from jackpot.gateway.grpc_api import TableDeviceServicer
from jackpot.gateway.service import Gateway
from jackpot.gateway.settings import GatewaySettings
from jackpot.gateway.spool import Spool
from jackpot.gateway.studio_api import StudioPlatformServicer
from jackpot.platform.grpc_edge import access_logged_grpc_edge
from jackpot.platform.kafka import ensure_service_topics
from jackpot.platform.runtime import Supervisor, serve, service_main
from jackpot.platform.settings import load

log = structlog.get_logger("jackpot.gateway")


async def compose_gateway(settings: GatewaySettings, supervisor: Supervisor) -> None:
    """Build and start one gateway's parts under ``supervisor``; on stop it takes no more
    calls, flushes what can be flushed and closes the spool."""
    # the broker may be away: the spool covers for it
    await ensure_service_topics(settings, within_seconds=10)
    spool = Spool(settings.spool_path)
    edge = await access_logged_grpc_edge(
        supervisor, settings, f"gateway:{settings.name}", audit_drain_seconds=2
    )
    gateway = Gateway(settings, spool, access_log=edge.access_log)
    server = edge.serve(
        TableDeviceServicer(gateway, edge.authorizer),
        StudioPlatformServicer(gateway, edge.authorizer),  # studio tables (O1), when configured
        grace_seconds=5,
    )

    async def close_spool() -> None:
        depth = spool.depth()
        spool.close()
        log.info("gateway_stopped", name=settings.name, spool_depth=depth)

    supervisor.on_stop("gateway", lambda: gateway.stop(supervisor.grace(5)))
    supervisor.on_stop("spool", close_spool)
    await gateway.start()
    for task in gateway.tasks:
        supervisor.watch(task)
    await server.start()
    log.info("gateway_started", name=settings.name, grpc=settings.grpc_address, port=server.port)


async def run_gateway(settings: GatewaySettings, stop: asyncio.Event) -> int:
    """One gateway in this event loop until ``stop`` (0) or a part fails (1)."""
    return await serve(f"gateway:{settings.name}", partial(compose_gateway, settings), stop)


def main(config_path: str) -> int:
    settings = load(GatewaySettings, file=config_path)
    return service_main(f"gateway:{settings.name}", settings, partial(compose_gateway, settings))
