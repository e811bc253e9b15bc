"""Every module of the product opens on one idea: at most 600 lines, no class over 400 (issue 38).

Measured like the function-length test (tests/unit/test_function_length.py): every ``.py`` file
under ``services/jackpot`` but protoc's output, parsed, never imported; a class from its
``class`` line to its last. The modules and classes still over the limits are listed in
``OVER`` with the size they have today as their ceiling: none may grow, none may join, and an
entry that has come under its limit fails until it is removed. Issue 38 empties the list by
splitting each along its ideas, not its line count.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.unit.test_function_length import PACKAGE, product_files

MAX_MODULE_LINES = 600
MAX_CLASS_LINES = 400
# "path under services/" or "path:Class" -> its size today, the most it may have until split.
OVER: dict[str, int] = {
    "jackpot/pot/processor.py": 670,
    "jackpot/pot/processor.py:PotProcessor": 530,
}


def sizes(source: str, name: str) -> dict[str, int]:
    """``name`` (the module) and ``name:Class`` of every class at any depth -> lines."""
    found = {name: len(source.splitlines())}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            found[f"{name}:{node.name}"] = (node.end_lineno or node.lineno) - node.lineno + 1
    return found


def over_limits(package: Path = PACKAGE) -> dict[str, int]:
    """Every module over 600 lines and class over 400 in ``package``."""
    found: dict[str, int] = {}
    for path in product_files(package):
        name = path.relative_to(package.parent).as_posix()
        for key, lines in sizes(path.read_text(encoding="utf-8"), name).items():
            if lines > (MAX_CLASS_LINES if ":" in key else MAX_MODULE_LINES):
                found[key] = lines
    return found


def refused(found: dict[str, int]) -> list[str]:
    """What breaks the limits beyond ``OVER``: a newcomer, one grown, one listed but back under."""
    problems = [
        f"{key}: {lines} lines (split it by idea)" if key not in OVER else
        f"{key}: grew to {lines} lines from {OVER[key]}"
        for key, lines in sorted(found.items())
        if lines > OVER.get(key, 0)
    ]  # fmt: skip
    problems += [
        f"{key}: under its limit now, remove it from OVER" for key in OVER if key not in found
    ]
    return problems


def test_no_module_or_class_grows_past_its_limit() -> None:
    assert len(product_files()) > 50  # the walk found the package
    assert refused(over_limits()) == []


def test_a_new_long_module_or_class_is_refused() -> None:
    body = "".join(f"    x{n} = {n}\n" for n in range(420))
    found = {**OVER, **sizes(f"class Big:\n{body}" + "y = 1\n" * 200, "jackpot/new.py")}
    found = {k: v for k, v in found.items() if v > (400 if ":" in k else 600)}
    assert refused(found) == [
        "jackpot/new.py: 621 lines (split it by idea)",
        "jackpot/new.py:Big: 421 lines (split it by idea)",
    ]


def test_a_listed_module_that_grew_or_was_split_is_named() -> None:
    ceiling = OVER["jackpot/pot/processor.py"]
    grown = {**OVER, "jackpot/pot/processor.py": ceiling + 1}
    assert refused(grown) == [
        f"jackpot/pot/processor.py: grew to {ceiling + 1} lines from {ceiling}"
    ]
    split = {k: v for k, v in OVER.items() if k != "jackpot/pot/processor.py:PotProcessor"}
    assert refused(split) == [
        "jackpot/pot/processor.py:PotProcessor: under its limit now, remove it from OVER"
    ]
