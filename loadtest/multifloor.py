"""A simulator that is not the bottleneck: the floor split over several processes.

One Python process spends most of a core on gRPC round trips (about eleven per round), so the
load test drives its tables from ``processes`` processes, each playing a share of the tables
(its own dealer terminals and its own sign watcher, which times the locks it made); the parent
merges their statistics into one :class:`~jackpot.sim.floor.FloorStats` (latency samples, the hop
histograms, the books). :class:`MultiFloor` has the interface of :class:`~jackpot.sim.floor.Floor`.

The simulator's own ceiling is measured against :mod:`loadtest.null_gateway`, a device endpoint
that accepts every event at once: :func:`simulator_ceiling` is the rounds per second the same
tables reach there with no pause between rounds. A pipeline figure counts only while that
ceiling is at least twice the rate it reached (``make bench``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import multiprocessing
import time
from collections import Counter
from typing import Any

from jackpot.sim.floor import Floor, FloorConfig, FloorStats
from loadtest.null_gateway import NullGateway

COUNTED = ("rounds", "device_events", "bets_accepted", "rounds_voided", "payouts_received")
COUNTED += ("payouts_paid", "approvals", "winning_results", "cpu_seconds")


def shares(config: FloorConfig, processes: int) -> list[FloorConfig]:
    """The tables dealt round-robin over ``processes`` configs; only the first approves."""
    count = max(1, min(processes, len(config.tables)))
    out = []
    for n in range(count):
        seed = None if config.seed is None else config.seed + 1000 * n
        out.append(dataclasses.replace(config, tables=config.tables[n::count], seed=seed))
    return out


def _play(config: FloorConfig, duration: float, first: bool) -> dict[str, Any]:
    """One process's share (in that process): its statistics, in picklable form."""
    floor = Floor(config)
    floor.approves = first
    cpu = time.process_time()
    stats = asyncio.run(floor.run(duration))
    stats.cpu_seconds = time.process_time() - cpu
    return portable(stats)


def _rate(part: dict[str, Any], name: str) -> float:
    return float(part[name]) / max(part["elapsed"], 1e-9)


def portable(stats: FloorStats) -> dict[str, Any]:
    out: dict[str, Any] = {name: getattr(stats, name) for name in COUNTED}
    out["bets_accepted_by_group"] = dict(stats.bets_accepted_by_group)
    out["bets_by_round"] = stats.bets_by_round
    out["rejects"] = dict(stats.rejects)
    out["terminal_errors"] = dict(stats.terminal_errors)
    out["rounds_settled"] = dict(stats.rounds_settled)
    out["samples"] = stats.latencies.samples
    out["hops"] = stats.hops.encoded()
    out["elapsed"] = time.monotonic() - stats.started
    return out


def merge(into: FloorStats, part: dict[str, Any]) -> None:
    for name in COUNTED:
        setattr(into, name, getattr(into, name) + part[name])
    into.bets_accepted_by_group.update(part["bets_accepted_by_group"])
    into.bets_by_round.update(part["bets_by_round"])
    into.rejects.update(Counter(part["rejects"]))
    into.terminal_errors.update(Counter(part["terminal_errors"]))
    into.rounds_settled.update(Counter(part["rounds_settled"]))
    for name, values in part["samples"].items():
        into.latencies.samples.setdefault(name, []).extend(values)
    into.hops.merge(part["hops"])


class MultiFloor:
    """:class:`~jackpot.sim.floor.Floor` over ``processes`` processes (1: in this process)."""

    def __init__(self, config: FloorConfig, processes: int) -> None:
        self.configs = shares(config, processes)
        self.parts: list[dict[str, Any]] = []  # each process's statistics, once run

    async def run(self, duration: float) -> FloorStats:
        stats = FloorStats()
        self.parts = await self._parts(duration)
        # the report's rates are over the longest share's own play, not the processes' start-up
        stats.started = time.monotonic() - max(part["elapsed"] for part in self.parts)
        for part in self.parts:
            merge(stats, part)
        return stats

    async def _parts(self, duration: float) -> list[dict[str, Any]]:
        if len(self.configs) == 1:
            cpu = time.process_time()
            stats = await Floor(self.configs[0]).run(duration)
            stats.cpu_seconds = time.process_time() - cpu
            return [portable(stats)]
        context = multiprocessing.get_context("spawn")  # no gRPC state inherited from a fork
        with context.Pool(len(self.configs)) as pool:
            pending = [
                pool.apply_async(_play, (config, duration, n == 0))
                for n, config in enumerate(self.configs)
            ]
            return await asyncio.to_thread(lambda: [p.get(duration + 120) for p in pending])


async def simulator_ceiling(
    config: FloorConfig, processes: int, seconds: float = 8.0
) -> dict[str, Any]:
    """Rounds/s the simulator reaches against a gateway that accepts everything at once."""
    async with NullGateway() as null:
        tables = [dataclasses.replace(t, gateway=null.target) for t in config.tables]
        flat_out = dataclasses.replace(
            config,
            tables=tables,
            payout_target="",
            display_target="",
            rounds_per_minute=1e9,  # no pause between rounds
            pki_dir="",
            rig_rate=0.0,
        )
        floor = MultiFloor(flat_out, processes)
        await floor.run(seconds)
    return {  # each share over its own play time: the processes ran side by side
        "rounds_per_second": sum(_rate(part, "rounds") for part in floor.parts),
        "device_events_per_second": sum(_rate(part, "device_events") for part in floor.parts),
        "processes": len(floor.configs),
        "null_gateway_processes": null.processes,
        "seconds": seconds,
    }
