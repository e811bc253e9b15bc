"""The fault campaign: many short runs on the three-node cluster, each with a seed that
reproduces it, each judged by what a casino would lose (issue 36 item 6).

    python -m loadtest.campaign [--runs 30] [--seed S] [--out build/chaos-campaign]
                                [--tables 5] [--rounds-per-minute 150] [--rig-rate 0.05]
                                [--studio-players 1500] [--outage 3:25] [--settle-seconds 5]
                                [--keep-topics]

Run ``k`` (from 0) of a campaign has the seed ``S + k`` (``--seed`` defaults to a random one,
printed); ``--runs 1 --seed X`` runs again the run whose seed was X: the same floor (tables,
dealt cards, rigged rounds) and the same schedule of faults (kinds, order, nodes, durations, the
gaps between them). What the machine does meanwhile (when a transaction is in flight) is not
reproduced, only the pressure.

Each run is a short floor on the local three-broker cluster (RF 3, min ISR 2; started once for
the whole campaign and kept up; each run has its own topics, as `jackpot demo` has per run id,
deleted after a run that passed): ``--tables`` tables at ``--rounds-per-minute`` each and a
share ``--rig-rate`` of rigged winning rounds, so that the pot and the payout service transact
without pause, and a studio table of ``--studio-players`` players in the same group (its prizes
credited to the reference wallet; 0: none). While it plays, one fault after another, each
``FAULT_GAP_SECONDS`` (1-5 s, at random: a random point of the pot's and the payout's
transactions) after the floor was whole again from the previous one, in a random order:

- ``broker_kill_9``: a broker (two, one after the other, in a quarter of the runs) ``kill -9``
  ed and started again 3 s later;
- ``broker_pause``: one or two brokers SIGSTOPped for 2-12 s (past the brokers' 9 s session
  timeout, sometimes) and SIGCONTed (``kafka.sh pause|resume``);
- ``cluster_restart``: the whole cluster, once: stopped (``kafka.sh cluster-down``, SIGKILL
  after 10 s) or every broker ``kill -9`` ed, kept down ``--outage`` seconds (at random within
  the range), started again.

After each fault the floor must be whole again (``loadtest.chaos.floor_whole``, within
``GIVE_UP_SECONDS``). A run is judged by (``loadtest.verdicts.run_violations``):

- the books (``jackpot.sim.books``): no peso lost or duplicated bet by bet, every award with one
  payout, paid once by the end, the audit and the access log's chain clean;
- the round oracle: every award what the rules give for the cards dealt;
- the takeover check (``loadtest.takeover``): with the services stopped, the pot's stored states
  as a taking-over pot checks them (its own R14 check) and against the whole ledger; the payouts
  topic against the ledger's payout entries;
- no service exit the run did not cause (``loadtest.exits``; it kills no service), and the floor
  held whole between faults and to the end of play (``loadtest.floor_held``).

It prints and writes (``--out``) the runs, the faults injected by kind, the violations by kind
and the seed of each failing run: ``campaign.txt`` and ``campaign.json`` (rewritten after every
run, so a campaign cut short still has its figures), and each run's state (service logs) stays
in ``.run/chaos-campaign/<run>/``. Exit status 0 only when no run showed a violation. Ctrl-C
stops the campaign after the run under way; a second Ctrl-C, or SIGTERM, stops it at once (the
run's services and, unless ``--keep-cluster``, the cluster stopped).

To run the campaign against another checkout's services (the code before a fix), put its
``services`` first on ``PYTHONPATH`` and run this module from here: the services, the floor and
the judges are that checkout's, the campaign's cluster script and this schedule are this one's;
the report names the software every service verified at its start (``software_verified``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import random
import signal
import socket
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from jackpot.platform.kafka import KafkaConnection
from jackpot.platform.logging import configure_logging
from jackpot.sim.books import finish_floor, judge
from jackpot.sim.floor import Floor
from jackpot.tools.demo_floor import sim_config
from jackpot.tools.demo_report import report as demo_report
from jackpot.tools.demo_tables import POKER_GROUP, studio_tables
from jackpot.topics import ALL_TOPICS
from loadtest.chaos import (
    CLUSTER,
    GIVE_UP_SECONDS,
    ChaosDemo,
    Watches,
    cluster_down,
    floor_whole,
    kafka_sh,
    open_floor,
)
from loadtest.floor_ports import floor_ports
from loadtest.soak import log_events
from loadtest.takeover import payout_records, takeover_check
from loadtest.verdicts import VIOLATION_KINDS, campaign_summary, run_violations

FAULT_GAP_SECONDS = (1.0, 5.0)
BROKER_RESTART_AFTER_SECONDS = 3.0
PAUSE_SECONDS = (2.0, 12.0)
TWO_KILLS = 0.25  # the share of runs with two broker kills (the others have one)
NODES = (1, 2, 3)
RUN_TIMEOUT_SECONDS = 900.0  # a run that hangs is cut off and counted a run_error
ERROR_CHARS = 600  # of a run's own error in the report (the run's logs have the rest)
PORTS_WAIT_SECONDS = 120.0  # for another floor on this machine to stop using the ports
# The studio table beside the land floor (--studio-players): a round every 20 s, its players
# deciding 5 s while it is locked, a third of its rounds a made hand every bet wins, so that
# its locks and splits (transactions of their own, its bets written apart from the group's
# snapshot: jackpot.pot.transaction_cut, state_records) and its wallet credits meet the faults
STUDIO_ROUND_SECONDS, STUDIO_DECISION_SECONDS, STUDIO_RIG_RATE = 20.0, 5.0, 0.3


@dataclass(frozen=True, slots=True)
class Fault:
    """One fault of a run's schedule."""

    kind: str  # broker_kill_9, broker_pause, cluster_restart
    gap_seconds: float  # after the floor was whole again from the previous fault
    node: int = 0  # broker_kill_9, broker_pause
    seconds: float = 0.0  # broker_pause: stopped for; cluster_restart: down for
    how: str = ""  # cluster_restart: "stop" (SIGTERM, SIGKILL at the bound) or "kill -9"

    def describe(self) -> str:
        if self.kind == "broker_kill_9":
            return f"kill -9 of broker {self.node}"
        if self.kind == "broker_pause":
            return f"broker {self.node} paused {self.seconds:.1f} s"
        return f"whole cluster {self.how}, down {self.seconds:.1f} s"


def plan(rng: random.Random, outage: tuple[float, float]) -> list[Fault]:
    """A run's faults: one broker kill (two in a quarter of the runs), one or two broker pauses
    and one whole-cluster restart, in a random order, each with its node, duration and gap
    drawn from ``rng``."""
    drawn: list[Fault] = []
    for _ in range(2 if rng.random() < TWO_KILLS else 1):  # a broker's restart takes long
        drawn.append(Fault("broker_kill_9", 0.0, node=rng.choice(NODES)))
    for _ in range(rng.randint(1, 2)):
        seconds = round(rng.uniform(*PAUSE_SECONDS), 1)
        drawn.append(Fault("broker_pause", 0.0, node=rng.choice(NODES), seconds=seconds))
    how = rng.choice(("stop", "kill -9"))
    drawn.append(Fault("cluster_restart", 0.0, seconds=round(rng.uniform(*outage), 1), how=how))
    rng.shuffle(drawn)
    return [
        Fault(f.kind, round(rng.uniform(*FAULT_GAP_SECONDS), 1), f.node, f.seconds, f.how)
        for f in drawn
    ]


# ------------------------------------------------------------------------------ faults


async def _broker_kill(fault: Fault) -> float:
    await asyncio.to_thread(kafka_sh, "kill", str(fault.node))
    injected = time.monotonic()
    await asyncio.sleep(BROKER_RESTART_AFTER_SECONDS)  # the floor plays on two brokers
    await asyncio.to_thread(kafka_sh, "start", str(fault.node))
    return injected


async def _broker_pause(fault: Fault) -> float:
    await asyncio.to_thread(kafka_sh, "pause", str(fault.node))
    injected = time.monotonic()
    try:
        await asyncio.sleep(fault.seconds)
    finally:
        await asyncio.to_thread(kafka_sh, "resume", str(fault.node))
    return injected


async def _cluster_restart(fault: Fault, figures: dict[str, Any]) -> float:
    injected = time.monotonic()
    if fault.how == "stop":
        stop = await asyncio.to_thread(cluster_down)
        figures.update(stop_took_seconds=stop.took_seconds, stop_killed=stop.killed)
    else:
        for node in NODES:
            await asyncio.to_thread(kafka_sh, "kill", str(node))
    await asyncio.sleep(fault.seconds)
    started = time.monotonic()
    await asyncio.to_thread(kafka_sh, "cluster-up")
    figures["cluster_up_seconds"] = round(time.monotonic() - started, 1)
    return injected


async def inject(demo: ChaosDemo, w: Watches, fault: Fault, play_started: float) -> dict[str, Any]:
    """One fault, then the seconds until the floor is whole again (pot updates heard after the
    brokers are all back, both gateways open, a probe bet accepted at each site)."""
    figures: dict[str, Any] = {
        **asdict(fault),
        "what": fault.describe(),
        "at_seconds": round(time.monotonic() - play_started, 1),
    }
    if fault.kind == "broker_kill_9":
        injected = await _broker_kill(fault)
    elif fault.kind == "broker_pause":
        injected = await _broker_pause(fault)
    else:
        injected = await _cluster_restart(fault, figures)
    back = time.monotonic()
    whole = await floor_whole(demo, w.pot, back, heard_after=back, within=GIVE_UP_SECONDS)
    figures["brokers_back_after_seconds"] = round(back - injected, 1)
    figures["recovery_seconds"] = None if whole is None else round(whole, 2)
    print(
        f"    {figures['at_seconds']:6.1f} s  {fault.describe():40} floor whole "
        f"{'NEVER' if whole is None else f'{whole:.1f} s'} after the brokers were back",
        flush=True,
    )
    return figures


# ---------------------------------------------------------------------------------- run


def software(demo: ChaosDemo) -> dict[str, list[str]]:
    """Per service, the software it verified at its starts (``root`` and manifest digest):
    proof of which checkout's code ran."""
    found: dict[str, set[str]] = {}
    for log in sorted(demo.state.glob("*.log")):
        for event in log_events(log):
            if event.get("event") == "software_verified":
                seen = f"{event.get('root')} sha256:{str(event.get('digest'))[:12]}"
                found.setdefault(log.stem, set()).add(seen)
    return {service: sorted(seen) for service, seen in sorted(found.items())}


async def judge_after(demo: ChaosDemo, w: Watches, result: dict[str, Any]) -> None:
    """With the services stopped (gracefully; their exits no longer watched): the takeover
    check, the payout records, the exits and the floor held."""
    result.update(w.judged())
    if demo.exit_watch is not None:
        demo.exit_watch.stop()
    await asyncio.to_thread(demo.stop_services)
    result["takeover"] = await takeover_check(demo.environment_of("pot"))
    result["payout_records"] = await payout_records(
        demo.bootstrap, demo.topic("ledger"), demo.topic("payouts")
    )


async def play(
    args: argparse.Namespace, seed: int, faults: Sequence[Fault], result: dict[str, Any]
) -> None:
    """One run's floor, its faults and its judgement into ``result``."""
    run_id = f"{seed}-{uuid.uuid4().hex[:4]}"
    result["run"] = run_id
    studios = studio_tables(
        1 if args.studio_players else 0,
        args.studio_players,
        POKER_GROUP,
        STUDIO_ROUND_SECONDS,
        STUDIO_RIG_RATE,
        STUDIO_DECISION_SECONDS,
    )
    demo = await open_floor(
        ChaosDemo, run_id, args.tables, cluster=True, runs="chaos-campaign", studios=studios
    )
    result["state"] = str(demo.state)
    w = Watches(demo)
    floor: Floor | None = None
    playing: asyncio.Task[Any] | None = None
    try:
        await w.ready()
        config = sim_config(demo, args.rig_rate, args.rounds_per_minute)
        config.seed = seed
        floor = Floor(config)
        playing = asyncio.create_task(floor.run())
        started = time.monotonic()
        result["faults"] = []
        for fault in faults:
            await asyncio.sleep(fault.gap_seconds)
            result["faults"].append(await w.during(inject(demo, w, fault, started)))
        await asyncio.sleep(args.settle_seconds)  # the floor must stay whole to the end
        w.end_of_play()
        result["played_seconds"] = round(time.monotonic() - started, 1)
        stats = await finish_floor(demo, floor, playing)
        result["books"] = await judge(
            demo, stats, await demo_report(demo, stats), require_paid=True
        )
        await judge_after(demo, w, result)
    finally:
        if "service_exits" not in result:  # cut short: what exited until then
            result.update(w.judged())
        if playing is not None and not playing.done():
            assert floor is not None
            floor.stop()
            playing.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await playing
        await w.close(cluster=False)
        result.setdefault("software", software(demo))
        result["_topics"] = [demo.topic(short_name(t.name)) for t in ALL_TOPICS]


def short_name(topic: str) -> str:
    return topic.removeprefix("jackpot.").removesuffix(".v1")


async def restore_cluster() -> None:
    """Every broker running and none paused (after a run cut short mid-fault)."""
    for node in NODES:
        await asyncio.to_thread(kafka_sh, "resume", str(node), check=False)
    await asyncio.to_thread(kafka_sh, "cluster-up")


async def delete_topics(topics: list[str]) -> None:
    admin = KafkaConnection({"bootstrap_servers": CLUSTER}).admin()
    await admin.start()
    try:
        await admin.delete_topics(topics)
    finally:
        await admin.close()


def ports_taken() -> list[int]:
    """The floor's ports (gRPC, /metrics, the signs'; ``JACKPOT_CHAOS_PORT_OFFSET`` moves them)
    that something else listens on."""
    taken = []
    for port in floor_ports():
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            taken.append(port)
    return taken


async def ports_free(within: float = PORTS_WAIT_SECONDS) -> None:
    """Wait until no other process listens on the floor's ports (another floor on this machine:
    its services would answer for this run's), or say which are taken."""
    deadline = time.monotonic() + within
    while taken := await asyncio.to_thread(ports_taken):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the floor's ports {taken} are taken by another process")
        await asyncio.sleep(1)


async def one_run(args: argparse.Namespace, seed: int) -> dict[str, Any]:
    """One run with its seed: its schedule, its figures, its violations by kind."""
    faults = plan(random.Random(seed), args.outage)
    print(f"  seed {seed}: {'; '.join(f.describe() for f in faults)}", flush=True)
    result: dict[str, Any] = {"seed": seed, "plan": [asdict(f) for f in faults]}
    began = time.monotonic()
    try:
        await ports_free()
        async with asyncio.timeout(RUN_TIMEOUT_SECONDS):
            await play(args, seed, faults, result)
    except Exception as error:  # the run failed itself: recorded, the campaign goes on
        result["error"] = f"{type(error).__name__}: {str(error)[:ERROR_CHARS]}"
    with contextlib.suppress(Exception):
        await restore_cluster()
    result["seconds"] = round(time.monotonic() - began, 1)
    result["violations"] = run_violations(result)
    topics = result.pop("_topics", [])
    if topics and not result["violations"] and not args.keep_topics:
        with contextlib.suppress(Exception):  # only housekeeping: a broker slow to answer
            await delete_topics(topics)
    return result


# ------------------------------------------------------------------------------ report


def run_line(n: int, result: dict[str, Any]) -> str:
    """One line per run: seed, length, faults and their recoveries, violations."""
    recoveries = [
        "never" if f.get("recovery_seconds") is None else f"{f['recovery_seconds']:g}"
        for f in result.get("faults", [])
    ]
    kinds = sorted(result["violations"])
    verdict = "ok" if not kinds else "VIOLATIONS: " + ", ".join(kinds)
    return (
        f"run {n:3} seed {result['seed']:<12} {result['seconds']:6.1f} s  faults "
        f"{len(result.get('faults', []))} (floor whole after {', '.join(recoveries) or '-'} s)"
        f"  {verdict}"
    )


def render(summary: dict[str, Any], runs: Sequence[dict[str, Any]], header: Sequence[str]) -> str:
    """The campaign as text: the header, a line per run, the tables, each violation's detail."""
    lines = [*header, ""]
    lines += [run_line(n, r) for n, r in enumerate(runs, 1)]
    lines += ["", f"runs {summary['runs']}, passed {summary['passed']}, failed {summary['failed']}"]
    lines.append(f"faults injected {summary['faults_injected_total']}:")
    lines += [f"  {kind:24} {count}" for kind, count in summary["faults_injected"].items()]
    lines.append(f"violations {summary['violations_total']}:")
    for kind, what in VIOLATION_KINDS.items():
        found = summary["violations"].get(kind)
        shown = (
            f"{found['instances']} in {found['runs']} runs (seeds {found['seeds']})"
            if found
            else "0"
        )
        lines.append(f"  {kind:24} {shown:40} {what}")
    lines.append(f"failing seeds: {summary['failing_seeds'] or 'none'}")
    for result in runs:
        for kind, found in result["violations"].items():
            for detail in found[:5]:
                lines.append(f"  ! seed {result['seed']} {kind}: {detail}")
    if summary["failing_seeds"]:
        lines.append(
            "reproduce a run: python -m loadtest.campaign --runs 1 --seed SEED "
            "(the same floor and schedule of faults)"
        )
    lines.append(f"-> {'OK' if summary['ok'] else 'FAILED'}")
    return "\n".join(lines) + "\n"


def write(
    out: Path, header: list[str], args: argparse.Namespace, runs: list[dict[str, Any]]
) -> dict[str, Any]:
    summary = campaign_summary(runs)
    document = {
        "command": header[0],
        "settings": {k: v for k, v in vars(args).items() if k != "out"},
        "summary": summary,
        "runs": runs,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "campaign.json").write_text(json.dumps(document, indent=2, default=str) + "\n")
    (out / "campaign.txt").write_text(render(summary, runs, header))
    return summary


async def campaign(args: argparse.Namespace) -> int:
    seed = args.seed if args.seed is not None else random.randrange(1 << 31)
    header = [
        "python -m loadtest.campaign " + " ".join(sys.argv[1:]),
        f"campaign seed {seed}: runs {args.runs} (seeds {seed}..{seed + args.runs - 1}), "
        f"{args.tables} tables at {args.rounds_per_minute:g} rounds a minute, rigged "
        f"{args.rig_rate:g}, whole-cluster outages {args.outage[0]:g}-{args.outage[1]:g} s, "
        + (
            f"a studio table of {args.studio_players:,} players (a round every "
            f"{STUDIO_ROUND_SECONDS:g} s, {STUDIO_DECISION_SECONDS:g} s deciding, rigged "
            f"{STUDIO_RIG_RATE:g})"
            if args.studio_players
            else "no studio table"
        ),
        f"code under test: {Path(sys.modules['jackpot'].__file__ or '').parent}",
    ]
    print("\n".join(header), flush=True)
    await asyncio.to_thread(kafka_sh, "cluster-up")
    os.environ["KAFKA_BOOTSTRAP_SERVERS"] = CLUSTER
    runs: list[dict[str, Any]] = []
    out = Path(args.out)
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    assert main is not None

    def stop_now() -> None:  # SIGTERM (a timeout, a CI stopping) or a second Ctrl-C
        print("stopping now: the run under way is cut short, its services stopped", flush=True)
        main.cancel()

    def stop_after_this_run() -> None:
        print("stopping after this run (Ctrl-C again stops at once)", flush=True)
        stopping.set()
        loop.add_signal_handler(signal.SIGINT, stop_now)

    loop.add_signal_handler(signal.SIGINT, stop_after_this_run)
    loop.add_signal_handler(signal.SIGTERM, stop_now)
    try:
        for n in range(args.runs):
            if stopping.is_set():
                break
            print(f"run {n + 1}/{args.runs}", flush=True)
            runs.append(await one_run(args, seed + n))
            print(run_line(n + 1, runs[-1]), flush=True)
            write(out, header, args, runs)
    finally:
        if not args.keep_cluster:
            with contextlib.suppress(RuntimeError):
                await asyncio.to_thread(cluster_down)
    summary = write(out, header, args, runs)
    print(render(summary, runs, header), end="")
    print(f"-> {out / 'campaign.txt'}, {out / 'campaign.json'}")
    return 0 if summary["ok"] else 1


def outage_range(text: str) -> tuple[float, float]:
    low, _, high = text.partition(":")
    try:
        bounds = (float(low), float(high or low))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--outage {text!r}: MIN:MAX seconds, as in 3:25"
        ) from None
    if not 0 <= bounds[0] <= bounds[1] <= 600:
        raise argparse.ArgumentTypeError(f"--outage {text!r}: 0 <= MIN <= MAX <= 600")
    return bounds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=None, help="run k's seed is SEED + k")
    parser.add_argument("--out", default="build/chaos-campaign")
    parser.add_argument("--tables", type=int, default=5)
    parser.add_argument("--rounds-per-minute", type=float, default=150)
    parser.add_argument("--rig-rate", type=float, default=0.05)
    parser.add_argument(
        "--studio-players",
        type=int,
        default=1_500,
        help="players of the studio table in the land tables' group (0: no studio table)",
    )
    parser.add_argument(
        "--outage",
        type=outage_range,
        default=(3.0, 25.0),
        metavar="MIN:MAX",
        help="seconds the whole cluster stays down (drawn per run)",
    )
    parser.add_argument("--settle-seconds", type=float, default=5)
    parser.add_argument(
        "--keep-topics", action="store_true", help="keep the topics of runs that passed too"
    )
    parser.add_argument(
        "--keep-cluster", action="store_true", help="leave the cluster running at the end"
    )
    args = parser.parse_args()
    # the harness's own Kafka clients complain while the brokers are away; the services' logs
    # and the judges say what matters
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    configure_logging("WARNING", json=False)  # the takeover check's refusals, not its progress
    raise SystemExit(asyncio.run(campaign(args)))


if __name__ == "__main__":
    main()
