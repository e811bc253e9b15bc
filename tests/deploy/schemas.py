"""JSON-schema validators for rendered objects: Kubernetes' own kinds and custom resources.

- Built-in kinds: the strict JSON schemas of the Kubernetes OpenAPI that the PyPI package
  kubernetes-validate ships (``kubernetes-json-schema/v<version>-local-strict``: unknown fields
  are errors, as with ``kubectl apply --validate=strict``).
- Custom resources: the ``openAPIV3Schema`` of each served version of the CRDs that
  deploy/k8s/tools.sh generates (Strimzi, Prometheus Operator), turned into JSON Schema the way the
  API server reads it: ``nullable``, ``x-kubernetes-int-or-string`` and
  ``x-kubernetes-preserve-unknown-fields`` honoured, unknown fields refused (the API server would
  silently prune them, which hides typos), ``metadata`` checked as a Kubernetes ObjectMeta.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from referencing import Registry, Resource

Obj = dict[str, Any]

OBJECT_META = "https://kubernetes.io/api/_definitions.json#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def _schema_dir(version: str) -> Any:
    return (
        resources.files("kubernetes_validate")
        / "kubernetes-json-schema"
        / f"v{version}-local-strict"
    )


def kubernetes_versions() -> list[str]:
    """The Kubernetes versions whose schemas the installed kubernetes-validate ships."""
    root = resources.files("kubernetes_validate") / "kubernetes-json-schema"
    found = [
        entry.name.removeprefix("v").removesuffix("-local-strict")
        for entry in root.iterdir()
        if entry.name.endswith("-local-strict")
    ]
    return sorted(found, key=lambda v: tuple(int(part) for part in v.split(".")))


@cache
def _definitions(version: str) -> Resource[Any]:
    text = (_schema_dir(version) / "_definitions.json").read_text(encoding="utf-8")
    return Resource.from_contents(json.loads(text))


class KubernetesSchemas:
    """Validators for the built-in kinds of one Kubernetes version (e.g. "1.31.0")."""

    def __init__(self, version: str) -> None:
        self.version = version
        self._validators: dict[tuple[str, str], jsonschema.protocols.Validator | None] = {}

    def validator(self, api_version: str, kind: str) -> jsonschema.protocols.Validator | None:
        key = (api_version, kind)
        if key not in self._validators:
            # kubernetes-validate's file naming: apps/v1 -> apps-v1, networking.k8s.io/v1 ->
            # networking-v1, v1 -> v1.
            group, _, version = api_version.rpartition("/")
            stem = f"{group.split('.')[0]}-{version}" if group else version
            path = _schema_dir(self.version) / f"{kind.lower()}-{stem}.json"
            if not path.is_file():
                self._validators[key] = None
            else:
                schema = json.loads(path.read_text(encoding="utf-8"))
                registry: Registry[Any] = Resource.from_contents(schema) @ Registry()
                registry = _definitions(self.version) @ registry
                self._validators[key] = jsonschema.Draft202012Validator(schema, registry=registry)
        return self._validators[key]


def openapi_to_json_schema(node: Any, *, in_combinator: bool = False) -> Any:
    """A structural openAPIV3Schema node as JSON Schema (draft 2020-12)."""
    if isinstance(node, list):
        return [openapi_to_json_schema(item, in_combinator=in_combinator) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("properties", "patternProperties"):
            out[key] = {name: openapi_to_json_schema(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
            out[key] = openapi_to_json_schema(value)
        elif key in ("allOf", "anyOf", "oneOf"):
            out[key] = openapi_to_json_schema(value, in_combinator=True)
        elif key.startswith("x-kubernetes-") or key in ("description", "nullable", "example"):
            continue
        else:
            out[key] = value
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    preserve = node.get("x-kubernetes-preserve-unknown-fields", False)
    closed = "properties" in node and "additionalProperties" not in node
    if closed and not preserve and not in_combinator:
        out["additionalProperties"] = False
    return out


class CrdSchemas:
    """Validators for the custom resources whose CRDs are in the given directories."""

    def __init__(self, directories: Iterable[Path], kubernetes_version: str) -> None:
        self.sources: dict[tuple[str, str], Path] = {}
        self._schemas: dict[tuple[str, str], Obj] = {}
        self._validators: dict[tuple[str, str], jsonschema.protocols.Validator] = {}
        self._registry: Registry[Any] = _definitions(kubernetes_version) @ Registry()
        for directory in directories:
            files = sorted(directory.glob("*.yaml"))
            if not files:
                raise FileNotFoundError(f"no CRD files in {directory}")
            for path in files:
                for crd in yaml.safe_load_all(path.read_text(encoding="utf-8")):
                    if crd and crd.get("kind") == "CustomResourceDefinition":
                        self._add(crd, path)

    def _add(self, crd: Obj, path: Path) -> None:
        group = crd["spec"]["group"]
        kind = crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            if not version.get("served", False):
                continue
            api_version = f"{group}/{version['name']}"
            schema = openapi_to_json_schema(version["schema"]["openAPIV3Schema"])
            schema.setdefault("properties", {})
            schema["properties"]["apiVersion"] = {"const": api_version}
            schema["properties"]["kind"] = {"const": kind}
            schema["properties"]["metadata"] = {"$ref": OBJECT_META}
            schema["required"] = sorted({*schema.get("required", []), "apiVersion", "kind"})
            self._schemas[(api_version, kind)] = schema
            self.sources[(api_version, kind)] = path

    def kinds(self) -> set[tuple[str, str]]:
        return set(self._schemas)

    def validator(self, api_version: str, kind: str) -> jsonschema.protocols.Validator | None:
        key = (api_version, kind)
        if key not in self._schemas:
            return None
        if key not in self._validators:
            self._validators[key] = jsonschema.Draft202012Validator(
                self._schemas[key], registry=self._registry
            )
        return self._validators[key]


def errors(validator: jsonschema.protocols.Validator, obj: Obj) -> list[str]:
    """Every schema error of ``obj``, as "path: message" lines, deepest first."""
    found = sorted(validator.iter_errors(obj), key=lambda e: -len(e.absolute_path))
    return [
        f"{'.'.join(str(p) for p in error.absolute_path) or '<root>'}: {error.message[:300]}"
        for error in found
    ]
