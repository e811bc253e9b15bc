"""The one supervised runtime of every ``jackpot <service>``: its parts, its health, its exit.

A service's composition root (``compose_<service>`` in its ``main`` module) builds its
components, starts them, and tells the :class:`Supervisor` three things: the parts to watch (the
asyncio tasks that do the work: a processor, a publisher, a watchdog, a feed, the access log's
writer), the gRPC servers whose health reports for the service, and the steps that stop it
gracefully, in order (the access-logged gRPC edge,
:class:`jackpot.platform.grpc_edge.AccessLoggedEdge`, adds its own: the server's where it is built,
the access log's last). Then :func:`serve` waits for one of two things:

- SIGTERM or SIGINT (or the ``stop`` event): the stop steps run, each within its budget, the
  parts still running are cancelled, and the exit status is 0;
- a part that ends or raises on its own: the service can no longer do its job, so its health
  turns NOT_SERVING at once, the part and its error are logged (``service_part_failed``), the
  stop steps run within :data:`FAILURE_STOP_SECONDS` in all, and the exit status is 1, so that
  Kubernetes (or the demo's supervisor) restarts it. No process keeps answering SERVING with a
  dead task.

A composition root that raises while starting is the same failure: logged, stopped, exit 1.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from jackpot.platform import heap
from jackpot.platform.kafka import wait_for_brokers
from jackpot.platform.logging import configure_logging
from jackpot.platform.metrics import serve_metrics
from jackpot.platform.service_settings import RuntimeSettings, ServiceSettings, TracingSettings
from jackpot.platform.settings import default_instance_id
from jackpot.platform.tracing import configure_tracing, shutdown_tracing

log = structlog.get_logger("jackpot.runtime")

STOP_STEP_SECONDS = 30.0  # a graceful stop step after SIGTERM (Kubernetes grants 30 s by default)
FAILURE_STOP_SECONDS = 1.5  # everything after a failure: the process exits within 2 s
FAILURE_GRACE_SECONDS = 0.3  # what one step may grant calls in flight after a failure
SOFTWARE_NOT_VERIFIED_EXIT = 3  # R6: the files differ from the build's manifest


class Health(Protocol):
    """What reports the service's health (``GrpcServer``)."""

    async def set_serving(self, serving: bool) -> None: ...


@dataclass(frozen=True, slots=True)
class StopStep:
    name: str
    run: Callable[[], Awaitable[object]]


class Supervisor:
    """Watches a service's parts; the first to end on its own stops the service (exit 1)."""

    def __init__(self, service: str) -> None:
        self.service = service
        self._parts: dict[asyncio.Task[Any], str] = {}
        self._health: list[Health] = []
        self._steps: list[StopStep] = []
        self._last_steps: list[StopStep] = []
        self.failed: tuple[str, BaseException | None] | None = None
        self._log = log.bind(service=service)

    def spawn(self, name: str, work: Coroutine[Any, Any, object]) -> asyncio.Task[Any]:
        """Run ``work`` as an essential part named ``name``."""
        task = asyncio.create_task(work, name=name)
        self.watch(task)
        return task

    def watch(self, task: asyncio.Task[Any], name: str = "") -> None:
        """Watch a task a component started itself (its name names the part)."""
        self._parts[task] = name or task.get_name()

    def health(self, server: Health) -> None:
        self._health.append(server)

    def grace(self, seconds: float) -> float:
        """A stop step's grace period: ``seconds`` after a signal, short after a failure."""
        return min(seconds, FAILURE_GRACE_SECONDS) if self.failed else seconds

    def on_stop(
        self, name: str, step: Callable[[], Awaitable[object]], *, last: bool = False
    ) -> None:
        """A graceful stop step; steps run in the order they were added, those added ``last``
        after all the others (the access log: every step before it may still write to it)."""
        (self._last_steps if last else self._steps).append(StopStep(name, step))

    async def end_part(self, name: str) -> None:
        """Cancel the part ``name`` (one that runs until cancelled) and wait until it has ended:
        a stop step's first move, before what the part reads from is closed under it."""
        tasks = [task for task, part in self._parts.items() if part == name]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)

    @property
    def health_servers(self) -> list[Health]:
        return list(self._health)

    @property
    def parts(self) -> list[str]:
        return sorted(self._parts.values())

    async def run(self, stop: asyncio.Event) -> int:
        """Until ``stop`` is set (0) or a part ends on its own (1); then stop everything."""
        stopper = asyncio.create_task(stop.wait(), name="stop-signal")
        try:
            done, _ = await asyncio.wait(
                {*self._parts, stopper}, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            stopper.cancel()
        ended = [task for task in done if task in self._parts]
        if not ended:
            await self.shutdown(failed=False)
            return 0
        task = ended[0]
        error = None if task.cancelled() else task.exception()
        await self.fail(self._parts[task], error)
        return 1

    async def fail(self, part: str, error: BaseException | None) -> None:
        """``part`` cannot go on: NOT_SERVING now, say why, stop within the failure budget."""
        self.failed = (part, error)
        await self._not_serving()
        self._log.error(
            "service_part_failed",
            part=part,
            error=repr(error) if error is not None else "ended without an error",
            exc_info=error,
        )
        await self.shutdown(failed=True)

    async def shutdown(self, failed: bool) -> None:
        """The stop steps in order (each bounded), then cancel whatever still runs."""
        started = time.monotonic()
        budget = FAILURE_STOP_SECONDS if failed else None
        if not failed:
            self._log.info("service_stopping", parts=self.parts)
        for step in [*self._steps, *self._last_steps]:
            left = STOP_STEP_SECONDS if budget is None else budget - (time.monotonic() - started)
            if left <= 0:
                self._log.warning("service_stop_step_skipped", step=step.name)
                continue
            try:
                await asyncio.wait_for(step.run(), left)
            except Exception as error:
                self._log.warning("service_stop_step_failed", step=step.name, error=repr(error))
        await self._cancel_parts(0.2 if failed else 5.0)
        self._log.info(
            "service_stopped", failed=failed, seconds=round(time.monotonic() - started, 3)
        )

    async def _not_serving(self) -> None:
        for server in self._health:
            with contextlib.suppress(Exception):
                await server.set_serving(False)

    async def _cancel_parts(self, wait_seconds: float) -> None:
        running = [task for task in self._parts if not task.done()]
        for task in running:
            task.cancel()
        if running:
            await asyncio.wait(running, timeout=wait_seconds)


Compose = Callable[[Supervisor], Awaitable[None]]


async def serve(service: str, compose: Compose, stop: asyncio.Event) -> int:
    """Compose the service under a supervisor and run it until ``stop`` or a failure."""
    supervisor = Supervisor(service)
    try:
        await compose(supervisor)
    except Exception as error:
        await supervisor.fail("start", error)
        return 1
    heap.settle()  # what the service holds for good, out of the full collections' scans
    return await supervisor.run(stop)


def authenticate_software(service: str, approved: str = "") -> bool:
    """R6: the installed files against the build's manifest, and the manifest's digest against
    the one the regulator ``approved`` (when set), before anything starts."""
    from prometheus_client import Gauge

    from jackpot.platform.manifest import package_root, remember_verified, verify

    result = verify(package_root(), approved)
    if not result.ok:
        print(f"jackpot {service}: {result.describe()}", file=sys.stderr)
        log.error("software_not_verified", service=service, detail=result.describe())
        return False
    log.info("software_verified", service=service, digest=result.digest, root=str(result.root))
    remember_verified(result.digest)
    Gauge(
        "jackpot_software_info", "The verified software (its manifest's SHA-256)", ["digest"]
    ).labels(result.digest).set(1)
    return True


def run_service(
    service: str,
    compose: Compose,
    tracing: TracingSettings | None = None,
    runtime: RuntimeSettings | None = None,
    brokers: Mapping[str, Any] | None = None,
) -> int:
    """``serve`` on a fresh event loop (``runtime.event_loop``: uvloop unless asyncio is asked
    for); SIGTERM or SIGINT stops it gracefully. The exit status.

    A service whose software fails its manifest, or whose manifest is not the approved one
    (``runtime.approved_software_digest``), never starts (R6): one line, exit 3. With a
    ``tracing`` endpoint its spans are exported (``jackpot.platform.tracing``) until it stops.
    With ``brokers`` (their client options), it is composed only once one of them answers: a
    service that cannot start without Kafka waits for it, not exits (``wait_for_brokers``)."""
    runtime = runtime or RuntimeSettings()
    if not authenticate_software(service, runtime.approved_software_digest):
        return SOFTWARE_NOT_VERIFIED_EXIT
    if tracing is not None:
        name, _, instance = service.partition(":")
        configure_tracing(name, tracing, instance or default_instance_id())

    async def main() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        if brokers is not None and not await wait_for_brokers(brokers, stop, service):
            return 0  # stopped while it waited
        return await serve(service, compose, stop)

    try:
        with asyncio.Runner(loop_factory=loop_factory(runtime)) as runner:
            return runner.run(main())
    finally:
        shutdown_tracing()


def service_main(
    service: str, settings: ServiceSettings, compose: Compose, *, needs_brokers: bool = False
) -> int:
    """Every service's entry point once its settings are loaded: logging as they say, /metrics on
    their port (0: none), then :func:`run_service` (once the brokers answer, when the service
    ``needs_brokers`` to start). The exit status."""
    configure_logging(settings.log_level, settings.log_json)
    serve_metrics(settings.metrics_port, settings.metrics_host)
    heap.measure_pauses()
    brokers = settings.kafka_options() if needs_brokers else None
    return run_service(service, compose, settings.tracing, settings.runtime, brokers)


def loop_factory(runtime: RuntimeSettings) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop, or None (asyncio's own) when ``event_loop`` is ``asyncio``."""
    if runtime.event_loop == "asyncio":
        return None
    import uvloop  # a dependency of the package; imported here so that tools never load it

    return uvloop.new_event_loop
