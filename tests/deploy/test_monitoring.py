"""Prometheus Operator resources and the Grafana dashboard: present, wired, naming real metrics."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from tests.deploy.k8s import (
    LONG_RUNNING_KINDS,
    OVERLAYS,
    REPO,
    Obj,
    app_name,
    kind,
    labels,
    name,
    pod_labels,
    selects,
)

DASHBOARD = REPO / "deploy" / "monitoring" / "grafana-dashboard.json"
SERVICES = ("gateway", "pot", "payout", "display")
ALERTS = {
    "JackpotConsumerLagHigh",
    "JackpotTablesClosed",
    "JackpotPayoutPendingTooLong",
    "JackpotAuditFailed",
    "JackpotSignsStale",
    "JackpotPrizeUnattended",
    "JackpotPayoutNoOwner",
    "JackpotWalletCreditRefused",
}
# Metrics the rules and the dashboard use before the service that exports them exists
# (deploy/k8s/README.md, "Metrics"); once services/jackpot/<service>/ exists they must be real.
ASSUMED = {
    "payout": {
        "jackpot_payout_pending_awards",
        "jackpot_payout_oldest_pending_seconds",
        "jackpot_payout_paid_total",
        "jackpot_consumer_lag_records",
    },
}
# Not jackpot metrics: Prometheus' own and kube-state-metrics' (the audit CronJob's Jobs).
EXTERNAL = {"up", "kube_job_status_failed", "kube_cronjob_status_last_successful_time"}
LABEL_NAMES = {"jackpot_io_site"}
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")
METRIC = re.compile(r"\b((?:jackpot|kube)_[a-z0-9_]+|up)\b")


def exported_metrics() -> set[str]:
    """Every metric name a service's code registers (string literals in its metrics module)."""
    names = set()
    for module in (REPO / "services" / "jackpot").rglob("metrics.py"):
        names |= set(re.findall(r"\"(jackpot_[a-z0-9_]+)\"", module.read_text(encoding="utf-8")))
    return names


def known_metrics() -> set[str]:
    known = exported_metrics() | EXTERNAL
    for service, names in ASSUMED.items():
        if not (REPO / "services" / "jackpot" / service).exists():
            known |= names
    return known


def used_metrics(expression: str) -> Iterator[str]:
    for found in METRIC.findall(expression):
        if found in LABEL_NAMES:
            continue
        for suffix in HISTOGRAM_SUFFIXES:
            if found.endswith(suffix) and found.removesuffix(suffix) in exported_metrics():
                found = found.removesuffix(suffix)
        yield found


def balanced(expression: str) -> bool:
    depth = 0
    for char in expression:
        depth += {"(": 1, ")": -1, "{": 1, "}": -1, "[": 1, "]": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_service_is_scraped(rendered: dict[str, list[Obj]], overlay: str) -> None:
    objects = rendered[overlay]
    monitors = {app_name(m): m for m in kind(objects, "ServiceMonitor")}
    assert set(monitors) == set(SERVICES)
    workloads = kind(objects, *LONG_RUNNING_KINDS)
    for service_name, monitor in monitors.items():
        assert labels(monitor)["jackpot.io/monitoring"] == "true"
        (endpoint,) = monitor["spec"]["endpoints"]
        services = [
            s
            for s in kind(objects, "Service")
            if selects(monitor["spec"]["selector"]["matchLabels"], labels(s))
        ]
        assert services, f"{overlay}: ServiceMonitor {service_name} selects no Service"
        for service in services:
            assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
            assert service["spec"].get("type", "ClusterIP") == "ClusterIP", "metrics stay inside"
            pods = [w for w in workloads if selects(service["spec"]["selector"], pod_labels(w))]
            assert pods, f"{overlay}: {name(service)} selects no pod"


def test_alerts_exist_and_name_real_metrics(rendered: dict[str, list[Obj]]) -> None:
    (rule,) = kind(rendered["single-site"], "PrometheusRule")
    alerts = {r["alert"]: r for g in rule["spec"]["groups"] for r in g["rules"] if "alert" in r}
    assert set(alerts) >= ALERTS
    known = known_metrics()
    for alert, body in alerts.items():
        expression = str(body["expr"])
        assert balanced(expression), alert
        assert body["labels"]["severity"] in ("warning", "critical"), alert
        assert body["annotations"]["summary"], alert
        unknown = set(used_metrics(expression)) - known
        assert not unknown, f"{alert} uses metrics nobody exports: {unknown}"


def test_dashboard_is_shipped_and_names_real_metrics(rendered: dict[str, list[Obj]]) -> None:
    text = DASHBOARD.read_text(encoding="utf-8")
    dashboard = json.loads(text)
    assert dashboard["uid"]
    assert dashboard["title"]
    panels = dashboard["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    known = known_metrics()
    for panel in panels:
        for target in panel.get("targets", []):
            assert balanced(target["expr"]), panel["title"]
            unknown = set(used_metrics(target["expr"])) - known
            assert not unknown, f"panel {panel['title']!r}: unknown metrics {unknown}"
    for overlay, objects in rendered.items():
        (config_map,) = [m for m in kind(objects, "ConfigMap") if "grafana_dashboard" in labels(m)]
        assert labels(config_map)["grafana_dashboard"] == "1"
        assert config_map["data"]["jackpot.json"] == text, overlay


def test_every_real_metric_follows_the_naming_style() -> None:
    """jackpot_<thing>[_<unit>][_total]: lower case, no "total" inside a name."""
    for metric in exported_metrics():
        assert re.fullmatch(r"jackpot_[a-z][a-z0-9_]*[a-z0-9]", metric), metric
        assert "_total" not in metric.removesuffix("_total"), metric
