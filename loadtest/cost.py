"""What a round costs each process: CPU milliseconds and resident memory, read from /proc.

For each service the load test started (and the Kafka broker, found by its listening port) a
:class:`CostMeter` reads ``/proc/<pid>/stat`` (user + system time) and ``/proc/<pid>/status``
(``VmRSS``) at the start and the end of a step; the step's report then says per process the CPU
milliseconds per 1,000 rounds, the cores it used on average, its resident memory at the end and
how much that grew per 1,000 rounds. A broker shared with other work (another engineer's tests on
the same machine) is charged for that work too: its figure is an upper bound.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of ``pid`` so far; None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # the command name may hold spaces
    return (int(fields[11]) + int(fields[12])) / TICKS_PER_SECOND


def resident_mb(pid: int) -> float | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    match = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
    return None if match is None else int(match.group(1)) / 1024


def session_resident_mb(session: int) -> float:
    """The memory of every process of ``session`` at once (a tool started in a session of its
    own, with its worker processes and the browser that prints its PDF), in MB: the sum of their
    proportional set sizes (``Pss``: a page shared by n processes counts 1/n in each; the sum of
    their RSS counts Chromium's shared pages once per process, twice the truth and more)."""
    total_kb = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            if int(stat[stat.rindex(")") + 2 :].split()[3]) != session:
                continue
            total_kb += _pss_kb(entry)
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
    return total_kb / 1024


def _pss_kb(process: Path) -> int:
    for line in (process / "smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1])
    raise ValueError(f"no Pss in {process}/smaps_rollup")


class SessionPeak:
    """The peak of :func:`session_resident_mb`, sampled every ``interval`` seconds on a thread
    while the session's leader runs (``with SessionPeak(pid) as peak: ...; peak.mb``)."""

    def __init__(self, session: int, interval: float = 0.05) -> None:
        self.session, self.interval, self.mb = session, interval, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> SessionPeak:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.mb = max(self.mb, session_resident_mb(self.session))
            self._stop.wait(self.interval)


def listening_pid(port: int) -> int | None:
    """The process listening on TCP ``port`` (the broker), from ``ss``; None if not found."""
    try:
        out = subprocess.run(
            ["ss", "-Hltnp", f"sport = :{port}"], capture_output=True, text=True, check=False
        ).stdout
    except OSError:
        return None
    match = re.search(r"pid=(\d+)", out)
    return None if match is None else int(match.group(1))


def broker_pid(bootstrap: str) -> int | None:
    first = bootstrap.split(",")[0]
    return listening_pid(int(first.rsplit(":", 1)[1])) if ":" in first else None


class CostMeter:
    """CPU and memory of named processes between :meth:`__init__` and :meth:`report`."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self.started = time.monotonic()
        self.cpu = {name: cpu_seconds(pid) for name, pid in pids.items()}
        self.rss = {name: resident_mb(pid) for name, pid in pids.items()}

    def report(self, rounds: int) -> dict[str, dict[str, float]]:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        per = 1000 / max(rounds, 1)
        out: dict[str, dict[str, float]] = {}
        for name, pid in self.pids.items():
            cpu, rss = cpu_seconds(pid), resident_mb(pid)
            before_cpu, before_rss = self.cpu[name], self.rss[name]
            if cpu is None or rss is None or before_cpu is None or before_rss is None:
                continue  # restarted or gone during the step: no figure rather than a wrong one
            used = cpu - before_cpu
            out[name] = {
                "cpu_ms_per_1000_rounds": round(1000 * used * per, 1),
                "cores": round(used / elapsed, 3),
                "rss_mb": round(rss, 1),
                "rss_growth_mb_per_1000_rounds": round((rss - before_rss) * per, 2),
            }
        return out


def service_pids(processes: dict[str, Any], bootstrap: str) -> dict[str, int]:
    """The pid of each started service (Popen objects by name) and of the broker."""
    pids = {name: process.pid for name, process in processes.items()}
    broker = broker_pid(bootstrap)
    if broker is not None:
        pids["kafka"] = broker
    return pids
