"""Prometheus exposition for a service (`/metrics` on its own port, started in `main`) and the
metrics every exactly-once processor exports."""

from __future__ import annotations

import contextlib

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

TRANSACTION_BUCKETS = (0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
GC_PAUSE_BUCKETS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)


def gc_pauses(registry: CollectorRegistry) -> Histogram:
    """Every service's garbage collections, timed by ``jackpot.platform.heap``."""
    return Histogram(
        "jackpot_gc_pause_seconds",
        "The event loop stopped by the cyclic garbage collector, per collection, by the "
        "generation collected (2: the full collection of everything not frozen)",
        ["generation"],
        buckets=GC_PAUSE_BUCKETS,
        registry=registry,
    )


def serve_metrics(port: int, host: str = "127.0.0.1") -> None:
    """Serve the default registry's metrics on http://host:port/metrics (port 0 disables)."""
    if port:
        start_http_server(port, addr=host)


class ProcessorMetrics:
    """Transactions, aborts, ownership and lag of one exactly-once processor (no per-player
    labels). The pot and the payout export the same names; their scrape job tells them apart."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        registry = registry if registry is not None else CollectorRegistry()
        self.transaction_seconds = Histogram(
            "jackpot_transaction_seconds",
            "Duration of one Kafka transaction: produce outputs, send offsets, commit; kind is "
            "batch (input records) or tick/change (no input: heartbeats, terminal transitions)",
            ["kind"],
            buckets=TRANSACTION_BUCKETS,
            registry=registry,
        )
        self.transactions_aborted = Counter(
            "jackpot_transactions_aborted_total",
            "Transactions aborted and retried after a failure",
            registry=registry,
        )
        self.consumer_lag = Gauge(
            "jackpot_consumer_lag_records",
            "Committed input records not yet processed, per owned input partition",
            ["partition"],
            registry=registry,
        )
        self.partitions_owned = Gauge(
            "jackpot_partitions_owned", "Input partitions this instance owns", registry=registry
        )
        self.partitions_halted = Gauge(
            "jackpot_partitions_halted",
            "Owned input partitions halted (fenced by another instance, or a processing bug): "
            "nothing of them is processed until the group takes them away",
            registry=registry,
        )

        self.partitions_recovering = Gauge(
            "jackpot_partitions_recovering",
            "Owned input partitions whose producer could not be replaced yet (the brokers "
            "unreachable): retried with a back-off, not served meanwhile",
            registry=registry,
        )
        self.takeovers_failed = Counter(
            "jackpot_takeovers_failed_total",
            "Attempts to take a partition over (at an assignment, or again after its producer "
            "failed) that the brokers did not let finish; each is retried",
            registry=registry,
        )
        self.group_consumers_replaced = Counter(
            "jackpot_group_consumers_replaced_total",
            "Group consumers replaced because aiokafka's group coordination had ended on an "
            "unexpected error: the instance gave up its partitions and joined the group anew",
            registry=registry,
        )
        self.writable = Gauge(
            "jackpot_processor_writable",
            "1 when every input partition the group gave this instance can write (none "
            "recovering, no takeover waiting to be retried, the group consumer not being "
            "replaced); 0 while the brokers are gone",
            registry=registry,
        )

    def set_lag(self, partition: int, records: int) -> None:
        self.consumer_lag.labels(partition=str(partition)).set(max(records, 0))

    def forget_partition(self, partition: int) -> None:
        with contextlib.suppress(KeyError):
            self.consumer_lag.remove(str(partition))
