"""The pot service's Prometheus metrics (no per-player labels, ever).

One :class:`PotMetrics` per service instance, registered in the given registry: ``main`` uses the
default registry behind ``/metrics``; tests and benchmarks pass their own so several instances can
live in one process.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from jackpot.domain.money import floor_pesos

TRANSACTION_BUCKETS = (0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)


class PotMetrics:
    """Events applied, ignored and refused; transaction latency; balances; consumer lag."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        registry = registry if registry is not None else CollectorRegistry()
        self.registry = registry
        self.events_applied = Counter(
            "jackpot_events_applied_total",
            "Table events and admin commands applied to a pot group",
            registry=registry,
        )
        self.events_ignored = Counter(
            "jackpot_events_ignored_total",
            "Events ignored because they were applied before",
            ["reason"],
            registry=registry,
        )
        self.events_rejected = Counter(
            "jackpot_events_rejected_total",
            "Events refused and written to the dead-letter topic",
            ["reason"],
            registry=registry,
        )
        self.transaction_seconds = Histogram(
            "jackpot_transaction_seconds",
            "Duration of one Kafka transaction: produce outputs, send offsets, commit; kind is "
            "batch (table events) or heartbeat (rule D5)",
            ["kind"],
            buckets=TRANSACTION_BUCKETS,
            registry=registry,
        )
        self.transactions_aborted = Counter(
            "jackpot_transactions_aborted_total",
            "Transactions aborted and retried after a failure",
            registry=registry,
        )
        self.pot_balance = Gauge(
            "jackpot_pot_balance_pesos",
            "A pot's balance, floored to whole pesos",
            ["pot_group", "pot"],
            registry=registry,
        )
        self.consumer_lag = Gauge(
            "jackpot_consumer_lag_records",
            "Committed table events not yet processed, per owned input partition",
            ["partition"],
            registry=registry,
        )
        self.partitions_owned = Gauge(
            "jackpot_partitions_owned",
            "Input partitions this instance owns",
            registry=registry,
        )
        self.partitions_halted = Gauge(
            "jackpot_partitions_halted",
            "Owned input partitions halted (fenced by another instance, or a processing bug): "
            "their pot groups get no heartbeat, so their tables fail closed (D5)",
            registry=registry,
        )

    def record_outcomes(
        self, applied: int, ignored: Mapping[str, int], rejected: Mapping[str, int]
    ) -> None:
        if applied:
            self.events_applied.inc(applied)
        for reason, count in ignored.items():
            self.events_ignored.labels(reason=reason).inc(count)
        for reason, count in rejected.items():
            self.events_rejected.labels(reason=reason).inc(count)

    def observe_transaction(self, seconds: float, kind: str) -> None:
        self.transaction_seconds.labels(kind=kind).observe(seconds)

    def set_balances(self, pot_group: str, balances: Mapping[str, int]) -> None:
        """Balances in minor units; the gauge shows whole pesos (observation, not accounting)."""
        for pot, minor in balances.items():
            self.pot_balance.labels(pot_group=pot_group, pot=pot).set(floor_pesos(minor))

    def forget_group(self, pot_group: str, pots: Iterable[str]) -> None:
        for pot in pots:
            with contextlib.suppress(KeyError):
                self.pot_balance.remove(pot_group, pot)

    def set_lag(self, partition: int, records: int) -> None:
        self.consumer_lag.labels(partition=str(partition)).set(max(records, 0))

    def forget_partition(self, partition: int) -> None:
        with contextlib.suppress(KeyError):
            self.consumer_lag.remove(str(partition))
