"""The demo's status line, summary, restarts and printed commands (issue 14 item 2).

Pure formatting over values built here; the supervisor driven with fake processes and a fake
clock; the command lines from env files written under pytest's temporary directory. No floor runs.
"""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import stat
import subprocess
from pathlib import Path

import pytest

from jackpot.cli import build_parser
from jackpot.tools.demo_status import (
    DOWN,
    OK,
    RESTARTING,
    Rate,
    SignWatch,
    Status,
    Winner,
    colour_enabled,
    format_status,
    format_summary,
)
from jackpot.tools.demo_supervisor import (
    Supervisor,
    describe_exit,
    format_commands,
    latest_run,
    mark_stopped,
    print_commands,
    write_pids,
    write_service_files,
)
from jackpot.v1 import display_pb2
from tests.clocks import FakeClock

ANSI = re.compile(r"\x1b\[[0-9;]*m")
SERVICES = ("pot", "payout", "display", "gateway-a", "gateway-b")


def status(**changes: object) -> Status:
    values: dict[str, object] = {
        "elapsed": 75.4,
        "rounds": 1234,
        "bets_per_second": 3420.4,
        "pots": {"scl-poker": 5_123_456, "scl-blackjack": None},
        "winner": Winner("A-CAR-01", 3, "ROYAL_FLUSH", 512_340),
        "health": {"pot": OK, "payout": OK, "display": DOWN, "gateway-a": RESTARTING},
        "restarts": {"pot": 0, "payout": 0, "display": 2, "gateway-a": 1},
    }
    values.update(changes)
    return Status(**values)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- status line


def test_plain_status_line_has_every_field_and_no_escape() -> None:
    line = format_status(status())
    assert line == (
        "[01:15] rounds 1234 | bets accepted $3,420/s | scl-poker $5,123,456 scl-blackjack - | "
        "last win A-CAR-01 seat 3 ROYAL_FLUSH $512,340 | "
        "pot ok payout ok display down gateway-a restarting | restarts 3 (display 2, gateway-a 1)"
    )
    assert "\x1b" not in line


def test_plain_status_line_before_any_winner_or_restart() -> None:
    line = format_status(status(winner=None, restarts={"pot": 0}, elapsed=3))
    assert line.startswith("[00:03] rounds 1234 |")
    assert "| last win - |" in line
    assert line.endswith("| restarts 0")


def test_coloured_status_line_is_the_plain_line_painted() -> None:
    plain = format_status(status())
    coloured = format_status(status(), colour=True)
    assert coloured != plain
    assert ANSI.sub("", coloured) == plain
    assert "\x1b[32mok\x1b[0m" in coloured  # healthy: green
    assert "\x1b[31mdown\x1b[0m" in coloured  # down: red
    assert "\x1b[33mrestarting\x1b[0m" in coloured  # in its backoff: yellow
    assert "\x1b[33mrestarts 3 (display 2, gateway-a 1)\x1b[0m" in coloured


class Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize(
    ("tty", "environ", "expected"),
    [
        (True, {"TERM": "xterm-256color"}, True),
        (False, {"TERM": "xterm-256color"}, False),  # a pipe, a file, the tests
        (True, {"TERM": "dumb"}, False),
        (True, {}, False),  # no TERM
        (True, {"TERM": "xterm", "NO_COLOR": ""}, False),  # set, even empty
        (True, {"TERM": "xterm", "NO_COLOR": "1"}, False),
    ],
)
def test_colour_only_on_a_capable_terminal(
    tty: bool, environ: dict[str, str], expected: bool
) -> None:
    assert colour_enabled(Stream(tty), environ) is expected


def test_rate_is_over_the_last_seconds() -> None:
    rate = Rate(window=5)
    assert rate.add(0.0, 0) == 0.0
    assert rate.add(1.0, 1000) == 1000.0
    assert rate.add(2.0, 3000) == 1500.0
    for t in range(3, 11):
        value = rate.add(float(t), 3000)  # the floor went quiet
    assert value == 0.0


def test_sign_watch_keeps_amounts_and_the_newest_winner() -> None:
    signs = SignWatch("127.0.0.1:1", tls=None, groups=("scl-poker", "scl-blackjack"))  # type: ignore[arg-type]
    assert signs.pots() == {"scl-poker": None, "scl-blackjack": None}
    win = display_pb2.Winner(
        table_id="B-DRW-03", seat=2, prize="STRAIGHT_FLUSH", amount=40_000, award_id="g/B/r1/2"
    )
    signs.on_sign(display_pb2.SignState(pot_group_id="scl-poker", amount=700_000, winner=win))
    signs.on_sign(display_pb2.SignState(pot_group_id="scl-blackjack", amount=250_001))
    assert signs.pots() == {"scl-poker": 700_000, "scl-blackjack": 250_001}
    assert signs.winner == Winner("B-DRW-03", 2, "STRAIGHT_FLUSH", 40_000)
    newer = display_pb2.Winner(
        table_id="A-BJ-05", seat=1, prize="FOUR_ACES", amount=9_000, award_id="g/A/r2/1"
    )
    signs.on_sign(display_pb2.SignState(pot_group_id="scl-blackjack", amount=5, winner=newer))
    # the poker sign repeating its (older) winner does not take the banner back
    signs.on_sign(display_pb2.SignState(pot_group_id="scl-poker", amount=700_100, winner=win))
    assert signs.winner == Winner("A-BJ-05", 1, "FOUR_ACES", 9_000)


# ---------------------------------------------------------------------------------- summary

RESULT = {
    "run": "1a2b3c4d",
    "rounds": 512,
    "bets_accepted": 1_234_000,
    "collected": 1_234_000,
    "pots": {"scl-poker": {}, "scl-blackjack": {}},
    "awards": {"STRAIGHT_FLUSH": 3, "ROYAL_FLUSH": 1},
    "payouts_paid": 3,
    "payouts_pending": 1,
    "audit_ok": True,
    "audit_problems": [],
    "audit_chain": {"ok": True, "entries": 54},
    "lost": 0,
    "duplicated": 0,
    "restarts": {"pot": 1, "payout": 0},
}


def test_summary_names_rounds_collected_awards_payouts_restarts_and_the_verdict() -> None:
    assert format_summary(RESULT) == [
        "summary of demo run 1a2b3c4d",
        "  rounds      512",
        "  collected   $1,234,000 of $1,234,000 in bets accepted (lost 0, duplicated 0)",
        "  awards      4 (ROYAL_FLUSH 1, STRAIGHT_FLUSH 3)",
        "  payouts     3 paid, 1 pending",
        "  restarts    1 (pot 1)",
        "  audit       OK (2 pot groups recomputed from the ledger; access log's chain OK, "
        "54 entries)",
    ]


def test_summary_of_a_failed_audit_names_the_first_problem_in_red() -> None:
    failed = {
        **RESULT,
        "audit_ok": False,
        "audit_problems": ["pot main is negative: -1"],
        "restarts": {},
        "awards": {},
    }
    lines = format_summary(failed, colour=True)
    plain = [ANSI.sub("", line) for line in lines]
    assert plain[-1] == (
        "  audit       FAILED: pot main is negative: -1 (2 pot groups recomputed from the ledger; "
        "access log's chain OK, 54 entries)"
    )
    assert "\x1b[31mFAILED" in lines[-1]
    assert plain[3] == "  awards      0"
    assert plain[5] == "  restarts    0"


# ------------------------------------------------------------------------------- restarts


@pytest.mark.parametrize(
    ("code", "text"),
    [
        (0, "exited with status 0"),
        (3, "exited with status 3"),
        (-9, "killed by signal 9 (SIGKILL)"),
        (-15, "killed by signal 15 (SIGTERM)"),
        (-200, "killed by signal 200"),
    ],
)
def test_exit_descriptions(code: int, text: str) -> None:
    assert describe_exit(code) == text


class FakeProcess:
    pids = iter(range(1000, 2000))

    def __init__(self) -> None:
        self.pid = next(self.pids)
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return self.returncode


class Floor:
    """A demo's processes and its restart, as the supervisor sees them."""

    def __init__(self) -> None:
        self.processes: dict[str, FakeProcess] = {n: FakeProcess() for n in SERVICES}
        self.started: list[str] = []
        self.said: list[tuple[str, str]] = []
        self.clock = FakeClock()
        self.supervisor = Supervisor(
            self.processes, self.restart, lambda m, k: self.said.append((k, m)), self.clock
        )

    def restart(self, name: str) -> None:
        self.started.append(name)
        self.processes[name] = FakeProcess()

    def after(self, seconds: float) -> None:
        self.clock.now += seconds
        self.supervisor.check()


def test_a_process_that_exits_is_reported_restarted_after_a_backoff_and_counted() -> None:
    floor = Floor()
    floor.after(10)
    assert floor.said == []
    assert floor.started == []
    killed = floor.processes["pot"]
    killed.returncode = -9
    floor.after(0.2)
    assert floor.said == [
        (
            "exit",
            f"pot (pid {killed.pid}) killed by signal 9 (SIGKILL) after 10.2 s; "
            "starting it again in 0.5 s",
        )
    ]
    assert floor.supervisor.restarting() == {"pot"}
    assert floor.started == []  # not before its backoff
    floor.after(0.2)
    assert floor.started == []
    floor.after(0.4)
    assert floor.started == ["pot"]
    assert floor.processes["pot"] is not killed
    assert floor.supervisor.restarts == {
        "pot": 1,
        "payout": 0,
        "display": 0,
        "gateway-a": 0,
        "gateway-b": 0,
    }
    assert floor.said[-1] == (
        "restart",
        f"pot started again (restart 1, pid {floor.processes['pot'].pid})",
    )
    assert floor.supervisor.restarting() == set()
    [exit_] = floor.supervisor.exits
    assert (exit_.service, exit_.pid, exit_.returncode) == ("pot", killed.pid, -9)
    # the status line saw it healthy: one "serving again", timed from the exit noticed
    floor.clock.now += 2
    floor.supervisor.serving("pot")
    floor.supervisor.serving("pot")
    floor.supervisor.serving("payout")  # never exited: nothing to say
    assert floor.said[-1] == ("ok", "pot serving again, 2.6 s after it exited")
    assert len(floor.said) == 3
    floor.after(1)
    assert floor.started == ["pot"]  # the new process runs: nothing more


def test_a_service_that_keeps_exiting_backs_off_longer_and_resets_when_stable() -> None:
    floor = Floor()
    delays = []
    for _ in range(7):
        floor.processes["payout"].returncode = 1
        floor.after(0.1)
        delays.append(floor.said[-1][1].rsplit(" in ", 1)[1])
        while "payout" in floor.supervisor.restarting():
            floor.after(0.1)
    assert delays == ["0.5 s", "1.0 s", "2.0 s", "4.0 s", "8.0 s", "10.0 s", "10.0 s"]
    assert floor.supervisor.restarts["payout"] == 7
    assert "exited with status 1" in floor.said[0][1]
    floor.after(31)  # it stayed up: the next exit waits the shortest backoff again
    floor.processes["payout"].returncode = 1
    floor.after(0.1)
    assert floor.said[-1][1].endswith("starting it again in 0.5 s")


def test_two_services_exiting_together_are_both_restarted() -> None:
    floor = Floor()
    floor.processes["gateway-a"].returncode = -15
    floor.processes["display"].returncode = 0
    floor.after(0.1)
    floor.after(0.5)
    assert sorted(floor.started) == ["display", "gateway-a"]
    assert sum(floor.supervisor.restarts.values()) == 2


def test_a_failed_start_is_tried_again_and_not_counted() -> None:
    floor = Floor()
    attempts = []

    def flaky(name: str) -> None:
        attempts.append(name)
        if len(attempts) == 1:
            raise OSError("no memory")
        floor.restart(name)

    floor.supervisor._restart = flaky
    floor.processes["pot"].returncode = -9
    floor.after(0.1)
    floor.after(0.5)
    assert floor.said[-1] == ("exit", "pot could not be started (no memory); again in 1.0 s")
    assert floor.supervisor.restarts["pot"] == 0
    floor.after(1.0)
    assert floor.supervisor.restarts["pot"] == 1
    assert floor.started == ["pot"]


def test_no_restart_once_stopped() -> None:
    floor = Floor()
    floor.processes["pot"].returncode = -9
    floor.after(0.1)
    floor.supervisor.stop()  # the demo stops its services: their exits are expected
    for name in SERVICES:
        floor.processes[name].returncode = -15
    floor.after(5)
    assert floor.started == []
    assert floor.supervisor.restarting() == set()


# ------------------------------------------------------------------------ --print-commands

ENV = {
    "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9092",
    "JACKPOT_AUDIT_TOPIC": "demo-1a2b3c4d.audit",
    "JACKPOT_GRPC_ADDRESS": "127.0.0.1:25052",
    "JACKPOT_TLS_KEY": "/srv/a dir/pki/pot.key",  # a space survives the shell
}


def write_run(root: Path, run: str, python: Path) -> Path:
    run_dir = root / run
    run_dir.mkdir(parents=True)
    services = {
        "pot": (["pot"], ENV),
        "gateway-a": (["gateway", "--config", str(run_dir / "gateway-a.json")], {"A": "1"}),
    }
    write_service_files(run_dir, run, services, "127.0.0.1:9092", python=str(python))
    processes = {"pot": FakeProcess(), "gateway-a": FakeProcess()}
    write_pids(run_dir, processes)
    return run_dir


def test_print_commands_prints_one_runnable_line_per_service(tmp_path: Path) -> None:
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "jackpot").write_text("#!/bin/sh\n")
    run_dir = write_run(tmp_path / "demo", "1a2b3c4d", bin_dir / "python")
    env_file = run_dir / "pot.env"
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600  # certificate and key paths
    assert stat.S_IMODE((run_dir / "gateway-a.env").stat().st_mode) == 0o600
    assert env_file.read_text().splitlines() == [
        "JACKPOT_AUDIT_TOPIC=demo-1a2b3c4d.audit",
        "JACKPOT_GRPC_ADDRESS=127.0.0.1:25052",
        "JACKPOT_TLS_KEY='/srv/a dir/pki/pot.key'",
        "KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:9092",
    ]
    pids = json.loads((run_dir / "pids.json").read_text())
    mark_stopped(run_dir)

    out = io.StringIO()
    assert print_commands(tmp_path / "demo", None, out) == 0
    lines = out.getvalue().splitlines()
    commands = [line for line in lines if not line.startswith("#")]
    assert commands == [
        f"(set -a; . {env_file}; set +a; exec {bin_dir}/jackpot pot)",
        f"(set -a; . {run_dir}/gateway-a.env; set +a; exec {bin_dir}/jackpot gateway --config "
        f"{run_dir}/gateway-a.json)",
    ]
    assert lines[0].startswith(f"# jackpot demo run 1a2b3c4d ({run_dir}/), started ")
    assert f"# pot (demo log {run_dir}/pot.log)" in lines
    assert str(pids["pot"]) not in out.getvalue()  # the run stopped: no stale pid
    # The line really exports the file's variables to the command (a shell, no service).
    echo = commands[0].replace(f"{bin_dir}/jackpot pot", "printenv JACKPOT_TLS_KEY")
    shown = subprocess.run(["sh", "-c", echo], capture_output=True, text=True, check=True)
    assert shown.stdout == "/srv/a dir/pki/pot.key\n"
    assert shlex.split(commands[1])[-4:] == [
        f"{bin_dir}/jackpot",
        "gateway",
        "--config",
        f"{run_dir}/gateway-a.json)",
    ]


def test_print_commands_of_a_running_demo_names_pids_and_warns(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, "feedc0de", tmp_path / "python")  # no jackpot script there
    lines = format_commands(run_dir)
    pids = json.loads((run_dir / "pids.json").read_text())
    assert f"# pot (pid {pids['pot']}, demo log {run_dir}/pot.log)" in lines
    assert any(f"The demo (pid {os.getpid()}) is still running" in line for line in lines)
    assert f"exec {tmp_path}/python -m jackpot.cli pot)" in lines[-3]


def test_the_last_run_is_the_one_started_last_or_the_one_named(tmp_path: Path) -> None:
    first = write_run(tmp_path, "aaaa0001", tmp_path / "python")
    second = write_run(tmp_path, "bbbb0002", tmp_path / "python")
    for run_dir, started in ((first, 2000.0), (second, 1000.0)):
        manifest = json.loads((run_dir / "services.json").read_text())
        manifest["started"] = started
        (run_dir / "services.json").write_text(json.dumps(manifest))
    assert latest_run(tmp_path) == first
    out = io.StringIO()
    assert print_commands(tmp_path, "bbbb0002", out) == 0
    assert "run bbbb0002" in out.getvalue()
    assert print_commands(tmp_path, "nosuchrun", io.StringIO()) == 1
    assert print_commands(tmp_path / "empty", None, io.StringIO()) == 1


def test_demo_print_commands_flag() -> None:
    parser = build_parser()
    assert parser.parse_args(["demo"]).print_commands is None
    assert parser.parse_args(["demo", "--print-commands"]).print_commands == ""
    assert parser.parse_args(["demo", "--print-commands", "1a2b3c4d"]).print_commands == "1a2b3c4d"
