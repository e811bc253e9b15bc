"""Every service exit of a fault run: seen, reported, and told apart from the suite's own kills.

A fault run watches every service process of its floor from the moment they start until it
stops them (issue 36 item 5). :class:`ExitWatch` records each exit as a :class:`ServiceExit`:
the service, the seconds since the run's services started, the exit status, and the last error
its log holds for that process (``last_error``: the last ``error``-level structlog line or the
last line of a Python traceback, whichever came later). An exit the suite caused (its own
``kill -9`` of a service, the graceful stop of a second instance: :meth:`ExitWatch.caused`) is
expected; any other is not, and ``loadtest.verdicts.judge_exits`` fails the run on it.

The floor goes on as on Kubernetes: an exited service is started again after a backoff by the
demo's :class:`~jackpot.tools.demo_supervisor.Supervisor`, never silently (each exit is printed
with its last error as it is seen).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from jackpot.tools.demo_supervisor import Process, Supervisor, describe_exit

LAST_ERROR_CHARS = 400  # a report line, not the log: the log's path is in the report too
# structlog's own keys, left out of an error's rendering (the event leads it)
# the lines between a chained exception's tracebacks, each followed by another traceback
CHAINED = ("During handling", "The above exception")
LOG_META = frozenset({"event", "level", "timestamp", "exception", "exc_info", "logger"})


@dataclass(frozen=True, slots=True)
class ServiceExit:
    """One process of a service that ended during the run."""

    service: str
    pid: int
    at_seconds: float  # since the run's services started
    returncode: int
    how: str  # "exited with status 1", "killed by signal 9 (SIGKILL)"
    last_error: str  # "" when its log holds none for this process
    log: str
    expected: bool
    cause: str  # what the suite did, for an expected exit ("" otherwise)

    def describe(self) -> str:
        why = f" ({self.cause})" if self.cause else ""
        error = f"; last error: {self.last_error}" if self.last_error else "; no error logged"
        return f"{self.service} (pid {self.pid}) {self.how} at {self.at_seconds:.1f} s{why}{error}"


def _render(line: dict[str, Any]) -> str:
    """An error line of a structlog JSON log: its event, its fields, its exception's last line."""
    fields = ", ".join(f"{k}={v}" for k, v in line.items() if k not in LOG_META)
    text = str(line.get("event", "?")) + (f": {fields}" if fields else "")
    exception = str(line.get("exception") or "").strip()
    if exception:
        text += f" [{exception.splitlines()[-1]}]"
    return text


def last_error(path: Path, start: int = 0) -> str:
    """The last error in ``path`` from byte ``start`` on: the last ``error``-level (or
    ``critical``) structlog JSON line, or the last line of a Python traceback (plain text, as an
    uncaught exception prints it), whichever is later; "" when there is none."""
    found = ""
    in_traceback = False
    with contextlib.suppress(FileNotFoundError), path.open("rb") as log:
        log.seek(start)
        for raw in log:
            text = raw.decode("utf-8", "replace").rstrip("\n")
            try:
                line = json.loads(text)
            except ValueError:
                line = None
            if isinstance(line, dict):
                in_traceback = False
                if str(line.get("level", "")).lower() in ("error", "critical", "exception"):
                    found = _render(line)
                continue
            if text.startswith("Traceback (most recent call last):"):
                in_traceback = True
            elif in_traceback and text and not text[0].isspace() and not text.startswith(CHAINED):
                found = text  # the exception's own line
    return found[:LAST_ERROR_CHARS]


class Floor(Protocol):
    """What the watch needs of the floor (``loadtest.chaos.ChaosDemo`` is one)."""

    processes: dict[str, Any]
    state: Path

    def restart(self, name: str) -> None: ...


class ExitWatch:
    """Watches every process of ``floor.processes`` (the live mapping the demo updates): each
    exit recorded with its last error, printed, and the service started again after a backoff.

    ``spawned`` must be told where each new process's output begins in its log (the logs are
    appended to across restarts), ``caused`` of each exit the suite brings about itself."""

    def __init__(
        self,
        floor: Floor,
        say: Callable[[str], None] = print,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.floor = floor
        self.say = say
        self.clock = clock
        self.started = clock()
        self.exits: list[ServiceExit] = []
        self.log_starts: dict[int, int] = {}  # pid -> byte offset of its output in its log
        self._seen = 0
        self._supervisor = Supervisor(
            floor.processes,
            floor.restart,
            lambda message, _kind: self.say(f"supervisor: {message}"),
            clock=clock,
        )

    def log_of(self, service: str) -> Path:
        return self.floor.state / f"{service}.log"

    def spawned(self, process: Process, log_offset: int) -> None:
        self.log_starts[process.pid] = log_offset

    def _record(self, service: str, pid: int, code: int, cause: str) -> ServiceExit:
        log = self.log_of(service)
        found = ServiceExit(
            service=service,
            pid=pid,
            at_seconds=round(self.clock() - self.started, 2),
            returncode=code,
            how=describe_exit(code),
            last_error=last_error(log, self.log_starts.get(pid, 0)),
            log=str(log),
            expected=bool(cause),
            cause=cause,
        )
        self.exits.append(found)
        self.say(("expected exit: " if cause else "UNEXPECTED EXIT: ") + found.describe())
        return found

    def caused(self, service: str, process: Process, code: int, cause: str) -> ServiceExit:
        """An exit the suite brought about (``cause`` says how: "kill -9 by the fault suite")."""
        return self._record(service, process.pid, code, cause)

    def check(self) -> list[ServiceExit]:
        """One pass: the exits seen since the last (each recorded unexpected; the supervisor
        starts the service again after its backoff)."""
        self._supervisor.check()
        new = self._supervisor.exits[self._seen :]
        self._seen = len(self._supervisor.exits)
        return [self._record(e.service, e.pid, e.returncode, cause="") for e in new]

    async def run(self, interval: float = 0.2) -> None:
        while True:
            self.check()
            await asyncio.sleep(interval)

    def stop(self) -> None:
        """No more restarts (the run stops its services)."""
        self._supervisor.stop()

    def unexpected(self) -> list[ServiceExit]:
        return [e for e in self.exits if not e.expected]

    def report(self) -> list[dict[str, Any]]:
        return [asdict(e) for e in self.exits]
