"""NetworkPolicies: default deny, then only the flows of the architecture."""

from __future__ import annotations

import pytest

from tests.deploy.k8s import (
    OVERLAYS,
    WORKLOAD_KINDS,
    Obj,
    containers,
    kind,
    name,
    pod_labels,
    selects,
)

MONITORING = {"kubernetes.io/metadata.name": "monitoring"}
# Ports that no rule opens: the plaintext gRPC health ports. The kubelet's probes come from the
# pod's own node, which NetworkPolicy always admits; no pod and no floor device may reach them.
KUBELET_ONLY = {"health"}
OTLP_PORT = 4317  # an OpenTelemetry collector's OTLP/gRPC port (base/network/otlp-egress.yaml)
TELEMETRY_NAMESPACE = {"jackpot.io/telemetry": "true"}
KAFKA_PORT = 9093
# The one egress rule allowed without a destination: the Entity Operator's calls to the API server,
# whose address differs per cluster.
OPEN_EGRESS = {"entity-operator-egress"}


def policies(objects: list[Obj], policy_type: str, pod: dict[str, str]) -> list[Obj]:
    return [
        p
        for p in kind(objects, "NetworkPolicy")
        if policy_type in p["spec"].get("policyTypes", [])
        and selects(p["spec"]["podSelector"].get("matchLabels") or {}, pod)
    ]


def rule_ports(rule: Obj) -> set[int]:
    return {p["port"] for p in rule.get("ports", [])}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_everything_is_denied_by_default(rendered: dict[str, list[Obj]], overlay: str) -> None:
    deny = [
        p
        for p in kind(rendered[overlay], "NetworkPolicy")
        if p["spec"]["podSelector"] == {}
        and set(p["spec"]["policyTypes"]) == {"Ingress", "Egress"}
        and not p["spec"].get("ingress")
        and not p["spec"].get("egress")
    ]
    assert len(deny) == 1, f"{overlay}: no default-deny policy"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_no_rule_opens_a_pod_to_everyone(rendered: dict[str, list[Obj]], overlay: str) -> None:
    for policy in kind(rendered[overlay], "NetworkPolicy"):
        for rule in policy["spec"].get("ingress") or []:
            assert rule.get("from"), f"{name(policy)}: ingress from anywhere"
            assert rule.get("ports"), f"{name(policy)}: ingress to every port"
            for peer in rule["from"]:
                cidr = peer.get("ipBlock", {}).get("cidr")
                assert cidr not in ("0.0.0.0/0", "::/0"), name(policy)
        for rule in policy["spec"].get("egress") or []:
            if not rule.get("to"):
                assert name(policy) in OPEN_EGRESS, f"{name(policy)}: egress to anywhere"
                assert rule_ports(rule) <= {443, 6443}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_container_port_is_open_only_to_its_callers(
    rendered: dict[str, list[Obj]], overlay: str
) -> None:
    objects = rendered[overlay]
    for workload in kind(objects, *WORKLOAD_KINDS):
        pod = pod_labels(workload)
        ingress = [
            r for p in policies(objects, "Ingress", pod) for r in p["spec"].get("ingress") or []
        ]
        for container in containers(workload, init=False):
            for port in container.get("ports", []):
                rules = [r for r in ingress if port["containerPort"] in rule_ports(r)]
                where = f"{overlay} {name(workload)} port {port['name']}"
                if port["name"] in KUBELET_ONLY:
                    assert not rules, f"{where}: the plaintext health port is the kubelet's only"
                    continue
                assert rules, f"{where}: no policy lets anyone in"
                peers = [peer for rule in rules for peer in rule["from"]]
                if port["name"] == "metrics":
                    assert all(
                        peer.get("namespaceSelector", {}).get("matchLabels") == MONITORING
                        and "podSelector" not in peer
                        for peer in peers
                    ), f"{where}: metrics only for Prometheus"
                else:
                    assert all(
                        "ipBlock" in peer or "podSelector" in peer or "namespaceSelector" in peer
                        for peer in peers
                    ), where


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_kafka_clients_reach_the_brokers_dns_and_the_trace_collector_only(
    rendered: dict[str, list[Obj]], overlay: str
) -> None:
    objects = rendered[overlay]
    (cluster,) = kind(objects, "Kafka")
    (listener,) = cluster["spec"]["kafka"]["listeners"]
    assert listener["port"] == KAFKA_PORT
    for workload in kind(objects, *WORKLOAD_KINDS):
        pod = pod_labels(workload)
        egress = [
            r for p in policies(objects, "Egress", pod) for r in p["spec"].get("egress") or []
        ]
        ports = set().union(*(rule_ports(rule) for rule in egress))
        assert ports == {KAFKA_PORT, 53, OTLP_PORT}, f"{overlay} {name(workload)}: egress {ports}"
        for rule in (r for r in egress if OTLP_PORT in rule_ports(r)):
            for peer in rule["to"]:  # only to a namespace the operator marked for telemetry
                assert peer == {"namespaceSelector": {"matchLabels": TELEMETRY_NAMESPACE}}
        to_kafka = [r for r in egress if KAFKA_PORT in rule_ports(r)]
        for rule in to_kafka:
            for peer in rule["to"]:
                assert peer["podSelector"]["matchLabels"]["strimzi.io/cluster"] == name(cluster)
        # The listener's side (generated by Strimzi) admits this pod.
        assert any(
            selects(peer["podSelector"]["matchLabels"], pod)
            for peer in listener["networkPolicyPeers"]
        ), f"{overlay} {name(workload)}: the Kafka listener refuses it"


def test_sites_are_apart(rendered: dict[str, list[Obj]]) -> None:
    objects = rendered["multi-site"]
    cidrs = {}
    for policy in kind(objects, "NetworkPolicy"):
        site = (policy["metadata"].get("labels") or {}).get("jackpot.io/site")
        if site:
            assert policy["spec"]["podSelector"]["matchLabels"]["jackpot.io/site"] == site
            for rule in policy["spec"]["ingress"]:
                for peer in rule["from"]:
                    if "ipBlock" in peer:
                        cidrs.setdefault(site, set()).add(peer["ipBlock"]["cidr"])
    assert set(cidrs) == {"site-a", "site-b"}
    assert not cidrs["site-a"] & cidrs["site-b"], "each site has its own floor network"
