"""Offline validation of deploy/k8s: render every overlay with kustomize, validate what it renders.

The tools come from registries through the project's own script, ``deploy/k8s/tools.sh`` (run
here once per session; it returns at once when everything is installed):

- kustomize, built by ``go install`` from the Go module proxy;
- Strimzi's CRDs, generated from Maven Central's io.strimzi:api by io.strimzi:crd-generator;
- the Prometheus Operator's CRDs, generated from its Go API module by controller-gen;
- cert-manager's Issuer and Certificate CRDs, from its Go module (deploy/crds);
- the Kubernetes OpenAPI schemas (as JSON schemas) ship with the PyPI package kubernetes-validate.

Every test here is marked ``deploy`` (``make k8s-test``).
"""

from __future__ import annotations

import importlib.util
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.deploy.k8s import K8S, OVERLAYS, Obj

# The PyPI packages the validation needs (dev extras). Without them only test_packages.py is
# collected, and fails naming them, so that `pytest -m unit` and the rest still run.
PACKAGES = {
    "yaml": "PyYAML",
    "jsonschema": "jsonschema",
    "referencing": "referencing",
    "kubernetes_validate": "kubernetes-validate",
}
MISSING = [pip for module, pip in PACKAGES.items() if importlib.util.find_spec(module) is None]
if MISSING:
    collect_ignore = [
        p.name for p in Path(__file__).parent.glob("test_*.py") if p.name != "test_packages.py"
    ]

TOOLS_SH = K8S / "tools.sh"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "deploy: offline validation of deploy/k8s (make k8s-test)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/deploy/" in item.path.as_posix():
            item.add_marker(pytest.mark.deploy)


@dataclass(frozen=True)
class Tools:
    kustomize: Path
    strimzi_crds: Path
    prometheus_operator_crds: Path
    cert_manager_crds: Path


@pytest.fixture(scope="session")
def tools() -> Tools:
    """Install (idempotently) and locate kustomize and the CRD schemas."""
    install = subprocess.run([TOOLS_SH, "install"], capture_output=True, text=True, timeout=900)
    if install.returncode != 0:
        pytest.fail(f"deploy/k8s/tools.sh install failed:\n{install.stderr}")
    printed = subprocess.run([TOOLS_SH, "env"], capture_output=True, text=True, check=True)
    paths = dict(line.split("=", 1) for line in printed.stdout.splitlines() if "=" in line)
    return Tools(
        Path(paths["KUSTOMIZE"]),
        Path(paths["STRIMZI_CRDS"]),
        Path(paths["PROMETHEUS_OPERATOR_CRDS"]),
        Path(paths["CERT_MANAGER_CRDS"]),
    )


def render(tools: Tools, overlay: str) -> list[Obj]:
    import yaml

    built = subprocess.run(
        [str(tools.kustomize), "build", str(K8S / "overlays" / overlay)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if built.returncode != 0:
        pytest.fail(f"kustomize build overlays/{overlay} failed:\n{built.stderr}")
    return [doc for doc in yaml.safe_load_all(built.stdout) if doc]


@pytest.fixture(scope="session")
def rendered(tools: Tools) -> dict[str, list[Obj]]:
    """Every overlay's objects, rendered once per session."""
    return {overlay: render(tools, overlay) for overlay in OVERLAYS}


@pytest.fixture(scope="session")
def access() -> dict[str, dict[str, list[str]]]:
    """deploy/k8s/access.yaml: which topics, groups and transactional ids each service uses."""
    import yaml

    data = yaml.safe_load((K8S / "access.yaml").read_text(encoding="utf-8"))
    services: dict[str, dict[str, list[str]]] = data["services"]
    return services
