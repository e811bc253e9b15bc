"""Helpers for reading rendered Kubernetes objects (tests/deploy)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "deploy" / "k8s"
OVERLAYS = ("dev", "single-site", "multi-site")

Obj = dict[str, Any]


def kind(objects: list[Obj], *kinds: str) -> list[Obj]:
    return [o for o in objects if o["kind"] in kinds]


def name(obj: Obj) -> str:
    return str(obj["metadata"]["name"])


def labels(obj: Obj) -> dict[str, str]:
    return dict(obj["metadata"].get("labels") or {})


def pod_spec(workload: Obj) -> Obj:
    """The pod spec of a Deployment, StatefulSet, DaemonSet, Job or CronJob."""
    spec = workload["spec"]
    if workload["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    result: Obj = spec["template"]["spec"]
    return result


def pod_labels(workload: Obj) -> dict[str, str]:
    spec = workload["spec"]
    if workload["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    return dict(spec["template"]["metadata"].get("labels") or {})


def containers(workload: Obj, *, init: bool = True) -> Iterator[Obj]:
    spec = pod_spec(workload)
    yield from spec["containers"]
    if init:
        yield from spec.get("initContainers") or []


def app_name(obj: Obj) -> str:
    return labels(obj).get("app.kubernetes.io/name", "")


def selects(selector: dict[str, str], target: dict[str, str]) -> bool:
    return all(target.get(key) == value for key, value in selector.items())


WORKLOAD_KINDS = ("Deployment", "StatefulSet", "CronJob")
LONG_RUNNING_KINDS = ("Deployment", "StatefulSet")
