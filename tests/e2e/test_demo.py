"""The whole floor end to end (issue #7): `jackpot demo --duration --report` as a user runs it.

Real Kafka, every service as its own process, simulated tables on the device protocol, dealer
terminals, sign watchers. The report is judged by the fault suite's books (issue 24 item 3,
``jackpot.sim.books.judge``): the audit and its chain pass, no bet lost or duplicated, bet by bet
and per pot group; every award of the ledger has exactly one payout, none paid twice, none
without an award; and every award is what the rules give for the cards the floor dealt (the
round oracle, ``jackpot.sim.oracle``), award by award.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from jackpot.tools.demo_floor import DEMO_TERMINALS
from jackpot.tools.demo_tables import floor_tables

pytestmark = pytest.mark.e2e

# `[mm:ss] rounds N | bets accepted $X/s | <groups> | last win ... | <health> | restarts N`
STATUS_LINE = re.compile(
    r"^\[\d\d:\d\d\] rounds \d+ \| bets accepted \$[\d,]+/s \| .* \| restarts \d+"
)
# Every process the demo runs: the services and the reference dealer terminals of its first tables.
# The services whose health the status line shows, and every process the demo runs (they and
# the reference dealer terminals of its first tables).
CORE = {"pot", "payout", "display", "gateway-a", "gateway-b", "wallet"}
SERVICES = CORE | {f"terminal-{table.table_id}" for table in floor_tables(DEMO_TERMINALS)}


def status_lines(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if STATUS_LINE.match(line)]


def assert_books_pass(result: dict[str, Any]) -> None:
    """The report's books, as the fault suite judges its floor: bet by bet, award by award, one
    payout per award, every award against the round oracle."""
    books = result["books"]
    assert books["books_ok"] is True, books
    assert books["audit_ok"] is True
    assert books["audit_chain"]["ok"] is True
    assert (books["lost"], books["duplicated"]) == (0, 0)
    assert set(books["books_by_group"]) == {"scl-poker", "scl-blackjack", "scl-studio"}
    assert all(g["lost"] == g["duplicated"] == 0 for g in books["books_by_group"].values())
    awarded = sum(result["awards"].values())
    awards = books["awards_check"]
    assert awards["ok"] is True, awards
    # one payout per award: as many payouts as awards, none without an award, none paid twice
    assert awards["awarded"] == awards["payouts"] == awarded > 0
    assert awards["awards_without_payout"] == awards["payouts_without_award"] == []
    assert awards["paid_twice"] == awards["awarded_twice"] == []
    assert result["payouts_paid"] + result["payouts_pending"] == awarded
    oracle = books["awards_oracle"]
    assert oracle["ok"] is True, oracle
    assert oracle["mismatches"] == oracle["awards_mismatched"] == 0
    assert oracle["awards_checked"] == awarded  # every award of the ledger against the rules
    assert oracle["rounds_checked"] > 0


def test_headless_demo_reports_a_clean_audit(kafka_bootstrap: str, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    duration = 20
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "jackpot.cli",
            "demo",
            "--duration",
            str(duration),
            "--tables",
            "10",
            "--rig-rate",
            "0.15",
            "--report",
            str(report),
        ],
        env={**os.environ, "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(report.read_text())
    for key in (
        "rounds",
        "bets_accepted",
        "collected",
        "commission",
        "pots",
        "awards",
        "payouts_paid",
        "payouts_pending",
        "audit_ok",
        "lost",
        "duplicated",
    ):
        assert key in result
    assert result["audit_ok"] is True
    # Every admin call, approval and payment went over mutual TLS onto the access log's chain.
    assert result["audit_chain"]["ok"] is True
    assert result["audit_chain"]["entries"] >= 2 * (2 + 10)  # groups + links: allowed, applied
    assert result["rounds"] > 20
    assert result["bets_accepted"] > 0
    assert result["collected"] == result["bets_accepted"]
    assert (result["lost"], result["duplicated"]) == (0, 0)
    assert set(result["pots"]) == {"scl-poker", "scl-blackjack", "scl-studio"}
    # the studio table (O1-O9): its rounds of 2,000 online players, each round's every bet
    # in the books (checked bet by bet above), its lock timed
    studio = result["floor"]["latency"]["studio_lock"]
    assert studio["count"] >= 1  # a round every 20 s
    studio_books = result["books"]["books_by_group"]["scl-studio"]
    assert studio_books["rounds_collected"] == studio["count"]
    assert studio_books["accepted"] == studio_books["collected"] >= 2_000 * 1_000
    assert sum(result["awards"].values()) > 0  # the rigged deals hit
    assert_books_pass(result)
    # every round the floor played was settled in the ledger and judged by the oracle
    assert result["books"]["awards_oracle"]["rounds_checked"] == result["rounds"]
    assert result["floor"]["latency"]["lock_to_sign"]["count"] > 0
    assert "http://127.0.0.1:8080/sign/scl-poker" in done.stdout
    assert "http://127.0.0.1:8080/studio/scl-studio/S-LIVE-1 (2,000 players)" in done.stdout
    # A plain status line every second of play (no colour in a pipe), then the summary.
    assert "\x1b[" not in done.stdout
    lines = status_lines(done.stdout)
    assert duration - 3 <= len(lines) <= duration + 5, "\n".join(lines)
    assert all("scl-poker $" in line and "scl-blackjack $" in line for line in lines[3:])
    assert all(f"{name} ok" in line for line in lines for name in CORE)
    assert any("| last win A-" in line or "| last win B-" in line for line in lines)
    assert lines[-1].endswith("| restarts 0")
    assert result["restarts"] == dict.fromkeys(SERVICES, 0)
    summary = done.stdout[done.stdout.index("summary of demo run") :].splitlines()
    assert summary[1:] == [
        f"  rounds      {result['rounds']}",
        f"  collected   ${result['collected']:,} of ${result['bets_accepted']:,} in bets accepted "
        "(lost 0, duplicated 0)",
        summary[3],
        f"  payouts     {result['payouts_paid']} paid, {result['payouts_pending']} pending",
        "  restarts    0",
        summary[6],
    ]
    assert summary[3].startswith(f"  awards      {sum(result['awards'].values())} (")
    assert summary[6].startswith("  audit       OK (3 pot groups recomputed from the ledger")


def test_demo_restarts_a_killed_pot_and_counts_it(kafka_bootstrap: str, tmp_path: Path) -> None:
    """kill -9 of the pot process of a running headless demo: the demo says so, starts it again
    with the same settings, the report counts one restart and the audit still passes."""
    report = tmp_path / "report.json"
    demo = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jackpot.cli",
            "demo",
            "--duration",
            "20",
            "--tables",
            "6",
            "--rig-rate",
            "0.1",
            "--report",
            str(report),
        ],
        env={**os.environ, "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    seen: list[str] = []
    assert demo.stdout is not None
    stdout = demo.stdout
    reader = threading.Thread(target=lambda: [lines.put(line) for line in stdout], daemon=True)
    reader.start()
    # One budget for the whole run, under the test's own timeout (with the margin that
    # tests/unit/test_e2e_timeouts.py asks for): a hung demo fails here, with its output.
    budget = time.monotonic() + 220

    def read_until(pattern: str, within_seconds: float) -> str:
        deadline = min(time.monotonic() + within_seconds, budget)
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=1).rstrip("\n")
            except queue.Empty:
                continue
            seen.append(line)
            if re.search(pattern, line):
                return line
        raise AssertionError(f"no {pattern!r} in:\n" + "\n".join(seen))

    pids: dict[str, int] = {}
    run_dir: Path | None = None
    try:
        logs = read_until(r"^  logs +/", 180)
        run_dir = Path(logs.split()[-1])
        for _ in range(4):  # a few seconds of play
            read_until(STATUS_LINE.pattern, 10)
        pids = json.loads((run_dir / "pids.json").read_text())
        assert set(pids) == SERVICES
        commands = subprocess.run(
            [sys.executable, "-m", "jackpot.cli", "demo", "--print-commands", run_dir.name],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.splitlines()
        started = [c for c in commands if not c.startswith("#")]
        assert len(started) == len(SERVICES)
        assert f"(set -a; . {run_dir}/pot.env; set +a; exec " in started[0]
        assert started[0].endswith(" pot)")

        os.kill(pids["pot"], signal.SIGKILL)
        read_until(rf"pot \(pid {pids['pot']}\) killed by signal 9 \(SIGKILL\) after ", 10)
        restarted = read_until(r"pot started again \(restart 1, pid \d+\)", 15)
        new_pid = int(restarted.rsplit(" ", 1)[1].rstrip(")"))
        assert json.loads((run_dir / "pids.json").read_text())["pot"] == new_pid != pids["pot"]
        read_until(r"pot serving again, [\d.]+ s after it exited", 30)
        read_until(r"\| restarts 1 \(pot 1\)$", 5)
        read_until(r"^  audit  ", 200)  # the summary's last line
        demo.wait(timeout=30)
    finally:
        if demo.poll() is None:
            demo.send_signal(signal.SIGINT)  # the demo's own cleanup stops its services
            try:
                demo.wait(timeout=20)
            except subprocess.TimeoutExpired:
                demo.kill()  # and its services, which run in sessions of their own
                if run_dir is not None and (run_dir / "pids.json").exists():
                    for pid in json.loads((run_dir / "pids.json").read_text()).values():
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(pid, signal.SIGKILL)
                demo.wait()
    reader.join(timeout=10)  # it ends when the demo's output closes: everything is queued
    assert not reader.is_alive(), "the demo's output never closed"
    while not lines.empty():
        seen.append(lines.get().rstrip("\n"))
    output = "\n".join(seen)
    assert demo.returncode == 0, output[-5000:]
    result = json.loads(report.read_text())
    assert result["restarts"] == {**dict.fromkeys(SERVICES, 0), "pot": 1}
    [exit_] = result["service_exits"]
    assert (exit_["service"], exit_["pid"], exit_["returncode"]) == ("pot", pids["pot"], -9)
    assert result["audit_ok"] is True
    assert result["audit_chain"]["ok"] is True
    assert (result["lost"], result["duplicated"]) == (0, 0)
    assert result["collected"] == result["bets_accepted"] > 0
    assert_books_pass(result)  # through the kill: bet by bet, one payout per award, the oracle
    assert "  restarts    1 (pot 1)" in seen
    assert any(line.startswith("  audit       OK (") for line in seen)


@pytest.mark.timeout(600)
def test_short_fault_suite_loses_and_duplicates_nothing(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    """Issue #9's shorter suite: kill -9 of pot (twice), a gateway, payout (twice) and display,
    8 s pauses of payout and pot with a second instance started meanwhile (issue 19), while the
    devices duplicate, delay and reorder events (fault 5; fault 7 is
    test_site_cutoff.py, the cluster's faults 2 and 3 test_cluster_faults.py). Every recovery is
    judged against its bound (issue 13: pot and payout within 5 s), the books bet by bet."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "loadtest.chaos",
            "--pot-kills",
            "2",
            "--payout-kills",
            "2",
            "--tables",
            "8",
            "--settle-seconds",
            "3",
            "--faults",
            "1,4,5,6",
            "--pause",
            "payout:8",
            "--pause",
            "pot:8",
            "--device-faults",
            "0.1",
            "--out",
            str(tmp_path),
        ],
        env={**os.environ, "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap},
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads((tmp_path / "report.json").read_text())
    faults = result["faults"]
    assert faults["pot_kill_9"]["count"] == 2
    assert faults["gateway_kill_9"]["count"] == 1
    assert faults["payout_kill_9"]["count"] == 2
    assert faults["display_kill_9"]["count"] == 1
    # Issue 19: the pauses of pot and payout, a second instance started meanwhile.
    assert faults["payout_pause"]["count"] == faults["pot_pause"]["count"] == 1
    [payout_pause] = faults["payout_pause"]["pauses"]
    assert payout_pause["twin_serving_seconds"] is not None  # the second took the payouts
    assert payout_pause["stepped_aside_seconds"] is not None  # the resumed one stood aside
    assert payout_pause["paid_again_seconds"] is not None
    assert payout_pause["resumed_still_running"] is True
    assert faults["payout_pause"]["bound_seconds"] == faults["pot_pause"]["bound_seconds"] == 5
    assert result["awards_check"]["unpaid"] == 0  # every award paid (or voided) once at the end
    for name in (
        "pot_kill_9",
        "gateway_kill_9",
        "payout_kill_9",
        "display_kill_9",
        "pot_pause",
        "payout_pause",
    ):
        assert faults[name]["status"] == "passed", faults[name]
        assert faults[name]["recovery_max_seconds"] <= faults[name]["bound_seconds"]
    assert faults["pot_kill_9"]["bound_seconds"] == faults["payout_kill_9"]["bound_seconds"] == 5
    assert result["verdict"] == {"ok": True, "failed": [], "skipped": {}, "allow_skip": False}
    assert all(g["lost"] == g["duplicated"] == 0 for g in result["books_by_group"].values())
    assert set(result["books_by_group"]) == {"scl-poker", "scl-blackjack"}
    assert result["awards_check"]["ok"] is True
    # issue 24 item 1: every award of the ledger is what the rules give for the cards dealt
    oracle = result["awards_oracle"]
    assert oracle["ok"] is True, oracle
    assert oracle["awards_checked"] == result["awards_check"]["awarded"] > 0
    assert oracle["rounds_checked"] > 0
    assert (result["lost"], result["duplicated"], result["duplicate_payouts"]) == (0, 0, 0)
    assert result["audit_ok"] is True
    # The hash chain holds through the kills; the tables closing and reopening are on it.
    assert result["audit_chain"]["ok"] is True
    assert result["audit_chain"]["entries"] > 0
    assert result["rounds"] > 0
    devices = result["device_faults"]
    assert devices["status"] == "passed", devices
    assert devices["events_delayed"] > 0
    assert 0 < devices["duplicates_answered"] == devices["duplicates_sent"]
    assert 0 < devices["reorders_refused_out_of_order"] == devices["reorders_injected"]
    assert devices["reorders_refused_then_accepted"] > 0
