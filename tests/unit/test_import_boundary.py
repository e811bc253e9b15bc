"""The import boundaries: the domain is pure, and every package imports only what lies below it.

Every ``.py`` file is parsed with :mod:`ast` (never imported), and every import it states, at any
depth (inside functions and ``if TYPE_CHECKING`` blocks too), is checked.

1. The domain package (``services/jackpot/domain``): no I/O library, no other jackpot package
   (its package docstring); "stdlib or jackpot.domain only".
2. The layering of ``services/jackpot`` (:data:`MAY_IMPORT`), bottom up: ``domain``; the contracts
   ``v1`` and ``topics``; ``platform``; ``clients`` (of the services' gRPC APIs); the services
   (``gateway``, ``pot``, ``payout``, ``display``, ``terminal``), none importing another; ``sim``
   (the floor simulator); ``tools``; ``cli``. A package imports itself and the packages its row
   names, never one above it, a sibling service, or the test tooling (``loadtest``, ``tests``).
3. No cycle: neither between the project's packages (``loadtest`` included) nor between modules.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOMAIN = REPO / "services" / "jackpot" / "domain"
DOMAIN_PACKAGE = "jackpot.domain"

BANNED_TOP_LEVEL = frozenset(
    {
        "aiokafka",
        "grpc",
        "grpc_health",
        "grpc_reflection",
        "google",
        "structlog",
        "prometheus_client",
        "socket",
        "asyncio",
        "sqlite3",
        "http",
        "urllib",
        "requests",
        "subprocess",
        "os",
        "threading",
        # Not in the brief's list, but just as much I/O or process control.
        "multiprocessing",
        "selectors",
        "ssl",
        "importlib",
        "ctypes",
    }
)
BANNED_JACKPOT = frozenset({"jackpot.platform", "jackpot.v1"})


def _resolve_relative(module: str | None, level: int, package: str) -> str:
    """The absolute name of ``from <.*level><module> import ...`` inside ``package``."""
    parts = package.split(".")
    if level - 1 > len(parts) - 1:
        raise ValueError(f"relative import beyond the top level from {package}")
    base = parts[: len(parts) - (level - 1)]
    return ".".join([*base, module] if module else base)


def imported_modules(source: str, package: str = DOMAIN_PACKAGE) -> set[str]:
    """Every module a source text imports, as absolute dotted names.

    ``from a.b import c`` yields both ``a.b`` and ``a.b.c`` (``c`` may be a submodule, as in
    ``from jackpot import platform``). Dynamic imports (``__import__``, ``importlib.import_module``)
    are reported as the pseudo-module ``__import__`` so they cannot slip past the check.
    """
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = (
                _resolve_relative(node.module, node.level, package)
                if node.level
                else (node.module or "")
            )
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names if alias.name != "*")
        elif isinstance(node, ast.Call) and _is_dynamic_import(node.func):
            names.add("__import__")
    return names


def _is_dynamic_import(func: ast.expr) -> bool:
    """``__import__(...)``, ``import_module(...)`` or ``importlib.import_module(...)``."""
    if isinstance(func, ast.Name):
        return func.id in {"__import__", "import_module"}
    return isinstance(func, ast.Attribute) and func.attr == "import_module"


def violations(source: str, package: str = DOMAIN_PACKAGE) -> list[str]:
    """Why a domain module's imports break the boundary; empty when they do not."""
    problems: list[str] = []
    for name in sorted(imported_modules(source, package)):
        top = name.split(".")[0]
        if name == "__import__":
            problems.append("dynamic import through __import__")
        elif top in BANNED_TOP_LEVEL:
            problems.append(f"banned module {name}")
        elif top == "jackpot":
            if name == "jackpot":
                problems.append("bare import of the jackpot package")
            elif any(name == b or name.startswith(b + ".") for b in BANNED_JACKPOT):
                problems.append(f"banned jackpot package {name}")
            elif not (name == DOMAIN_PACKAGE or name.startswith(DOMAIN_PACKAGE + ".")):
                # jackpot.pot, jackpot.gateway, jackpot.payout, jackpot.display, jackpot.tools,
                # jackpot.cli, jackpot.topics ... : services and edges, never the domain.
                problems.append(f"jackpot package outside the domain {name}")
        elif top not in sys.stdlib_module_names:
            problems.append(f"third-party module {name}")
    return problems


def _domain_files() -> list[Path]:
    files = sorted(DOMAIN.rglob("*.py"))
    assert DOMAIN.is_dir(), f"domain package not found at {DOMAIN}"
    assert files, f"no .py files under {DOMAIN}"
    return files


def _package_of(path: Path) -> str:
    """The package a module's relative imports resolve against (``__init__`` included)."""
    return ".".join(path.relative_to(DOMAIN.parent.parent).parent.parts)


def test_domain_package_has_the_expected_modules() -> None:
    """The walk really sees the modules the boundary is about (guards against an empty glob)."""
    names = {p.name for p in _domain_files()}
    expected = {
        "money.py",
        "cards.py",
        "hands.py",
        "paytable.py",
        "config.py",
        "engine.py",
        "events.py",
        "mystery.py",
        "scenario.py",
        "errors.py",
    }
    assert expected <= names


@pytest.mark.parametrize("path", _domain_files(), ids=lambda p: p.name)
def test_domain_module_imports_no_banned_module(path: Path) -> None:
    """No I/O library and no service package is imported by a domain module."""
    imports = imported_modules(path.read_text(encoding="utf-8"), _package_of(path))
    tops = {name.split(".")[0] for name in imports}
    assert not tops & BANNED_TOP_LEVEL, f"{path.name} imports {sorted(tops & BANNED_TOP_LEVEL)}"
    jackpot = {n for n in imports if n.split(".")[0] == "jackpot"}
    outside = {n for n in jackpot if not n.startswith(DOMAIN_PACKAGE)}
    assert not outside, f"{path.name} imports jackpot packages outside the domain: {outside}"


@pytest.mark.parametrize("path", _domain_files(), ids=lambda p: p.name)
def test_domain_module_imports_only_stdlib_or_domain(path: Path) -> None:
    """Every import is either the standard library or jackpot.domain itself."""
    assert violations(path.read_text(encoding="utf-8"), _package_of(path)) == []


def test_all_domain_imports_together_are_stdlib_or_domain() -> None:
    """The union over the package: a sanity check that the walk found real imports."""
    everything: set[str] = set()
    for path in _domain_files():
        everything |= imported_modules(path.read_text(encoding="utf-8"), _package_of(path))
    assert "jackpot.domain.money" in everything  # engine/config import it
    assert "fractions" in everything  # money.py
    for name in everything:
        top = name.split(".")[0]
        assert top in sys.stdlib_module_names or name.startswith(DOMAIN_PACKAGE), name


# ------------------------------------------------------------------ the check itself can fail


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import aiokafka\n", "banned module aiokafka"),
        ("import os.path\n", "banned module os.path"),
        ("from asyncio import sleep\n", "banned module asyncio"),
        ("def f():\n    import socket\n", "banned module socket"),
        (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import grpc\n",
            "banned module grpc",
        ),
        ("from google.protobuf import message\n", "banned module google.protobuf"),
        ("import jackpot.platform.kafka\n", "banned jackpot package jackpot.platform.kafka"),
        ("from jackpot import platform\n", "banned jackpot package jackpot.platform"),
        ("from jackpot.v1 import pot_pb2\n", "banned jackpot package jackpot.v1"),
        ("from jackpot.pot import service\n", "jackpot package outside the domain jackpot.pot"),
        ("import jackpot.gateway\n", "jackpot package outside the domain jackpot.gateway"),
        ("from jackpot import payout\n", "jackpot package outside the domain jackpot.payout"),
        ("import jackpot.display\n", "jackpot package outside the domain jackpot.display"),
        ("from jackpot.tools import resolve\n", "jackpot package outside the domain jackpot.tools"),
        ("from .. import cli\n", "jackpot package outside the domain jackpot.cli"),
        ("from ..platform import kafka\n", "banned jackpot package jackpot.platform"),
        ("import numpy\n", "third-party module numpy"),
        ("m = __import__('socket')\n", "dynamic import through __import__"),
    ],
)
def test_boundary_check_catches_a_bad_import(source: str, expected: str) -> None:
    """The checker is not vacuous: a synthetic source with a forbidden import is reported."""
    assert expected in violations(source)


def test_boundary_check_accepts_stdlib_and_domain_imports() -> None:
    """Imports like the real modules' pass: stdlib, absolute and relative jackpot.domain."""
    source = (
        "from __future__ import annotations\n"
        "import hashlib, json\n"
        "from fractions import Fraction\n"
        "from jackpot.domain.money import pesos\n"
        "from . import cards\n"
        "from .errors import Reason\n"
    )
    assert violations(source) == []
    assert imported_modules(source) >= {
        "hashlib",
        "json",
        "jackpot.domain.money",
        "jackpot.domain.cards",
        "jackpot.domain.errors",
    }


# ------------------------------------------------------------- the layering of services/jackpot

JACKPOT = REPO / "services" / "jackpot"
LOADTEST = REPO / "loadtest"
SERVICES = frozenset({"gateway", "pot", "payout", "display", "terminal", "wallet"})
TEST_TOOLING = frozenset({"loadtest", "tests"})
_BELOW_CLIENTS = frozenset({"domain", "v1", "topics", "platform"})
_BELOW_SERVICES = _BELOW_CLIENTS | {"clients"}
# What each package of services/jackpot may import of the project besides itself and the bare
# ``jackpot`` package (its ``__init__``: the version), bottom up. Nothing imports the test tooling.
MAY_IMPORT: dict[str, frozenset[str]] = {
    "jackpot": frozenset(),  # services/jackpot/__init__.py
    "domain": frozenset(),
    "v1": frozenset(),  # generated from protos/
    "topics": frozenset(),
    "platform": frozenset({"domain", "v1", "topics"}),
    "clients": frozenset(_BELOW_CLIENTS),
    **{service: frozenset(_BELOW_SERVICES) for service in SERVICES},
    "sim": frozenset(_BELOW_SERVICES),  # plays the floor through the clients, as devices do
    "tools": _BELOW_SERVICES | SERVICES | {"sim"},
    "cli": _BELOW_SERVICES | SERVICES | {"sim", "tools"},
}


def project_packages() -> set[str]:
    """The packages (and top-level modules) of services/jackpot as they are on disk."""
    return {
        path.stem if path.is_file() else path.name
        for path in JACKPOT.iterdir()
        if (path.is_dir() and (path / "__init__.py").is_file())
        or (path.suffix == ".py" and path.name != "__init__.py")
    }


def package_of(name: str) -> str:
    """The project package a dotted module name belongs to: ``pot`` for ``jackpot.pot.service``,
    ``cli`` for ``jackpot.cli``, ``loadtest``/``tests`` for the test tooling, ``jackpot`` for the
    bare package and its dunders (``from jackpot import __version__``), "" outside the project."""
    parts = name.split(".")
    if parts[0] in TEST_TOOLING:
        return parts[0]
    if parts[0] != "jackpot":
        return ""
    if len(parts) == 1 or parts[1].startswith("__"):
        return "jackpot"
    return parts[1]


def _why(importer: str, imported: str) -> str:
    if imported in TEST_TOOLING:
        return "the product imports test tooling"
    if importer in SERVICES and imported in SERVICES:
        return "a service imports another service"
    if imported not in MAY_IMPORT:
        return "a package the layering does not know (add it to MAY_IMPORT)"
    return "an import running back up"


def layer_violations(source: str, module: str, is_package: bool = False) -> list[str]:
    """Why the imports of ``module`` (dotted, e.g. ``jackpot.pot.service``; ``is_package``: an
    ``__init__``) break the layering; empty when they do not. ``source`` is the module's text."""
    importer = package_of(module)
    if importer not in MAY_IMPORT:
        return [f"{module}: its package {importer!r} has no row in MAY_IMPORT"]
    relative_base = module if is_package else module.rsplit(".", 1)[0]
    allowed = MAY_IMPORT[importer] | {importer, "jackpot", ""}
    names = imported_modules(source, relative_base)
    problems = []
    if "__import__" in names:
        problems.append(f"{module}: a dynamic import (the layering cannot see it)")
    bad = {name for name in names - {"__import__"} if package_of(name) not in allowed}
    for name in sorted(bad):
        if name.rsplit(".", 1)[0] in bad:
            continue  # ``from a import b`` yields a and a.b: a's line says it
        imported = package_of(name)
        why = _why(importer, imported)
        problems.append(f"{module} imports {name}: jackpot.{importer} -> {imported} ({why})")
    return problems


def _module_name(path: Path) -> str:
    """``jackpot.pot.service`` for services/jackpot/pot/service.py, ``loadtest.chaos`` for
    loadtest/chaos.py; a package's ``__init__`` is the package."""
    relative = path.relative_to(REPO / "services" if path.is_relative_to(JACKPOT) else REPO)
    parts = relative.with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _project_files() -> list[Path]:
    files = sorted(JACKPOT.rglob("*.py"))
    assert files, f"no .py files under {JACKPOT}"
    return files


def _imports_of(path: Path) -> set[str]:
    module = _module_name(path)
    base = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    return imported_modules(path.read_text(encoding="utf-8"), base)


@pytest.mark.parametrize("path", _project_files(), ids=lambda p: str(p.relative_to(JACKPOT)))
def test_every_module_imports_only_the_layers_below_it(path: Path) -> None:
    """Every module of services/jackpot, each import against its package's row of MAY_IMPORT."""
    source = path.read_text(encoding="utf-8")
    assert layer_violations(source, _module_name(path), path.name == "__init__.py") == []


def test_the_walk_sees_every_package_and_the_real_imports() -> None:
    """The walk is not vacuous: it finds every package the layering names (and no other), and
    imports known to exist between them."""
    assert project_packages() - {"v1"} == set(MAY_IMPORT) - {"v1", "jackpot"}
    modules = {_module_name(p) for p in _project_files()}
    assert {"jackpot.cli", "jackpot.clients.payout", "jackpot.sim.floor"} <= modules
    assert {"jackpot.tools.demo", "jackpot.terminal.links", "jackpot.platform.kafka"} <= modules
    edges = package_graph()
    assert {"clients", "platform", "v1"} <= edges["terminal"]
    assert {"sim", "clients", "pot"} <= edges["tools"]
    assert {"topics", "domain"} <= edges["platform"]
    assert {"tools", "sim"} <= edges["loadtest"]
    assert "tools" in edges["cli"]


def test_the_layering_itself_has_no_cycle() -> None:
    """The rules admit no cycle: a package never may import one that may import it back."""
    assert find_cycle({k: set(v) for k, v in MAY_IMPORT.items()}) == []


# ------------------------------------------------------------------- no cycle: packages, modules


def package_graph() -> dict[str, set[str]]:
    """Which project packages (``loadtest`` included) each imports, drawn from every import."""
    graph: dict[str, set[str]] = {}
    for path in [*_project_files(), *sorted(LOADTEST.rglob("*.py"))]:
        importer = package_of(_module_name(path))
        targets = graph.setdefault(importer, set())
        for name in _imports_of(path):
            imported = package_of(name)
            if imported and imported not in {importer, "jackpot"}:
                targets.add(imported)
    return graph


def module_graph() -> dict[str, set[str]]:
    """Which project modules each module imports (``from a import b``: module ``a.b`` if it is
    one, else ``a``)."""
    paths = [*_project_files(), *sorted(LOADTEST.rglob("*.py"))]
    modules = {_module_name(p) for p in paths}
    graph: dict[str, set[str]] = {}
    for path in paths:
        module = _module_name(path)
        graph[module] = {n for n in _imports_of(path) if n in modules and n != module}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle of ``graph`` as the path ``[a, b, ..., a]``, or [] when it has none."""
    done: set[str] = set()
    for start in sorted(graph):
        if start in done:
            continue
        path: list[str] = [start]
        on_path = {start}
        pending = [iter(sorted(graph.get(start, ())))]
        while pending:
            step = next(pending[-1], None)
            if step is None:
                pending.pop()
                done.add(path[-1])
                on_path.discard(path.pop())
            elif step in on_path:
                return [*path[path.index(step) :], step]
            elif step not in done:
                path.append(step)
                on_path.add(step)
                pending.append(iter(sorted(graph.get(step, ()))))
    return []


def test_no_cycle_between_the_projects_packages() -> None:
    assert find_cycle(package_graph()) == []


def test_no_cycle_between_the_projects_modules() -> None:
    """Not even through an import inside a function: a module never needs one that needs it."""
    assert find_cycle(module_graph()) == []


@pytest.mark.parametrize(
    ("graph", "cycle"),
    [
        ({"a": {"b"}, "b": {"a"}}, ["a", "b", "a"]),
        ({"a": {"b"}, "b": {"c"}, "c": {"b"}}, ["b", "c", "b"]),
        ({"a": {"a"}}, ["a", "a"]),
        ({"a": {"b", "c"}, "b": {"c"}, "c": set()}, []),
        ({"tools": {"sim"}, "sim": {"clients"}, "clients": set(), "cli": {"tools"}}, []),
    ],
)
def test_the_cycle_finder_finds_cycles(graph: dict[str, set[str]], cycle: list[str]) -> None:
    assert find_cycle(graph) == cycle


# ---------------------------------------------------------------- each rule refuses a bad import


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        # the domain imports nothing of the project but itself
        ("jackpot.domain.engine", "from jackpot.v1 import pot_pb2\n", "jackpot.domain -> v1"),
        ("jackpot.domain.money", "from ..topics import TopicSpec\n", "jackpot.domain -> topics"),
        # platform, topics and v1 import no service, tool or CLI
        (
            "jackpot.platform.settings",
            "from jackpot.pot.settings import PotSettings\n",
            "jackpot.platform -> pot (an import running back up)",
        ),
        (
            "jackpot.platform.settings",
            "def doc():\n    from jackpot.tools import settings_doc\n",
            "jackpot.platform -> tools",
        ),
        ("jackpot.platform.runtime", "from ..cli import main\n", "jackpot.platform -> cli"),
        ("jackpot.platform.tls", "from jackpot.clients import payout\n", "platform -> clients"),
        ("jackpot.topics", "import jackpot.gateway.settings\n", "jackpot.topics -> gateway"),
        ("jackpot.topics", "from jackpot.platform import kafka\n", "jackpot.topics -> platform"),
        ("jackpot.v1.pot_pb2", "from jackpot.platform import codec\n", "jackpot.v1 -> platform"),
        ("jackpot.v1", "from jackpot import display\n", "jackpot.v1 -> display"),
        # the clients import no service
        ("jackpot.clients.payout", "from jackpot.payout import codes\n", "clients -> payout"),
        # no service imports another service, tools, the CLI or loadtest
        (
            "jackpot.terminal.links",
            "from jackpot.payout.client import PayoutTargets\n",
            "jackpot.terminal -> payout (a service imports another service)",
        ),
        (
            "jackpot.gateway.service",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..pot import api\n",
            "jackpot.gateway -> pot (a service imports another service)",
        ),
        ("jackpot.display.feed", "from ..pot.records import Record\n", "jackpot.display -> pot"),
        (
            "jackpot.pot.ledger_restore",
            "from jackpot.tools.audit import GroupAudit\n",
            "jackpot.pot -> tools (an import running back up)",
        ),
        ("jackpot.payout.main", "def f():\n    from jackpot import cli\n", "payout -> cli"),
        ("jackpot.display.main", "from jackpot.sim.floor import Floor\n", "display -> sim"),
        (
            "jackpot.payout.service",
            "import loadtest.floor\n",
            "jackpot.payout -> loadtest (the product imports test tooling)",
        ),
        (
            "jackpot.pot.__init__",
            "from . import service\nfrom ..tools import audit\n",
            "pot -> tools",
        ),
        # the floor simulator imports no service, tool, CLI or test tooling
        ("jackpot.sim.books", "from jackpot.tools.demo import Demo\n", "jackpot.sim -> tools"),
        ("jackpot.sim.floor", "from jackpot.gateway.spool import Spool\n", "sim -> gateway"),
        ("jackpot.sim.floor", "from loadtest.hops import Hops\n", "sim -> loadtest"),
        # tools import no CLI and no test tooling
        (
            "jackpot.tools.demo",
            "def run():\n    from loadtest.floor import Floor\n",
            "jackpot.tools -> loadtest (the product imports test tooling)",
        ),
        ("jackpot.tools.report", "from jackpot.cli import build_parser\n", "tools -> cli"),
        ("jackpot.tools.demo", "from tests.polling import eventually\n", "tools -> tests"),
        ("jackpot.cli", "import loadtest.chaos\n", "jackpot.cli -> loadtest"),
        # what the layering cannot see, or does not know
        ("jackpot.platform.kafka", "m = __import__('jackpot.pot')\n", "a dynamic import"),
        (
            "jackpot.tools.demo",
            "import importlib\nm = importlib.import_module('loadtest.floor')\n",
            "a dynamic import",
        ),
        ("jackpot.platform.kafka", "from jackpot.newthing import x\n", "does not know"),
        ("jackpot.newthing.x", "import json\n", "has no row in MAY_IMPORT"),
    ],
)
def test_the_layering_refuses_a_bad_import(module: str, source: str, expected: str) -> None:
    """The checker is not vacuous: a synthetic module with an import the layering forbids is
    reported, whatever the form (absolute, relative, from a package, in a function, for types)."""
    problems = layer_violations(source, *_synthetic(module))
    assert any(expected in problem for problem in problems), problems


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("jackpot.terminal.links", "from jackpot.clients.payout import PayoutTargets\n"),
        ("jackpot.payout.grpc_api", "from ..clients.payout import OWNER_METADATA_KEY\n"),
        ("jackpot.tools.demo", "from jackpot.sim.floor import Floor\nfrom . import pki\n"),
        ("jackpot.tools.audit", "from jackpot.pot.records import Record\n"),
        ("jackpot.sim.floor", "from jackpot.clients.device import DeviceClient\n"),
        ("jackpot.platform.manifest", "import jackpot\nfrom jackpot import __version__\n"),
        ("jackpot.platform.kafka", "from jackpot.topics import TopicSpec\nimport aiokafka\n"),
        ("jackpot.cli", "from jackpot.tools.demo import main\nfrom jackpot.pot.main import main\n"),
        ("jackpot.pot.__init__", "from . import service\n"),
        ("jackpot.v1.pot_pb2", "from jackpot.v1 import common_pb2\nimport grpc\n"),
    ],
)
def test_the_layering_accepts_the_imports_it_allows(module: str, source: str) -> None:
    assert layer_violations(source, *_synthetic(module)) == []


def _synthetic(module: str) -> tuple[str, bool]:
    """A synthetic module's name, and whether it is a package (named ``<package>.__init__``)."""
    package = module.removesuffix(".__init__")
    return package, package != module
