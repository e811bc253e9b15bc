"""What a simulated floor counts and times (:class:`FloorStats`): bets accepted and rounds dealt,
bet by bet, for the books; prizes received, paid and approved; latencies from a lock to the sign
and from a result to the terminal; device faults injected; the hops of every traced lock.
:mod:`jackpot.sim.floor` fills it in, the books (:mod:`jackpot.sim.books`) and the load tests read
it."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from jackpot.sim.device_faults import DeviceFaultCounts
from jackpot.sim.hops import Hops
from jackpot.sim.oracle import Dealt

RoundKey = tuple[str, str, str]  # (pot group, table, round)


@dataclass
class Latencies:
    samples: dict[str, list[float]] = field(default_factory=dict)

    def add(self, name: str, seconds: float) -> None:
        self.samples.setdefault(name, []).append(seconds)

    def summary(self) -> dict[str, dict[str, float]]:
        out = {}
        for name, values in self.samples.items():
            ordered = sorted(values)

            def pct(p: float, ordered: list[float] = ordered) -> float:
                return ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000

            out[name] = {
                "count": len(ordered),
                "p50_ms": round(pct(0.50), 2),
                "p95_ms": round(pct(0.95), 2),
                "p99_ms": round(pct(0.99), 2),
                "max_ms": round(ordered[-1] * 1000, 2),
            }
        return out


@dataclass
class FloorStats:
    rounds: int = 0
    # dealer terminal sessions that failed other than by a gRPC status, by exception type
    terminal_errors: Counter[str] = field(default_factory=Counter)
    device_events: int = 0
    bets_accepted: int = 0  # pesos the gateway acknowledged as collected at lock
    bets_accepted_by_group: Counter[str] = field(default_factory=Counter)
    # per (pot group, table, round) locked: the pesos acknowledged per seat (the books' judge)
    bets_by_round: dict[RoundKey, dict[int, int]] = field(default_factory=dict)
    # per (pot group, table, round) whose results were sent: what the round oracle needs
    dealt: dict[RoundKey, Dealt] = field(default_factory=dict)
    rejects: Counter[str] = field(default_factory=Counter)
    rounds_settled: Counter[str] = field(default_factory=Counter)  # per table: results accepted
    rounds_voided: int = 0  # rounds a controller voided when it resynchronised
    # per table: (time.monotonic(), open) for every progressive status its gateway pushed
    progressive_changes: dict[str, list[tuple[float, bool]]] = field(default_factory=dict)
    # per table: (time.monotonic() the sign showed it, seconds) of each lock the sign traced as
    # reflected (display_pb2.SignState.lock_traces): each table's own lock-to-sign
    lock_to_sign_by_table: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    device_faults: DeviceFaultCounts = field(default_factory=DeviceFaultCounts)
    payouts_received: int = 0
    # per table: (time.monotonic(), stream number, award ids listed open) for every message its
    # dealer terminal received; the stream number counts the terminal's connections from 1
    terminal_views: dict[str, list[tuple[float, int, frozenset[str]]]] = field(default_factory=dict)
    payouts_paid: int = 0
    approvals: int = 0
    winning_results: int = 0
    latencies: Latencies = field(default_factory=Latencies)
    hops: Hops = field(default_factory=Hops)  # the latency budget of every traced lock
    cpu_seconds: float = 0.0  # the simulator's own CPU (user + system), when measured
    started: float = field(default_factory=time.monotonic)

    def report(self) -> dict[str, Any]:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        return {
            "elapsed_seconds": round(elapsed, 2),
            "rounds": self.rounds,
            "rounds_per_second": round(self.rounds / elapsed, 2),
            "device_events": self.device_events,
            "device_events_per_second": round(self.device_events / elapsed, 2),
            "bets_accepted": self.bets_accepted,
            "bets_accepted_by_group": dict(self.bets_accepted_by_group),
            "rejects": dict(self.rejects),
            "terminal_errors": dict(self.terminal_errors),
            "rounds_voided": self.rounds_voided,
            "device_faults": self.device_faults.report(),
            "winning_results": self.winning_results,
            "payouts_received": self.payouts_received,
            "payouts_paid": self.payouts_paid,
            "approvals": self.approvals,
            "latency": self.latencies.summary(),
            "hops": self.hops.summary(),
            "hops_check": self.hops.check(),
            "simulator_cpu_ms_per_1000_rounds": round(
                1e6 * self.cpu_seconds / max(self.rounds, 1), 1
            ),
        }
