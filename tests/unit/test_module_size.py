"""Every module of the product opens on one idea: at most 600 lines, no class over 400 (issue 38).

Measured like the function-length test (tests/unit/test_function_length.py): every ``.py`` file
under ``services/jackpot`` but protoc's output, parsed, never imported; a class from its
``class`` line to its last. Issue 38 split the eleven modules and five classes that were over
the limits along their ideas; none is over them now, and none may grow past them.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.unit.test_function_length import PACKAGE, product_files

MAX_MODULE_LINES = 600
MAX_CLASS_LINES = 400


def sizes(source: str, name: str) -> dict[str, int]:
    """``name`` (the module) and ``name:Class`` of every class at any depth -> lines."""
    found = {name: len(source.splitlines())}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            found[f"{name}:{node.name}"] = (node.end_lineno or node.lineno) - node.lineno + 1
    return found


def refused(found: dict[str, int]) -> list[str]:
    """Every module over 600 lines and class over 400 of ``found``, named."""
    return [
        f"{key}: {lines} lines (split it by idea)"
        for key, lines in sorted(found.items())
        if lines > (MAX_CLASS_LINES if ":" in key else MAX_MODULE_LINES)
    ]


def over_limits(package: Path = PACKAGE) -> list[str]:
    """Every module over 600 lines and class over 400 in ``package``."""
    found: dict[str, int] = {}
    for path in product_files(package):
        name = path.relative_to(package.parent).as_posix()
        found.update(sizes(path.read_text(encoding="utf-8"), name))
    return refused(found)


def test_no_module_or_class_is_over_its_limit() -> None:
    assert len(product_files()) > 50  # the walk found the package
    assert over_limits() == []


def test_a_long_module_or_class_is_refused() -> None:
    body = "".join(f"    x{n} = {n}\n" for n in range(420))
    found = sizes(f"class Big:\n{body}" + "y = 1\n" * 200, "jackpot/new.py")
    assert refused(found) == [
        "jackpot/new.py: 621 lines (split it by idea)",
        "jackpot/new.py:Big: 421 lines (split it by idea)",
    ]
    assert refused(sizes("class Small:\n    x = 1\n", "jackpot/small.py")) == []
