"""Mutual TLS: every gRPC endpoint serves a cert-manager certificate and requires client ones.

What the services read (jackpot.platform.authz.AccessSettings, jackpot.platform.tls): the three
JACKPOT_TLS_* files turn mutual TLS on; JACKPOT_HEALTH_GRPC opens the plaintext health-only port
the probes use; JACKPOT_INSECURE_ROLES is for plaintext development and never set here. What a
certificate must carry (jackpot.tools.pki): CN = principal name, one OU per role.
"""

from __future__ import annotations

import pytest

from jackpot.domain.access import Role
from tests.deploy.k8s import (
    LONG_RUNNING_KINDS,
    OVERLAYS,
    WORKLOAD_KINDS,
    Obj,
    app_name,
    containers,
    kind,
    labels,
    name,
    pod_labels,
    pod_spec,
    selects,
)

TLS_MOUNT = "/etc/jackpot/tls"
# The keys cert-manager writes into a kubernetes.io/tls Secret, and the variable naming each.
TLS_FILES = {
    "JACKPOT_TLS_CERT": "tls.crt",
    "JACKPOT_TLS_KEY": "tls.key",
    "JACKPOT_TLS_CA": "ca.crt",
}
ISSUER = {"group": "cert-manager.io", "kind": "Issuer", "name": "jackpot-ca"}
CA_SECRET = "jackpot-ca"
UID = 10001


def environment(objects: list[Obj], container: Obj) -> dict[str, str]:
    """The container's environment as the kubelet builds it: envFrom ConfigMaps, then env."""
    maps = {name(m): m.get("data") or {} for m in kind(objects, "ConfigMap")}
    found: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        if "configMapRef" in source:
            found.update(maps[source["configMapRef"]["name"]])
    for variable in container.get("env") or []:
        found[variable["name"]] = str(variable.get("value", "<valueFrom>"))
    return found


def tls_secret(workload: Obj) -> str:
    """jackpot-<service>-tls, or jackpot-<service>-tls-<site> for a site's gateway or display."""
    site = pod_labels(workload).get("jackpot.io/site")
    return f"jackpot-{app_name(workload)}-tls" + (f"-{site}" if site else "")


def namespace(objects: list[Obj]) -> str:
    (found,) = kind(objects, "Namespace")
    return name(found)


def service_workloads(rendered: dict[str, list[Obj]]) -> list[tuple[str, Obj]]:
    return [
        (overlay, workload)
        for overlay, objects in rendered.items()
        for workload in kind(objects, *LONG_RUNNING_KINDS)
    ]


def test_every_service_mounts_its_tls_secret_and_turns_mutual_tls_on(
    rendered: dict[str, list[Obj]],
) -> None:
    checked = 0
    for overlay, workload in service_workloads(rendered):
        spec = pod_spec(workload)
        volumes = {v["name"]: v for v in spec["volumes"]}
        (container,) = list(containers(workload, init=False))
        where = f"{overlay} {workload['kind']}/{name(workload)}"
        env = environment(rendered[overlay], container)
        (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == TLS_MOUNT]
        assert mount.get("readOnly") is True, f"{where}: {TLS_MOUNT} must be read-only"
        assert "subPath" not in mount, f"{where}: a subPath mount is never updated on renewal"
        secret = volumes[mount["name"]].get("secret")
        assert secret, f"{where}: {TLS_MOUNT} is not a Secret volume"
        assert secret["secretName"] == tls_secret(workload), where
        assert "items" not in secret, f"{where}: the whole kubernetes.io/tls Secret is mounted"
        # The private key: readable by the service's group (fsGroup) only, never by others.
        mode = secret.get("defaultMode", 0o644)
        assert mode & 0o007 == 0, f"{where}: TLS files are world-readable ({mode:o})"
        assert spec["securityContext"].get("fsGroup") == UID, f"{where}: no fsGroup {UID}"
        for variable, key in TLS_FILES.items():
            assert env.get(variable) == f"{TLS_MOUNT}/{key}", f"{where}: {variable}"
        health = {p["name"]: p["containerPort"] for p in container["ports"]}["health"]
        assert env.get("JACKPOT_HEALTH_GRPC") == f"0.0.0.0:{health}", where
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert container[probe]["grpc"]["port"] == health, f"{where}: {probe}"
        checked += 1
    assert checked >= 4 * len(OVERLAYS)


def test_no_workload_grants_insecure_roles(rendered: dict[str, list[Obj]]) -> None:
    """JACKPOT_INSECURE_ROLES gives every plaintext caller roles: development only, never here."""
    for overlay, objects in rendered.items():
        for workload in kind(objects, *WORKLOAD_KINDS):
            for container in containers(workload):
                env = environment(objects, container)
                assert "JACKPOT_INSECURE_ROLES" not in env, f"{overlay} {name(workload)}"
        for config_map in kind(objects, "ConfigMap"):
            assert "JACKPOT_INSECURE_ROLES" not in (config_map.get("data") or {}), name(config_map)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_one_ca_issuer_signs_every_service(rendered: dict[str, list[Obj]], overlay: str) -> None:
    objects = rendered[overlay]
    (issuer,) = kind(objects, "Issuer")
    assert name(issuer) == ISSUER["name"]
    assert issuer["spec"] == {"ca": {"secretName": CA_SECRET}}, "a CA issuer, CA from the PKI"
    assert not kind(objects, "ClusterIssuer")
    for certificate in kind(objects, "Certificate"):
        assert certificate["spec"]["issuerRef"] == ISSUER, name(certificate)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_services_certificate_names_it_and_its_role(
    rendered: dict[str, list[Obj]], overlay: str
) -> None:
    objects = rendered[overlay]
    certificates = kind(objects, "Certificate")
    by_secret = {c["spec"]["secretName"]: c for c in certificates}
    assert len(by_secret) == len(certificates), f"{overlay}: two Certificates write one Secret"
    used = set()
    for workload in kind(objects, *LONG_RUNNING_KINDS):
        where = f"{overlay} {name(workload)}"
        certificate = by_secret.get(tls_secret(workload))
        assert certificate, f"{where}: no Certificate writes {tls_secret(workload)}"
        used.add(tls_secret(workload))
        spec = certificate["spec"]
        assert app_name(certificate) == app_name(workload), where
        assert labels(certificate).get("jackpot.io/site") == pod_labels(workload).get(
            "jackpot.io/site"
        ), where
        # CN = principal name (the workload's), OU = its roles: exactly "service".
        assert spec["commonName"] == name(workload), where
        units = spec["subject"]["organizationalUnits"]
        assert {Role(unit) for unit in units} == {Role.SERVICE}, f"{where}: OU {units}"
        assert not spec.get("uris"), f"{where}: table binding (URI SAN) is for devices only"
        assert {"server auth", "client auth"} <= set(spec["usages"]), where
        # Every Service its callers dial (not metrics, not headless) is in the DNS names.
        services = [
            s
            for s in kind(objects, "Service")
            if selects(s["spec"]["selector"], pod_labels(workload))
            and "grpc" in {p["name"] for p in s["spec"]["ports"]}
            and s["spec"].get("clusterIP") != "None"
        ]
        assert services, where
        for service in services:
            short = name(service)
            wanted = {
                short,
                f"{short}.{namespace(objects)}",
                f"{short}.{namespace(objects)}.svc",
                f"{short}.{namespace(objects)}.svc.cluster.local",
            }
            missing = wanted - set(spec["dnsNames"])
            assert not missing, f"{where}: Certificate {name(certificate)} lacks {missing}"
    assert used == set(by_secret), f"{overlay}: Certificates no workload mounts"


def test_audit_verifies_the_ledger_and_the_audit_chain(rendered: dict[str, list[Obj]]) -> None:
    for overlay, objects in rendered.items():
        (cronjob,) = kind(objects, "CronJob")
        commands = sorted(tuple(c["args"]) for c in containers(cronjob))
        assert commands == [("audit",), ("audit", "--chain")], overlay
