"""A real Prometheus scraping a short floor (issue 18): what ``make monitor`` runs beside the demo.

Prometheus (Debian's package) loads the staged ``deploy/monitoring/prometheus.yml`` with the
PrometheusRule's alerts (``loadtest.monitor.stage``), scraping every second, while five tables
play. Through its HTTP API: every target is up; every query of the Grafana dashboard returns
series; every alert expression evaluates, and where it compares with a threshold its left-hand
side returns series carrying the labels the alert groups by; stopping the pot service sends
JackpotTablesClosed to pending (the gateways close betting, rule D5).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import signal
import subprocess
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from loadtest.free_ports import free_port
from loadtest.monitor import NAMESPACE, command, rule_groups, stage

from jackpot.platform.kafka import idempotent_producer
from jackpot.sim.floor import Floor
from jackpot.tools.demo_floor import (
    METRICS,
    PORTS,
    REPO,
    Demo,
    sim_config,
    wait_progressive_open,
)
from jackpot.tools.demo_tables import POKER_GROUP
from tests.polling import eventually

pytestmark = pytest.mark.integration

DASHBOARD = REPO / "deploy" / "monitoring" / "grafana-dashboard.json"
SCRAPE_INTERVAL = "1s"
# Grafana's $__rate_interval is at least four scrape intervals.
RATE_INTERVAL = "10s"
# Alerts on kube-state-metrics' series (the audit CronJob's Jobs): no Kubernetes on the local floor.
KUBE_STATE_ALERTS = {"JackpotAuditFailed", "JackpotAuditNotRun"}
THRESHOLD = re.compile(r"^(?P<lhs>.+?)\s*(==|!=|>=|<=|>|<)\s*[0-9.]+$", re.DOTALL)
GROUPED_BY = re.compile(r"\bby \(([^)]*)\)")
DEADLINE = 60.0

Query = Callable[[str], Awaitable[list[dict[str, Any]]]]


def dashboard_queries() -> list[tuple[str, str]]:
    """(panel title, expression) of every dashboard target, Grafana's variables substituted."""
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return [
        (
            panel["title"],
            target["expr"]
            .replace("$namespace", NAMESPACE)
            .replace("$__rate_interval", RATE_INTERVAL),
        )
        for panel in dashboard["panels"]
        for target in panel.get("targets", [])
    ]


def alert_rules() -> dict[str, str]:
    return {
        rule["alert"]: str(rule["expr"]).strip()
        for group in rule_groups()
        for rule in group["rules"]
        if "alert" in rule
    }


def left_of_threshold(expression: str) -> str:
    """``A > 500`` -> ``A``: what must return series for the alert to be able to fire."""
    found = THRESHOLD.match(expression)
    return found.group("lhs") if found else expression


async def poll(what: str, check: Callable[[], Awaitable[Any]], within: float = DEADLINE) -> Any:
    """``check()`` until it returns something truthy, or fail naming ``what``."""
    return await eventually(check, what, within, step=0.5)


async def inject_rejects(demo: Demo) -> None:
    """One event the pot refuses (MALFORMED) and one Hello the gateway refuses."""
    producer = idempotent_producer(demo.bootstrap)
    await producer.start()
    try:
        await producer.send_and_wait(
            demo.topic("table-events"), b"not a table event", key=POKER_GROUP.encode()
        )
    finally:
        await producer.stop()
    client = demo.device(demo.tables[1])
    with contextlib.suppress(Exception):
        await client.connect(credential="not-the-credential")
    with contextlib.suppress(Exception):
        await client.close()


@dataclass(frozen=True)
class FloorPorts:
    grpc: dict[str, int]
    metrics: dict[str, int]
    http: int


@pytest.fixture
def floor_ports() -> FloorPorts:
    """Free ports, not the demo's fixed ones: other floors may be running on this machine."""
    return FloorPorts(
        {name: free_port() for name in PORTS}, {name: free_port() for name in METRICS}, free_port()
    )


@pytest.fixture
def prometheus(floor_ports: FloorPorts, tmp_path: Path) -> Iterator[str]:
    """Debian's Prometheus on the staged config, scraping the floor's ports; its address."""
    listen = f"127.0.0.1:{free_port()}"
    config = stage(tmp_path, SCRAPE_INTERVAL, floor_ports.metrics)
    with open(tmp_path / "prometheus.log", "wb") as log:
        process = subprocess.Popen(
            command(config, listen, tmp_path / "data"), stdout=log, stderr=log
        )
    try:
        yield listen
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)


async def test_prometheus_scrapes_the_floor_and_the_alerts_evaluate(
    kafka_bootstrap: str,
    floor_ports: FloorPorts,
    prometheus: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", kafka_bootstrap)
    run_id = uuid.uuid4().hex[:8]
    demo = Demo(
        5,
        REPO / ".run" / "prometheus-test" / run_id,
        run_id,
        ports=floor_ports.grpc,
        metrics_ports=floor_ports.metrics,
        http_port=floor_ports.http,
    )
    await demo.create_topics()
    demo.start_services()
    floor: Floor | None = None
    playing: asyncio.Task[Any] | None = None
    try:
        async with aiohttp.ClientSession(f"http://{prometheus}") as http:

            async def api(path: str, **params: str) -> Any:
                async with http.get(f"/api/v1/{path}", params=params) as answer:
                    body = await answer.json()
                assert body["status"] == "success", (path, params, body)
                return body["data"]

            async def query(expression: str) -> list[dict[str, Any]]:
                data = await api("query", query=expression)
                result: list[dict[str, Any]] = data["result"]
                return result

            await demo.wait_healthy()
            await demo.create_groups()
            await wait_progressive_open(demo)
            floor = Floor(sim_config(demo, rig_rate=0.3, rounds_per_minute=90))
            playing = asyncio.create_task(floor.run())
            await inject_rejects(demo)
            await every_target_is_up(api)
            await every_dashboard_query_returns_series(query)
            await every_alert_expression_evaluates(query)
            await tables_closed_goes_pending_without_the_pot(demo, api)
    finally:
        if floor is not None and playing is not None:
            floor.stop()
            with contextlib.suppress(Exception):
                await playing
        demo.stop_services()


async def every_target_is_up(api: Callable[..., Awaitable[Any]]) -> None:
    async def all_up() -> list[dict[str, Any]] | None:
        active = (await api("targets", state="active"))["activeTargets"]
        healthy = [t for t in active if t["health"] == "up"]
        return active if len(active) == len(METRICS) == len(healthy) else None

    active = await poll("every demo target up", all_up)
    assert {t["labels"]["pod"] for t in active} == set(METRICS)
    assert {t["labels"]["job"] for t in active} == {"gateway", "pot", "payout", "display"}


async def every_one_returns_series(
    query: Query, expressions: dict[str, str]
) -> dict[str, list[dict[str, Any]]]:
    """Poll every expression until each returns series; fail naming all those that never do."""
    found: dict[str, list[dict[str, Any]]] = {}
    deadline = time.monotonic() + DEADLINE
    while len(found) < len(expressions) and time.monotonic() < deadline:
        for what, expression in expressions.items():
            if what not in found and (series := await query(expression)):
                found[what] = series
        await asyncio.sleep(0.5)
    empty = {what: expressions[what] for what in expressions if what not in found}
    assert not empty, f"no series within {DEADLINE:.0f} s: {json.dumps(empty, indent=1)}"
    return found


async def every_dashboard_query_returns_series(query: Query) -> None:
    queries = {f"{title} #{n}": expr for n, (title, expr) in enumerate(dashboard_queries())}
    await every_one_returns_series(query, queries)


async def every_alert_expression_evaluates(query: Query) -> None:
    sides = {}
    for alert, expression in alert_rules().items():
        await query(expression)  # evaluates without an error (status success)
        if alert not in KUBE_STATE_ALERTS:
            sides[alert] = left_of_threshold(expression)
    found = await every_one_returns_series(query, sides)
    for alert, series in found.items():
        for grouped in GROUPED_BY.findall(sides[alert]):
            wanted = {label.strip() for label in grouped.split(",")}
            for one in series:
                missing = wanted - set(one["metric"])
                assert not missing, f"{alert}: series {one['metric']} lacks labels {missing}"


async def tables_closed_goes_pending_without_the_pot(
    demo: Demo, api: Callable[..., Awaitable[Any]]
) -> None:
    demo.processes["pot"].send_signal(signal.SIGTERM)
    demo.processes["pot"].wait(30)

    async def pending() -> list[dict[str, Any]]:
        alerts = (await api("alerts"))["alerts"]
        return [
            a
            for a in alerts
            if a["labels"]["alertname"] == "JackpotTablesClosed" and a["state"] == "pending"
        ]

    closed = await poll("JackpotTablesClosed pending once the pot service stopped (D5)", pending)
    assert {a["labels"]["namespace"] for a in closed} == {NAMESPACE}
    assert {a["labels"]["jackpot_io_site"] for a in closed} <= {"site-a", "site-b"}
