"""`jackpot gateway --config FILE`: the composition root of one table gateway (one pit)."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace
from functools import partial

import structlog

from jackpot.gateway.grpc_api import SERVICE_NAME, TableDeviceServicer
from jackpot.gateway.service import Gateway
from jackpot.gateway.settings import GatewaySettings, load_settings
from jackpot.gateway.spool import Spool
from jackpot.platform.audit import AuditLog
from jackpot.platform.grpc_server import GrpcServer
from jackpot.platform.kafka import ensure_topics
from jackpot.platform.logging import configure_logging
from jackpot.platform.metrics import serve_metrics
from jackpot.platform.runtime import Supervisor, run_service, serve
from jackpot.platform.settings import settings_or_exit
from jackpot.topics import AUDIT, DEAD_LETTER, POT_UPDATES, TABLE_EVENTS

log = structlog.get_logger("jackpot.gateway")


async def compose_gateway(settings: GatewaySettings, supervisor: Supervisor) -> None:
    """Build and start one gateway's parts under ``supervisor``; on stop it takes no more
    calls, flushes what can be flushed and closes the spool."""
    topics = settings.topics
    if settings.create_topics:
        with contextlib.suppress(Exception):  # the broker may be away: the spool covers for it
            await asyncio.wait_for(
                ensure_topics(
                    settings.bootstrap_servers,
                    [
                        replace(TABLE_EVENTS, name=topics.table_events),
                        replace(POT_UPDATES, name=topics.pot_updates),
                        replace(DEAD_LETTER, name=topics.dead_letter),
                        replace(AUDIT, name=settings.access.audit_topic),
                    ],
                    **settings.kafka_security.client_options(),
                ),
                10,
            )
    spool = Spool(settings.spool_path)
    audit = AuditLog(
        settings.bootstrap_servers,
        settings.access.audit_topic,
        f"gateway:{settings.name}",
        settings.kafka_security.client_options(),
    )
    gateway = Gateway(settings, spool, audit=audit)
    server = GrpcServer(
        settings.grpc_address,
        [TableDeviceServicer(gateway).register],
        [SERVICE_NAME],
        settings.access.tls.server_credentials(),
        settings.access.health_address,
    )

    async def close_spool() -> None:
        depth = spool.depth()
        spool.close()
        log.info("gateway_stopped", name=settings.name, spool_depth=depth)

    supervisor.health(server)
    supervisor.on_stop("grpc", lambda: server.stop(supervisor.grace(5)))
    supervisor.on_stop("gateway", lambda: gateway.stop(supervisor.grace(5)))
    supervisor.on_stop("audit", lambda: audit.stop(supervisor.grace(2)))
    supervisor.on_stop("spool", close_spool)
    await audit.start()
    supervisor.watch(audit.writer)
    await gateway.start()
    for task in gateway.tasks:
        supervisor.watch(task)
    await server.start()
    log.info("gateway_started", name=settings.name, grpc=settings.grpc_address, port=server.port)


async def run_gateway(settings: GatewaySettings, stop: asyncio.Event) -> int:
    """One gateway in this event loop until ``stop`` (0) or a part fails (1)."""
    return await serve(f"gateway:{settings.name}", partial(compose_gateway, settings), stop)


def main(config_path: str) -> int:
    settings = settings_or_exit(lambda: load_settings(config_path), "jackpot gateway")
    configure_logging()
    serve_metrics(settings.metrics_port, settings.metrics_host)

    return run_service(
        f"gateway:{settings.name}", partial(compose_gateway, settings), settings.tracing
    )
