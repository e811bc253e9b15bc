"""The alerts of deploy/k8s/base/monitoring/prometheusrule.yaml under ``promtool test rules``.

The PrometheusRule's ``spec.groups`` are written to ``build/promtool/jackpot-rules.yaml`` at test
time by ``loadtest.monitor.write_rules`` (what ``make monitor`` loads too; never a second hand-kept
copy) beside the test cases of ``tests/deploy/promtool/``; promtool
comes from Debian's ``prometheus`` package (``make monitoring-tools``, part of ``make setup``).
Every alert needs a case that fires it and one that must stay silent.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from loadtest.monitor import RULES_FILE, rule_groups, write_rules

from tests.deploy.k8s import REPO

CASES = Path(__file__).parent / "promtool"
STAGE = REPO / "build" / "promtool"


def rule_alerts() -> set[str]:
    return {rule["alert"] for group in rule_groups() for rule in group["rules"] if "alert" in rule}


def alert_cases() -> list[dict[str, Any]]:
    """Every ``alert_rule_test`` entry of every promtool test file."""
    cases = []
    for path in sorted(CASES.glob("*_test.yaml")):
        for test in yaml.safe_load(path.read_text(encoding="utf-8"))["tests"]:
            cases.extend(test.get("alert_rule_test", []))
    return cases


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        pytest.fail("promtool is missing: `make setup` installs Debian's prometheus package")
    return found


@pytest.fixture(scope="module")
def staged() -> Path:
    """build/promtool/: the rule's groups as a plain rules file, and the test cases beside it."""
    STAGE.mkdir(parents=True, exist_ok=True)
    write_rules(STAGE / RULES_FILE)
    for case in CASES.glob("*_test.yaml"):
        shutil.copy(case, STAGE / case.name)
    return STAGE


def run_promtool(staged: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [promtool(), *args], cwd=staged, capture_output=True, text=True, timeout=120
    )


def test_the_rules_file_is_valid(staged: Path) -> None:
    checked = run_promtool(staged, "check", "rules", RULES_FILE)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"{len(rule_alerts())} rules found" in checked.stdout


def test_every_alert_case_passes(staged: Path) -> None:
    files = sorted(p.name for p in staged.glob("*_test.yaml"))
    assert files, f"no promtool test files in {CASES}"
    tested = run_promtool(staged, "test", "rules", *files)
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_every_alert_has_a_firing_and_a_silent_case() -> None:
    alerts = rule_alerts()
    cases = alert_cases()
    firing = {c["alertname"] for c in cases if c.get("exp_alerts")}
    silent = {c["alertname"] for c in cases if not c.get("exp_alerts")}
    assert alerts - firing == set(), f"alerts no promtool case fires: {sorted(alerts - firing)}"
    assert alerts - silent == set(), (
        f"alerts with no silent promtool case: {sorted(alerts - silent)}"
    )


def test_the_cases_name_only_real_alerts() -> None:
    """promtool passes ``exp_alerts: []`` for an alert name that does not exist: catch typos."""
    unknown = {c["alertname"] for c in alert_cases()} - rule_alerts()
    assert not unknown, f"promtool cases for alerts the rules do not define: {sorted(unknown)}"
