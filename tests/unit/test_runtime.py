"""The supervised runtime (jackpot.platform.runtime): a part that ends or raises turns health
NOT_SERVING before anything is stopped, names itself, and the service exits 1 within 2 s even
when a stop step hangs; a stop signal runs the stop steps in order and exits 0; a composition
root that fails while starting exits 1."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import pytest
from structlog.testing import capture_logs

from jackpot.platform.kafka import wait_for_brokers
from jackpot.platform.runtime import FAILURE_STOP_SECONDS, Supervisor, serve
from tests.polling import eventually

pytestmark = pytest.mark.unit


class FakeHealth:
    def __init__(self, journal: list[str]) -> None:
        self.journal = journal
        self.serving = True

    async def set_serving(self, serving: bool) -> None:
        self.serving = serving
        self.journal.append(f"serving={serving}")


async def serving(
    compose: Callable[[Supervisor], Awaitable[None]], stop: asyncio.Event
) -> asyncio.Task[int]:
    """``serve`` running in a task, once its composition root has returned (so a fault or a stop
    signal given next meets the service composed)."""
    composed = asyncio.Event()

    async def composing(supervisor: Supervisor) -> None:
        await compose(supervisor)
        composed.set()

    task = asyncio.create_task(serve("test", composing, stop))
    await asyncio.wait_for(composed.wait(), 2.0)
    return task


async def failing(after: asyncio.Event, error: BaseException | None) -> None:
    await after.wait()
    if error is not None:
        raise error


async def test_a_part_that_raises_turns_health_off_then_stops_the_rest_and_exits_1() -> None:
    journal: list[str] = []
    fail = asyncio.Event()
    health = FakeHealth(journal)
    worker_cancelled = asyncio.Event()
    seen: list[Supervisor] = []

    async def worker() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            worker_cancelled.set()

    async def stop_step() -> None:
        journal.append(f"stop grpc while serving={health.serving}")

    async def compose(supervisor: Supervisor) -> None:
        seen.append(supervisor)
        supervisor.health(health)
        supervisor.on_stop("grpc", stop_step)
        supervisor.spawn("publisher", failing(fail, RuntimeError("broker gone")))
        supervisor.spawn("watchdog", worker())

    task = await serving(compose, asyncio.Event())
    fail.set()
    assert await asyncio.wait_for(task, 2.0) == 1
    assert journal == ["serving=False", "stop grpc while serving=False"]
    assert worker_cancelled.is_set()
    (supervisor,) = seen
    assert supervisor.failed is not None
    part, error = supervisor.failed
    assert part == "publisher"
    assert repr(error) == "RuntimeError('broker gone')"


async def test_a_part_that_ends_without_an_error_is_a_failure_too() -> None:
    ended = asyncio.Event()
    ended.set()

    async def compose(supervisor: Supervisor) -> None:
        supervisor.spawn("consumer", failing(ended, None))

    assert await asyncio.wait_for(serve("test", compose, asyncio.Event()), 2.0) == 1


async def test_a_hanging_stop_step_does_not_keep_a_failed_service_alive() -> None:
    fail = asyncio.Event()

    async def hangs() -> None:
        await asyncio.Event().wait()

    async def compose(supervisor: Supervisor) -> None:
        supervisor.on_stop("drain", hangs)
        supervisor.spawn("processor", failing(fail, ValueError("fenced")))

    task = await serving(compose, asyncio.Event())
    started = time.monotonic()
    fail.set()
    assert await asyncio.wait_for(task, 2.0) == 1
    assert time.monotonic() - started < FAILURE_STOP_SECONDS + 0.4


def journaled(journal: list[str], name: str) -> Callable[[], Awaitable[None]]:
    """A stop step that writes its name into ``journal`` when it runs."""

    async def run() -> None:
        journal.append(name)

    return run


async def test_a_stop_signal_runs_the_steps_in_order_and_exits_0() -> None:
    journal: list[str] = []
    stop = asyncio.Event()

    async def compose(supervisor: Supervisor) -> None:
        supervisor.health(FakeHealth(journal))
        for name in ("grpc", "processor", "audit"):
            supervisor.on_stop(name, journaled(journal, name))
        supervisor.spawn("processor", asyncio.Event().wait())

    task = await serving(compose, stop)
    stop.set()
    assert await asyncio.wait_for(task, 2.0) == 0
    assert journal == ["grpc", "processor", "audit"]  # health is the grpc step's to turn off


async def test_a_composition_root_that_fails_at_start_exits_1_and_stops_what_started() -> None:
    journal: list[str] = []

    async def stop_step() -> None:
        journal.append("stopped")

    async def compose(supervisor: Supervisor) -> None:
        supervisor.on_stop("audit", stop_step)
        raise ConnectionError("no broker")

    assert await asyncio.wait_for(serve("test", compose, asyncio.Event()), 2.0) == 1
    assert journal == ["stopped"]


async def test_steps_added_last_run_after_every_other_step() -> None:
    """The access log's stop is added first (the edge is built first) yet runs last: every step
    before it may still write to it."""
    journal: list[str] = []
    stop = asyncio.Event()

    async def compose(supervisor: Supervisor) -> None:
        supervisor.on_stop("audit", journaled(journal, "audit"), last=True)
        supervisor.on_stop("grpc", journaled(journal, "grpc"))
        supervisor.on_stop("processor", journaled(journal, "processor"))
        supervisor.spawn("processor", asyncio.Event().wait())

    task = await serving(compose, stop)
    stop.set()
    assert await asyncio.wait_for(task, 2.0) == 0
    assert journal == ["grpc", "processor", "audit"]


async def test_a_stop_step_ends_a_part_before_closing_what_it_reads() -> None:
    journal: list[str] = []
    stop = asyncio.Event()

    async def follow() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            journal.append("view ended")

    async def compose(supervisor: Supervisor) -> None:
        async def stop_view() -> None:
            await supervisor.end_part("view")
            journal.append("consumer closed")

        supervisor.on_stop("view", stop_view)
        supervisor.spawn("view", follow())

    task = await serving(compose, stop)
    stop.set()
    assert await asyncio.wait_for(task, 2.0) == 0
    assert journal == ["view ended", "consumer closed"]


async def test_a_service_waiting_for_its_brokers_says_so_and_a_stop_ends_the_wait() -> None:
    """No broker listens on port 1: the wait is logged at each try, with a growing back-off,
    and a stop signal ends it (False: not started), well before its next try."""
    stop = asyncio.Event()
    with capture_logs() as logged:

        def tries() -> list[dict[str, object]]:
            return [e for e in logged if e["event"] == "service_waiting_for_brokers"]

        waiting = asyncio.create_task(
            wait_for_brokers({"bootstrap_servers": "127.0.0.1:1"}, stop, "test", first_seconds=0.05)
        )
        await eventually(lambda: len(tries()) >= 3, "the service did not keep trying")
        stop.set()
        assert await asyncio.wait_for(waiting, 5) is False
    assert [e["retry_in_seconds"] for e in tries()[:3]] == [0.05, 0.1, 0.2]
    assert all("Unable to bootstrap" in str(e["error"]) for e in tries())
    assert not [e for e in logged if e["event"] == "service_brokers_answer"]
