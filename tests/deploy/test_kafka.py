"""Kafka: the cluster's shape, the topics of jackpot.topics, each service's user and its ACLs."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import jackpot.topics
from tests.deploy.k8s import (
    OVERLAYS,
    REPO,
    WORKLOAD_KINDS,
    Obj,
    app_name,
    containers,
    kind,
    labels,
    name,
    pod_labels,
)

CLUSTER = "jackpot"
REPLICAS = {"dev": 1, "single-site": 3, "multi-site": 3}
MIN_ISR = {"dev": 1, "single-site": 2, "multi-site": 2}

# Where each service's code lives, for the check that it uses only topics its user may reach.
CODE = {
    "gateway": REPO / "services/jackpot/gateway",
    "pot": REPO / "services/jackpot/pot",
    "payout": REPO / "services/jackpot/payout",
    "display": REPO / "services/jackpot/display",
    "audit": REPO / "services/jackpot/tools/audit.py",
}

Acl = tuple[str, str, str, str]  # (resource type, name, pattern type, operation)


def expected_acls(service: dict[str, list[str]]) -> set[Acl]:
    acls: set[Acl] = set()
    for topic in service["reads"]:
        acls |= {("topic", topic, "literal", op) for op in ("Describe", "Read")}
    for topic in service["writes"]:
        acls |= {("topic", topic, "literal", op) for op in ("Describe", "Write")}
    for group in service["groups"]:
        acls |= {("group", group, "literal", op) for op in ("Describe", "Read")}
    for prefix in service["transactional_ids"]:
        acls |= {("transactionalId", prefix, "prefix", op) for op in ("Describe", "Write")}
    return acls


def rendered_acls(user: Obj) -> set[Acl]:
    acls: set[Acl] = set()
    for acl in user["spec"]["authorization"]["acls"]:
        assert acl.get("type", "allow") == "allow", f"{name(user)}: only allow rules"
        assert acl.get("host", "*") == "*"
        resource = acl["resource"]
        for operation in acl["operations"]:
            acls.add(
                (
                    resource["type"],
                    resource.get("name", ""),
                    resource.get("patternType", "literal"),
                    operation,
                )
            )
    return acls


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_topics_are_exactly_those_of_jackpot_topics(
    rendered: dict[str, list[Obj]], overlay: str
) -> None:
    topics = kind(rendered[overlay], "KafkaTopic")
    found = {
        t["spec"].get("topicName", name(t)): (
            t["spec"]["partitions"],
            {key: str(value) for key, value in (t["spec"].get("config") or {}).items()},
        )
        for t in topics
    }
    wanted = {t.name: (t.partitions, dict(t.config)) for t in jackpot.topics.ALL_TOPICS}
    assert found == wanted
    assert len(topics) == len(wanted)
    for topic in topics:
        assert labels(topic)["strimzi.io/cluster"] == CLUSTER
        assert topic["spec"]["replicas"] == REPLICAS[overlay]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_kafka_is_kraft_replicated_and_authenticated(
    rendered: dict[str, list[Obj]], overlay: str
) -> None:
    objects = rendered[overlay]
    (cluster,) = kind(objects, "Kafka")
    assert name(cluster) == CLUSTER
    pools = [
        p for p in kind(objects, "KafkaNodePool") if labels(p)["strimzi.io/cluster"] == CLUSTER
    ]
    controllers = sum(p["spec"]["replicas"] for p in pools if "controller" in p["spec"]["roles"])
    brokers = sum(p["spec"]["replicas"] for p in pools if "broker" in p["spec"]["roles"])
    assert controllers == brokers == REPLICAS[overlay]
    config = cluster["spec"]["kafka"]["config"]
    assert config["min.insync.replicas"] == MIN_ISR[overlay]
    for key in (
        "default.replication.factor",
        "offsets.topic.replication.factor",
        "transaction.state.log.replication.factor",
    ):
        assert config[key] == REPLICAS[overlay], key
    assert config["transaction.state.log.min.isr"] == MIN_ISR[overlay]
    assert config["auto.create.topics.enable"] is False
    assert cluster["spec"]["kafka"]["authorization"]["type"] == "simple"
    for listener in cluster["spec"]["kafka"]["listeners"]:
        assert listener["tls"] is True, listener["name"]
        assert listener["authentication"]["type"] in ("scram-sha-512", "tls"), listener["name"]
    assert {"topicOperator", "userOperator"} <= set(cluster["spec"]["entityOperator"])


def test_access_matrix_names_only_real_topics(access: dict[str, dict[str, list[str]]]) -> None:
    names = {t.name for t in jackpot.topics.ALL_TOPICS}
    for service, entry in access.items():
        assert set(entry) == {"reads", "writes", "groups", "transactional_ids"}, service
        assert set(entry["reads"]) | set(entry["writes"]) <= names, service
    written = {t for entry in access.values() for t in entry["writes"]}
    read = {t for entry in access.values() for t in entry["reads"]}
    assert written == names, "every topic has a writer"
    assert read == names, "every topic has a reader"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_kafka_user_has_exactly_its_services_acls(
    rendered: dict[str, list[Obj]], access: dict[str, dict[str, list[str]]], overlay: str
) -> None:
    users = kind(rendered[overlay], "KafkaUser")
    assert users
    for user in users:
        service = labels(user).get("jackpot.io/service")
        assert service in access, f"{name(user)}: label jackpot.io/service names no service"
        assert labels(user)["strimzi.io/cluster"] == CLUSTER
        assert user["spec"]["authentication"]["type"] in ("scram-sha-512", "tls")
        assert user["spec"]["authorization"]["type"] == "simple"
        acls = rendered_acls(user)
        assert not [a for a in acls if a[1] in ("", "*")], f"{name(user)}: wildcard resource"
        want = expected_acls(access[service])
        assert acls == want, (
            f"{overlay} {name(user)} ({service}): missing {sorted(want - acls)}, "
            f"extra {sorted(acls - want)}"
        )
    services = {labels(u)["jackpot.io/service"] for u in users}
    assert services == set(access), f"{overlay}: services without a Kafka user"


def env_of(container: Obj) -> dict[str, Obj]:
    return {e["name"]: e for e in container.get("env", [])}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_workload_logs_in_as_its_own_services_user(
    rendered: dict[str, list[Obj]], overlay: str
) -> None:
    objects = rendered[overlay]
    users = {name(u): u for u in kind(objects, "KafkaUser")}
    used = set()
    for workload in kind(objects, *WORKLOAD_KINDS):
        assert pod_labels(workload).get("jackpot.io/kafka-client") == "true", name(workload)
        for container in containers(workload, init=False):
            env = env_of(container)
            username = env["KAFKA_SASL_USERNAME"]["value"]
            secret = env["KAFKA_SASL_PASSWORD"]["valueFrom"]["secretKeyRef"]
            assert secret == {"name": username, "key": "password"}, name(workload)
            user = users[username]
            assert labels(user)["jackpot.io/service"] == app_name(workload), name(workload)
            site = pod_labels(workload).get("jackpot.io/site")
            assert labels(user).get("jackpot.io/site") == site, name(workload)
            used.add(username)
    assert used == set(users), f"{overlay}: Kafka users no workload uses"


def topic_constants(path: Path) -> Iterator[tuple[Path, str]]:
    files = [path] if path.is_file() else sorted(path.rglob("*.py"))
    for file in files:
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "jackpot.topics":
                for alias in node.names:
                    value = getattr(jackpot.topics, alias.name)
                    if isinstance(value, jackpot.topics.TopicSpec):
                        yield file, value.name


def test_service_code_uses_only_topics_its_user_may_reach(
    access: dict[str, dict[str, list[str]]],
) -> None:
    checked = 0
    for service, path in CODE.items():
        if not path.exists():
            continue  # not built yet: checked as soon as it is
        allowed = set(access[service]["reads"]) | set(access[service]["writes"])
        for file, topic in topic_constants(path):
            assert topic in allowed, f"{file.relative_to(REPO)} uses {topic}, not in {service}'s"
            checked += 1
    assert checked > 0


def test_consumer_groups_and_transactional_ids_match_the_pot_settings(
    rendered: dict[str, list[Obj]], access: dict[str, dict[str, list[str]]]
) -> None:
    from jackpot.pot.settings import PotSettings

    defaults = PotSettings()
    assert access["pot"]["groups"] == [defaults.processor.consumer_group]
    assert access["pot"]["transactional_ids"] == [defaults.processor.transactional_id_prefix]
    for overlay, objects in rendered.items():
        (config,) = [m for m in kind(objects, "ConfigMap") if name(m).startswith("pot-config")]
        assert config["data"]["JACKPOT_CONSUMER_GROUP"] in access["pot"]["groups"], overlay
        prefix = config["data"]["JACKPOT_TRANSACTIONAL_ID_PREFIX"]
        assert prefix in access["pot"]["transactional_ids"], overlay
        assert config["data"]["JACKPOT_CREATE_TOPICS"] == "false", "topics are the operator's"
        (payout,) = [m for m in kind(objects, "ConfigMap") if name(m).startswith("payout-config")]
        assert payout["data"]["JACKPOT_PAYOUT_CONSUMER_GROUP"] in access["payout"]["groups"]
        prefix = payout["data"]["JACKPOT_PAYOUT_TRANSACTIONAL_ID_PREFIX"]
        assert prefix in access["payout"]["transactional_ids"]
