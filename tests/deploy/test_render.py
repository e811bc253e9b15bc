"""Every overlay renders, and every object it renders is valid for the API server that gets it."""

from __future__ import annotations

import copy

import pytest

from tests.deploy.conftest import Tools
from tests.deploy.k8s import OVERLAYS, Obj, kind, name
from tests.deploy.schemas import CrdSchemas, KubernetesSchemas, errors, kubernetes_versions

# The oldest Kubernetes release these manifests support (deploy/k8s/README.md) and the newest the
# installed kubernetes-validate knows.
MIN_KUBERNETES = "1.31.0"
KUBERNETES_VERSIONS = (MIN_KUBERNETES, kubernetes_versions()[-1])

CUSTOM_GROUPS = ("kafka.strimzi.io/", "monitoring.coreos.com/", "cert-manager.io/")


@pytest.fixture(scope="module")
def kubernetes() -> dict[str, KubernetesSchemas]:
    return {version: KubernetesSchemas(version) for version in KUBERNETES_VERSIONS}


@pytest.fixture(scope="module")
def crds(tools: Tools) -> CrdSchemas:
    return CrdSchemas(
        [tools.strimzi_crds, tools.prometheus_operator_crds, tools.cert_manager_crds],
        MIN_KUBERNETES,
    )


def is_custom(obj: Obj) -> bool:
    return str(obj["apiVersion"]).startswith(CUSTOM_GROUPS)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_overlay_renders_the_whole_system(rendered: dict[str, list[Obj]], overlay: str) -> None:
    objects = rendered[overlay]
    kinds = {o["kind"] for o in objects}
    assert {
        "Namespace",
        "StatefulSet",
        "Deployment",
        "CronJob",
        "Service",
        "ConfigMap",
        "PodDisruptionBudget",
        "NetworkPolicy",
        "HorizontalPodAutoscaler",
        "Kafka",
        "KafkaNodePool",
        "KafkaTopic",
        "KafkaUser",
        "ServiceMonitor",
        "PrometheusRule",
        "Issuer",
        "Certificate",
    } <= kinds
    apps = {o["metadata"]["labels"]["app.kubernetes.io/name"] for o in kind(objects, "Deployment")}
    assert apps == {"pot", "payout", "display"}
    assert {name(o) for o in kind(objects, "StatefulSet")} <= {
        "gateway",
        "gateway-site-a",
        "gateway-site-b",
    }
    namespaces = {o["metadata"].get("namespace") for o in objects if o["kind"] != "Namespace"}
    assert namespaces == {name(kind(objects, "Namespace")[0])}, "one namespace for everything"
    identities = [(o["apiVersion"], o["kind"], name(o)) for o in objects]
    assert len(identities) == len(set(identities)), "an object is rendered twice"


def test_no_secret_is_committed(rendered: dict[str, list[Obj]]) -> None:
    """Secrets are created out of band (operators, example-secrets.sh), never rendered."""
    for overlay, objects in rendered.items():
        assert not kind(objects, "Secret"), overlay


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_builtin_objects_match_the_kubernetes_openapi_schema(
    rendered: dict[str, list[Obj]],
    kubernetes: dict[str, KubernetesSchemas],
    overlay: str,
    version: str,
) -> None:
    problems = []
    for obj in rendered[overlay]:
        if is_custom(obj):
            continue
        validator = kubernetes[version].validator(obj["apiVersion"], obj["kind"])
        if validator is None:
            problems.append(f"{obj['apiVersion']} {obj['kind']}: no schema in Kubernetes {version}")
            continue
        problems += [f"{obj['kind']}/{name(obj)}: {e}" for e in errors(validator, obj)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_custom_resources_match_their_crd_schema(
    rendered: dict[str, list[Obj]], crds: CrdSchemas, overlay: str
) -> None:
    problems = []
    for obj in rendered[overlay]:
        if not is_custom(obj):
            continue
        validator = crds.validator(obj["apiVersion"], obj["kind"])
        if validator is None:
            problems.append(f"{obj['apiVersion']} {obj['kind']}: no served version in the CRDs")
            continue
        problems += [f"{obj['kind']}/{name(obj)}: {e}" for e in errors(validator, obj)]
    assert not problems, "\n".join(problems)


def test_the_validators_refuse_what_the_api_server_would(
    rendered: dict[str, list[Obj]], kubernetes: dict[str, KubernetesSchemas], crds: CrdSchemas
) -> None:
    """The validation above is not vacuous: typos and wrong types fail it."""
    objects = rendered["single-site"]
    deployment = copy.deepcopy(kind(objects, "Deployment")[0])
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["readinesProbe"] = container.pop("readinessProbe")
    container["resources"]["limits"]["memory"] = ["1Gi"]
    validator = kubernetes[MIN_KUBERNETES].validator("apps/v1", "Deployment")
    assert validator is not None
    found = errors(validator, deployment)
    assert any("readinesProbe" in e for e in found), found
    assert any("limits.memory" in e for e in found), found

    user = copy.deepcopy(kind(objects, "KafkaUser")[0])
    user["spec"]["authorization"]["acls"][0]["operations"] = ["Reed"]
    user["spec"]["authentication"]["typ"] = "tls"
    user_validator = crds.validator(user["apiVersion"], "KafkaUser")
    assert user_validator is not None
    found = errors(user_validator, user)
    assert any("Reed" in e for e in found), found
    assert any("typ" in e for e in found), found

    monitor = copy.deepcopy(kind(objects, "ServiceMonitor")[0])
    monitor["spec"]["endpoints"][0]["intervall"] = "15s"
    monitor_validator = crds.validator(monitor["apiVersion"], "ServiceMonitor")
    assert monitor_validator is not None
    assert any("intervall" in e for e in errors(monitor_validator, monitor))

    certificate = copy.deepcopy(kind(objects, "Certificate")[0])
    certificate["spec"]["subject"]["organisationalUnits"] = ["service"]
    certificate["spec"]["usages"] = ["server-auth"]
    certificate_validator = crds.validator(certificate["apiVersion"], "Certificate")
    assert certificate_validator is not None
    found = errors(certificate_validator, certificate)
    assert any("organisationalUnits" in e for e in found), found
    assert any("server-auth" in e for e in found), found
