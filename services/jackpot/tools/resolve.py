"""`jackpot resolve [--check] FILE...`: resolve scenario rounds with the real engine.

Without --check: one JSON outcome per file on stdout; a refused round prints a one-line reason
naming the seat or card on stderr and the exit status is 1.
With --check: ``PASS name`` / ``FAIL name: why`` per file, then ``N passed, M failed``; exit 1 on
any failure. A file expecting ``{"error": true}`` passes when its round is refused.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from jackpot.domain.errors import DomainError
from jackpot.domain.scenario import resolve_scenario


def _load(path: str) -> dict[str, Any]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError("a scenario file holds one JSON object")
    return data


def _check_one(path: str) -> str | None:
    """None when the file resolves to its `expect`; otherwise why not."""
    try:
        scenario = _load(path)
    except (OSError, ValueError) as error:
        return f"cannot read scenario: {error}"
    expect = scenario.get("expect")
    if not isinstance(expect, dict):
        return "the file has no 'expect' object"
    try:
        outcome = resolve_scenario(scenario)
    except DomainError as error:
        return None if expect.get("error") is True else f"refused: {error}"
    if expect.get("error") is True:
        return f"expected the round to be refused, got {json.dumps(outcome)}"
    wanted = {k: expect.get(k) for k in ("awards", "main", "reserves", "house_advance")}
    if outcome != wanted:
        return f"got {json.dumps(outcome)}, expected {json.dumps(wanted)}"
    return None


def run(files: list[str], check: bool) -> int:
    if check:
        passed = failed = 0
        for path in files:
            name = Path(path).stem
            problem = _check_one(path)
            if problem is None:
                passed += 1
                print(f"PASS {name}")
            else:
                failed += 1
                print(f"FAIL {name}: {problem}")
        print(f"{passed} passed, {failed} failed")
        return 1 if failed or not files else 0

    status = 0
    for path in files:
        try:
            outcome = resolve_scenario(_load(path))
        except DomainError as error:
            print(f"{path}: {error}", file=sys.stderr)
            status = 1
            continue
        except (OSError, ValueError) as error:
            print(f"{path}: cannot read scenario: {error}", file=sys.stderr)
            status = 1
            continue
        print(json.dumps(outcome))
    return status
