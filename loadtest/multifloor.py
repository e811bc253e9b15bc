"""A simulator that is not the bottleneck: the floor split over several processes.

One Python process spends most of a core on gRPC round trips (about eleven per round), so the
load test drives its tables from ``processes`` processes, each playing a share of the tables
(its own dealer terminals and its own sign watcher, which times the locks it made); the parent
merges their statistics into one :class:`~jackpot.sim.floor.FloorStats` (latency samples, the hop
histograms, the books). :class:`MultiFloor` has the interface of :class:`~jackpot.sim.floor.Floor`.
While they play, each process also sends the lock-to-sign samples it has taken every
:data:`SEND_SECONDS`, stamped with ``time.monotonic()`` (one clock for every process of the
machine), so :meth:`MultiFloor.lock_to_sign` can follow the floor second by second
(:mod:`loadtest.timeline`); the merged statistics have them all once the step is over.

The simulator's own ceiling is measured against :mod:`loadtest.null_gateway`, a device endpoint
that accepts every event at once: :func:`simulator_ceiling` is the rounds per second the same
tables reach there with no pause between rounds. A pipeline figure counts only while that
ceiling is at least twice the rate it reached (``make bench``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import multiprocessing
import queue
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from jackpot.sim.floor import Floor, FloorConfig
from jackpot.sim.floor_stats import FloorStats
from loadtest.null_gateway import NullGateway

COUNTED = ("rounds", "device_events", "bets_accepted", "rounds_voided", "payouts_received")
COUNTED += ("payouts_paid", "approvals", "winning_results", "cpu_seconds")
# How often a simulator process sends its new lock-to-sign samples: the error of their stamp.
SEND_SECONDS = 0.25

# (time.monotonic() when the simulator sent it, lock-to-sign in seconds)
Stamped = tuple[float, float]
_OUTBOX: Any = None  # in a simulator process: the queue its lock-to-sign samples go to


def shares(config: FloorConfig, processes: int) -> list[FloorConfig]:
    """The land tables dealt round-robin over ``processes`` configs (only the first approves);
    the studio tables in one more of their own. A studio's platform builds and sends a round's
    10,000 bets at once: in a process with land tables it held their event loop, whose clock
    times their lock-to-sign, and the harness's own work read as the system's latency."""
    if not config.tables:
        return [config]
    count = max(1, min(processes, len(config.tables)))
    out = []
    for n in range(count):
        seed = None if config.seed is None else config.seed + 1000 * n
        out.append(
            dataclasses.replace(config, tables=config.tables[n::count], seed=seed, studios=[])
        )
    if config.studios:
        seed = None if config.seed is None else config.seed + 1000 * count
        out.append(dataclasses.replace(config, tables=[], seed=seed, studios=config.studios))
    return out


def _use_outbox(outbox: Any) -> None:
    global _OUTBOX
    _OUTBOX = outbox


def _play(config: FloorConfig, duration: float, first: bool) -> dict[str, Any]:
    """One process's share (in that process): its statistics, in picklable form."""
    floor = Floor(config)
    floor.approves = first
    return portable(asyncio.run(_play_sending(floor, duration, _OUTBOX.put)))


async def _play_sending(
    floor: Floor, duration: float, send: Callable[[list[Stamped]], None]
) -> FloorStats:
    """``floor`` played for ``duration``, its lock-to-sign samples sent as they are taken."""
    sender = asyncio.create_task(_send_locks(floor.stats, send))
    cpu = time.process_time()
    try:
        stats = await floor.run(duration)
    finally:
        sender.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sender
    stats.cpu_seconds = time.process_time() - cpu
    return stats


async def _send_locks(stats: FloorStats, send: Callable[[list[Stamped]], None]) -> None:
    """Every :data:`SEND_SECONDS` until cancelled, then once more: the samples taken since."""
    sent = 0
    try:
        while True:
            await asyncio.sleep(SEND_SECONDS)
            sent = _send_new(stats, send, sent)
    finally:
        _send_new(stats, send, sent)


def _send_new(stats: FloorStats, send: Callable[[list[Stamped]], None], sent: int) -> int:
    values = stats.latencies.samples.get("lock_to_sign", [])
    if len(values) > sent:
        now = time.monotonic()
        send([(now, seconds) for seconds in values[sent:]])
    return len(values)


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
        self._received: list[Stamped] = []
        self._inbox: Any = None

    async def run(self, duration: float) -> FloorStats:
        stats = FloorStats()
        self.parts = await self._parts(duration)
        # the report's rates are over the longest share's own play, not the processes' start-up
        stats.started = time.monotonic() - max(part["elapsed"] for part in self.parts)
        for part in self.parts:
            merge(stats, part)
        return stats

    def lock_to_sign(self) -> list[Stamped]:
        """The lock-to-sign samples the processes sent since the last call, stamped."""
        received, self._received = self._received, []
        while self._inbox is not None:
            try:
                received.extend(self._inbox.get_nowait())
            except queue.Empty:
                break
        return received

    async def _parts(self, duration: float) -> list[dict[str, Any]]:
        if len(self.configs) == 1:
            floor = Floor(self.configs[0])
            return [portable(await _play_sending(floor, duration, self._received.extend))]
        context = multiprocessing.get_context("spawn")  # no gRPC state inherited from a fork
        self._inbox = context.Queue()
        pool = context.Pool(len(self.configs), initializer=_use_outbox, initargs=(self._inbox,))
        with pool:
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
