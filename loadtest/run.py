"""The load test: the real floor at rising rates until p99 lock-to-sign latency passes a limit.

    python -m loadtest.run [--tables 40] [--start 30] [--factor 1.6] [--step-seconds 20]
                           [--limit-ms 250] [--max-steps 8] [--out build/loadtest]

Starts Kafka (unless KAFKA_BOOTSTRAP_SERVERS is set) and every service as in `jackpot demo`, then
plays steps of `--step-seconds` with every table at `rate` rounds per minute, multiplying the rate
by `--factor` after each step, until the p99 from a dealer's lock to the sign showing the new
amount passes `--limit-ms` (or the steps run out). Writes `report.json` (per step: rounds/s,
device events/s, rejects by reason, latency percentiles) and `latency.html` (a plot), and ends
with the accounting check of the whole run: the bets the devices were told were accepted equal
what the ledger collected.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import uuid
from pathlib import Path
from typing import Any

from jackpot.tools.demo import REPO, Demo, report, sim_config, wait_progressive_open
from loadtest.cost import CostMeter, service_pids
from loadtest.floor import FloorStats
from loadtest.hops import HOPS_ORDER
from loadtest.multifloor import MultiFloor, simulator_ceiling


def plot(steps: list[dict[str, Any]]) -> str:
    """A self-contained HTML page: p50/p95/p99 lock-to-sign latency against achieved rounds/s."""
    width, height, pad = 760, 360, 50
    xs = [s["rounds_per_second"] for s in steps] or [1]
    series = {
        name: [s["latency"].get("lock_to_sign", {}).get(name, 0) for s in steps]
        for name in ("p50_ms", "p95_ms", "p99_ms")
    }
    top = max([max(v) for v in series.values()] + [300])
    right = max(xs) * 1.1 or 1

    def point(x: float, y: float) -> str:
        across = pad + x / right * (width - 2 * pad)
        up = height - pad - y / top * (height - 2 * pad)
        return f"{across:.1f},{up:.1f}"

    colours = {"p50_ms": "#2e7d32", "p95_ms": "#f9a825", "p99_ms": "#c62828"}
    lines = "".join(
        f'<polyline fill="none" stroke="{colours[n]}" stroke-width="2" points="'
        + " ".join(point(x, y) for x, y in zip(xs, ys, strict=True))
        + f'"/><text x="{width - pad + 4}" y="{point(xs[-1], ys[-1]).split(",")[1]}" '
        f'fill="{colours[n]}">{n[:3]}</text>'
        for n, ys in series.items()
    )
    limit_y = point(0, 250).split(",")[1]
    return f"""<!doctype html><meta charset="utf-8"><title>Lock-to-sign latency</title>
<h1 style="font-family:sans-serif">Lock to sign latency vs rounds per second</h1>
<svg width="{width}" height="{height}" style="font-family:sans-serif;font-size:12px">
<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="#000"/>
<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" stroke="#000"/>
<line x1="{pad}" y1="{limit_y}" x2="{width - pad}" y2="{limit_y}" stroke="#999"
 stroke-dasharray="4"/>
<text x="{pad + 4}" y="{float(limit_y) - 4}">250 ms</text>
<text x="{width / 2}" y="{height - 10}">rounds/s (achieved)</text>
<text x="4" y="{pad - 10}">ms (max {top:.0f})</text>{lines}</svg>
<pre>{json.dumps(steps, indent=1)}</pre>"""


def _write(out: Path, summary: dict[str, Any], html: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "latency.html").write_text(html)


async def run(args: argparse.Namespace) -> int:
    run_id = uuid.uuid4().hex[:8]
    demo = Demo(
        args.tables, REPO / ".run" / "loadtest" / run_id, run_id, mutual_tls=not args.plaintext
    )
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
        config = sim_config(demo, args.rig_rate, args.start)
        ceiling = await simulator_ceiling(config, args.sim_processes)
        print(f"simulator ceiling (null gateway): {ceiling['rounds_per_second']:,.1f} rounds/s")
        rate = args.start
        for _ in range(args.max_steps):
            floor = MultiFloor(sim_config(demo, args.rig_rate, rate), args.sim_processes)
            meter = CostMeter(service_pids(demo.processes, demo.bootstrap))
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
        }
        await asyncio.to_thread(_write, out, summary, plot(steps))
        print(
            f"highest sustainable: {summary['highest_sustainable_rounds_per_second']} rounds/s "
            f"(p99 lock-to-sign <= {args.limit_ms} ms); accounting {summary['accounting']}; "
            f"report {out / 'report.json'}, plot {out / 'latency.html'}"
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
