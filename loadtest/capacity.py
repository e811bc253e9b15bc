"""The capacity table of docs/capacity.md from a `make bench` run's ``build/bench.json``.

    python -m loadtest.capacity [build/bench.json] [--rounds-per-table-minute 2]

Per service: the CPU milliseconds per round measured at the bench's counted rate
(``pipeline.cost``), turned into cores per 1,000 tables at ``--rounds-per-table-minute`` rounds a
minute per table (2: a busy hour; a Caribbean or Draw round takes a minute or more, a blackjack
round about 30 s), and the resident memory measured. The gateways' figures are summed (every
round passes exactly one gateway); the broker's is an upper bound (its process is shared).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

SERVICES = ("gateway", "pot", "payout", "display", "kafka")


def per_service(cost: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Cost per round and memory per service; the gateways summed (CPU) and the largest (RSS)."""
    out: dict[str, dict[str, float]] = {}
    for name in SERVICES:
        parts = [c for process, c in cost.items() if process.split("-")[0] == name]
        if parts:
            out[name] = {
                "cpu_ms_per_round": sum(p["cpu_ms_per_1000_rounds"] for p in parts) / 1000,
                "rss_mb": max(p["rss_mb"] for p in parts),
                "processes": len(parts),
            }
    return out


def table(bench: dict[str, Any], rounds_per_table_minute: float) -> str:
    pipeline = bench["pipeline"]
    rounds_per_second = 1000 * rounds_per_table_minute / 60
    lines = [
        f"Measured at {pipeline['rounds_per_second']:.1f} rounds/s (the bench's counted rate); "
        f"1,000 tables at {rounds_per_table_minute:g} rounds a minute each = "
        f"{rounds_per_second:.1f} rounds/s.",
        "",
        "| service | CPU ms per round | cores per 1,000 tables | resident MB (per process) |",
        "|---|---:|---:|---:|",
    ]
    for name, c in per_service(pipeline["cost"]).items():
        cores = c["cpu_ms_per_round"] * rounds_per_second / 1000
        lines.append(f"| {name} | {c['cpu_ms_per_round']:.2f} | {cores:.3f} | {c['rss_mb']:.0f} |")
    simulator = pipeline.get("simulator_cpu_ms_per_1000_rounds")
    if simulator:
        lines.append(f"| (the simulator, not deployed) | {simulator / 1000:.2f} | | |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("bench", nargs="?", default="build/bench.json")
    parser.add_argument("--rounds-per-table-minute", type=float, default=2.0)
    args = parser.parse_args()
    bench = json.loads(Path(args.bench).read_text())
    print(table(bench, args.rounds_per_table_minute))


if __name__ == "__main__":
    main()
