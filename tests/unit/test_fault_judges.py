"""The fault suite judges what happened (issue 36 items 5 and 6): every service exit with its
last error, the floor held whole to the end of a run, the takeover and payout-record checks, and
the campaign's violations by kind and its schedules.

Pure: fake processes, a fake clock, log files written here, records built here; no floor runs.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from loadtest.campaign import FAULT_GAP_SECONDS, PAUSE_SECONDS, plan
from loadtest.exits import ExitWatch, last_error
from loadtest.floor_held import FloorGuard
from loadtest.takeover import payout_disagreements
from loadtest.verdicts import (
    campaign_summary,
    judge_exits,
    judge_floor_held,
    run_violations,
)

from jackpot.v1 import payout_pb2, pot_pb2
from tests.clocks import FakeClock

# ------------------------------------------------------------------------- last errors


def structlog_line(level: str, event: str, **fields: Any) -> str:
    return json.dumps(
        {"event": event, "level": level, "timestamp": "2026-12-03T15:07:16Z", **fields}
    )


def test_the_last_error_of_a_log_is_its_last_error_line_with_its_fields(tmp_path: Path) -> None:
    log = tmp_path / "pot.log"
    log.write_text(
        "\n".join(
            [
                structlog_line("error", "partition_halted", partition=2, why="abort_failed"),
                structlog_line(
                    "error",
                    "service_part_failed",
                    part="pot-service",
                    error="ProcessorError('pot cannot continue')",
                    exception="Traceback (most recent call last):\n  ...\n"
                    "jackpot.platform.exactly_once.ProcessorError: pot cannot continue",
                ),
                structlog_line("info", "service_stopped", seconds=0.3),
                "Unable connect to node with id 1: [Errno 111] Connection refused",
            ]
        )
        + "\n"
    )
    assert last_error(log) == (
        "service_part_failed: part=pot-service, error=ProcessorError('pot cannot continue') "
        "[jackpot.platform.exactly_once.ProcessorError: pot cannot continue]"
    )


def test_a_traceback_after_the_last_error_line_is_the_last_error(tmp_path: Path) -> None:
    log = tmp_path / "payout.log"
    log.write_text(
        structlog_line("error", "abort_failed", partition=1)
        + '\nTraceback (most recent call last):\n  File "x.py", line 1, in <module>\n'
        "KeyError: 'a'\n\nDuring handling of the above exception, another exception occurred:\n\n"
        'Traceback (most recent call last):\n  File "x.py", line 3, in <module>\n'
        "RuntimeError: payout cannot start\n"
    )
    assert last_error(log) == "RuntimeError: payout cannot start"


def test_only_the_processs_own_part_of_the_log_counts(tmp_path: Path) -> None:
    """The logs are appended to across restarts: an earlier process's error is not this one's."""
    log = tmp_path / "pot.log"
    earlier = structlog_line("error", "partition_halted", why="producer_fenced") + "\n"
    log.write_text(earlier + structlog_line("info", "pot_serving") + "\n")
    assert last_error(log) == "partition_halted: why=producer_fenced"
    assert last_error(log, start=len(earlier.encode())) == ""
    assert last_error(tmp_path / "missing.log") == ""


# ------------------------------------------------------------------------------- exits


@dataclass
class FakeProcess:
    pid: int
    code: int | None = None

    def poll(self) -> int | None:
        return self.code


class FakeFloor:
    def __init__(self, state: Path) -> None:
        self.state = state
        self.processes: dict[str, Any] = {"pot": FakeProcess(10), "payout": FakeProcess(20)}
        self.started: list[str] = []
        self._next_pid = 100

    def restart(self, name: str) -> None:
        self._next_pid += 1
        self.processes[name] = FakeProcess(self._next_pid)
        self.started.append(name)


def test_an_exit_is_recorded_with_its_last_error_and_the_service_started_again(
    tmp_path: Path,
) -> None:
    clock = FakeClock(1000.0)
    floor = FakeFloor(tmp_path)
    said: list[str] = []
    watch = ExitWatch(floor, said.append, clock=clock)
    (tmp_path / "pot.log").write_text(
        structlog_line(
            "error", "service_part_failed", error="ProcessorError('pot cannot continue')"
        )
        + "\n"
    )
    clock.now += 12.5
    floor.processes["pot"].code = 1
    [seen] = watch.check()
    assert (seen.service, seen.pid, seen.returncode, seen.at_seconds) == ("pot", 10, 1, 12.5)
    assert seen.how == "exited with status 1"
    assert seen.last_error == "service_part_failed: error=ProcessorError('pot cannot continue')"
    assert seen.expected is False
    assert any(line.startswith("UNEXPECTED EXIT: pot (pid 10)") for line in said)
    clock.now += 1.0  # the supervisor's backoff (0.5 s), then a new process
    assert watch.check() == []
    assert floor.started == ["pot"]
    assert floor.processes["pot"].pid == 101
    judged = judge_exits(watch.report())
    assert judged["status"] == "failed"
    assert judged["unexpected"] == 1
    assert (
        "pot (pid 10) exited with status 1 at 12.5 s, not caused by the suite"
        in (judged["failed_checks"][0])
    )
    assert "pot cannot continue" in judged["failed_checks"][0]


def test_an_exit_the_suite_caused_is_expected_and_passes(tmp_path: Path) -> None:
    clock = FakeClock(0.0)
    floor = FakeFloor(tmp_path)
    watch = ExitWatch(floor, lambda _: None, clock=clock)
    killed = floor.processes["payout"]
    watch.caused("payout", killed, -9, "kill -9 by the fault suite")
    floor.restart("payout")  # as the suite does, at once
    assert watch.check() == []  # the watch never saw it exit: the suite told it
    judged = judge_exits(watch.report())
    assert judged["status"] == "passed"
    assert (judged["count"], judged["expected"], judged["unexpected"]) == (1, 1, 0)
    assert judged["exits"][0]["how"] == "killed by signal 9 (SIGKILL)"
    assert judged["exits"][0]["cause"] == "kill -9 by the fault suite"


# ------------------------------------------------------------------------- floor held


class Scripted:
    """What the floor's probes find, set by the test."""

    def __init__(self) -> None:
        self.now: dict[str, str] = {}

    async def __call__(self) -> Mapping[str, str]:
        return dict(self.now)


async def test_a_condition_wrong_for_longer_than_the_grace_is_a_lapse() -> None:
    clock = FakeClock(0.0)
    found = Scripted()
    guard = FloorGuard(found, grace=2.0, clock=clock)
    guard.arm()
    await guard.check()
    found.now = {"pot updates of scl-blackjack": "last heard 6.1 s ago"}
    for _ in range(6):  # 3 s of checks half a second apart
        clock.now += 0.5
        await guard.check()
    found.now = {}
    clock.now += 0.5
    await guard.check()
    guard.disarm()
    [lapse] = guard.lapses
    assert lapse.condition == "pot updates of scl-blackjack"
    assert (lapse.since_seconds, lapse.seconds) == (0.5, 3.0)
    judged = judge_floor_held(guard.report())
    assert judged["status"] == "failed"
    assert judged["failed_checks"] == [
        "pot updates of scl-blackjack: last heard 6.1 s ago for 3 s from 0.5 s"
    ]


async def test_a_blip_within_the_grace_and_a_fault_while_disarmed_are_not_lapses() -> None:
    clock = FakeClock(0.0)
    found = Scripted()
    guard = FloorGuard(found, grace=2.0, clock=clock)
    guard.arm()
    found.now = {"payout health": "down"}
    await guard.check()
    clock.now += 1.5
    found.now = {}
    await guard.check()  # 1.5 s: one slow probe
    async with guard.fault():  # a broker killed: the floor may be broken until it recovers
        found.now = {"gateway A tables": "6 closed"}
        clock.now += 30
        await guard.check()
    clock.now += 0.5
    found.now = {}
    await guard.check()
    guard.disarm()
    assert guard.lapses == []
    assert guard.checks == 3
    assert judge_floor_held(guard.report())["status"] == "passed"


async def test_a_lapse_still_open_at_the_end_of_play_is_recorded() -> None:
    clock = FakeClock(0.0)
    found = Scripted()
    guard = FloorGuard(found, grace=2.0, clock=clock)
    guard.arm()
    found.now = {"pot health": "down"}
    await guard.check()
    clock.now += 5
    await guard.check()
    guard.disarm()  # the end of play: the pot never came back
    assert [(lapse.condition, lapse.seconds) for lapse in guard.lapses] == [("pot health", 5.0)]


def test_a_floor_never_checked_is_not_judged_held() -> None:
    judged = judge_floor_held({"checks": 0, "lapses": []})
    assert judged["status"] == "failed"
    assert "never checked" in judged["failed_checks"][0]


# ------------------------------------------------------------------ payout records


def payout(award_id: str, *states: int) -> payout_pb2.Payout:
    message = payout_pb2.Payout(award_id=award_id, state=states[-1])
    for state in states:
        message.history.add(state=state, by="dealer")
    return message


def entry(award_id: str, n: int, kind: int) -> pot_pb2.LedgerEntry:
    return pot_pb2.LedgerEntry(
        entry_id=f"payout:{award_id}:{n}", type=kind, source_event_id=award_id
    )


ORDERED, PAID = payout_pb2.PAYOUT_STATE_ORDERED, payout_pb2.PAYOUT_STATE_PAID
L_ORDERED = pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_ORDERED
L_PAID = pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_PAID


def test_payout_records_that_agree_with_the_ledger_pass() -> None:
    records = [(0, 5, payout("a1", ORDERED)), (0, 9, payout("a1", ORDERED, PAID))]
    entries = [entry("a1", 0, L_ORDERED), entry("a1", 1, L_PAID)]
    assert payout_disagreements(entries, records) == []


def test_a_payment_without_its_ledger_entry_and_a_ledger_entry_without_its_payment_fail() -> None:
    records = [(0, 9, payout("a1", ORDERED, PAID)), (1, 3, payout("a2", ORDERED))]
    entries = [
        entry("a1", 0, L_ORDERED),  # a1's PAID entry missing: its transaction lost a record
        entry("a2", 0, L_ORDERED),
        entry("a2", 1, L_PAID),  # a2 paid in the ledger, not on the payouts topic
        entry("a2", 0, L_ORDERED),  # and its creation recorded twice
    ]
    assert payout_disagreements(entries, records) == [
        "1 payout transitions on the payouts topic, not in the ledger: payout:a1:1",
        "1 payout transitions in the ledger more than once: payout:a2:0",
        "1 payout transitions in the ledger, not on the payouts topic: payout:a2:1",
    ]


# -------------------------------------------------------------------------- campaign


def passing_run(seed: int = 7) -> dict[str, Any]:
    return {
        "seed": seed,
        "faults": [
            {"kind": "broker_kill_9", "at_seconds": 3.0, "recovery_seconds": 1.2},
            {"kind": "cluster_restart", "at_seconds": 20.0, "recovery_seconds": 9.0},
        ],
        "books": {
            "lost": 0,
            "duplicated": 0,
            "awards_check": {"ok": True},
            "awards_oracle": {"ok": True},
            "audit_ok": True,
            "audit_chain": {"ok": True},
        },
        "service_exits": judge_exits([]),
        "floor_held": judge_floor_held({"checks": 30, "lapses": []}),
        "takeover": {"failed_checks": [], "status": "passed"},
        "payout_records": {"failed_checks": [], "status": "passed"},
    }


def test_a_run_that_passed_every_judgement_has_no_violation() -> None:
    assert run_violations(passing_run()) == {}


@pytest.mark.parametrize(
    ("change", "kind"),
    [
        (lambda r: r["books"].update(lost=60_000, lost_examples=["A-BJ-05 r125"]), "lost"),
        (lambda r: r["books"].update(duplicated=1000), "duplicated"),
        (
            lambda r: r["books"].update(awards_check={"ok": False, "paid_twice": ["a1"]}),
            "awards",
        ),
        (
            lambda r: r["books"].update(awards_oracle={"ok": False, "by_kind": {"x": 1}}),
            "round_oracle",
        ),
        (lambda r: r["books"].update(audit_chain={"ok": False, "first_break": "e9"}), "audit"),
        (
            lambda r: r.update(
                takeover={
                    "failed_checks": [
                        "partition 2: the pot's takeover check refuses: the stored state of "
                        "scl-blackjack is at ledger entry 66, the ledger at 67"
                    ]
                }
            ),
            "takeover_refused",
        ),
        (
            lambda r: r.update(payout_records={"failed_checks": ["1 payout transitions ..."]}),
            "payout_records",
        ),
        (
            lambda r: r.update(
                service_exits=judge_exits(
                    [
                        {
                            "service": "pot",
                            "pid": 9,
                            "how": "exited with status 1",
                            "at_seconds": 61.0,
                            "last_error": "service_part_failed: pot cannot continue",
                            "expected": False,
                        }
                    ]
                )
            ),
            "unexpected_exit",
        ),
        (
            lambda r: r.update(
                floor_held=judge_floor_held(
                    {
                        "checks": 9,
                        "lapses": [
                            {
                                "condition": "pot health",
                                "seen": "down",
                                "seconds": 9.0,
                                "since_seconds": 40.0,
                            }
                        ],
                    }
                )
            ),
            "floor_not_held",
        ),
        (lambda r: r["faults"][1].update(recovery_seconds=None), "not_recovered"),
        (lambda r: r.pop("takeover"), "not_judged"),
        (lambda r: r.update(error="RuntimeError: pot not serving after 60 s"), "run_error"),
    ],
)
def test_each_kind_of_violation_is_found(change: Any, kind: str) -> None:
    run = passing_run()
    change(run)
    found = run_violations(run)
    assert list(found) == [kind], found
    assert found[kind]


def test_the_campaign_counts_runs_faults_and_violations_by_kind_with_the_failing_seeds() -> None:
    good = passing_run(100)
    bad = passing_run(101)
    bad["books"]["lost"] = 60_000
    bad["takeover"] = {"failed_checks": ["partition 2: refused", "partition 4: refused"]}
    runs = []
    for run in (good, bad, passing_run(102)):
        run["violations"] = run_violations(run)
        runs.append(run)
    summary = campaign_summary(runs)
    assert (summary["runs"], summary["passed"], summary["failed"]) == (3, 2, 1)
    assert summary["faults_injected"] == {"broker_kill_9": 3, "cluster_restart": 3}
    assert summary["violations"] == {
        "lost": {"runs": 1, "instances": 1, "seeds": [101]},
        "takeover_refused": {"runs": 1, "instances": 2, "seeds": [101]},
    }
    assert summary["failing_seeds"] == [101]
    assert summary["ok"] is False
    assert campaign_summary([good])["ok"] is True
    assert campaign_summary([])["ok"] is False  # no run judged nothing


def test_a_seed_gives_the_same_schedule_and_each_has_every_kind_of_fault() -> None:
    for seed in range(200):
        faults = plan(random.Random(seed), (3.0, 25.0))
        assert faults == plan(random.Random(seed), (3.0, 25.0))
        kinds = [f.kind for f in faults]
        assert kinds.count("cluster_restart") == 1
        assert 1 <= kinds.count("broker_kill_9") <= 2
        assert 1 <= kinds.count("broker_pause") <= 2
        for fault in faults:
            assert FAULT_GAP_SECONDS[0] <= fault.gap_seconds <= FAULT_GAP_SECONDS[1]
            if fault.kind == "broker_pause":
                assert PAUSE_SECONDS[0] <= fault.seconds <= PAUSE_SECONDS[1]
                assert fault.node in (1, 2, 3)
            if fault.kind == "cluster_restart":
                assert 3.0 <= fault.seconds <= 25.0
                assert fault.how in ("stop", "kill -9")
    assert plan(random.Random(1), (3.0, 25.0)) != plan(random.Random(2), (3.0, 25.0))
