"""The load test: the real floor at rising rates until p99 lock-to-sign latency passes a limit.

    python -m loadtest.run [--tables 40] [--start 30] [--factor 1.6] [--step-seconds 20]
                           [--limit-ms 250] [--max-steps 8] [--out build/loadtest]
                           [--device-protocol round|per-event]
                           [--studio-tables 0] [--studio-players 2000]
                           [--studio-round-seconds 20] [--studio-rig-rate 0.1]
                           [--studio-decision-seconds 0]

Starts Kafka (unless KAFKA_BOOTSTRAP_SERVERS is set) and every service as in `jackpot demo`, then
plays steps of `--step-seconds` with every table at `rate` rounds per minute, multiplying the rate
by `--factor` after each step, until the p99 from a dealer's lock to the sign showing the new
amount passes `--limit-ms` (or the steps run out). Writes `report.json` (per step: rounds/s,
device events/s, rejects by reason, latency percentiles; a `timeline` sampled once a second) and
`report.html` (`loadtest.report`: a summary table, charts over time and per step), and ends
with the accounting check of the whole run: the bets the devices were told were accepted equal
what the ledger collected.

`--studio-tables N` adds N studio tables of `--studio-players` online players each (rules O1-O9)
to the land tables' `scl-poker` group, played by the simulated operator's platform (a round every
20 s, its bets in chunks of 2,000) with the reference wallet paying their prizes: the land tables'
lock-to-sign is then measured while studio rounds are collected and split beside them (run it
with and without to compare), and each step reports the studio lock's latency (``studio_lock``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import uuid
from pathlib import Path
from typing import Any

from jackpot.sim.floor_stats import FloorStats
from jackpot.sim.hops import HOPS_ORDER
from jackpot.tools.demo_floor import (
    REPO,
    Demo,
    sim_config,
    wait_progressive_open,
)
from jackpot.tools.demo_report import report
from jackpot.tools.demo_studio import add_studios
from jackpot.tools.demo_tables import POKER_GROUP, studio_tables
from loadtest.cost import CostMeter, service_pids
from loadtest.multifloor import MultiFloor, simulator_ceiling
from loadtest.report import render
from loadtest.timeline import Timeline


def _write(out: Path, summary: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "report.html").write_text(render(summary))


async def run(args: argparse.Namespace) -> int:
    run_id = uuid.uuid4().hex[:8]
    demo = Demo(
        args.tables, REPO / ".run" / "loadtest" / run_id, run_id, mutual_tls=not args.plaintext
    )
    studios = studio_tables(
        args.studio_tables,
        args.studio_players,
        POKER_GROUP,
        args.studio_round_seconds,
        args.studio_rig_rate,
        args.studio_decision_seconds,
    )
    add_studios(demo, studios)
    out = Path(args.out)
    demo.start_kafka()
    await demo.create_topics()
    demo.start_services()
    steps: list[dict[str, Any]] = []
    total = FloorStats()
    try:
        await demo.wait_healthy()
        await demo.create_groups()
        await wait_progressive_open(demo)
        config = sim_config(demo, args.rig_rate, args.start, args.device_protocol)
        ceiling = await simulator_ceiling(config, args.sim_processes)
        print(f"simulator ceiling (null gateway): {ceiling['rounds_per_second']:,.1f} rounds/s")
        rate = args.start
        timeline = Timeline(demo.metrics_ports)
        for _ in range(args.max_steps):
            floor = MultiFloor(
                sim_config(demo, args.rig_rate, rate, args.device_protocol), args.sim_processes
            )
            meter = CostMeter(service_pids(demo.processes, demo.bootstrap))
            async with timeline.following(len(steps) + 1, floor.lock_to_sign):
                stats = (await floor.run(args.step_seconds)).report()
            stats["cost"] = meter.report(stats["rounds"])
            total.rounds += stats["rounds"]
            total.bets_accepted += stats["bets_accepted"]
            step = {"rounds_per_minute_per_table": round(rate, 1), **stats}
            steps.append(step)
            p99 = stats["latency"].get("lock_to_sign", {}).get("p99_ms", 0.0)
            print(
                f"step {len(steps)}: {rate:7.1f} rpm/table -> {stats['rounds_per_second']:7.1f} "
                f"rounds/s, {stats['device_events_per_second']:8.1f} events/s, p99 lock-to-sign "
                f"{p99:7.1f} ms, rejects {sum(stats['rejects'].values())}"
            )
            if p99 > args.limit_ms:
                break
            rate *= args.factor
        final = await report(demo, total)
        sustainable = [
            s
            for s in steps
            if s["latency"].get("lock_to_sign", {}).get("p99_ms", 1e9) <= args.limit_ms
        ]
        summary = {
            "mutual_tls": demo.mutual_tls,
            "studio_tables": args.studio_tables,
            "studio_players": args.studio_players if args.studio_tables else 0,
            "device_protocol": args.device_protocol,
            "limit_p99_ms": args.limit_ms,
            "highest_sustainable_rounds_per_second": max(
                (s["rounds_per_second"] for s in sustainable), default=0
            ),
            "hops_order": list(HOPS_ORDER),
            "simulator_ceiling": ceiling,
            "steps": steps,
            "accounting": {
                k: final[k]
                for k in ("bets_accepted", "collected", "lost", "duplicated", "audit_ok")
            },
            "timeline": timeline.samples,
        }
        await asyncio.to_thread(_write, out, summary)
        print(
            f"highest sustainable: {summary['highest_sustainable_rounds_per_second']} rounds/s "
            f"(p99 lock-to-sign <= {args.limit_ms} ms); accounting {summary['accounting']}; "
            f"report {out / 'report.json'}, {out / 'report.html'}"
        )
        ok = final["audit_ok"] and final["lost"] == 0 and final["duplicated"] == 0
        return 0 if ok else 1
    finally:
        demo.stop_services()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--tables", type=int, default=40)
    parser.add_argument("--start", type=float, default=30.0, help="rounds per minute per table")
    parser.add_argument("--factor", type=float, default=1.6)
    parser.add_argument("--step-seconds", type=float, default=20.0)
    parser.add_argument("--limit-ms", type=float, default=250.0)
    parser.add_argument("--max-steps", type=int, default=8)
    parser.add_argument("--rig-rate", type=float, default=0.01)
    parser.add_argument(
        "--device-protocol",
        choices=("round", "per-event"),
        default="round",
        help="the device protocol's form the simulated controllers speak (issue 26)",
    )
    parser.add_argument(
        "--studio-tables",
        type=int,
        default=0,
        help="studio tables beside the land tables, in their group (O6; default none)",
    )
    parser.add_argument(
        "--studio-players",
        type=int,
        default=2_000,
        help="online players of each studio table, one bet each per round (default 2,000)",
    )
    parser.add_argument(
        "--studio-round-seconds",
        type=float,
        default=20.0,
        help="a studio round starts this often (default 20 s)",
    )
    parser.add_argument(
        "--studio-rig-rate",
        type=float,
        default=0.1,
        help="share of studio rounds dealt a made hand, won by every bet (default 0.1)",
    )
    parser.add_argument(
        "--studio-decision-seconds",
        type=float,
        default=0.0,
        help="a studio round stays locked this long while its players decide, before the folds "
        "and the shared hand (default 0: at once; a real studio takes 15-30 s)",
    )
    parser.add_argument("--out", default="build/loadtest")
    parser.add_argument(
        "--sim-processes",
        type=int,
        default=min(2, os.cpu_count() or 1),
        help="processes the simulated floor is split over (its ceiling is measured first)",
    )
    parser.add_argument(
        "--plaintext",
        action="store_true",
        help="gRPC without mutual TLS (development roles), to measure what TLS costs",
    )
    raise SystemExit(asyncio.run(run(parser.parse_args())))


if __name__ == "__main__":
    main()
