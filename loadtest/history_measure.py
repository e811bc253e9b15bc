"""What `make bench-history` times on a synthesized history: the services and tools as processes.

Each figure runs the real command (``python -m jackpot.cli ...``) as a process of its own,
pointed at one history's topics by the settings' variables (docs/settings.md), with the code of
a :class:`Code` (today's tree, or an old copy on ``PYTHONPATH`` for the 'before' column):

- **pot takeover**: a pot instance takes the history's partitions (every group's pot update
  heard from it), works for a moment and is killed (``kill -9``); a second instance is started
  at once. Measured: from the kill until a pot update made after the kill (``produced_at``) has
  arrived for *every* group, read_committed on the pot-updates topic: the moment every table's
  gateway opens progressive betting again (D5). Its peak RSS (VmHWM) is read once it has.
- **service start**: payout, display and gateway, one at a time, each started twice (the first
  start after an upgrade may write what older code never wrote); from the process start until
  its gRPC health answers SERVING (the payout: its PayoutService, i.e. it owns and restored the
  payouts). The figure is the second start's; the first is kept beside it.
- **audit writer resume**: an :class:`~jackpot.platform.access_log.AccessLog` of the gateway's
  chain in a process of its own, from ``start()`` to ``ready`` (its chain's head found); the
  process then dies without a clean stop, as a crash would, and the second such start is the
  figure.
- **tools**: ``jackpot report`` of the history's last day and of its last 30 days (a month, or
  the whole history when it is shorter: ``report_month_days`` says which), each with its PDF,
  ``jackpot audit`` of everything and ``jackpot restore --from-ledger``: wall time of the process
  and its peak RSS (``wait4``); of each report's PDF, its pages (the ``/Type /Page`` objects
  Chromium writes) and bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
from aiokafka import ConsumerRecord
from grpc_health.v1 import health_pb2, health_pb2_grpc

from jackpot.platform.kafka import KafkaConnection, follow_latest
from jackpot.v1 import pot_pb2
from loadtest.cost import SessionPeak
from loadtest.free_ports import free_port
from loadtest.history_kafka import topic_names
from loadtest.history_synth import DAY_NS, group_plans

PAYOUT_SERVICE = "jackpot.v1.PayoutService"
START_TIMEOUT_SECONDS = 180.0
TAKEOVER_TIMEOUT_SECONDS = 900.0
WORK_SECONDS = 3.0  # the first pot instance works this long before it is killed
PDF_PAGE = re.compile(rb"/Type\s*/Page(?![A-Za-z])")  # a page object, not /Pages
MONTH_DAYS = 30
RESUME_SNIPPET = """
import asyncio, json, os, sys, time
from jackpot.platform.access_log import AccessLog
async def main():
    log = AccessLog(sys.argv[1], sys.argv[2], sys.argv[3], {})
    started = time.perf_counter()
    await log.start()
    await log.ready.wait()
    seconds = time.perf_counter() - started
    how = getattr(getattr(log, "resumed", None), "how", "")
    print(json.dumps({"seconds": seconds, "sequence": log.head.sequence, "how": how}), flush=True)
    os._exit(0)  # no clean stop: the next start resumes as after a crash
asyncio.run(main())
"""


@dataclass(frozen=True, slots=True)
class Code:
    """The code the services and tools run: the venv's (today's tree) or an old copy."""

    name: str
    services: Path | None = None  # a tree's services/ folder, put first on PYTHONPATH

    def env(self) -> dict[str, str]:
        if self.services is None:
            return {}
        return {"PYTHONPATH": str(self.services)}

    def origin(self) -> Path:
        """Where ``import jackpot`` finds the package with this code's environment (checked:
        an old copy must not silently run today's tree)."""
        found = subprocess.run(
            [sys.executable, "-c", "import jackpot; print(jackpot.__file__)"],
            env={**os.environ, **self.env()},
            capture_output=True,
            text=True,
            check=True,
        )
        package = Path(found.stdout.strip()).resolve().parent
        if self.services is not None and not package.is_relative_to(self.services.resolve()):
            raise RuntimeError(
                f"{self.name}: jackpot is imported from {package}, not {self.services}"
            )
        return package


@dataclass
class Run:
    """One history, one code: where its processes' logs go, how to reach its topics."""

    manifest: Mapping[str, Any]
    code: Code
    bootstrap: str
    logs: Path
    spawned: int = 0
    names: dict[int, str] = field(default_factory=dict)  # pid -> its log's name

    @property
    def prefix(self) -> str:
        return str(self.manifest["prefix"])

    @property
    def topics(self) -> dict[str, str]:
        return topic_names(self.prefix)

    @property
    def end_ns(self) -> int:
        return int(self.manifest["plan"]["end_ns"])

    def log_of(self, process: subprocess.Popen[bytes]) -> Path:
        return self.logs / f"{self.names[process.pid]}.log"


class Refused(RuntimeError):
    """A service refused to run the history (the pot halted its partitions: R14)."""


def refusal(log: Path, events: Sequence[str] = ("restored_state_refused",)) -> str:
    """The first refusal a service logged (its ``why``), or ""."""
    with contextlib.suppress(OSError), log.open("rb") as lines:
        for line in lines:
            if any(e.encode() in line for e in events):
                with contextlib.suppress(ValueError):
                    return str(json.loads(line).get("why", line.decode(errors="replace")))
                return line.decode(errors="replace")
    return ""


def tool_env(run: Run) -> dict[str, str]:
    """The pot's variables (the tools read PotSettings too) for this history."""
    t = run.topics
    return {
        "KAFKA_BOOTSTRAP_SERVERS": run.bootstrap,
        "JACKPOT_BOOTSTRAP_SERVERS": run.bootstrap,
        "JACKPOT_CONSUMER_GROUP": f"{run.prefix}-pot",
        "JACKPOT_TRANSACTIONAL_ID_PREFIX": f"{run.prefix}-pot",
        "JACKPOT_TABLE_EVENTS_TOPIC": t["table-events"],
        "JACKPOT_POT_UPDATES_TOPIC": t["pot-updates"],
        "JACKPOT_AWARDS_TOPIC": t["awards"],
        "JACKPOT_LEDGER_TOPIC": t["ledger"],
        "JACKPOT_STATE_TOPIC": t["pot-state"],
        "JACKPOT_DEAD_LETTER_TOPIC": t["dead-letter"],
        "JACKPOT_AUDIT_TOPIC": t["audit"],
        "JACKPOT_METRICS_PORT": "0",
    }


def spawn(
    run: Run, name: str, args: Sequence[str], env: Mapping[str, str]
) -> subprocess.Popen[bytes]:
    """``python -m jackpot.cli ARGS`` with the run's code, its output in the run's logs."""
    run.logs.mkdir(parents=True, exist_ok=True)
    run.spawned += 1
    named = f"{run.spawned:02d}-{name}"
    out = open(run.logs / f"{named}.log", "wb")  # noqa: SIM115 (the child's)
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "jackpot.cli", *args],
            env={**os.environ, **run.code.env(), **env},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    finally:
        out.close()
    run.names[process.pid] = named
    return process


def record_manifest(run: Run) -> None:
    """R6: the services verify their files at start; record the tree's manifest as it is now
    (what ``jackpot demo`` does), for the code the run uses."""
    subprocess.run(
        [sys.executable, "-m", "jackpot.cli", "manifest"],
        env={**os.environ, **run.code.env()},
        check=True,
        capture_output=True,
    )


def stop(process: subprocess.Popen[bytes], within_seconds: float = 30.0) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(within_seconds)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def peak_rss_mb(pid: int) -> float | None:
    """VmHWM of a live process, in MB."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return None


def timed_tool(run: Run, name: str, args: Sequence[str]) -> dict[str, Any]:
    """A tool to its end: wall seconds, peak memory, exit status. The peak is of all its
    processes at once (itself, its ``--jobs`` workers, the browser printing its PDF: its session's
    proportional set sizes summed, sampled every 50 ms,
    :func:`loadtest.cost.session_resident_mb`), and never below the largest one's own peak RSS
    (wait4)."""
    started = time.perf_counter()
    process = spawn(run, name, args, tool_env(run))
    with SessionPeak(process.pid) as peak:
        _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    return {
        "seconds": round(seconds, 3),
        "rss_mb": round(max(peak.mb, usage.ru_maxrss / 1024), 1),
        "exit": process.returncode,
    }


# ---------------------------------------------------------------------------- pot takeover


class UpdateWatch:
    """Pot updates as they arrive: per group, when the first one made after a mark came."""

    def __init__(self, groups: Sequence[str]) -> None:
        self.groups = set(groups)
        self.after_ns = 0
        self.heard: dict[str, float] = {}
        self.changed = asyncio.Event()

    def mark(self, after_ns: int) -> None:
        self.after_ns, self.heard = after_ns, {}

    def on_record(self, record: ConsumerRecord[bytes, bytes]) -> None:
        update = pot_pb2.PotUpdate.FromString(record.value or b"")
        group = update.pot_group_id
        if group in self.heard or update.produced_at.ToNanoseconds() <= self.after_ns:
            return
        self.heard[group] = time.monotonic()
        self.changed.set()

    async def every_group(
        self, process: subprocess.Popen[bytes], log: Path, within: float
    ) -> float:
        """Waits until every group was heard since the mark; the monotonic time of the last.
        Refused when the pot halts a partition (its log says why)."""
        deadline = time.monotonic() + within
        checked = 0.0
        while not self.groups <= set(self.heard):
            if process.poll() is not None:
                raise RuntimeError(f"the pot exited ({process.returncode}) before taking over")
            if time.monotonic() - checked > 1.0:
                checked = time.monotonic()
                why = refusal(log)
                if why:
                    raise Refused(f"the pot halted: {why}")
            if time.monotonic() > deadline:
                missing = sorted(self.groups - set(self.heard))
                raise TimeoutError(f"no pot update after {within:.0f} s from groups {missing}")
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), 0.2)
        return max(self.heard.values())


def pot_env(run: Run, instance: str) -> dict[str, str]:
    return {
        **tool_env(run),
        "JACKPOT_GRPC_ADDRESS": f"127.0.0.1:{free_port()}",
        "JACKPOT_INSTANCE_ID": instance,
    }


async def pot_takeover(run: Run) -> dict[str, Any]:
    """kill -9 of a pot that owns the history's partitions -> every group beating again."""
    record_manifest(run)
    watch = UpdateWatch(list(run.manifest["groups"]))
    follower = asyncio.create_task(
        follow_latest(
            KafkaConnection({"bootstrap_servers": run.bootstrap}),
            [run.topics["pot-updates"]],
            watch.on_record,
        )
    )
    await asyncio.sleep(2.0)  # the follower is positioned at the end
    try:
        started = time.monotonic()
        watch.mark(time.time_ns())
        first = spawn(run, "pot-first", ["pot"], pot_env(run, "bench-pot-1"))
        try:
            first_seconds = (
                await watch.every_group(first, run.log_of(first), TAKEOVER_TIMEOUT_SECONDS)
                - started
            )
            await asyncio.sleep(WORK_SECONDS)
        finally:
            watch.mark(time.time_ns())
            killed = time.monotonic()
            first.kill()
            first.wait()
        second = spawn(run, "pot-second", ["pot"], pot_env(run, "bench-pot-2"))
        try:
            seconds = (
                await watch.every_group(second, run.log_of(second), TAKEOVER_TIMEOUT_SECONDS)
                - killed
            )
            await asyncio.sleep(1.0)
            rss = peak_rss_mb(second.pid)
        finally:
            stop(second)
    finally:
        follower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follower
    return {
        "pot_first_start_seconds": round(first_seconds, 3),
        "pot_takeover_seconds": round(seconds, 3),
        "pot_takeover_rss_mb": None if rss is None else round(rss, 1),
    }


# --------------------------------------------------------------------------- service start


async def serving(address: str, service: str, process: subprocess.Popen[bytes]) -> None:
    """Returns when ``address`` answers SERVING for ``service`` ("" for the process)."""
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    async with grpc.aio.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"{address} exited ({process.returncode}) before serving")
            with contextlib.suppress(grpc.aio.AioRpcError):
                answer = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=1)
                if answer.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            await asyncio.sleep(0.05)
    raise TimeoutError(f"{address} not SERVING {service!r} after {START_TIMEOUT_SECONDS:.0f} s")


def service_args(run: Run, name: str, port: int) -> tuple[list[str], dict[str, str], str]:
    """(arguments, variables, health service) of payout, display or gateway on this history."""
    t, address = run.topics, f"127.0.0.1:{port}"
    common = {"KAFKA_BOOTSTRAP_SERVERS": run.bootstrap, "JACKPOT_AUDIT_TOPIC": t["audit"]}
    if name == "payout":
        return (
            ["payout"],
            {
                **common,
                "JACKPOT_PAYOUT_GRPC": address,
                "JACKPOT_PAYOUT_METRICS_PORT": "0",
                "JACKPOT_PAYOUT_CONSUMER_GROUP": f"{run.prefix}-payout",
                "JACKPOT_PAYOUT_TRANSACTIONAL_ID_PREFIX": f"{run.prefix}-payout",
                "JACKPOT_PAYOUT_AWARDS_TOPIC": t["awards"],
                "JACKPOT_PAYOUT_PAYOUTS_TOPIC": t["payouts"],
                "JACKPOT_PAYOUT_LEDGER_TOPIC": t["ledger"],
                "JACKPOT_PAYOUT_DEAD_LETTER_TOPIC": t["dead-letter"],
            },
            PAYOUT_SERVICE,
        )
    if name == "display":
        return (
            ["display"],
            {
                **common,
                "JACKPOT_DISPLAY_GRPC": address,
                "JACKPOT_DISPLAY_HTTP_PORT": "0",
                "JACKPOT_DISPLAY_METRICS_PORT": "0",
                "JACKPOT_DISPLAY_POT_UPDATES_TOPIC": t["pot-updates"],
                "JACKPOT_DISPLAY_AWARDS_TOPIC": t["awards"],
                "JACKPOT_DISPLAY_PAYOUTS_TOPIC": t["payouts"],
            },
            "",
        )
    return ["gateway", "--config", str(gateway_config(run, address))], common, ""


def gateway_config(run: Run, address: str) -> Path:
    """Site A's gateway of the history's floor (its chain continues the synthesized one)."""
    plan = run.manifest["plan"]
    tables = [t for g in group_plans(plan["tables"], plan["partitions"]) for t in g.tables]
    config = {
        "name": "site-a-pit-1",
        "grpc_address": address,
        "spool_path": str(run.logs / "gateway-a.sqlite"),
        "table_events_topic": run.topics["table-events"],
        "pot_updates_topic": run.topics["pot-updates"],
        "dead_letter_topic": run.topics["dead-letter"],
        "tables": [
            {
                "table_id": t.table_id,
                "game": t.game.value,
                "pot_group_id": t.group,
                "credential": t.credential,
            }
            for t in tables
            if t.site == "A"
        ],
    }
    path = run.logs / "gateway-a.json"
    path.write_text(json.dumps(config, indent=2))
    return path


async def service_start(run: Run, name: str) -> tuple[float, float]:
    """(first start, second start) of one service, seconds to SERVING."""
    times = []
    for attempt in (1, 2):
        record_manifest(run)
        port = free_port()
        args, env, health = service_args(run, name, port)
        started = time.monotonic()
        process = spawn(run, f"{name}-{attempt}", args, env)
        try:
            await serving(f"127.0.0.1:{port}", health, process)
            times.append(time.monotonic() - started)
        finally:
            stop(process)
    return times[0], times[1]


async def service_starts(run: Run) -> dict[str, Any]:
    starts = {name: await service_start(run, name) for name in ("payout", "display", "gateway")}
    return {
        "service_start_seconds": round(max(second for _, second in starts.values()), 3),
        "service_start": {n: round(s, 3) for n, (_, s) in starts.items()},
        "service_first_start": {n: round(f, 3) for n, (f, _) in starts.items()},
    }


def audit_resume(run: Run) -> dict[str, Any]:
    """Two starts of an audit writer of the gateway's chain (the second is the figure)."""
    seen = []
    for _ in (1, 2):
        done = subprocess.run(
            [sys.executable, "-c", RESUME_SNIPPET, run.bootstrap, run.topics["audit"],
             "gateway:site-a-pit-1"],
            env={**os.environ, **run.code.env()},
            capture_output=True,
            text=True,
            check=True,
            timeout=START_TIMEOUT_SECONDS,
        )  # fmt: skip
        seen.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return {
        "audit_resume_seconds": round(seen[1]["seconds"], 3),
        "audit_resume_first_seconds": round(seen[0]["seconds"], 3),
        "audit_resume_how": seen[1]["how"],
    }


# ---------------------------------------------------------------------------------- tools


def iso(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def ledger_entries(run: Run) -> int:
    """Records on the ledger topic now (the pot's entries, checkpoints and payout steps)."""
    async with KafkaConnection({"bootstrap_servers": run.bootstrap}).reader(
        run.topics["ledger"]
    ) as reader:
        firsts, ends = await reader.bounds()
    return sum(ends[p] - firsts[p] for p in ends)


def pdf_pages(pdf: Path) -> int | None:
    """The pages of a PDF Chromium printed (its page objects; None when there is no PDF)."""
    if not pdf.exists():
        return None
    return len(PDF_PAGE.findall(pdf.read_bytes()))


def timed_report(run: Run, name: str, days: float, *options: str) -> dict[str, Any]:
    """``jackpot report`` of the history's last ``days`` (PDF included), timed; its PDF's pages
    and bytes."""
    end, out = run.end_ns, run.logs / name
    period = ["--from", iso(end - int(days * DAY_NS)), "--to", iso(end)]
    done = timed_tool(run, name, ["report", *period, "--out", str(out), *options])
    pdf = out / "report.pdf"
    done["pdf_pages"] = pdf_pages(pdf)
    done["pdf_bytes"] = pdf.stat().st_size if pdf.exists() else None
    return done


def tools(run: Run, entries: int) -> dict[str, Any]:
    """The last day's and the last month's report, the full audit and the restore from the
    ledger (last: it rewrites the state), each a process timed to its end."""
    report = timed_report(run, "report", 1)
    month_days = min(MONTH_DAYS, float(run.manifest["plan"]["days"]))
    month = timed_report(run, "report-month", month_days) if month_days > 1 else None
    kept = month_of_kept_days(run, month_days) if month else {}
    audit = timed_tool(run, "audit", ["audit"])
    restore = timed_tool(run, "restore", ["restore", "--from-ledger"])
    return {
        "report_one_day_seconds": report["seconds"],
        "report_one_day_rss_mb": report["rss_mb"],
        "report_one_day_pdf_pages": report["pdf_pages"],
        "report_one_day_pdf_bytes": report["pdf_bytes"],
        "report_exit": report["exit"],
        **(_month_figures(month, month_days) if month else {}),
        **kept,
        "audit_seconds": audit["seconds"],
        "audit_entries_per_second": round(entries / max(audit["seconds"], 1e-9)),
        "audit_rss_mb": audit["rss_mb"],
        "audit_exit": audit["exit"],
        "restore_seconds": restore["seconds"],
        "restore_rss_mb": restore["rss_mb"],
        "restore_exit": restore["exit"],
    }


def month_of_kept_days(run: Run, days: float) -> dict[str, Any]:
    """The month again with ``--day-books`` (jackpot.tools.report_days): first keeping each day
    it reads from the ledger, then composed of the kept days, as a casino whose every day was
    reported runs it; whether both say what the ledger read alone said (every CSV section but
    the cost, the annex byte for byte)."""
    books = ["--day-books", str(run.logs / "day-books")]
    keeping = timed_report(run, "report-month-keeping", days, *books)
    kept = timed_report(run, "report-month-kept", days, *books)
    alone = run.logs / "report-month"
    same = all(
        _said(run.logs / name) == _said(alone)
        for name in ("report-month-keeping", "report-month-kept")
    )
    return {
        "report_month_keeping_seconds": keeping["seconds"],
        "report_month_kept_seconds": kept["seconds"],
        "report_month_kept_rss_mb": kept["rss_mb"],
        "report_month_kept_pdf_pages": kept["pdf_pages"],
        "report_month_kept_exit": max(keeping["exit"], kept["exit"]),
        "report_month_kept_same": same,
    }


def _said(out: Path) -> list[bytes]:
    """A report's files as what it says: its summary without what reading cost it."""
    names = sorted(p.name for p in out.glob("*.csv"))
    said = []
    for name in names:
        lines = (out / name).read_bytes().splitlines()
        if name == "summary.csv":
            lines = [
                line for line in lines if b",records read," not in line and b"day books" not in line
            ]
        said += lines
    return said


def _month_figures(month: dict[str, Any], days: float) -> dict[str, Any]:
    return {
        "report_month_days": days,
        "report_month_seconds": month["seconds"],
        "report_month_rss_mb": month["rss_mb"],
        "report_month_pdf_pages": month["pdf_pages"],
        "report_month_pdf_bytes": month["pdf_bytes"],
        "report_month_exit": month["exit"],
    }
