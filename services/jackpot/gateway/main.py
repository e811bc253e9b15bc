"""`jackpot gateway --config FILE`: the composition root of one table gateway (one pit)."""

from __future__ import annotations

import asyncio
import contextlib

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
from jackpot.platform.runtime import run_service
from jackpot.topics import AUDIT, TopicSpec

log = structlog.get_logger("jackpot.gateway")


async def run_gateway(settings: GatewaySettings, stop: asyncio.Event) -> None:
    """Run until ``stop`` is set; then stop taking calls, flush what can be flushed, close."""
    topics = settings.topics
    if settings.create_topics:
        with contextlib.suppress(Exception):  # the broker may be away: the spool covers for it
            await asyncio.wait_for(
                ensure_topics(
                    settings.bootstrap_servers,
                    [
                        TopicSpec(topics.table_events, 6),
                        TopicSpec(topics.pot_updates, 6),
                        TopicSpec(topics.dead_letter, 1),
                        TopicSpec(
                            settings.access.audit_topic, AUDIT.partitions, dict(AUDIT.config)
                        ),
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
    await audit.start()
    await gateway.start()
    await server.start()
    log.info("gateway_started", name=settings.name, grpc=settings.grpc_address, port=server.port)
    try:
        await stop.wait()
    finally:
        await server.stop(grace_seconds=5)
        await gateway.stop(flush_seconds=5)
        await audit.stop(drain_seconds=2)
        depth = spool.depth()
        spool.close()
        log.info("gateway_stopped", name=settings.name, spool_depth=depth)


def main(config_path: str) -> int:
    settings = load_settings(config_path)
    configure_logging()
    serve_metrics(settings.metrics_port, settings.metrics_host)

    return run_service(lambda stop: run_gateway(settings, stop))
