"""The domain package is pure: no I/O library, no other jackpot package (package docstring).

Every ``.py`` file under ``services/jackpot/domain`` is parsed with :mod:`ast` (never imported), and
every import it states, at any depth (inside functions and ``if TYPE_CHECKING`` blocks too), is
checked against a banned list and against "stdlib or jackpot.domain only".
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
    ``from jackpot import platform``). Dynamic imports through ``__import__`` are reported as the
    pseudo-module ``__import__`` so they cannot slip past the check.
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
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "__import__"
        ):
            names.add("__import__")
    return names


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
