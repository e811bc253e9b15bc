"""`make bench`'s pipeline figures from a load test's report (issue 26): which steps count, the
highest rate within the 100 ms target, and the services' CPU per round without the broker."""

from __future__ import annotations

from typing import Any

import pytest
from loadtest.bench import pipeline_figures, services_cpu_ms

pytestmark = pytest.mark.unit


def step(rate: float, p99: float, cpu: dict[str, float]) -> dict[str, Any]:
    hop = {"p50_ms": 1.0, "p95_ms": 1.0, "p99_ms": p99, "count": 10}
    return {
        "rounds_per_second": rate,
        "latency": {"lock_to_sign": {"p50_ms": p99 / 2, "p99_ms": p99}},
        "hops": {"traced_lock_to_sign": hop},
        "hops_check": {},
        "cost": {name: {"cpu_ms_per_1000_rounds": ms} for name, ms in cpu.items()},
    }


def report(*steps: dict[str, Any], ceiling: float = 1000.0) -> dict[str, Any]:
    return {
        "limit_p99_ms": 250.0,
        "device_protocol": "round",
        "simulator_ceiling": {"rounds_per_second": ceiling},
        "steps": list(steps),
    }


def test_the_services_cpu_leaves_the_broker_out() -> None:
    assert services_cpu_ms(step(10, 50, {"pot": 1000, "gateway-a": 1500, "kafka": 9000})) == 2.5
    assert services_cpu_ms(step(10, 50, {"kafka": 9000})) is None


def test_a_step_over_the_target_counts_but_not_within_100_ms() -> None:
    figures = pipeline_figures(
        report(step(100, 60, {"pot": 2000}), step(200, 180, {"pot": 3000}), step(400, 300, {})),
        pot_events_per_round=2.0,
    )
    assert figures["rounds_per_second"] == 200
    assert figures["rounds_per_second_within_100ms"] == 100
    assert figures["services_cpu_ms_per_round"] == 3.0
    assert [s["counted"] for s in figures["steps"]] == [True, True, False]


def test_a_step_without_the_simulator_headroom_does_not_count() -> None:
    figures = pipeline_figures(report(step(100, 60, {}), step(300, 80, {}), ceiling=500.0), 2.0)
    assert figures["rounds_per_second"] == 100  # 500 / 300 is under 2x headroom
    assert figures["rounds_per_second_within_100ms"] == 100
