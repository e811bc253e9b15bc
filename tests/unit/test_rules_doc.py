"""docs/rules.md states the rules in the project's words; this keeps it, code and tests in step.

A rule is defined by a heading ``### S7 — ...``. A rule is cited by a test when a test function
names it in its name (``test_S7_S8_...``), docstring, comments or body (``rule S7``, ``(S7)``,
``S1-S8``), or when a golden round (``tests/golden/*.json``) lists it in ``rules``. This module
fails when a defined rule has no test citing it, when services/, protos/, loadtest/ or tests/ cite
an id that is not defined, and when a link under a rule leads nowhere: to a missing file or name,
to a test or golden round that does not cite that rule, or to code that never mentions it.

An id inside a string literal of its own (``"D1"``, a Draw table; ``"X1"``, a round) is a name,
not a citation. This module is left out of the search, so its examples cite nothing.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RULES_DOC = REPO / "docs" / "rules.md"
GOLDEN = REPO / "tests" / "golden"
GENERATED = REPO / "services" / "jackpot" / "v1"  # protobuf code, generated from protos/
THIS = Path(__file__).resolve()

HEADING = re.compile(r"^### (?P<id>[MCEPSXDLVO]\d{0,2}) — ", re.MULTILINE)
SECTION_END = re.compile(r"^#{2,3} ", re.MULTILINE)
CITED = re.compile(
    r"(?<!\w)(?P<letter>[MCEPSXDLVO])(?P<low>\d{1,2})(?:-(?P=letter)?(?P<high>\d{1,2}))?(?!\w)"
)
# The paytable rule has no number: "rules P, P1", "P, S1, S2:", "rule P".
BARE_P = re.compile(r"(?<!\w)P(?=,\s*[MCEPSXDLVO]\d)|\brules?\s+P\b")
NAME_TOKEN = re.compile(r"[MCEPSXDLVO]\d{0,2}")
LINK = re.compile(r"\[`?(?P<text>[^\]`]+)`?\]\((?P<target>[^)#\s]+)[^)]*\)")


def cited_ids(text: str) -> set[str]:
    """Rule ids cited in free text or source code (ranges expanded; bare string literals not)."""
    ids: set[str] = set()
    for match in CITED.finditer(text):
        start, end = match.span()
        quote = text[start - 1] if start else ""
        if quote in "\"'" and quote and text[end : end + 1] == quote:
            continue  # "D1" alone in quotes is a name (a table, a round), not a citation
        low = int(match["low"])
        high = int(match["high"]) if match["high"] else low
        ids.update(f"{match['letter']}{n}" for n in range(low, high + 1))
    if BARE_P.search(text):
        ids.add("P")
    return ids


def name_ids(name: str) -> set[str]:
    """Rule ids in a test function's name: ``test_S7_S8_shortfall`` cites S7 and S8."""
    return {token for token in name.split("_") if NAME_TOKEN.fullmatch(token)}


@dataclass
class Rule:
    rule_id: str
    text: str
    code_links: list[tuple[str, str]] = field(default_factory=list)  # (text, target)
    test_links: list[tuple[str, str]] = field(default_factory=list)


@cache
def rules() -> dict[str, Rule]:
    doc = RULES_DOC.read_text(encoding="utf-8")
    found: dict[str, Rule] = {}
    for heading in HEADING.finditer(doc):
        rule_id = heading["id"]
        assert rule_id not in found, f"docs/rules.md defines {rule_id} twice"
        rest = doc[heading.end() :]
        end = SECTION_END.search(rest)
        text = rest[: end.start()] if end else rest
        code, _, tests = text.partition("\n- Tests:")
        _, _, code = code.partition("\n- Code:")
        rule = Rule(rule_id, text)
        rule.code_links = [(m["text"], m["target"]) for m in LINK.finditer(code)]
        rule.test_links = [(m["text"], m["target"]) for m in LINK.finditer(tests)]
        found[rule_id] = rule
    return found


def _test_files() -> list[Path]:
    return sorted(p for p in (REPO / "tests").rglob("*.py") if p.resolve() != THIS)


def _code_files() -> Iterator[Path]:
    for path in sorted((REPO / "services").rglob("*.py")):
        if GENERATED not in path.parents:
            yield path
    yield from sorted((REPO / "protos").rglob("*.proto"))
    yield from sorted((REPO / "loadtest").rglob("*.py"))


def _functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


@cache
def citations_by_tests() -> dict[str, set[str]]:
    """Rule id -> the tests citing it: ``path::test_name`` and ``tests/golden/<round>.json``."""
    citations: dict[str, set[str]] = {}
    for path in _test_files():
        source = path.read_text(encoding="utf-8")
        for node in _functions(ast.parse(source)):
            if not node.name.startswith("test_"):
                continue
            body = ast.get_source_segment(source, node) or ""
            where = f"{path.relative_to(REPO)}::{node.name}"
            for rule_id in name_ids(node.name) | cited_ids(body):
                citations.setdefault(rule_id, set()).add(where)
    for path, cited in golden_rules().items():
        for rule_id in cited:
            citations.setdefault(rule_id, set()).add(str(path.relative_to(REPO)))
    return citations


@cache
def golden_rules() -> dict[Path, list[str]]:
    files = sorted(GOLDEN.glob("*.json"))
    assert files, f"no golden rounds in {GOLDEN}"
    return {path: json.loads(path.read_text(encoding="utf-8"))["rules"] for path in files}


def all_citations() -> dict[str, set[str]]:
    """Every rule id cited anywhere in code or tests -> where (files)."""
    where: dict[str, set[str]] = {}
    for path in [*_code_files(), *_test_files()]:
        for rule_id in cited_ids(path.read_text(encoding="utf-8")):
            where.setdefault(rule_id, set()).add(str(path.relative_to(REPO)))
    for rule_id, places in citations_by_tests().items():  # test names, golden rounds
        where.setdefault(rule_id, set()).update(places)
    return where


def defined_names(path: Path) -> set[str]:
    """Top-level functions, classes and assignments, and ``Class.method``, defined in a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            names.update(
                f"{node.name}.{item.name}"
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
            )
        if isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def function_cites(path: Path, name: str) -> set[str]:
    source = path.read_text(encoding="utf-8")
    for node in _functions(ast.parse(source)):
        if node.name == name:
            return name_ids(name) | cited_ids(ast.get_source_segment(source, node) or "")
    raise AssertionError(f"{path.relative_to(REPO)} defines no {name}")


# ------------------------------------------------------------------------------------ the checks


def test_rules_doc_defines_every_group_of_rules() -> None:
    defined = rules()
    assert {rule_id[0] for rule_id in defined} == set("MCEPSXDLVO")
    assert len(defined) >= 43, sorted(defined)


def test_every_rule_is_cited_by_a_test() -> None:
    """No rule without a test: a test function or a golden round must cite each id."""
    citations = citations_by_tests()
    untested = sorted(rule_id for rule_id in rules() if not citations.get(rule_id))
    assert not untested, f"rules defined in docs/rules.md that no test cites: {untested}"


def test_every_cited_id_is_defined() -> None:
    """Code and tests cite only rules docs/rules.md defines (a typo'd or retired id fails)."""
    undefined = {
        rule_id: sorted(places)
        for rule_id, places in all_citations().items()
        if rule_id not in rules()
    }
    assert not undefined, f"cited but not defined in docs/rules.md: {undefined}"


@pytest.mark.parametrize("rule_id", sorted(rules()))
def test_rule_links_lead_to_code_and_tests_that_cite_it(rule_id: str) -> None:
    """Each rule links to the code that enforces it and to tests of it; every link resolves,
    every linked name exists, and each linked file, test or round mentions the rule."""
    check_links(rule_id, rules()[rule_id])


def check_links(rule_id: str, rule: Rule) -> None:
    """An AssertionError naming the first link of ``rule`` that leads nowhere or to something
    that does not cite ``rule_id``."""
    assert rule.code_links, f"{rule_id}: no '- Code:' link"
    assert rule.test_links, f"{rule_id}: no '- Tests:' link"
    for text, target in rule.code_links:
        path = (RULES_DOC.parent / target).resolve()
        assert path.is_file(), f"{rule_id}: code link {target} does not exist"
        source = path.read_text(encoding="utf-8")
        assert rule_id in cited_ids(source), f"{rule_id}: {target} never cites {rule_id}"
        if not text.endswith((".py", ".proto")):
            assert text in defined_names(path), f"{rule_id}: {target} defines no {text}"
    for text, target in rule.test_links:
        path = (RULES_DOC.parent / target).resolve()
        assert path.is_file(), f"{rule_id}: test link {target} does not exist"
        if path.suffix == ".json":
            assert text == path.stem, f"{rule_id}: link text {text} is not the round {path.stem}"
            cited = golden_rules().get(path)
            assert cited is not None, f"{rule_id}: {target} is not a golden round"
            assert rule_id in cited, f"{rule_id}: golden round {path.stem} lists only {cited}"
        else:
            assert text.startswith("test_"), f"{rule_id}: {text} is not a test function"
            assert rule_id in function_cites(path, text), f"{rule_id}: {text} never cites it"


# The round oracle (jackpot.sim.oracle) judges these rules on whole ledgers; its tests are linked
# under each of them, so that a rule's page shows the judge that would refuse a ledger breaking it.
ORACLE_TESTS = "../tests/unit/test_round_oracle.py"
JUDGED_BY_THE_ORACLE = ("S3", "S4", "S7", "S8", "X2")


@pytest.mark.parametrize("rule_id", JUDGED_BY_THE_ORACLE)
def test_the_round_oracles_tests_are_linked_under_the_rules_it_judges(rule_id: str) -> None:
    """S3, S4, S7, S8, X2 each link at least one test of the round oracle, and (as for every
    link) each linked test exists and cites the rule."""
    rule = rules()[rule_id]
    linked = [text for text, target in rule.test_links if target == ORACLE_TESTS]
    assert linked, f"{rule_id}: no test of the round oracle linked ({ORACLE_TESTS})"
    check_links(rule_id, rule)


@pytest.mark.parametrize(
    ("link", "refusal"),
    [
        (("test_S3_no_such_test", ORACLE_TESTS), "defines no test_S3_no_such_test"),
        (("test_S3_odd_peso", "../tests/unit/test_no_such_file.py"), "does not exist"),
        (("test_an_oracle_that_saw_no_round_does_not_pass", ORACLE_TESTS), "never cites it"),
        (("05-straight-flush-cap", "../tests/golden/05-straight-flush-cap.json"), "lists only"),
    ],
)
def test_a_link_to_a_test_that_is_missing_or_does_not_cite_the_rule_fails(
    link: tuple[str, str], refusal: str
) -> None:
    """The check above can fail: S3 with one more link, to a test that does not exist, to a file
    that does not exist, to a test of the oracle that does not cite S3, to a round of S4 only."""
    rule = rules()["S3"]
    check_links("S3", rule)
    broken = Rule(rule.rule_id, rule.text, rule.code_links, [*rule.test_links, link])
    with pytest.raises(AssertionError, match=refusal):
        check_links("S3", broken)


def test_interpretations_are_marked() -> None:
    """The choices the regulation leaves open are marked as such (C5, S4, S7-S9, X2, D5 are
    wholly the project's; others carry an interpretation of a detail)."""
    for rule_id in ("C4", "C5", "C7", "E3", "P4", "S3", "S4", "S5", "S7", "S8", "S9", "X2", "D5"):
        assert "**Interpretation**" in rules()[rule_id].text, rule_id


def test_the_operator_options_are_marked_outside_the_scj_text() -> None:
    """Levels (L) and envy bonuses (V) are the operator's options, not the regulation's: their
    section says so, and every one of their rules is marked as an interpretation."""
    doc = RULES_DOC.read_text(encoding="utf-8")
    options = [rule_id for rule_id in rules() if rule_id[0] in "LV"]
    assert {rule_id[0] for rule_id in options} == {"L", "V"}
    for rule_id in options:
        assert "**Interpretation**" in rules()[rule_id].text, rule_id
    heading = doc.index("## Operator options beside the SCJ rules (L, V)")
    assert "not part of the SCJ text" in doc[heading : doc.index("### L1 — ")]


# ------------------------------------------------------------------- the citation search itself


def test_cited_ids_reads_the_ways_the_code_cites_rules() -> None:
    assert cited_ids("rule S5; (S6) and M2, E1-E6") == {
        "S5",
        "S6",
        "M2",
        *(f"E{n}" for n in range(1, 7)),
    }
    assert cited_ids("rules S1-8, C1-C3") == {
        "S1",
        "S2",
        "S3",
        "S4",
        "S5",
        "S6",
        "S7",
        "S8",
        "C1",
        "C2",
        "C3",
    }
    assert cited_ids('"""D4: a snapshot...') == {"D4"}
    assert cited_ids('tables=[("D1", "draw")]; open_round("X1")') == set()
    assert cited_ids("rules P, P1, P4") == {"P", "P1", "P4"}
    assert cited_ids("P, S1, S2: the default paytable") == {"P", "S1", "S2"}
    assert cited_ids("PotSettings, P, Paytable, 5S AS T1 R1 x2") == set()
    assert cited_ids("levels L1-L3, envy (V2)") == {"L1", "L2", "L3", "V2"}
    assert cited_ids('prize "V1" and pot_pb2, jackpot.v1, LV2') == set()
    assert name_ids("test_C2_C3_commission_12_5") == {"C2", "C3"}
    assert name_ids("test_P_default_paytable") == {"P"}


def test_the_checks_are_not_vacuous() -> None:
    """Ids that are not defined would be reported; real citations are found where expected."""
    assert "S10" not in rules()
    assert (
        "tests/unit/test_engine_rules.py::test_S7_shortfall_from_reserves_in_order_then_house_advance"
        in (citations_by_tests()["S7"])
    )
    assert "tests/golden/10-reserve-ceiling-overflow-chain.json" in citations_by_tests()["C5"]
    assert "services/jackpot/domain/engine.py" in all_citations()["S8"]
