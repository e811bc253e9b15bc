"""`jackpot pot`: the composition root of the pot service (every instance serves the API; the
partitions of the table events are shared among the instances, see :mod:`jackpot.pot.service`).

Reads :class:`~jackpot.pot.settings.PotSettings` from JACKPOT_* variables, configures logging,
serves Prometheus metrics, creates the topics it needs, then runs the processing service, the
state view and the gRPC API (with health and reflection) under the supervised runtime
(``jackpot.platform.runtime``) until SIGTERM or SIGINT, and stops them gracefully: the watch
streams end and the API stops (calls in flight may finish), then processing (the transaction in
flight completes and the consumer leaves its group), then the view, the publisher, and the audit
log last. A part that fails turns health NOT_SERVING and exits 1.
"""

from __future__ import annotations

from functools import partial

import structlog
from prometheus_client import REGISTRY, CollectorRegistry

from jackpot.platform.grpc_edge import access_logged_grpc_edge
from jackpot.platform.kafka import ensure_service_topics
from jackpot.platform.runtime import Supervisor, service_main
from jackpot.platform.settings import load
from jackpot.pot.api import SERVICE_NAME, CommandPublisher, PotApi
from jackpot.pot.metrics import PotMetrics
from jackpot.pot.service import PotService
from jackpot.pot.settings import PotSettings
from jackpot.pot.view import PotStateView

log = structlog.get_logger("jackpot.pot.main")


async def compose_pot(
    settings: PotSettings, supervisor: Supervisor, registry: CollectorRegistry = REGISTRY
) -> None:
    """Build and start the pot service's parts under ``supervisor``: the processing service, the
    state view, the admin commands' publisher and the PotService API."""
    await ensure_service_topics(settings, settings.replication_factor)
    view = PotStateView(settings)
    publisher = CommandPublisher(settings)
    edge = await access_logged_grpc_edge(
        supervisor, settings, f"pot-api:{settings.processor.instance_id}"
    )
    service = PotService(
        settings, PotMetrics(registry), access_log=edge.access_log
    )  # R14 repairs go there
    api = PotApi(settings, view, publisher, edge.authorizer)

    async def stop_view() -> None:
        await supervisor.end_part("pot-view")  # it would poll a stopped consumer
        await view.stop()

    supervisor.on_stop("watches", api.end_streams)
    server = edge.serve(api, grace_seconds=settings.grpc_grace_seconds)
    supervisor.on_stop("processor", service.stop)  # the transaction in flight completes
    supervisor.on_stop("view", stop_view)
    supervisor.on_stop("publisher", publisher.stop)
    await view.start()
    await publisher.start()
    await server.start()
    supervisor.spawn("pot-service", service.run())
    supervisor.spawn(  # readiness: NOT_SERVING while the brokers are gone; liveness stays
        "pot-health", service.report_serving(partial(server.set_service_serving, SERVICE_NAME))
    )
    supervisor.spawn("pot-view", view.run())
    log.info(
        "pot_serving",
        grpc_port=server.port,
        metrics_port=settings.metrics_port,
        instance=settings.processor.instance_id,
    )


def main() -> int:
    settings = load(PotSettings)
    return service_main("pot", settings, partial(compose_pot, settings), needs_brokers=True)
