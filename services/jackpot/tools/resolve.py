"""`jackpot resolve [--check] FILE...`: resolve scenario rounds with the real engine.

Without --check: one JSON outcome per file on stdout; a refused round prints a one-line reason
naming the seat or card on stderr and the exit status is 1.
With --check: ``PASS name`` / ``FAIL name: why`` per file, then ``N passed, M failed``; exit 1 on
any failure. A file expecting ``{"error": "DUPLICATE_CARD"}`` passes when its round is refused for
exactly that reason (a ``jackpot.domain.errors.Reason``) and the refused command left every
balance as it found it. A bare ``{"error": true}`` (the regulator-side form) passes for any
refusal that left the balances alone, and the PASS line says which reason it was;
``require_reasons`` (``--require-reasons``, what ``make test`` uses on the project's own rounds)
makes it fail, asking for the reason to be written.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.scenario import RoundRefused, resolve_scenario

REASONS = tuple(reason.value for reason in Reason)


def _load(path: str) -> dict[str, Any]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError("a scenario file holds one JSON object")
    return data


def _expected_error(expect: dict[str, Any]) -> str | bool | None:
    """The refusal `expect` names: a reason, True (none named), or None (an outcome expected).
    Raises ValueError when `expect.error` is neither."""
    if "error" not in expect:
        return None
    wanted = expect["error"]
    if set(expect) != {"error"}:
        raise ValueError(f"an error round's expect holds only 'error', got {sorted(expect)}")
    if wanted is True or (isinstance(wanted, str) and wanted in REASONS):
        return wanted
    raise ValueError(
        f"expect.error must name why the round is refused, one of {', '.join(REASONS)}; "
        f"got {json.dumps(wanted)}"
    )


def _changed(error: DomainError) -> str | None:
    """The balances a refused command changed, or None: a refusal must change nothing."""
    changed = error.changed if isinstance(error, RoundRefused) else {}
    if not changed:
        return None
    return ", ".join(f"{name} {before} -> {after}" for name, (before, after) in changed.items())


def _check_one(path: str, require_reasons: bool = False) -> tuple[str | None, str]:
    """(None, note) when the file resolves to its `expect`; otherwise (why not, "")."""
    try:
        scenario = _load(path)
    except (OSError, ValueError) as error:
        return f"cannot read scenario: {error}", ""
    expect = scenario.get("expect")
    if not isinstance(expect, dict):
        return "the file has no 'expect' object", ""
    try:
        wanted_error = _expected_error(expect)
    except ValueError as error:
        return str(error), ""
    try:
        outcome = resolve_scenario(scenario)
    except DomainError as error:
        reason = error.reason.value
        changed = _changed(error)
        if changed is not None:
            return f"refused ({reason}), but the refused command changed balances: {changed}", ""
        if wanted_error is None:
            return f"refused: {error}", ""
        if wanted_error is True:
            if not require_reasons:
                return None, f" (refused with {reason}; the file names no reason)"
            return (
                "expect.error is true, which names no reason: write the reason the round must "
                f'be refused, e.g. {{"error": "{reason}"}} (it was refused: {error})'
            ), ""
        if wanted_error != reason:
            return f"refused with {reason}, expected {wanted_error}: {error.detail}", ""
        return None, ""
    if wanted_error is not None:
        return f"expected the round to be refused, got {json.dumps(outcome)}", ""
    unknown = sorted(set(expect) - set(outcome))
    if unknown:
        return f"expect names fields the resolver does not produce: {unknown}", ""
    wanted = {k: expect.get(k) for k in outcome}
    if outcome != wanted:
        return f"got {json.dumps(outcome)}, expected {json.dumps(wanted)}", ""
    return None, ""


def run(files: list[str], check: bool, require_reasons: bool = False) -> int:
    if check:
        passed = failed = 0
        for path in files:
            name = Path(path).stem
            problem, note = _check_one(path, require_reasons)
            if problem is None:
                passed += 1
                print(f"PASS {name}{note}")
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
