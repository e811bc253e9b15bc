"""Every workload: probes, resources, security context, disruption budgets, graceful termination."""

from __future__ import annotations

import json

import pytest

from jackpot.platform.service_settings import RuntimeSettings
from tests.deploy.k8s import (
    LONG_RUNNING_KINDS,
    OVERLAYS,
    WORKLOAD_KINDS,
    Obj,
    app_name,
    containers,
    kind,
    name,
    pod_labels,
    pod_spec,
    selects,
)

UID = 10001

# The port convention (deploy/k8s/README.md, "Ports"). "grpc" is the API (mutual TLS); "health"
# (gRPC + 10) the plaintext grpc.health.v1-only port that the kubelet probes (it presents no client
# certificate); "https" the web signs.
PORTS = {
    "gateway": {"grpc": 50051, "health": 50061, "metrics": 9101},
    "pot": {"grpc": 50052, "health": 50062, "metrics": 9102},
    "payout": {"grpc": 50053, "health": 50063, "metrics": 9103},
    "display": {"grpc": 50054, "health": 50064, "https": 8080, "metrics": 9104},
}
# Ports no Service exposes: the health port is for the kubelet alone.
UNPUBLISHED = {"health"}
# The gRPC service each readiness probe asks about (grpc.health.v1; "" is the whole server).
GRPC_SERVICES = {
    "gateway": "jackpot.v1.TableDeviceService",
    "pot": "jackpot.v1.PotService",
    # The payout's standby must be Ready (it sends terminals to the owner): the whole server.
    "payout": "",
    "display": "jackpot.v1.SignService",
}


def workloads(rendered: dict[str, list[Obj]], *kinds: str) -> list[tuple[str, Obj]]:
    return [(overlay, w) for overlay, objects in rendered.items() for w in kind(objects, *kinds)]


def effective(workload: Obj, container: Obj, key: str) -> object:
    """A security setting as Kubernetes applies it: the container's, else the pod's."""
    own = (container.get("securityContext") or {}).get(key)
    return own if own is not None else (pod_spec(workload).get("securityContext") or {}).get(key)


def test_every_container_has_grpc_readiness_and_liveness_probes(
    rendered: dict[str, list[Obj]],
) -> None:
    """Every probe asks the plaintext health port: the API port requires a client certificate."""
    checked = 0
    for overlay, workload in workloads(rendered, *LONG_RUNNING_KINDS):
        app = app_name(workload)
        for container in containers(workload, init=False):
            where = f"{overlay} {workload['kind']}/{name(workload)} {container['name']}"
            ports = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
            assert ports == PORTS[app], where
            for probe_name in ("readinessProbe", "livenessProbe", "startupProbe"):
                probe = container.get(probe_name)
                assert probe, f"{where}: no {probe_name}"
                assert "grpc" in probe, f"{where}: {probe_name} is not a gRPC probe"
                assert probe["grpc"]["port"] == PORTS[app]["health"], f"{where}: {probe_name}"
            asked = container["readinessProbe"]["grpc"].get("service", "")
            assert asked == GRPC_SERVICES[app], where
            # Liveness asks about the whole server: a service that is only not ready (a broker
            # away) must not be restarted for it.
            assert container["livenessProbe"]["grpc"].get("service", "") == "", where
            checked += 1
    assert checked >= 4 * len(OVERLAYS)


def test_every_container_has_requests_and_limits(rendered: dict[str, list[Obj]]) -> None:
    for overlay, workload in workloads(rendered, *WORKLOAD_KINDS):
        for container in containers(workload):
            resources = container.get("resources") or {}
            for bound in ("requests", "limits"):
                assert {"cpu", "memory"} <= set(resources.get(bound) or {}), (
                    f"{overlay} {name(workload)} {container['name']}: {bound}"
                )


def test_every_container_runs_locked_down(rendered: dict[str, list[Obj]]) -> None:
    for overlay, workload in workloads(rendered, *WORKLOAD_KINDS):
        spec = pod_spec(workload)
        assert spec.get("automountServiceAccountToken") is False, name(workload)
        assert not spec.get("hostNetwork"), name(workload)
        assert not spec.get("hostPID"), name(workload)
        for container in containers(workload):
            where = f"{overlay} {name(workload)} {container['name']}"
            own = container.get("securityContext") or {}
            assert effective(workload, container, "runAsNonRoot") is True, where
            assert effective(workload, container, "runAsUser") == UID, where
            assert effective(workload, container, "seccompProfile") == {"type": "RuntimeDefault"}
            assert own.get("readOnlyRootFilesystem") is True, where
            assert own.get("allowPrivilegeEscalation") is False, where
            assert own.get("privileged") in (None, False), where
            assert own.get("capabilities") == {"drop": ["ALL"]}, where
            mounts = {m["mountPath"] for m in container.get("volumeMounts", [])}
            assert "/tmp" in mounts, f"{where}: /tmp must be an emptyDir (read-only root)"


def test_every_workload_uses_the_one_image(rendered: dict[str, list[Obj]]) -> None:
    for overlay, objects in rendered.items():
        images = {c["image"] for w in kind(objects, *WORKLOAD_KINDS) for c in containers(w)}
        assert len(images) == 1, f"{overlay}: {images}"
        (image,) = images
        assert ":" in image.rsplit("/", 1)[-1], f"{overlay}: image {image} has no tag"


# R6: the overlays a casino runs name the software the regulator approved; dev runs any build.
APPROVED_DIGEST_REQUIRED = {"dev": False, "single-site": True, "multi-site": True}


def test_R6_every_service_is_told_the_approved_software_digest(
    rendered: dict[str, list[Obj]],
) -> None:
    """Every service container takes JACKPOT_APPROVED_SOFTWARE_DIGEST from the ConfigMap
    "software"; the production overlays set it to a digest the services' own setting accepts,
    so a build the regulator did not approve never starts there."""
    for overlay, objects in rendered.items():
        maps = {name(m): m.get("data", {}) for m in kind(objects, "ConfigMap")}
        software = [n for n in maps if n == "software" or n.startswith("software-")]
        assert len(software) == 1, f"{overlay}: ConfigMaps {sorted(maps)}"
        digest = maps[software[0]]["JACKPOT_APPROVED_SOFTWARE_DIGEST"]
        parsed = RuntimeSettings(JACKPOT_APPROVED_SOFTWARE_DIGEST=digest).approved_software_digest
        assert bool(parsed) == APPROVED_DIGEST_REQUIRED[overlay], f"{overlay}: {digest!r}"
        for workload in kind(objects, *LONG_RUNNING_KINDS):
            for container in containers(workload, init=False):
                refs = [e["configMapRef"]["name"] for e in container.get("envFrom", [])
                        if "configMapRef" in e]  # fmt: skip
                assert software[0] in refs, f"{overlay}/{name(workload)}: envFrom {refs}"


def test_every_long_running_workload_has_a_disruption_budget(
    rendered: dict[str, list[Obj]],
) -> None:
    for overlay, objects in rendered.items():
        budgets = kind(objects, "PodDisruptionBudget")
        for workload in kind(objects, *LONG_RUNNING_KINDS):
            covering = [
                b
                for b in budgets
                if selects(b["spec"]["selector"]["matchLabels"], pod_labels(workload))
            ]
            assert len(covering) == 1, f"{overlay} {name(workload)}: {len(covering)} budgets"
            budget = covering[0]["spec"]
            # A budget that allows no disruption would block every node drain.
            if "minAvailable" in budget:
                assert budget["minAvailable"] < workload["spec"].get("replicas", 1)
            else:
                assert budget["maxUnavailable"] >= 1


def test_graceful_termination(rendered: dict[str, list[Obj]]) -> None:
    for overlay, workload in workloads(rendered, *LONG_RUNNING_KINDS):
        spec = pod_spec(workload)
        grace = spec.get("terminationGracePeriodSeconds")
        assert grace is not None, f"{overlay} {name(workload)}"
        assert grace >= 15, f"{overlay} {name(workload)}"
        for container in containers(workload, init=False):
            pre_stop = (container.get("lifecycle") or {}).get("preStop")
            assert pre_stop, f"{overlay} {name(workload)}: no preStop"
            sleep = pre_stop["exec"]["command"]
            assert sleep[0] == "sleep"
            assert int(sleep[1]) < grace


def test_display_is_scaled_by_an_autoscaler(rendered: dict[str, list[Obj]]) -> None:
    for overlay, objects in rendered.items():
        targets = {
            h["spec"]["scaleTargetRef"]["name"] for h in kind(objects, "HorizontalPodAutoscaler")
        }
        displays = {name(d) for d in kind(objects, "Deployment") if app_name(d) == "display"}
        assert displays, overlay
        assert targets == displays, overlay


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_gateway_spool_is_on_its_persistent_volume(
    rendered: dict[str, list[Obj]], overlay: str
) -> None:
    objects = rendered[overlay]
    maps = {name(m): m for m in kind(objects, "ConfigMap")}
    gateways = kind(objects, "StatefulSet")
    assert gateways
    for gateway in gateways:
        claims = {c["metadata"]["name"] for c in gateway["spec"]["volumeClaimTemplates"]}
        (container,) = pod_spec(gateway)["containers"]
        mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
        assert "spool" in claims
        assert mounts["spool"] == "/var/lib/jackpot"
        template = next(
            v["configMap"]["name"] for v in pod_spec(gateway)["volumes"] if "configMap" in v
        )
        settings = json.loads(maps[template]["data"]["gateway.json"])
        assert settings["spool_path"].startswith("/var/lib/jackpot/")
        assert settings["grpc_address"] == f"0.0.0.0:{PORTS['gateway']['grpc']}"
        assert settings["metrics_port"] == PORTS["gateway"]["metrics"]
        assert all("credential" not in table for table in settings["tables"]), (
            "device credentials belong in the Secret, not the ConfigMap"
        )


def test_services_expose_the_port_convention(rendered: dict[str, list[Obj]]) -> None:
    for overlay, objects in rendered.items():
        for service in kind(objects, "Service"):
            app = app_name(service)
            for port in service["spec"]["ports"]:
                assert port["name"] not in UNPUBLISHED, f"{overlay} {name(service)}"
                assert PORTS[app][port["name"]] == port["port"], f"{overlay} {name(service)}"
