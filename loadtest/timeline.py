"""What the load test samples once a second while the floor plays, for the report's time charts.

Each sample (a dict, kept in report.json's ``timeline``) is the second just gone: the floor's
rounds and device events per second, refusals per second and the lock-to-sign percentiles of the
rounds whose sign moved in that second (from the running step's ``FloorStats``), and from the
services' /metrics endpoints the gateways' spool depth and the pot's and payout's consumer lag
(summed over their partitions). ``t`` counts seconds from the first step's start.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import urllib.request
from collections.abc import AsyncIterator, Mapping
from typing import Any

from jackpot.sim.floor import FloorStats

# The floor's metrics endpoints are local: never through a proxy the environment may name.
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))
LAG = "jackpot_consumer_lag_records"
SPOOL = "jackpot_gateway_spool_depth_records"
DEVICE_EVENTS = "jackpot_gateway_device_events_total"
ROUNDS = 'jackpot_gateway_device_events_total{type="hand_results"}'
REJECTS = "jackpot_gateway_rejects_total"


def metric_sum(text: str, name: str) -> float:
    """The sum of every sample of ``name`` (all label sets) in a Prometheus text exposition."""
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name) and line[len(name) : len(name) + 1] in (" ", "{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


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
    ordered = sorted(seconds)

    def pct(p: float) -> float | None:
        if not ordered:
            return None
        return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000, 2)

    return {"p50_ms": pct(0.50), "p95_ms": pct(0.95), "p99_ms": pct(0.99)}


class Timeline:
    """Samples of the run, one a second; ``following(floor, step)`` samples one step."""

    def __init__(self, metrics_ports: Mapping[str, int], interval: float = 1.0) -> None:
        self.metrics_ports = dict(metrics_ports)
        self.interval = interval
        self.started = time.monotonic()
        self.samples: list[dict[str, Any]] = []

    @contextlib.asynccontextmanager
    async def following(self, step: int, stats: FloorStats | None = None) -> AsyncIterator[None]:
        """Sample once a second while the step plays. Rounds, device events and rejects come
        from the gateways' /metrics (so a simulator of several processes is followed too);
        lock-to-sign over time only from ``stats`` of an in-process floor (else per step)."""
        sampler = asyncio.create_task(self._sample(step, stats))
        try:
            yield
        finally:
            sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sampler

    async def _sample(self, step: int, stats: FloorStats | None) -> None:
        last: tuple[float, float, float, float, int] | None = None
        while True:
            await asyncio.sleep(self.interval)
            pages = await asyncio.gather(
                *(asyncio.to_thread(scrape, port) for port in self.metrics_ports.values())
            )
            by_service = dict(zip(self.metrics_ports, pages, strict=True))
            gateways = [page for name, page in by_service.items() if name.startswith("gateway")]
            now = time.monotonic()
            locks = stats.latencies.samples.get("lock_to_sign", []) if stats is not None else []
            counts = (
                now,
                sum(metric_sum(page, ROUNDS) for page in gateways),
                sum(metric_sum(page, DEVICE_EVENTS) for page in gateways),
                sum(metric_sum(page, REJECTS) for page in gateways),
                len(locks),
            )
            if last is None:  # the counters' values before this step: a baseline, no sample
                last = counts
                continue
            elapsed = max(now - last[0], 1e-9)
            self.samples.append(
                {
                    "t": round(now - self.started, 2),
                    "step": step,
                    "rounds_per_second": round((counts[1] - last[1]) / elapsed, 2),
                    "device_events_per_second": round((counts[2] - last[2]) / elapsed, 2),
                    "rejects_per_second": round((counts[3] - last[3]) / elapsed, 2),
                    "lock_to_sign": percentiles_ms(locks[last[4] :]),
                    "spool_depth_records": sum(
                        metric_sum(page, SPOOL)
                        for name, page in by_service.items()
                        if name.startswith("gateway")
                    ),
                    "consumer_lag_records": {
                        name: metric_sum(by_service.get(name, ""), LAG)
                        for name in ("pot", "payout")
                    },
                }
            )
            last = counts
