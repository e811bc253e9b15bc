"""docs/compliance.md maps every requirement (R1-R14) and every rule to code and tests; this keeps
it true: a requirement or rule without a row, a row without a test or a reason, or a row naming a
test that does not exist fails."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

from tests.unit.test_rules_doc import rules

REPO = Path(__file__).resolve().parents[2]
COMPLIANCE_DOC = REPO / "docs" / "compliance.md"
REQUIREMENTS = [f"R{n}" for n in range(1, 15)]
ROW = re.compile(r"^\| (?:\[)?(?P<id>R\d+|[MCEPSXDLVO]\d{0,2})(?:\]\([^)]*\))? \|", re.MULTILINE)
NODE_ID = re.compile(r"`(?P<path>tests/[\w/]+\.py)::(?P<name>test_\w+)`")
NOT_APPLICABLE = re.compile(r"\| n/a: \S.{10,}\|$")


@cache
def matrix() -> dict[str, str]:
    """Row id -> its whole line."""
    rows: dict[str, str] = {}
    for line in COMPLIANCE_DOC.read_text(encoding="utf-8").splitlines():
        match = ROW.match(line)
        if match:
            assert match["id"] not in rows, f"docs/compliance.md has two rows for {match['id']}"
            rows[match["id"]] = line
    return rows


@cache
def defined_tests(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
    }


def missing_tests(line: str) -> list[str]:
    """The node ids a row names that do not exist (file or function)."""
    missing = []
    for match in NODE_ID.finditer(line):
        path = REPO / match["path"]
        if not path.is_file() or match["name"] not in defined_tests(path):
            missing.append(f"{match['path']}::{match['name']}")
    return missing


def test_every_requirement_and_every_rule_has_a_row() -> None:
    wanted = [*REQUIREMENTS, *rules()]
    absent = [row_id for row_id in wanted if row_id not in matrix()]
    assert not absent, f"docs/compliance.md has no row for {absent}"
    unknown = sorted(set(matrix()) - set(wanted))
    assert not unknown, f"docs/compliance.md has rows for ids nobody defines: {unknown}"


def test_every_row_names_a_test_or_says_why_it_does_not_apply() -> None:
    bare = [
        row_id
        for row_id, line in matrix().items()
        if not NODE_ID.search(line) and not NOT_APPLICABLE.search(line)
    ]
    assert not bare, f"rows with neither a test nor a reason: {bare}"


def test_every_named_test_exists() -> None:
    missing = {row_id: m for row_id, line in matrix().items() if (m := missing_tests(line))}
    assert not missing, f"docs/compliance.md names tests that do not exist: {missing}"


def test_the_checks_find_what_is_wrong() -> None:
    """A made-up node id is reported missing; a real one is not; a row without either fails."""
    real = "`tests/unit/test_compliance_doc.py::test_every_named_test_exists`"
    made_up = "`tests/unit/test_compliance_doc.py::test_that_was_never_written`"
    assert missing_tests(f"| R1 | x | y | {real}, {made_up} |") == [made_up.strip("`")]
    assert not NODE_ID.search("| R1 | x | y | nothing |")
    assert NOT_APPLICABLE.search("| R99 | x | y | n/a: the project has no such device at all |")
