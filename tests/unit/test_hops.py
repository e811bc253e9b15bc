"""The load test's latency budget: hops telescope to the end-to-end time, merge across processes,
and the simulator's tables are dealt over its processes without loss."""

from __future__ import annotations

from loadtest.multifloor import merge, portable, shares

from jackpot.domain.cards import Game
from jackpot.sim.floor import FloorConfig, SimTable
from jackpot.sim.floor_stats import FloorStats
from jackpot.sim.hops import END_TO_END, HOPS_ORDER, Hops
from jackpot.sim.studio_platform import SimStudio
from jackpot.v1 import common_pb2

MS = 1_000_000  # nanoseconds


def trace(start: int, steps_ms: list[float]) -> tuple[common_pb2.LockTrace, int]:
    """A trace whose stamps follow ``steps_ms`` after ``start``; the sign's arrival time."""
    stamps = [start]
    for step in steps_ms:
        stamps.append(stamps[-1] + int(step * MS))
    lock = common_pb2.LockTrace(
        table_id="T1",
        round_id="R1",
        gateway_accepted_unix_nanos=stamps[1],
        kafka_unix_nanos=stamps[2],
        pot_fetched_unix_nanos=stamps[3],
        pot_applied_unix_nanos=stamps[4],
        display_received_unix_nanos=stamps[5],
        display_sent_unix_nanos=stamps[6],
    )
    return lock, stamps[7]


def test_each_hop_is_its_own_stretch_and_they_add_up_to_the_end_to_end_time() -> None:
    hops = Hops()
    start = 1_700_000_000 * 10**9
    lock, signed = trace(start, [1.5, 6.0, 30.0, 0.5, 12.0, 20.0, 4.0])
    hops.record(lock, start, signed)
    summary = hops.summary()
    expected = [1.5, 6.0, 30.0, 0.5, 12.0, 24.0]  # display_to_sign includes the stream (20 + 4)
    for name, ms in zip(HOPS_ORDER, expected, strict=True):
        assert abs(summary[name]["p50_ms"] - ms) <= ms * 0.001 + 0.001, name
        assert summary[name]["count"] == 1
    assert abs(summary[END_TO_END]["p50_ms"] - 74.0) <= 0.1
    check = hops.check()
    assert check["error_ms"] <= 0.01
    assert check["hops_mean_sum_ms"] == check["end_to_end_mean_ms"] == 74.0


def test_a_stamp_read_before_the_previous_one_counts_as_zero_and_is_reported() -> None:
    hops = Hops()
    start = 1_700_000_000 * 10**9
    # the Kafka timestamp is in milliseconds: it may read before the gateway's own stamp
    lock, signed = trace(start, [1.0, -0.4, 5.4, 1.0, 1.0, 1.0, 1.0])
    hops.record(lock, start, signed)
    assert hops.clamped == 1
    assert hops.summary()["gateway_to_kafka"]["p50_ms"] <= 0.001


def test_a_trace_missing_a_stamp_is_not_a_measurement() -> None:
    hops = Hops()
    lock, signed = trace(10**18, [1, 1, 1, 1, 1, 1, 1])
    lock.pot_fetched_unix_nanos = 0  # an older pot that does not stamp
    hops.record(lock, 10**18, signed)
    assert hops.summary()[END_TO_END]["count"] == 0


def test_hops_of_several_processes_merge_into_one_histogram() -> None:
    start = 1_700_000_000 * 10**9
    parts = []
    for ms in (10.0, 20.0, 30.0):
        hops = Hops()
        lock, signed = trace(start, [ms, 1, 1, 1, 1, 1, 1])
        hops.record(lock, start, signed)
        parts.append(hops.encoded())
    merged = Hops()
    for part in parts:
        merged.merge(part)
    summary = merged.summary()["device_to_gateway"]
    assert summary["count"] == 3
    assert abs(summary["p50_ms"] - 20.0) <= 0.05


def test_the_tables_are_dealt_over_the_processes_each_exactly_once() -> None:
    tables = [SimTable(f"T{n}", Game.CARIBBEAN, "g", "host:1", "secret") for n in range(7)]
    dealt = shares(FloorConfig(tables=tables, seed=3), 3)
    assert len(dealt) == 3
    assert sorted(t.table_id for config in dealt for t in config.tables) == sorted(
        t.table_id for t in tables
    )
    assert len({config.seed for config in dealt}) == 3  # each process its own random stream
    assert len(shares(FloorConfig(tables=tables[:2]), 8)) == 2  # never a process without tables


def test_the_studio_tables_play_in_a_process_of_their_own() -> None:
    """A studio's platform sends a round's 10,000 bets at once: never in the event loop that
    times a land table's lock-to-sign."""
    tables = [SimTable(f"T{n}", Game.CARIBBEAN, "g", "host:1", "secret") for n in range(4)]
    studios = [SimStudio("S-LIVE-1", "g", "host:1", "studio-1", 10_000, 10_000)]
    dealt = shares(FloorConfig(tables=tables, seed=3, studios=studios), 2)
    assert [(len(c.tables), len(c.studios)) for c in dealt] == [(2, 0), (2, 0), (0, 1)]
    assert len({config.seed for config in dealt}) == 3
    assert shares(FloorConfig(tables=[], studios=studios), 2) == [
        FloorConfig(tables=[], studios=studios)
    ]


def test_the_statistics_of_the_processes_add_up() -> None:
    one, two = FloorStats(), FloorStats()
    one.rounds, two.rounds = 5, 7
    one.bets_accepted, two.bets_accepted = 1000, 2000
    one.bets_accepted_by_group["g"] = 1000
    two.bets_accepted_by_group["g"] = 2000
    one.latencies.add("lock_to_sign", 0.1)
    two.latencies.add("lock_to_sign", 0.2)
    total = FloorStats()
    for part in (one, two):
        merge(total, portable(part))
    assert (total.rounds, total.bets_accepted) == (12, 3000)
    assert total.bets_accepted_by_group["g"] == 3000
    assert sorted(total.latencies.samples["lock_to_sign"]) == [0.1, 0.2]
