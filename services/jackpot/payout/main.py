"""`jackpot payout`: the composition root of the payout service (one instance owns the payouts,
the others stand by; see :mod:`jackpot.payout.service`)."""

from __future__ import annotations

import asyncio
import os
import socket
from dataclasses import replace
from functools import partial

import structlog
from prometheus_client import REGISTRY, CollectorRegistry

from jackpot.payout.grpc_api import SERVICE_NAME, PayoutServicer
from jackpot.payout.service import PayoutService
from jackpot.payout.settings import PayoutSettings
from jackpot.platform.audit import AuditLog
from jackpot.platform.authz import Authorizer
from jackpot.platform.grpc_server import GrpcServer
from jackpot.platform.kafka import ensure_topics
from jackpot.platform.logging import configure_logging
from jackpot.platform.metrics import ProcessorMetrics, serve_metrics
from jackpot.platform.runtime import Supervisor, run_service, serve
from jackpot.platform.settings import load_or_exit
from jackpot.topics import AUDIT, AWARDS, DEAD_LETTER, LEDGER, PAYOUTS

log = structlog.get_logger("jackpot.payout")


async def compose_payout(
    settings: PayoutSettings, supervisor: Supervisor, registry: CollectorRegistry = REGISTRY
) -> None:
    """Build and start the payout service's parts under ``supervisor``."""
    if settings.create_topics:
        await ensure_topics(
            settings.bootstrap_servers,
            [
                replace(AWARDS, name=settings.awards_topic),
                replace(PAYOUTS, name=settings.payouts_topic),
                replace(LEDGER, name=settings.ledger_topic),
                replace(DEAD_LETTER, name=settings.dead_letter_topic),
                replace(AUDIT, name=settings.access.audit_topic),
            ],
            **settings.kafka_security.client_options(),
        )
    service = PayoutService(settings, processor_metrics=ProcessorMetrics(registry))
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
    supervisor.health(server)
    host = settings.grpc_address.rsplit(":", 1)[0]
    service.advertise(f"{host}:{server.port}")
    supervisor.on_stop("terminals", servicer.end_streams)
    supervisor.on_stop("grpc", lambda: server.stop(supervisor.grace(5)))
    supervisor.on_stop("processor", service.stop)
    supervisor.on_stop("audit", lambda: audit.stop(supervisor.grace(5)))
    supervisor.spawn("payout-processor", service.run())
    await audit.start()
    supervisor.watch(audit.writer)
    await server.start()
    supervisor.spawn(
        "payout-health",
        service.report_serving(partial(server.set_service_serving, SERVICE_NAME)),
    )
    log.info("payout_serving", grpc=settings.grpc_address, port=server.port)


async def run_payout(settings: PayoutSettings, stop: asyncio.Event) -> int:
    """The payout service in this event loop until ``stop`` (0) or a part fails (1)."""
    return await serve("payout", partial(compose_payout, settings), stop)


def main() -> int:
    settings = load_or_exit(PayoutSettings)
    configure_logging()
    serve_metrics(settings.metrics_port, settings.metrics_host)

    return run_service("payout", partial(compose_payout, settings), settings.tracing)
