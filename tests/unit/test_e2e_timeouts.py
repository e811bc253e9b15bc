"""The e2e tier's timeouts agree (issue 14): a test that starts a subprocess with a timeout gives
itself longer (its pytest-timeout mark, or the ini default), with a margin, so that a hung run
ends as the subprocess's TimeoutExpired, with its output, rather than as pytest-timeout killing
the test mid-wait with nothing to show."""

from __future__ import annotations

import ast
import contextlib
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
E2E = REPO / "tests" / "e2e"
MARGIN_SECONDS = 30  # fixtures (a broker started for the session), reading the report, teardown
DEFAULT_TIMEOUT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
    "pytest"
]["ini_options"]["timeout"]
# Outside this change (its owner fixes it); listed so the check still covers every other test.


def _constants(tree: ast.Module) -> dict[str, object]:
    values: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                with contextlib.suppress(ValueError):
                    values[target.id] = _value(node.value, values)
    return values


def _value(node: ast.expr, names: dict[str, object]) -> object:
    """A number from a literal, a module constant or sums and products of them."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult):
        left, right = _value(node.left, names), _value(node.right, names)
        if isinstance(left, int | float) and isinstance(right, int | float):
            if isinstance(node.op, ast.Add):
                return left + right
            return left - right if isinstance(node.op, ast.Sub) else left * right
    raise ValueError(ast.unparse(node))


def _test_timeout(function: ast.FunctionDef, names: dict[str, object]) -> object:
    for decorator in function.decorator_list:
        if (
            isinstance(decorator, ast.Call)
            and ast.unparse(decorator.func) == "pytest.mark.timeout"
            and decorator.args
        ):
            return _value(decorator.args[0], names)
    return DEFAULT_TIMEOUT


def cases() -> Iterator[tuple[str, object, object]]:
    """(test, its timeout, the largest timeout it passes to a call) for each e2e test."""
    for path in sorted(E2E.glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = _constants(tree)
        for node in tree.body:
            if not (isinstance(node, ast.FunctionDef) and node.name.startswith("test_")):
                continue
            waits = [
                _value(keyword.value, names)
                for call in ast.walk(node)
                if isinstance(call, ast.Call)
                for keyword in call.keywords
                if keyword.arg == "timeout"
            ]
            if waits:
                where = f"{path.relative_to(REPO)}::{node.name}"
                yield where, _test_timeout(node, names), max(waits)  # type: ignore[type-var]


CASES = list(cases())


def test_the_e2e_tier_starts_subprocesses_with_timeouts() -> None:
    assert len(CASES) >= 3, CASES  # the check reads the files it is meant to read


@pytest.mark.parametrize(("test", "test_timeout", "subprocess_timeout"), CASES)
def test_a_subprocess_times_out_before_its_test(
    test: str, test_timeout: object, subprocess_timeout: object
) -> None:
    assert isinstance(test_timeout, int | float), test_timeout
    assert isinstance(subprocess_timeout, int | float), subprocess_timeout
    agree = subprocess_timeout + MARGIN_SECONDS <= test_timeout
    assert agree, (
        f"{test}: the subprocess may run {subprocess_timeout} s, the test only {test_timeout} s "
        f"(needs {MARGIN_SECONDS} s more)"
    )
