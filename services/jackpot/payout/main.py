"""`jackpot payout`: the composition root of the payout service (one instance owns the payouts,
the others stand by; see :mod:`jackpot.payout.service`)."""

from __future__ import annotations

import asyncio
import os
import socket
from functools import partial

import structlog
from prometheus_client import REGISTRY, CollectorRegistry

from jackpot.payout.grpc_api import SERVICE_NAME, PayoutServicer
from jackpot.payout.service import PayoutService
from jackpot.payout.settings import PayoutSettings
from jackpot.payout.wallet_payer import WalletPayer
from jackpot.platform.grpc_edge import access_logged_grpc_edge
from jackpot.platform.kafka import ensure_service_topics
from jackpot.platform.metrics import ProcessorMetrics
from jackpot.platform.runtime import Supervisor, serve, service_main
from jackpot.platform.settings import load

log = structlog.get_logger("jackpot.payout")


async def compose_payout(
    settings: PayoutSettings, supervisor: Supervisor, registry: CollectorRegistry = REGISTRY
) -> None:
    """Build and start the payout service's parts under ``supervisor``."""
    await ensure_service_topics(settings)
    service = PayoutService(settings, processor_metrics=ProcessorMetrics(registry))
    edge = await access_logged_grpc_edge(
        supervisor, settings, f"payout:{socket.gethostname()}-{os.getpid()}"
    )
    servicer = PayoutServicer(service, edge.authorizer)
    supervisor.on_stop("terminals", servicer.end_streams)
    server = edge.serve(servicer, grace_seconds=5)
    host = settings.grpc_address.rsplit(":", 1)[0]
    service.advertise(f"{host}:{server.port}")
    supervisor.on_stop("processor", service.stop)
    supervisor.spawn("payout-processor", service.run())
    if settings.wallet_target:  # studio prizes: credited to the players' wallets (O1-O9)
        supervisor.spawn("payout-wallet", WalletPayer(service).run())
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
    settings = load(PayoutSettings)
    return service_main("payout", settings, partial(compose_payout, settings), needs_brokers=True)
