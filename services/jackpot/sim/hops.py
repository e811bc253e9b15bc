"""The latency budget per hop: where a dealer's lock spends its time on the way to the signs.

Every lock with bets carries a :class:`jackpot.v1.common_pb2.LockTrace` through the pipeline: the
gateway stamps it when it accepts the device event, the Kafka record keeps the gateway producer's
timestamp, the pot stamps the start of the batch that applied it and the pot update it made, the
display stamps when it read that update and when it sent the sign state. The simulator adds the
two ends it sees itself (the device's send, the sign's arrival), all in wall-clock Unix
nanoseconds of one machine, so the hops of one lock telescope: they add up to that lock's
end-to-end time exactly, whatever the clock.

Hops, in path order (:data:`HOPS_ORDER`):

- ``device_to_gateway``: the device sends the lock -> the gateway accepts it (before its spool
  write);
- ``gateway_to_kafka``: the spool's group commit (fsync), the reply, the publisher's pick-up ->
  the producer takes the record (the Kafka timestamp);
- ``kafka_to_pot``: the broker acknowledging and the pot's fetch -> the pot starts the batch;
- ``pot_apply``: the batch is applied -> its pot update is made;
- ``pot_commit_to_display``: the pot's transaction commits and the display's read_committed
  consumer reads the update;
- ``display_to_sign``: the display's coalescing and the sign stream -> the sign has it.

Measurement error: the Kafka timestamp has millisecond precision, so ``gateway_to_kafka`` reads up
to 1 ms low and ``kafka_to_pot`` up to 1 ms high (their sum is exact); a negative reading is
counted as 0 (``clamped``). Percentiles come from HdrHistogram (3 significant digits, in
microseconds), mergeable across the simulator's processes.
"""

from __future__ import annotations

from typing import Any

from hdrh.histogram import HdrHistogram

from jackpot.v1 import common_pb2

HOPS_ORDER = (
    "device_to_gateway",
    "gateway_to_kafka",
    "kafka_to_pot",
    "pot_apply",
    "pot_commit_to_display",
    "display_to_sign",
)
END_TO_END = "traced_lock_to_sign"
HIGHEST_MICROS = 120_000_000  # two minutes: anything slower is a stall, recorded at the top


def _histogram() -> HdrHistogram:
    return HdrHistogram(1, HIGHEST_MICROS, 3)


class Hops:
    """One HdrHistogram per hop and one end to end, plus the exact sums that check them."""

    def __init__(self) -> None:
        self.histograms = {name: _histogram() for name in (*HOPS_ORDER, END_TO_END)}
        self.sum_micros = dict.fromkeys(self.histograms, 0)
        self.clamped = 0

    def record(self, trace: common_pb2.LockTrace, sent_ns: int, signed_ns: int) -> None:
        """One lock's hops, from its trace and the simulator's two ends."""
        stamps = (
            sent_ns,
            trace.gateway_accepted_unix_nanos,
            trace.kafka_unix_nanos,
            trace.pot_fetched_unix_nanos,
            trace.pot_applied_unix_nanos,
            trace.display_received_unix_nanos,
            trace.display_sent_unix_nanos or signed_ns,
            signed_ns,
        )
        if not all(stamps):
            return  # a service that does not stamp yet (mixed versions): not a measurement
        # display_sent -> signed is the stream itself: folded into display_to_sign
        bounds = (*stamps[:6], stamps[7])
        for name, start, end in zip(HOPS_ORDER, bounds, bounds[1:], strict=False):
            self._add(name, end - start)
        self._add(END_TO_END, signed_ns - sent_ns)

    def _add(self, name: str, nanos: int) -> None:
        if nanos < 0:
            self.clamped += 1
            nanos = 0
        micros = min(nanos // 1000, HIGHEST_MICROS)
        self.histograms[name].record_value(max(micros, 1))
        self.sum_micros[name] += micros

    def merge(self, other: dict[str, Any]) -> None:
        """Add another process's :meth:`encoded` hops."""
        for name, encoded in other["histograms"].items():
            self.histograms[name].add(HdrHistogram.decode(encoded))
        for name, total in other["sum_micros"].items():
            self.sum_micros[name] += total
        self.clamped += other["clamped"]

    def encoded(self) -> dict[str, Any]:
        return {
            "histograms": {n: h.encode().decode() for n, h in self.histograms.items()},
            "sum_micros": dict(self.sum_micros),
            "clamped": self.clamped,
        }

    def summary(self) -> dict[str, dict[str, float]]:
        """Per hop (and end to end): p50/p95/p99 in ms and the count (the report's ``hops``)."""
        out = {}
        for name in (*HOPS_ORDER, END_TO_END):
            histogram = self.histograms[name]
            out[name] = {
                "p50_ms": histogram.get_value_at_percentile(50) / 1000,
                "p95_ms": histogram.get_value_at_percentile(95) / 1000,
                "p99_ms": histogram.get_value_at_percentile(99) / 1000,
                "count": histogram.get_total_count(),
            }
        return out

    def check(self) -> dict[str, float]:
        """Mean of each hop summed against the mean end to end: they differ only by clamping
        and the 1 µs truncation per hop (stated as ``error_ms``)."""
        count = self.histograms[END_TO_END].get_total_count()
        if not count:
            return {"count": 0, "hops_mean_sum_ms": 0.0, "end_to_end_mean_ms": 0.0, "error_ms": 0}
        hops = sum(self.sum_micros[name] for name in HOPS_ORDER) / count / 1000
        whole = self.sum_micros[END_TO_END] / count / 1000
        return {
            "count": count,
            "hops_mean_sum_ms": round(hops, 3),
            "end_to_end_mean_ms": round(whole, 3),
            "error_ms": round(abs(whole - hops), 3),
            "clamped": self.clamped,
        }
