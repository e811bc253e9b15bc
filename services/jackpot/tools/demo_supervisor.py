"""The demo's services heal themselves, and each can be started again by hand.

:class:`Supervisor` watches the service processes: when one exits it says which and how (exit
status or signal) and starts it again with the same command and environment, as Kubernetes
would, after a small backoff (0.5 s, doubling while it keeps exiting within 30 s of a start, at
most 10 s). It counts the restarts per service.

Every run writes, in its directory (``.run/demo/<run>/``), a ``<service>.env`` file per service
(mode 0600: it names the run's certificate and key files) with the variables the demo gives it,
``services.json`` (what each service runs) and ``pids.json`` (the current process of each,
rewritten at every restart). ``jackpot demo --print-commands [RUN]`` prints one shell command line
per service of the last run (or of RUN) from those files.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import sys
import time
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TextIO

MANIFEST = "services.json"
PIDS = "pids.json"


class Process(Protocol):
    pid: int

    def poll(self) -> int | None: ...


def describe_exit(returncode: int) -> str:
    """``exited with status 1``, ``killed by signal 9 (SIGKILL)`` (Popen's negative codes)."""
    if returncode >= 0:
        return f"exited with status {returncode}"
    number = -returncode
    try:
        name = signal.Signals(number).name
    except ValueError:
        return f"killed by signal {number}"
    return f"killed by signal {number} ({name})"


@dataclass(frozen=True)
class Exit:
    service: str
    pid: int
    returncode: int
    after_seconds: float  # how long that process had run
    at: float  # clock time of noticing

    def describe(self) -> str:
        return describe_exit(self.returncode)


class Supervisor:
    """Starts a service's process again when it exits, with backoff; counts the restarts.

    ``processes`` is the live mapping the ``restart`` callable updates (the demo's own);
    ``say`` reports what happens. :meth:`check` is one synchronous pass, so a test drives it
    with fake processes and a fake clock; :meth:`run` repeats it.
    """

    def __init__(
        self,
        processes: MutableMapping[str, Any],
        restart: Callable[[str], None],
        say: Callable[[str, str], None],
        clock: Callable[[], float] = time.monotonic,
        initial_backoff: float = 0.5,
        max_backoff: float = 10.0,
        stable_after: float = 30.0,
    ) -> None:
        self.processes = processes
        self._restart = restart
        self._say = say
        self._clock = clock
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.stable_after = stable_after
        now = clock()
        self.restarts: dict[str, int] = dict.fromkeys(processes, 0)
        self.exits: list[Exit] = []
        self._started: dict[str, float] = dict.fromkeys(processes, now)
        self._quick_exits: dict[str, int] = dict.fromkeys(processes, 0)
        self._due: dict[str, float] = {}  # service -> when to start it again
        self._recovering: dict[str, float] = {}  # service -> when it exited, until serving
        self._stopped = False

    def restarting(self) -> set[str]:
        """Services exited and waiting for their backoff."""
        return set(self._due)

    def check(self) -> None:
        now = self._clock()
        for name in list(self.processes):
            if self._stopped:
                return
            if name in self._due:
                if now >= self._due[name]:
                    self._start_again(name, now)
                continue
            process = self.processes[name]
            code = process.poll()
            if code is None:
                if now - self._started.get(name, now) >= self.stable_after:
                    self._quick_exits[name] = 0
                continue
            ran = now - self._started.get(name, now)
            self.exits.append(Exit(name, process.pid, code, ran, now))
            self._recovering.setdefault(name, now)
            quick = self._quick_exits.get(name, 0) + 1 if ran < self.stable_after else 1
            self._quick_exits[name] = quick
            delay = min(self.initial_backoff * 2 ** (quick - 1), self.max_backoff)
            self._due[name] = now + delay
            self._say(
                f"{name} (pid {process.pid}) {describe_exit(code)} after {ran:.1f} s; "
                f"starting it again in {delay:.1f} s",
                "exit",
            )

    def _start_again(self, name: str, now: float) -> None:
        del self._due[name]
        try:
            self._restart(name)
        except Exception as error:  # e.g. OSError: try again after a longer backoff
            quick = self._quick_exits[name] = self._quick_exits.get(name, 0) + 1
            delay = min(self.initial_backoff * 2 ** (quick - 1), self.max_backoff)
            self._due[name] = now + delay
            self._say(f"{name} could not be started ({error}); again in {delay:.1f} s", "exit")
            return
        self.restarts[name] = self.restarts.get(name, 0) + 1
        self._started[name] = now
        self._say(
            f"{name} started again (restart {self.restarts[name]}, pid {self.processes[name].pid})",
            "restart",
        )

    def serving(self, name: str) -> None:
        """The status line saw ``name`` healthy: announce a recovery once."""
        exited = self._recovering.get(name)
        if exited is not None and name not in self._due:
            del self._recovering[name]
            self._say(f"{name} serving again, {self._clock() - exited:.1f} s after it exited", "ok")

    async def run(self, interval: float = 0.2) -> None:
        import asyncio

        while not self._stopped:
            self.check()
            await asyncio.sleep(interval)

    def stop(self) -> None:
        """No more restarts (the demo is stopping its services)."""
        self._stopped = True
        self._due.clear()


# ------------------------------------------------------------------ files and commands


def env_file_text(env: Mapping[str, str]) -> str:
    """``KEY=value`` lines, shell-quoted, so ``set -a; . FILE`` exports them."""
    return "".join(f"{key}={shlex.quote(value)}\n" for key, value in sorted(env.items()))


def _write_private(path: Path, text: str) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(text)
    os.chmod(path, 0o600)  # an older file keeps its mode through O_CREAT


def write_service_files(
    run_dir: Path,
    run_id: str,
    services: Mapping[str, tuple[Sequence[str], Mapping[str, str]]],
    kafka: str,
    python: str = sys.executable,
) -> None:
    """``<service>.env`` (0600) per service and the run's ``services.json``.

    ``services`` maps each service to its ``jackpot`` arguments and the environment the demo
    adds to its own.
    """
    entries = {}
    for name, (args, env) in services.items():
        env_file = run_dir / f"{name}.env"
        _write_private(env_file, env_file_text(env))
        entries[name] = {
            "args": list(args),
            "env_file": str(env_file),
            "log": str(run_dir / f"{name}.log"),
        }
    manifest = {
        "run": run_id,
        "started": time.time_ns(),  # integer nanoseconds: exact, ordered
        "demo_pid": os.getpid(),
        "kafka": kafka,
        "python": python,
        "services": entries,
    }
    _write_private(run_dir / MANIFEST, json.dumps(manifest, indent=2) + "\n")


def write_pids(run_dir: Path, processes: Mapping[str, Process]) -> None:
    """The current process of each service (atomically: a reader never sees half a file)."""
    partial = run_dir / f".{PIDS}.partial"
    partial.write_text(json.dumps({n: p.pid for n, p in processes.items()}, indent=2) + "\n")
    partial.replace(run_dir / PIDS)


def mark_stopped(run_dir: Path) -> None:
    with contextlib.suppress(OSError, ValueError):
        manifest = json.loads((run_dir / MANIFEST).read_text())
        manifest["stopped"] = time.time()
        _write_private(run_dir / MANIFEST, json.dumps(manifest, indent=2) + "\n")


def latest_run(root: Path) -> Path | None:
    """The run directory under ``root`` (``.run/demo``) started last."""
    best: tuple[int, Path] | None = None
    for manifest in root.glob(f"*/{MANIFEST}"):
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            started = int(json.loads(manifest.read_text())["started"])
            if best is None or started > best[0]:
                best = (started, manifest.parent)
    return None if best is None else best[1]


def jackpot_command(python: str) -> list[str]:
    """The ``jackpot`` script beside the run's interpreter, else ``python -m jackpot.cli``."""
    script = Path(python).with_name("jackpot")
    return [str(script)] if script.exists() else [python, "-m", "jackpot.cli"]


def command_line(env_file: str, command: Sequence[str]) -> str:
    """One shell line: the env file's variables exported, then the service in their place."""
    return f"(set -a; . {shlex.quote(env_file)}; set +a; exec {shlex.join(command)})"


def process_alive(pid: int) -> bool:
    """Whether a process with ``pid`` exists (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def format_commands(run_dir: Path) -> list[str]:
    """The ``--print-commands`` output: comments, then one command line per service."""
    manifest = json.loads((run_dir / MANIFEST).read_text())
    pids: dict[str, int] = {}
    with contextlib.suppress(OSError, ValueError):
        pids = json.loads((run_dir / PIDS).read_text())
    started = time.strftime(
        "%Y-%m-%d %H:%M:%S", time.localtime(int(manifest["started"]) // 1_000_000_000)
    )
    lines = [f"# jackpot demo run {manifest['run']} ({run_dir}/), started {started}"]
    lines.append(f"# Kafka {manifest['kafka']}; a service started here logs to this terminal")
    demo_pid = int(manifest.get("demo_pid", 0))
    if "stopped" not in manifest and demo_pid and process_alive(demo_pid):
        lines.append(
            f"# The demo (pid {demo_pid}) is still running and starts its services again when "
            "they exit: stop it (Ctrl-C) before starting one here, or the ports clash."
        )
    prefix = jackpot_command(manifest.get("python", sys.executable))
    for name, entry in manifest["services"].items():
        pid = f"pid {pids[name]}, " if name in pids and "stopped" not in manifest else ""
        lines.append(f"# {name} ({pid}demo log {entry['log']})")
        lines.append(command_line(entry["env_file"], [*prefix, *entry["args"]]))
    return lines


def print_commands(root: Path, run: str | None, out: TextIO = sys.stdout) -> int:
    """``jackpot demo --print-commands [RUN]``: 0, or 1 when there is no such run."""
    run_dir = root / run if run else latest_run(root)
    if run_dir is None or not (run_dir / MANIFEST).exists():
        which = f"run {run}" if run else "run"
        print(
            f"jackpot demo: no demo {which} under {root}/ (start one: jackpot demo)",
            file=sys.stderr,
        )
        return 1
    out.write("\n".join(format_commands(run_dir)) + "\n")
    return 0
