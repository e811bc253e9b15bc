"""`jackpot pot`: the pot service's composition root.

Reads :class:`~jackpot.pot.settings.PotSettings` from JACKPOT_* variables, configures logging,
serves Prometheus metrics, creates the topics it needs, then runs the processing service, the
state view and the gRPC API (with health and reflection) under the supervised runtime
(``jackpot.platform.runtime``) until SIGTERM or SIGINT, and stops them gracefully: the API first
(calls in flight may finish), then processing (the transaction in flight completes and the
consumer leaves its group), then the view. A part that fails turns health NOT_SERVING and exits 1.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from functools import partial

import structlog
from prometheus_client import REGISTRY, CollectorRegistry

from jackpot.platform.audit import AuditLog
from jackpot.platform.authz import Authorizer
from jackpot.platform.grpc_server import GrpcServer
from jackpot.platform.kafka import ensure_topics
from jackpot.platform.logging import configure_logging
from jackpot.platform.metrics import serve_metrics
from jackpot.platform.runtime import Supervisor, run_service
from jackpot.platform.settings import load_or_exit
from jackpot.pot.api import SERVICE_NAME, CommandPublisher, PotApi
from jackpot.pot.metrics import PotMetrics
from jackpot.pot.service import PotService
from jackpot.pot.settings import PotSettings
from jackpot.pot.view import PotStateView
from jackpot.topics import (
    AUDIT,
    AWARDS,
    DEAD_LETTER,
    LEDGER,
    POT_STATE,
    POT_UPDATES,
    TABLE_EVENTS,
    TopicSpec,
)

log = structlog.get_logger("jackpot.pot.main")

STOP_TIMEOUT_SECONDS = 30.0


def pot_topics(settings: PotSettings) -> list[TopicSpec]:
    """The topics the pot service reads and writes, named as the settings say."""

    def named(spec: TopicSpec, name: str) -> TopicSpec:
        partitions = settings.topic_partitions or spec.partitions
        if spec is DEAD_LETTER:
            partitions = spec.partitions
        return dataclasses.replace(spec, name=name, partitions=partitions)

    return [
        named(TABLE_EVENTS, settings.table_events_topic),
        named(POT_UPDATES, settings.pot_updates_topic),
        named(AWARDS, settings.awards_topic),
        named(LEDGER, settings.ledger_topic),
        named(POT_STATE, settings.state_topic),
        named(DEAD_LETTER, settings.dead_letter_topic),
        dataclasses.replace(AUDIT, name=settings.access.audit_topic),
    ]


class PotServer:
    """Everything ``jackpot pot`` runs, in one object: tests start it in-process the same way."""

    def __init__(self, settings: PotSettings, metrics: PotMetrics) -> None:
        self.settings = settings
        self.view = PotStateView(settings)
        self.publisher = CommandPublisher(settings)
        self.service = PotService(settings, metrics)
        security = settings.kafka_options()
        self.audit = AuditLog(
            security.pop("bootstrap_servers"),
            settings.access.audit_topic,
            f"pot-api:{settings.instance_id}",
            security,
        )
        self.api = PotApi(
            settings, self.view, self.publisher, Authorizer(settings.access, self.audit)
        )
        self.server = GrpcServer(
            settings.grpc_address,
            [self.api.register],
            [SERVICE_NAME],
            settings.access.tls.server_credentials(),
            settings.access.health_address,
        )
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def grpc_port(self) -> int:
        return int(self.server.port)

    async def start(self) -> None:
        settings = self.settings
        if settings.create_topics:
            options = settings.kafka_options()
            await ensure_topics(
                options.pop("bootstrap_servers"),
                pot_topics(settings),
                settings.replication_factor,
                **options,
            )
        await self.view.start()
        await self.publisher.start()
        await self.audit.start()
        await self.server.start()
        self._tasks = {
            asyncio.create_task(self.service.run(), name="pot-service"),
            asyncio.create_task(self.view.run(), name="pot-view"),
        }
        log.info(
            "pot_serving",
            grpc_port=self.grpc_port,
            metrics_port=settings.metrics_port,
            instance=settings.instance_id,
        )

    @property
    def tasks(self) -> list[asyncio.Task[None]]:
        """The processing service and the state view: the parts a supervisor watches."""
        return list(self._tasks)

    async def stop(self, grace_seconds: float | None = None) -> None:
        """API first (calls in flight may finish), then processing, then the view."""
        self.view.end_watches()
        grace = self.settings.grpc_grace_seconds if grace_seconds is None else grace_seconds
        await self.server.stop(grace)
        await self.service.stop()
        for task in self._tasks:
            if task.get_name() == "pot-view":
                task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(task, STOP_TIMEOUT_SECONDS)
        await self.view.stop()
        await self.publisher.stop()
        await self.audit.stop()
        log.info("pot_stopped")


async def compose_pot(
    settings: PotSettings, supervisor: Supervisor, registry: CollectorRegistry = REGISTRY
) -> None:
    """Start the pot service's parts under ``supervisor``; :meth:`PotServer.stop` stops them."""
    server = PotServer(settings, PotMetrics(registry))
    supervisor.health(server.server)
    supervisor.on_stop("pot", lambda: server.stop(supervisor.grace(settings.grpc_grace_seconds)))
    await server.start()
    for task in server.tasks:
        supervisor.watch(task)
    supervisor.watch(server.audit.writer)


def main() -> int:
    settings = load_or_exit(PotSettings)
    configure_logging(settings.log_level, settings.log_json)
    serve_metrics(settings.metrics_port, settings.metrics_host)
    return run_service("pot", partial(compose_pot, settings), settings.tracing)
