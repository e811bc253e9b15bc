"""The fault suite: the whole floor under load while services are killed, judged by the books.

    python -m loadtest.chaos [--pot-kills 20] [--tables 20] [--device-faults 0.05]
                             [--site-cutoff 20] [--faults 1,4,5,6,7] [--out build/chaos]

Runs the floor as in `jackpot demo` and, while the simulator plays, injects faults:

1. ``kill -9`` of the pot service ``--pot-kills`` times at random moments, restarting it each time;
2. with ``--cluster``: on the local three-broker cluster (RF 3, min ISR 2), ``kill -9`` of one
   broker and its restart, then of another;
3. with ``--cluster``: the whole cluster stopped for ``--outage-seconds`` (30): how soon a table
   closes progressive betting, and how soon after the restart the floor is whole again (services
   that exit meanwhile are restarted, as Kubernetes would);
4. ``kill -9`` of a table gateway mid-round and its restart (its spool and its devices resync);
5. during all of the above, the table controllers duplicate, delay (0.2-2 s) and reorder their
   events, each at ``--device-faults`` RATE (``loadtest.device_faults``): every copy must be
   answered ``duplicate``, every event sent before its predecessor refused
   ``SEQUENCE_OUT_OF_ORDER`` and accepted when sent again in order;
6. ``kill -9`` of the payout and display services during play, and their restart;
7. after that floor, on a floor of its own: a site cut off from the central cluster for
   ``--site-cutoff`` SECONDS, its gateway in a network namespace whose WAN link is taken down
   (``loadtest.site_cutoff``; root only, recorded as skipped otherwise).

``--faults`` picks which of them run (default all but the cluster's 2 and 3, which ``--cluster``
adds); ``--device-faults 0`` and ``--site-cutoff 0`` also turn 5 and 7 off.

The judges are `jackpot audit` and the simulator's own count of accepted bets: the report gives,
per fault, the recovery times (until the service answers its health check), and for each floor
the pesos lost and duplicated (both must be 0) and payouts made twice for one award (must be 0).
Exit status 0 only when all of those hold and every fault that ran passed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import subprocess
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from jackpot.tools.demo import (
    KAFKA_SH,
    METRICS,
    REPO,
    Demo,
    sim_config,
    wait_progressive_open,
)
from loadtest.books import judge
from loadtest.device_faults import DeviceFaultRates
from loadtest.floor import Floor, FloorStats
from loadtest.site_cutoff import run_site_cutoff

CLUSTER = "127.0.0.1:9192,127.0.0.1:9292,127.0.0.1:9392"


async def inject(demo: Demo, name: str, rng: random.Random, pause: tuple[float, float]) -> float:
    """Wait a random moment, SIGKILL ``name`` and restart it; seconds until the floor is whole
    again: the service answers its health check and the tables accept progressive bets."""
    await asyncio.sleep(rng.uniform(*pause))
    demo.kill(name)
    killed = time.monotonic()
    demo.restart(name)
    await demo.wait_serving(name)
    await wait_progressive_open(demo, within_seconds=120)
    return time.monotonic() - killed


async def kill_broker(demo: Demo, node: int, rng: random.Random) -> float:
    """SIGKILL one broker of the local cluster, restart it; seconds until the floor is whole."""
    await asyncio.sleep(rng.uniform(2.0, 5.0))
    await asyncio.to_thread(subprocess.run, [str(KAFKA_SH), "kill", str(node)], check=True)
    killed = time.monotonic()
    await asyncio.sleep(3)  # play on with two brokers for a moment
    await asyncio.to_thread(subprocess.run, [str(KAFKA_SH), "start", str(node)], check=True)
    await wait_progressive_open(demo, within_seconds=120)
    return time.monotonic() - killed


async def supervise(demo: Demo, restarts: list[str]) -> None:
    """Restart any service that exits, as Kubernetes would (a service may stop on purpose when it
    cannot reach Kafka at all)."""
    while True:
        await asyncio.sleep(0.5)
        for name, process in list(demo.processes.items()):
            if process.poll() is not None:
                restarts.append(name)
                demo.restart(name)


def tables_closed(metrics_port: int) -> float:
    """The gateway's own count of tables with progressive betting closed (its /metrics)."""
    url = f"http://127.0.0.1:{metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=2) as answer:
        for line in answer.read().decode().splitlines():
            if line.startswith("jackpot_gateway_tables_closed "):
                return float(line.split()[1])
    return 0.0


async def stop_cluster(demo: Demo, seconds: float) -> dict[str, float]:
    """Fault 3: every broker down for ``seconds``; how fast the floor closes and comes back."""
    stopped = time.monotonic()  # from the moment the brokers start going away
    await asyncio.to_thread(subprocess.run, [str(KAFKA_SH), "cluster-down"], check=True)
    closed_after = None
    while time.monotonic() - stopped < seconds:
        if closed_after is None and await asyncio.to_thread(tables_closed, METRICS["gateway-a"]):
            closed_after = time.monotonic() - stopped
        await asyncio.sleep(0.5)
    await asyncio.to_thread(subprocess.run, [str(KAFKA_SH), "cluster-up"], check=True)
    restarted = time.monotonic()
    await wait_progressive_open(demo, within_seconds=180)
    return {
        "closed_after_seconds": round(closed_after or -1, 2),
        "recovery_after_restart_seconds": round(time.monotonic() - restarted, 2),
    }


async def play_main_floor(
    args: argparse.Namespace, run_id: str, wanted: set[int]
) -> dict[str, Any]:
    """Faults 1 to 6 on one floor; the books of that floor."""
    rng = random.Random(args.seed)
    if args.cluster:
        await asyncio.to_thread(subprocess.run, [str(KAFKA_SH), "cluster-up"], check=True)
        os.environ["KAFKA_BOOTSTRAP_SERVERS"] = CLUSTER
    demo = Demo(args.tables, REPO / ".run" / "chaos" / run_id, run_id, 3 if args.cluster else 1)
    demo.start_kafka()
    await demo.create_topics()
    demo.start_services()
    faults: dict[str, list[float]] = {"pot_kill_9": [], "gateway_kill_9": [], "payout_kill_9": []}
    faults["display_kill_9"] = []
    faults["broker_kill_9"] = []
    outage: dict[str, float] = {}
    device_fault_rates = DeviceFaultRates.every_kind(args.device_faults if 5 in wanted else 0)
    try:
        await demo.wait_healthy()
        await demo.create_groups()
        await wait_progressive_open(demo)
        config = sim_config(demo, args.rig_rate, args.rounds_per_minute)
        config.device_faults = device_fault_rates
        floor = Floor(config)
        playing = asyncio.create_task(floor.run())
        started = time.monotonic()
        for _ in range(args.pot_kills if 1 in wanted else 0):
            faults["pot_kill_9"].append(await inject(demo, "pot", rng, (1.0, 4.0)))
        if 4 in wanted:
            faults["gateway_kill_9"].append(await inject(demo, "gateway-a", rng, (1.0, 3.0)))
        if 6 in wanted:
            faults["payout_kill_9"].append(await inject(demo, "payout", rng, (1.0, 3.0)))
            faults["display_kill_9"].append(await inject(demo, "display", rng, (1.0, 3.0)))
        if 2 in wanted:
            for node in (1, 2):
                faults["broker_kill_9"].append(await kill_broker(demo, node, rng))
        if 3 in wanted:
            restarts: list[str] = []
            supervisor = asyncio.create_task(supervise(demo, restarts))
            try:
                outage = await stop_cluster(demo, args.outage_seconds)
            finally:  # never restart services behind the teardown's back
                supervisor.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await supervisor
            outage["services_restarted"] = len(restarts)
        # play on after the last fault, and long enough for the device faults to show
        played = time.monotonic() - started
        await asyncio.sleep(max(args.settle_seconds, args.min_play_seconds - played))
        floor.stop()
        stats = await playing
        await asyncio.sleep(3)  # let the terminals confirm what the payout service re-sends
        books = await judge(demo, stats)
        result: dict[str, Any] = {
            "faults": {
                name: {
                    "count": len(times),
                    "recovery_seconds": [round(t, 2) for t in times],
                    "recovery_max_seconds": round(max(times), 2) if times else None,
                }
                for name, times in faults.items()
            },
            "cluster_outage": outage,
            **books,
        }
        if device_fault_rates.any:
            result["device_faults"] = judge_device_faults(args.device_faults, stats)
        return result
    finally:
        demo.stop_services()
        if args.cluster:
            await asyncio.to_thread(subprocess.run, [str(KAFKA_SH), "cluster-down"], check=False)


def judge_device_faults(rate: float, stats: FloorStats) -> dict[str, Any]:
    """Fault 5: every copy answered duplicate, every early event refused out of order, and some
    of each kind injected (the books of the floor judge that nothing was counted twice)."""
    figures = stats.device_faults.report()
    passed = (
        figures["events_delayed"] > 0
        and 0 < figures["duplicates_answered"] == figures["duplicates_sent"]
        and 0 < figures["reorders_refused_out_of_order"] == figures["reorders_injected"]
        and figures["reorders_refused_then_accepted"] > 0
    )
    return {"rate": rate, **figures, "status": "passed" if passed else "failed"}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    run_id = uuid.uuid4().hex[:8]
    wanted = wanted_faults(args)
    result: dict[str, Any] = {"run": run_id, "faults_requested": sorted(wanted)}
    if wanted & {1, 2, 3, 4, 5, 6}:
        result.update(await play_main_floor(args, run_id, wanted))
    if 7 in wanted:
        result["site_cutoff"] = await run_site_cutoff(
            run_id,
            args.tables,
            args.site_cutoff,
            args.rounds_per_minute,
            args.rig_rate,
            args.settle_seconds,
        )
    statuses = {
        name: result[name]["status"] for name in ("device_faults", "site_cutoff") if name in result
    }
    result["skipped"] = {
        name: status.removeprefix("skipped: ")
        for name, status in statuses.items()
        if status.startswith("skipped")
    }
    result["ok"] = result.get("books_ok", True) and "failed" not in statuses.values()
    return result


def wanted_faults(args: argparse.Namespace) -> set[int]:
    wanted = {int(n) for n in args.faults.split(",")} if args.faults else {1, 4, 5, 6, 7}
    if args.cluster and not args.faults:
        wanted |= {2, 3}
    if wanted & {2, 3} and not args.cluster:
        raise SystemExit("faults 2 and 3 need --cluster")
    if args.device_faults <= 0:
        wanted.discard(5)
    if args.site_cutoff <= 0:
        wanted.discard(7)
    return wanted


def print_summary(result: dict[str, Any], out: Path) -> None:
    for name, fault in result.get("faults", {}).items():
        if fault["count"]:
            print(f"{name:16} x{fault['count']:<3} recovery max {fault['recovery_max_seconds']} s")
    if "device_faults" in result:
        f = result["device_faults"]
        print(
            f"device faults    rate {f['rate']}: events delayed {f['events_delayed']}, "
            f"duplicates answered {f['duplicates_answered']}/{f['duplicates_sent']}, "
            f"reorders refused then accepted {f['reorders_refused_then_accepted']}/"
            f"{f['reorders_injected']} -> {f['status'].upper()}"
        )
    if "rounds" in result:
        print(
            f"rounds {result['rounds']}, accepted {result['bets_accepted']}, collected "
            f"{result['collected']}, lost {result['lost']}, duplicated {result['duplicated']}, "
            f"duplicate payouts {result['duplicate_payouts']}, audit "
            f"{'OK' if result['audit_ok'] else 'FAILED'}"
        )
        chain = result["audit_chain"]
        print(
            f"audit chain      {chain['entries']} entries in {chain['chains']} chains: "
            f"{'OK' if chain['ok'] else 'TAMPERED: ' + str(chain['first_break'])}"
        )
    site = result.get("site_cutoff")
    if site and not site["status"].startswith("skipped"):
        print(
            f"site cut-off     {site['cut_seconds']:g} s: tables closed after "
            f"{site['closed_after_seconds']} s (heartbeat timeout "
            f"{site['heartbeat_timeout_seconds']:g} s), probe bet {site['probe_bet_during_cut']}, "
            f"other site rounds during the cut {site['other_site_rounds_during_cut']}; after the "
            f"restore reopened in {site['reopened_after_restore_seconds']} s, spool delivered in "
            f"{site['spool_delivered_after_restore_seconds']} s"
        )
        print(
            f"site cut-off     rounds {site['rounds']}, voided {site['rounds_voided']}, accepted "
            f"{site['bets_accepted']}, collected {site['collected']}, lost {site['lost']}, "
            f"duplicated {site['duplicated']}, duplicate payouts {site['duplicate_payouts']}, "
            f"audit {'OK' if site['audit_ok'] else 'FAILED'} -> {site['status'].upper()}"
        )
    elif site:
        print(f"site cut-off     SKIPPED: {result['skipped']['site_cutoff']}")
    verdict = "OK" if result["ok"] else "FAILED"
    if result["skipped"]:
        verdict += f" (not run, so not passed: {', '.join(result['skipped'])})"
    print(f"{verdict} -> {out / 'report.json'}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--pot-kills", type=int, default=20)
    parser.add_argument("--tables", type=int, default=20)
    parser.add_argument("--rounds-per-minute", type=float, default=60)
    parser.add_argument("--rig-rate", type=float, default=0.05)
    parser.add_argument("--settle-seconds", type=float, default=5)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--out", default="build/chaos")
    parser.add_argument(
        "--cluster", action="store_true", help="run on the local 3-broker cluster and kill brokers"
    )
    parser.add_argument("--outage-seconds", type=float, default=30, help="whole-cluster stop")
    parser.add_argument(
        "--device-faults",
        type=float,
        default=0.05,
        metavar="RATE",
        help="fault 5: chance per device event of a duplicate, of a delay and of a reorder",
    )
    parser.add_argument(
        "--site-cutoff",
        type=float,
        default=20,
        metavar="SECONDS",
        help="fault 7: how long the site's WAN link stays cut (0 skips the fault)",
    )
    parser.add_argument(
        "--faults", default="", help="comma-separated fault numbers to run (default 1,4,5,6,7)"
    )
    parser.add_argument(
        "--min-play-seconds", type=float, default=20, help="the main floor plays at least this"
    )
    args = parser.parse_args()
    result = asyncio.run(run(args))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(result, indent=2) + "\n")
    print_summary(result, out)
    raise SystemExit(0 if result["ok"] else 1)


if __name__ == "__main__":
    main()
