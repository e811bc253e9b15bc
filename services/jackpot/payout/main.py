"""`jackpot payout`: the composition root of the payout service (run one active instance)."""

from __future__ import annotations

import asyncio
import os
import socket

import structlog

from jackpot.payout.grpc_api import SERVICE_NAME, PayoutServicer
from jackpot.payout.service import PayoutService
from jackpot.payout.settings import PayoutSettings
from jackpot.platform.audit import AuditLog
from jackpot.platform.authz import Authorizer
from jackpot.platform.grpc_server import GrpcServer
from jackpot.platform.kafka import ensure_topics
from jackpot.platform.logging import configure_logging
from jackpot.platform.metrics import serve_metrics
from jackpot.platform.runtime import run_service
from jackpot.topics import AUDIT, AWARDS, LEDGER, PAYOUTS, TopicSpec

log = structlog.get_logger("jackpot.payout")


async def run_payout(settings: PayoutSettings, stop: asyncio.Event) -> None:
    if settings.create_topics:
        await ensure_topics(
            settings.bootstrap_servers,
            [
                TopicSpec(settings.awards_topic, AWARDS.partitions, dict(AWARDS.config)),
                TopicSpec(settings.payouts_topic, PAYOUTS.partitions, dict(PAYOUTS.config)),
                TopicSpec(settings.ledger_topic, LEDGER.partitions, dict(LEDGER.config)),
                TopicSpec(settings.access.audit_topic, AUDIT.partitions, dict(AUDIT.config)),
            ],
            **settings.kafka_security.client_options(),
        )
    service = PayoutService(settings)
    audit = AuditLog(
        settings.bootstrap_servers,
        settings.access.audit_topic,
        f"payout:{socket.gethostname()}-{os.getpid()}",
        settings.kafka_security.client_options(),
    )
    servicer = PayoutServicer(service, Authorizer(settings.access, audit))
    server = GrpcServer(
        settings.grpc_address,
        [servicer.register],
        [SERVICE_NAME],
        settings.access.tls.server_credentials(),
        settings.access.health_address,
    )
    await service.start()
    await audit.start()
    await server.start()
    log.info("payout_serving", grpc=settings.grpc_address, port=server.port)
    try:
        await stop.wait()
    finally:
        await server.stop(grace_seconds=5)
        await service.stop()
        await audit.stop()
        log.info("payout_stopped")


def main() -> int:
    settings = PayoutSettings.from_env()
    configure_logging()
    serve_metrics(settings.metrics_port, settings.metrics_host)

    return run_service(lambda stop: run_payout(settings, stop))
