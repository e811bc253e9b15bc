"""The soak (issue 13 item 6): the duplicated PAID, reproduced or ruled out.

    python -m loadtest.soak --minutes 30 [--cluster] [--seed N] [--out build/soak]
                            [--tables 20] [--rounds-per-minute 60] [--rig-rate 0.1]
                            [--approval-threshold 200000] [--gap 5,30]

The fault suite's floor (``loadtest.chaos``: every service as a process, two sites, the
simulator's tables, dealer terminals that confirm every payable payout and a supervisor who
approves the large ones) plays for ``--minutes`` with continuous payments: ``--rig-rate`` of the
rounds deal a royal or straight flush (four aces at blackjack), and prizes of at least
``--approval-threshold`` pesos wait for the supervisor (``JACKPOT_PAYOUT_APPROVAL_THRESHOLD``).
After a random pause (``--gap MIN,MAX`` seconds) it injects the next fault, round-robin:

a. ``payout_kill_9``: ``kill -9`` of the payout service and its restart (``chaos.kill_payout``:
   recovered when every terminal is shown its open payouts again and a payment confirms);
b. ``stalled_zombie``: SIGSTOP of the running payout process; a second instance with the same
   settings starts (the same gRPC port: the servers set SO_REUSEPORT, so terminals reach whichever
   is alive; no metrics port) and takes the awards partitions once the stopped one's 3 s session
   expires. The first stays stopped a random 5-15 s, longer if the second owns no partition yet
   (so that it is a zombie when it resumes), is SIGCONTed, and 5-15 s later one of the two, at
   random, is stopped (SIGTERM): recovered when the survivor owns every awards partition and
   answers ListPayouts. Its logs after the resume are counted (``zombie_log``):
   ``commits_before_revoke`` are transitions the zombie committed before it gave its partitions
   up, which fencing must make impossible;
c. with ``--cluster``: ``broker_kill_9``: ``kill -9`` of one broker (1, 2, 3 in turn) and its
   restart 3 s later (``chaos.kill_broker``: recovered when the floor is whole).

A service that exits on its own meanwhile is restarted, as Kubernetes would (``chaos.supervise``),
and listed. At the end the floor plays on ``--settle-seconds``, stops, and the pipeline drains;
then the books (``jackpot.sim.books.judge``: ``jackpot audit``, the access log's chain, the
pesos lost and duplicated bet by bet) and the payouts, counted from the ledger and the payouts topic
(``count_payouts``): payouts created, paid, paid twice (two PAYOUT_PAID ledger entries, or two
PAID transitions in the payouts topic, for one award id), created twice, awards without a payout
and payouts without an award. ``build/soak/report.json`` has every figure, and the payout logs'
lines about any award paid twice.

Exit status 0 only if the audit and its chain are clean, no peso was lost or duplicated, every
award is what the rules give for the cards dealt (the round oracle, ``jackpot.sim.oracle``), no
payout was paid or created twice, every award has a payout and every payout an award, and every
fault injected was recovered from (``soak_verdict``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import subprocess
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from jackpot.platform.bundles import ledger_entries
from jackpot.sim.books import EXAMPLES, LedgerBooks, add_entry, finish_floor, judge, read_topic
from jackpot.sim.floor import Floor
from jackpot.tools.demo_floor import (
    KAFKA_SH,
    sim_config,
)
from jackpot.tools.demo_report import report as demo_report
from jackpot.topics import AWARDS
from jackpot.v1 import payout_pb2, pot_pb2
from loadtest.chaos import (
    GIVE_UP_SECONDS,
    ChaosDemo,
    PotWatch,
    close_floor,
    floor_ready,
    kill_broker,
    kill_payout,
    list_payouts,
    open_floor,
    print_books,
    supervise,
)

FAULTS = ("payout_kill_9", "stalled_zombie", "broker_kill_9")
PAID = payout_pb2.PAYOUT_STATE_PAID
OPEN_STATES = (
    payout_pb2.PAYOUT_STATE_ORDERED,
    payout_pb2.PAYOUT_STATE_AWAITING_APPROVAL,
    payout_pb2.PAYOUT_STATE_APPROVED,
)
CREATED_TYPES = (
    pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_ORDERED,
    pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_AWAITING_APPROVAL,
)
# What the payout logs are searched for (the exactly-once processor's and the payout's events).
LOG_EVENTS = (
    "partition_halted",
    "transaction_aborted",
    "producer_renewed",
    "assignment_failed",
    "partitions_revoked",
    "partitions_assigned",
    "payout_record_unreadable",
    "award_refused",
    "payout_transition",
    "payout_transitions",  # one line for a transaction's many (a studio round's prizes)
)


class SoakDemo(ChaosDemo):
    """The fault suite's floor; it knows each process's log and can start a second payout."""

    def __init__(self, tables: int, state_dir: Path, run_id: str, replication: int) -> None:
        super().__init__(tables, state_dir, run_id, replication)
        self.logs: dict[int, Path] = {}  # pid -> the log its output goes to

    def _spawn(self, name: str, args: list[str], env: dict[str, str]) -> None:
        super()._spawn(name, args, env)
        self.logs[self.processes[name].pid] = self.state / f"{name}.log"

    def spawn_like(self, name: str, like: str, **overrides: str) -> subprocess.Popen[bytes]:
        """Start ``name`` with the command and environment of ``like`` (and ``overrides``)."""
        args, env = self._commands[like]
        self._spawn(name, args, {**env, **overrides})
        return self.processes[name]

    def payout_logs(self) -> list[Path]:
        return sorted({p for p in self.logs.values() if p.name.startswith("payout")})


# ------------------------------------------------------------------ counting and judging


def _stamp(ts: Any) -> str:
    nanos = ts.ToNanoseconds()
    return datetime.fromtimestamp(nanos / 1e9).isoformat(timespec="milliseconds") if nanos else "-"


def count_payouts(
    entries: Iterable[pot_pb2.LedgerEntry],
    records: Iterable[tuple[int, int, payout_pb2.Payout]],
) -> dict[str, Any]:
    """Per award id, from the ledger (``entries``) and every record of the payouts topic
    (``records``: partition, offset, payout): how many payouts were created and paid, and which
    awards were paid twice (two PAYOUT_PAID ledger entries, or two distinct PAID transitions in
    the payouts topic: two records that each moved the award to PAID, or one history that has
    PAID twice), created twice, have no payout, or are a payout without an award."""
    ledger = LedgerBooks()
    created: dict[str, list[str]] = defaultdict(list)
    paid_entries: dict[str, list[str]] = defaultdict(list)
    voided: set[str] = set()
    for entry in entries:
        add_entry(ledger, entry)
        described = f"{entry.entry_id} by {entry.changed_by} at {_stamp(entry.occurred_at)}"
        if entry.type in CREATED_TYPES:
            created[entry.source_event_id].append(described)
        elif entry.type == pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_PAID:
            paid_entries[entry.source_event_id].append(described)
        elif entry.type == pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_VOIDED:
            voided.add(entry.source_event_id)
    latest: dict[str, tuple[int, int, payout_pb2.Payout]] = {}
    partitions: dict[str, set[int]] = defaultdict(set)
    # (position in the history, by, at): a transition repeated by later records counts once
    paid_steps: dict[str, dict[tuple[int, str, int], str]] = defaultdict(dict)
    first_steps: dict[str, set[tuple[int, str, int]]] = defaultdict(set)
    record_count = 0
    for partition, offset, payout in records:
        record_count += 1
        award_id = payout.award_id
        partitions[award_id].add(partition)
        if award_id not in latest or (partition, offset) > latest[award_id][:2]:
            latest[award_id] = (partition, offset, payout)
        for n, step in enumerate(payout.history):
            key = (n, step.by, step.at.ToNanoseconds())
            if n == 0:
                first_steps[award_id].add((step.state, step.by, key[2]))
            if step.state == PAID:
                paid_steps[award_id].setdefault(
                    key, f"PAID by {step.by} at {_stamp(step.at)} (p{partition}@{offset})"
                )
    awards = set(ledger.awards)
    payouts = set(created) | set(latest)
    paid = set(paid_entries) | set(paid_steps)
    paid_twice = sorted(
        a for a in paid if len(paid_entries.get(a, ())) > 1 or len(paid_steps.get(a, {})) > 1
    )
    created_twice = sorted(
        a for a in payouts if len(created.get(a, ())) > 1 or len(first_steps.get(a, ())) > 1
    )
    without_payout = sorted(awards - payouts)
    without_award = sorted(payouts - awards)
    return {
        "awards": len(awards),
        "payouts_created": len(payouts),
        "payouts_paid": len(paid),
        "paid_twice": len(paid_twice),
        "created_twice": len(created_twice),
        "awards_without_payout": len(without_payout),
        "payouts_without_award": len(without_award),
        "open_at_end": sum(1 for _, _, p in latest.values() if p.state in OPEN_STATES),
        "voided": len(voided),
        "on_several_partitions": sum(1 for ps in partitions.values() if len(ps) > 1),
        "payout_records": record_count,
        "ledger_paid_entries": sum(len(v) for v in paid_entries.values()),
        "paid_twice_examples": {
            a: {"ledger": paid_entries.get(a, []), "payouts_topic": list(paid_steps[a].values())}
            for a in paid_twice[:EXAMPLES]
        },
        "created_twice_examples": {a: created.get(a, []) for a in created_twice[:EXAMPLES]},
        "awards_without_payout_examples": without_payout[:EXAMPLES],
        "payouts_without_award_examples": without_award[:EXAMPLES],
    }


def summarize_faults(faults: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """Per kind of fault: how often, how many never recovered (recovery None), the worst."""
    summary: dict[str, Any] = {}
    for name, records in faults.items():
        times = [r.get("recovery_seconds") for r in records]
        recovered = [t for t in times if t is not None]
        summary[name] = {
            "count": len(records),
            "not_recovered": len(times) - len(recovered),
            "recovery_max_seconds": max(recovered) if recovered else None,
            "recovery_seconds": times,
        }
    return summary


def soak_verdict(
    books: Mapping[str, Any], payouts: Mapping[str, Any], faults: Mapping[str, Any]
) -> dict[str, Any]:
    """``ok`` only if the audit and its chain hold, no peso was lost or duplicated (bet by bet
    and in total), every award is what the rules give (the round oracle), no payout was paid or
    created twice, every award has a payout and every payout an award, and every fault injected
    was recovered from; ``failed`` says what did not."""
    failed: list[str] = []
    if not books["audit_ok"]:
        failed.append(f"audit: {'; '.join(books.get('audit_problems', [])[:3]) or 'FAILED'}")
    if not books["audit_chain"]["ok"]:
        failed.append(f"access log's chain broken at {books['audit_chain'].get('first_break')}")
    for what in ("lost", "duplicated"):
        pesos = max(books[what], books.get(f"{what}_in_total", 0))
        if pesos:
            failed.append(f"{pesos} pesos {what}")
    oracle = books["awards_oracle"]  # every award against the rules for the cards dealt
    if not oracle["ok"]:
        kinds = ", ".join(f"{n} {kind}" for kind, n in oracle["by_kind"].items())
        failed.append(f"round oracle: {kinds or 'no round compared'}")
    for key, what in (
        ("paid_twice", "payouts paid twice"),
        ("created_twice", "payouts created twice"),
        ("awards_without_payout", "awards without a payout"),
        ("payouts_without_award", "payouts without an award"),
    ):
        if payouts[key]:
            failed.append(f"{payouts[key]} {what}")
    for name, fault in faults.items():
        if fault["not_recovered"]:
            failed.append(f"{name}: {fault['not_recovered']} of {fault['count']} never recovered")
    return {"ok": not failed, "failed": failed}


# ------------------------------------------------------------------------ service logs


def log_events(path: Path, start: int = 0, end: int | None = None) -> list[dict[str, Any]]:
    """The JSON lines of a service's log from byte ``start`` (to ``end``); others are skipped."""
    events: list[dict[str, Any]] = []
    data = b""
    with contextlib.suppress(FileNotFoundError), path.open("rb") as log:
        log.seek(start)
        data = log.read() if end is None else log.read(max(0, end - start))
    for line in data.splitlines():
        with contextlib.suppress(ValueError):
            event = json.loads(line)
            if isinstance(event, dict):
                events.append(event)
    return events


def log_size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def _epoch(event: Mapping[str, Any]) -> float:
    try:
        return datetime.fromisoformat(str(event["timestamp"])).timestamp()
    except (KeyError, ValueError):
        return 0.0


def tally(events: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The processor's and payout's events of a log section, by kind; halts by why, transitions
    by state; ``commits_before_revoke``: transitions committed before the first revocation."""
    counts: Counter[str] = Counter()
    halted: Counter[str] = Counter()
    transitions: Counter[str] = Counter()
    before_revoke = 0
    revoked = False
    for event in events:
        name = str(event.get("event", ""))
        if name not in LOG_EVENTS:
            continue
        counts[name] += 1
        if name == "partition_halted":
            halted[str(event.get("why"))] += 1
        elif name in ("payout_transition", "payout_transitions"):
            states = event.get("states") or {str(event.get("state")): 1}
            for state, count in states.items():
                transitions[str(state)] += int(count)
                before_revoke += 0 if revoked else int(count)
        elif name == "partitions_revoked":
            revoked = True
    return {
        "events": dict(sorted(counts.items())),
        "halted": dict(halted),
        "transitions": dict(transitions),
        "commits_before_revoke": before_revoke,
    }


def lines_about(paths: Iterable[Path], award_ids: Iterable[str], limit: int = 40) -> list[str]:
    """The log lines (file: line) that name one of ``award_ids``."""
    wanted = [a for a in award_ids if a]
    found: list[str] = []
    for path in paths:
        with contextlib.suppress(FileNotFoundError), path.open(errors="replace") as log:
            for line in log:
                if any(a in line for a in wanted):
                    found.append(f"{path.name}: {line.rstrip()}")
                    if len(found) >= limit:
                        return found
    return found


async def until_owning(
    path: Path, start: int, minimum: int, within: float
) -> tuple[float, list[int]] | None:
    """The first moment (epoch seconds, from its log) the instance writing ``path`` after
    ``start`` reported owning at least ``minimum`` partitions and still did at its latest report;
    None if that did not happen ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        reports = [
            (_epoch(e), list(e.get("owned", [])))
            for e in log_events(path, start)
            if e.get("event") == "payout_partitions"
        ]
        if reports and len(reports[-1][1]) >= minimum:
            first = len(reports) - 1
            while first > 0 and len(reports[first - 1][1]) >= minimum:
                first -= 1
            return reports[first]
        if time.monotonic() > deadline:
            return None
        await asyncio.sleep(0.2)


# ------------------------------------------------------------------------------- faults


def _wait_exit(process: subprocess.Popen[bytes], seconds: float) -> int:
    """Its exit status; SIGKILLed if it did not exit within ``seconds`` (then -9)."""
    try:
        return process.wait(seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()


async def stalled_zombie(demo: SoakDemo, rng: random.Random, number: int) -> dict[str, Any]:
    """Fault b: the running payout stopped, a second started, the first resumed as a zombie, one
    of the two stopped; the figures (seconds, ``recovery_seconds`` from the SIGTERM)."""
    await asyncio.sleep(rng.uniform(1.0, 3.0))
    partitions = AWARDS.partitions
    first = demo.processes["payout"]
    first_log = demo.logs[first.pid]
    name = f"payout-z{number}"
    figures: dict[str, Any] = {"first_pid": first.pid, "second": name, "recovery_seconds": None}
    first.send_signal(signal.SIGSTOP)
    stopped, stopped_wall = time.monotonic(), time.time()
    resumed = False
    try:
        second = demo.spawn_like(name, "payout", JACKPOT_PAYOUT_METRICS_PORT="0")
        second_log = demo.logs[second.pid]
        figures["second_pid"] = second.pid
        stall = rng.uniform(5.0, 15.0)
        await asyncio.sleep(stall)
        # the first is a zombie only once the second owns partitions: stay stopped until then
        took = await until_owning(second_log, 0, 1, GIVE_UP_SECONDS)
        figures["second_owned_after_seconds"] = (
            None if took is None else round(took[0] - stopped_wall, 2)
        )
        figures["second_owned_while_stalled"] = [] if took is None else took[1]
        figures["stalled_seconds"] = round(time.monotonic() - stopped, 2)
        figures["stall_extended"] = time.monotonic() - stopped > stall + 0.5
        resume_offset = log_size(first_log)
        first.send_signal(signal.SIGCONT)
        resumed = True
        both = rng.uniform(5.0, 15.0)
        await asyncio.sleep(both)
        figures["both_running_seconds"] = round(both, 2)
        victim = rng.choice(("zombie", "second"))
        figures["stopped"] = victim
        if victim == "zombie":
            demo.processes.pop("payout")
            stopping, survivor_log, survivor_start = first, second_log, 0
        else:
            demo.processes.pop(name)
            stopping, survivor_log, survivor_start = second, first_log, resume_offset
        term = time.monotonic()
        stopping.send_signal(signal.SIGTERM)
        figures["stopped_exit_status"] = await asyncio.to_thread(_wait_exit, stopping, 30)
        if victim == "zombie":
            demo.processes["payout"] = demo.processes.pop(name)
        owning = await until_owning(survivor_log, survivor_start, partitions, GIVE_UP_SECONDS)
        while owning is not None and time.monotonic() - term < GIVE_UP_SECONDS:
            if await list_payouts(demo) is not None:
                figures["recovery_seconds"] = round(time.monotonic() - term, 2)
                break
            await asyncio.sleep(0.2)
        figures["zombie_log"] = tally(log_events(first_log, resume_offset))
        figures["second_log"] = tally(log_events(second_log))
        return figures
    finally:
        if not resumed:
            first.send_signal(signal.SIGCONT)


async def inject(
    demo: SoakDemo,
    floor: Floor,
    watch: PotWatch,
    rng: random.Random,
    kinds: Sequence[str],
    until: float,
    gap: tuple[float, float],
) -> dict[str, list[dict[str, Any]]]:
    """Faults of ``kinds`` round-robin, after a random pause each, until ``until`` (monotonic)."""
    faults: dict[str, list[dict[str, Any]]] = {kind: [] for kind in kinds}
    started = time.monotonic()
    number = 0
    while time.monotonic() + gap[0] < until:
        await asyncio.sleep(min(rng.uniform(*gap), max(0.0, until - time.monotonic())))
        if time.monotonic() >= until:
            break
        kind = kinds[number % len(kinds)]
        at = round(time.monotonic() - started, 1)
        if kind == "payout_kill_9":
            record = await kill_payout(demo, floor, rng)
        elif kind == "stalled_zombie":
            record = await stalled_zombie(demo, rng, number)
        else:
            node = 1 + len(faults[kind]) % 3
            recovered = await kill_broker(demo, watch, node, rng)
            record = {"node": node, "recovery_seconds": recovered and round(recovered, 2)}
        record["at_seconds"] = at
        faults[kind].append(record)
        number += 1
        recovery = record["recovery_seconds"]
        print(
            f"[soak {at:7.1f} s] {kind} #{len(faults[kind])}: recovered "
            f"{'NEVER' if recovery is None else f'after {recovery} s'}",
            flush=True,
        )
    return faults


# ---------------------------------------------------------------------------------- run


async def read_payouts(demo: SoakDemo) -> dict[str, Any]:
    """``count_payouts`` over the run's whole ledger and payouts topics."""
    entries: list[pot_pb2.LedgerEntry] = []
    records: list[tuple[int, int, payout_pb2.Payout]] = []
    await read_topic(
        demo.bootstrap,
        demo.topic("ledger"),
        lambda value, _p, _o: entries.extend(entry for entry, _ in ledger_entries(value)),
    )
    await read_topic(
        demo.bootstrap,
        demo.topic("payouts"),
        lambda value, p, o: records.append((p, o, payout_pb2.Payout.FromString(value))),
    )
    return count_payouts(entries, records)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    run_id = uuid.uuid4().hex[:8]
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    rng = random.Random(seed)
    kinds = FAULTS if args.cluster else FAULTS[:2]
    # inherited by the services the floor starts: only the payout service reads it
    os.environ["JACKPOT_PAYOUT_APPROVAL_THRESHOLD"] = str(args.approval_threshold)
    result: dict[str, Any] = {
        "run": run_id,
        "seed": seed,
        "minutes": args.minutes,
        "cluster": args.cluster,
        "tables": args.tables,
        "rounds_per_minute": args.rounds_per_minute,
        "rig_rate": args.rig_rate,
        "approval_threshold": args.approval_threshold,
    }
    try:
        demo = await open_floor(SoakDemo, run_id, args.tables, args.cluster, runs="soak")
    except BaseException:
        if args.cluster:
            await asyncio.to_thread(subprocess.run, [str(KAFKA_SH), "cluster-down"], check=False)
        raise
    watch = PotWatch(demo)
    restarts: list[str] = []
    try:
        await floor_ready(demo, watch)
        config = sim_config(demo, args.rig_rate, args.rounds_per_minute)
        config.seed = seed
        floor = Floor(config)
        playing = asyncio.create_task(floor.run())
        supervisor = asyncio.create_task(supervise(demo, restarts))
        started = time.monotonic()
        try:
            faults = await inject(
                demo, floor, watch, rng, kinds, started + args.minutes * 60, args.gap
            )
            await asyncio.sleep(args.settle_seconds)  # play on after the last fault
        finally:
            supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await supervisor
        result["played_seconds"] = round(time.monotonic() - started, 1)
        stats = await finish_floor(demo, floor, playing)
        books = await judge(demo, stats, await demo_report(demo, stats), require_paid=True)
        payouts = await read_payouts(demo)
        summary = summarize_faults(faults)
        floor_report = stats.report()
        result.update(
            {
                "faults_injected": sum(len(records) for records in faults.values()),
                "faults": {name: {**summary[name], "records": faults[name]} for name in faults},
                "services_restarted": restarts,
                "payouts": payouts,
                "terminals": {
                    k: floor_report[k]
                    for k in ("winning_results", "payouts_received", "payouts_paid", "approvals")
                },
                "books": books,
                "payout_logs": {p.name: tally(log_events(p)) for p in demo.payout_logs()},
                "paid_twice_log_lines": lines_about(
                    demo.payout_logs(), payouts["paid_twice_examples"]
                ),
            }
        )
        result["verdict"] = soak_verdict(books, payouts, summary)
        result["ok"] = result["verdict"]["ok"]
        return result
    finally:
        await close_floor(demo, watch, args.cluster)


def _seconds(value: float | None) -> str:
    return "never" if value is None else f"{value:g} s"


def print_summary(result: dict[str, Any], out: Path) -> None:
    where = "the three-broker cluster" if result["cluster"] else "one broker"
    print(
        f"soak             {result['minutes']:g} min on {where}, run {result['run']}, seed "
        f"{result['seed']}: played {result['played_seconds']:g} s, "
        f"{result['faults_injected']} faults injected"
    )
    print(f"{'fault':16} {'count':>5} {'never recovered':>16} {'worst recovery':>15}")
    for name, fault in result["faults"].items():
        print(
            f"{name:16} {fault['count']:>5} {fault['not_recovered']:>16} "
            f"{_seconds(fault['recovery_max_seconds']):>15}"
        )
    zombies = result["faults"].get("stalled_zombie", {}).get("records", [])
    if zombies:
        stopped = Counter(z.get("stopped") for z in zombies)
        commits = sum(z.get("zombie_log", {}).get("commits_before_revoke", 0) for z in zombies)
        print(
            f"{'':16} zombies stalled {[z.get('stalled_seconds') for z in zombies]} s, the second "
            f"owned partitions after {[z.get('second_owned_after_seconds') for z in zombies]} s; "
            f"stopped: zombie {stopped['zombie']}, second {stopped['second']}; zombie commits "
            f"before its revoke {commits}"
        )
    p = result["payouts"]
    t = result["terminals"]
    print(
        f"payouts          awards {p['awards']}, created {p['payouts_created']}, paid "
        f"{p['payouts_paid']}, PAID TWICE {p['paid_twice']}, created twice {p['created_twice']}, "
        f"awards without payout {p['awards_without_payout']}, payouts without award "
        f"{p['payouts_without_award']}, open at the end {p['open_at_end']}, voided {p['voided']}"
    )
    print(
        f"{'':16} terminals confirmed {t['payouts_paid']}, supervisor approved "
        f"{t['approvals']}; ledger PAYOUT_PAID entries {p['ledger_paid_entries']}, payouts "
        f"records {p['payout_records']}"
    )
    for award_id, seen in p["paid_twice_examples"].items():
        print(f"{'':16} ! {award_id}: ledger {seen['ledger']}; payouts {seen['payouts_topic']}")
    b = result["books"]
    chain = b["audit_chain"]
    print(
        f"books            rounds {b['rounds']}, accepted {b['bets_accepted']}, collected "
        f"{b['collected']}, lost {b['lost']}, duplicated {b['duplicated']}; audit "
        f"{'OK' if b['audit_ok'] else 'FAILED'}; access log's chain {chain['entries']} entries "
        f"{'OK' if chain['ok'] else 'TAMPERED'}"
    )
    print_books("books", b)
    logs: Counter[str] = Counter()
    halted: Counter[str] = Counter()
    for section in result["payout_logs"].values():
        logs.update(section["events"])
        halted.update(section["halted"])
    print(
        f"payout logs      halted partitions {dict(halted) or 0}, transactions aborted "
        f"{logs['transaction_aborted']}, producers renewed {logs['producer_renewed']}, "
        f"assignments failed {logs['assignment_failed']}; services restarted after exiting "
        f"{result['services_restarted'] or 'none'}"
    )
    verdict = result["verdict"]
    line = "OK" if verdict["ok"] else f"FAILED: {'; '.join(verdict['failed'])}"
    print(f"{line} -> {out / 'report.json'}")


def _gap(text: str) -> tuple[float, float]:
    low, _, high = text.partition(",")
    pair = (float(low), float(high or low))
    if not 0 <= pair[0] <= pair[1]:
        raise argparse.ArgumentTypeError("--gap MIN,MAX with 0 <= MIN <= MAX")
    return pair


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=30, help="how long faults are injected")
    parser.add_argument(
        "--cluster", action="store_true", help="run on the local 3-broker cluster and kill brokers"
    )
    parser.add_argument("--seed", type=int, default=None, help="default: random, reported")
    parser.add_argument("--out", default="build/soak")
    parser.add_argument("--tables", type=int, default=20)
    parser.add_argument("--rounds-per-minute", type=float, default=60)
    parser.add_argument(
        "--rig-rate", type=float, default=0.1, help="share of rounds dealt a royal/straight flush"
    )
    parser.add_argument(
        "--approval-threshold",
        type=int,
        default=200_000,
        help="prizes of at least this many pesos wait for the supervisor",
    )
    parser.add_argument(
        "--gap", type=_gap, default=(5.0, 30.0), help="seconds between faults: MIN,MAX"
    )
    parser.add_argument("--settle-seconds", type=float, default=20)
    args = parser.parse_args()
    result = asyncio.run(run(args))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(result, indent=2) + "\n")
    print_summary(result, out)
    raise SystemExit(0 if result["ok"] else 1)


if __name__ == "__main__":
    main()
