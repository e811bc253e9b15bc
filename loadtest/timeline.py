"""What the load test samples once a second while the floor plays, for the report's time charts.

Each sample (a dict, kept in report.json's ``timeline``) is the rolling window of the last
:data:`WINDOW_SECONDS` that ends at ``t`` (seconds from the first step's start): the floor's rounds,
device events and refusals per second over that window (what the counters rose by in it, divided
by its length), the lock-to-sign p50/p95/p99 of the rounds whose sign moved in it (null only when
no sign moved in the whole window), and, as read at ``t`` from the services' /metrics endpoints,
the gateways' spool depth, the pot's and payout's consumer lag (summed over their partitions),
each service's seconds in full garbage collections since it started, and the pot's and the
payout's batch transactions since they started (how many, their seconds, those over 0.2 s).
A window never reaches back before its step's first sample: the first seconds of a step are
averaged over the seconds the step has played.

The rates come from the gateways' counters, so a simulator of several processes is followed
too. Lock-to-sign is timed by the simulator itself, which plays in processes of its own
(:class:`~loadtest.multifloor.MultiFloor`): each sends the samples it has taken every
``SEND_SECONDS``, stamped with ``time.monotonic()`` (one clock for every process of the
machine), and the timeline places them in its windows by that stamp.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import urllib.request
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any

from loadtest.multifloor import Stamped

# The floor's metrics endpoints are local: never through a proxy the environment may name.
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))
LAG = "jackpot_consumer_lag_records"
SPOOL = "jackpot_gateway_spool_depth_records"
DEVICE_EVENTS = "jackpot_gateway_device_events_total"
ROUNDS = 'jackpot_gateway_device_events_total{type="hand_results"}'
REJECTS = "jackpot_gateway_rejects_total"
# the seconds each service's event loop stood still in full garbage collections (platform/heap.py)
FULL_GC = 'jackpot_gc_pause_seconds_sum{generation="2"}'
# the exactly-once processors' batch transactions (produce, offsets, commit), and those of them
# over 0.2 s: where a window's stall is the pot's transaction and where it is not
TRANSACTIONS = 'jackpot_transaction_seconds_count{kind="batch"}'
TRANSACTIONS_SECONDS = 'jackpot_transaction_seconds_sum{kind="batch"}'
TRANSACTIONS_FAST = 'jackpot_transaction_seconds_bucket{kind="batch",le="0.2"}'
# Tables that start together finish their rounds together, so at one-second resolution a second
# holds one batch of rounds or two (a saw-tooth of 40 and 80 at a steady 60 rounds/s), and a
# second in which few signs moved has no lock-to-sign at all. Five seconds holds at least two
# rounds of every table at the load test's slowest rate (30 rounds a minute: one every 2 s).
WINDOW_SECONDS = 5.0
RATES = ("rounds_per_second", "device_events_per_second", "rejects_per_second")

# (time.monotonic(), rounds, device events, rejects): the gateways' counters at one moment
Counts = tuple[float, float, float, float]


def metric_sum(text: str, name: str) -> float:
    """The sum of every sample of ``name`` (all label sets) in a Prometheus text exposition."""
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name) and line[len(name) : len(name) + 1] in (" ", "{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def _transactions(page: str) -> dict[str, float]:
    """A processor's batch transactions so far: how many, their seconds, those over 0.2 s."""
    count = metric_sum(page, TRANSACTIONS)
    return {
        "count": count,
        "seconds": round(metric_sum(page, TRANSACTIONS_SECONDS), 4),
        "over_200_ms": count - metric_sum(page, TRANSACTIONS_FAST),
    }


def scrape(port: int) -> str:
    """A local service's /metrics page ("" when it does not answer)."""
    with (
        contextlib.suppress(OSError),
        _NO_PROXY.open(f"http://127.0.0.1:{port}/metrics", timeout=2) as page,
    ):
        text: str = page.read().decode()
        return text
    return ""


def percentiles_ms(seconds: list[float]) -> dict[str, float | None]:
    """p50/p95/p99 in ms (as the step's summary ranks them); None for each when there are none."""
    ordered = sorted(seconds)

    def pct(p: float) -> float | None:
        if not ordered:
            return None
        return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000, 2)

    return {"p50_ms": pct(0.50), "p95_ms": pct(0.95), "p99_ms": pct(0.99)}


def window_ticks(interval: float) -> int:
    """How many sampling intervals make :data:`WINDOW_SECONDS` (at least one)."""
    return max(1, round(WINDOW_SECONDS / interval))


class StepWindow:
    """One step's rolling window: its counters at the last ``ticks`` samples (and the one before)
    and the lock-to-sign samples stamped since the oldest of them."""

    def __init__(self, baseline: Counts, ticks: int) -> None:
        self.counts: deque[Counts] = deque([baseline], maxlen=ticks + 1)
        self.locks: list[Stamped] = []

    def add_locks(self, stamped: Iterable[Stamped]) -> None:
        self.locks.extend(stamped)

    def advance(self, now: Counts) -> dict[str, Any]:
        """The rates and lock-to-sign of the window that ends at ``now``."""
        self.counts.append(now)
        first = self.counts[0]
        start, end = first[0], now[0]
        self.locks = [lock for lock in self.locks if lock[0] > start]  # the window moved past
        elapsed = max(end - start, 1e-9)
        out: dict[str, Any] = {
            name: round((now[n] - first[n]) / elapsed, 2) for n, name in enumerate(RATES, 1)
        }
        out["lock_to_sign"] = percentiles_ms([s for at, s in self.locks if at <= end])
        return out


# ------------------------------------------------------------------------------- the sampler


class Timeline:
    """Samples of the run, one a second; ``following(step, lock_to_sign)`` samples one step."""

    def __init__(self, metrics_ports: Mapping[str, int], interval: float = 1.0) -> None:
        self.metrics_ports = dict(metrics_ports)
        self.interval = interval
        self.started = time.monotonic()
        self.samples: list[dict[str, Any]] = []

    @contextlib.asynccontextmanager
    async def following(
        self, step: int, lock_to_sign: Callable[[], list[Stamped]] | None = None
    ) -> AsyncIterator[None]:
        """Sample once a second while the step plays. Rounds, device events and rejects come
        from the gateways' /metrics; lock-to-sign from ``lock_to_sign``
        (:meth:`~loadtest.multifloor.MultiFloor.lock_to_sign`), which hands over the samples
        taken since its last call (without it the timeline's lock-to-sign stays null; the steps
        still have theirs)."""
        sampler = asyncio.create_task(self._sample(step, lock_to_sign or list))
        try:
            yield
        finally:
            sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sampler

    async def _sample(self, step: int, lock_to_sign: Callable[[], list[Stamped]]) -> None:
        window: StepWindow | None = None
        while True:
            await asyncio.sleep(self.interval)
            pages = await asyncio.gather(
                *(asyncio.to_thread(scrape, port) for port in self.metrics_ports.values())
            )
            by_service = dict(zip(self.metrics_ports, pages, strict=True))
            gateways = [page for name, page in by_service.items() if name.startswith("gateway")]
            now = time.monotonic()
            counts = (
                now,
                sum(metric_sum(page, ROUNDS) for page in gateways),
                sum(metric_sum(page, DEVICE_EVENTS) for page in gateways),
                sum(metric_sum(page, REJECTS) for page in gateways),
            )
            if window is None:  # the counters' values before this step: a baseline, no sample
                window = StepWindow(counts, window_ticks(self.interval))
                window.add_locks(lock_to_sign())
                continue
            window.add_locks(lock_to_sign())
            self.samples.append(
                {
                    "t": round(now - self.started, 2),
                    "step": step,
                    **window.advance(counts),
                    "spool_depth_records": sum(metric_sum(page, SPOOL) for page in gateways),
                    "consumer_lag_records": {
                        name: metric_sum(by_service.get(name, ""), LAG)
                        for name in ("pot", "payout")
                    },
                    "full_gc_seconds": {  # since each service started
                        name: round(metric_sum(page, FULL_GC), 4)
                        for name, page in by_service.items()
                    },
                    "transactions": {  # since each processor started
                        name: _transactions(by_service.get(name, "")) for name in ("pot", "payout")
                    },
                }
            )
