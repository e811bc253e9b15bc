"""The load test's timeline (loadtest.timeline): the rolling window of every sample, from
synthetic counters and lock-to-sign samples, and how the simulator's locks reach it."""

from __future__ import annotations

import queue

import pytest
from loadtest.multifloor import MultiFloor, _send_new
from loadtest.timeline import (
    WINDOW_SECONDS,
    StepWindow,
    _transactions,
    percentiles_ms,
    window_ticks,
)
from prometheus_client import CollectorRegistry, generate_latest

from jackpot.domain.cards import Game
from jackpot.platform.metrics import ProcessorMetrics
from jackpot.sim.floor import FloorConfig, SimTable
from jackpot.sim.floor_stats import FloorStats

START = 100.0  # time.monotonic() of the step's baseline


def steady_floor(seconds: int) -> list[tuple[float, float, float, float]]:
    """A steady 60 rounds/s whose 40 tables finish together every 2/3 s, so the seconds hold
    one batch or two in turn (40, 80, 40, ...); 20 device events a round, a reject every 2 s."""
    counts = [(START, 1000.0, 20_000.0, 7.0)]
    for n in range(1, seconds + 1):
        at, rounds, events, rejects = counts[-1]
        batch = 40.0 if n % 2 else 80.0
        reject = 1.0 if n % 2 == 0 else 0.0
        counts.append((at + 1.0, rounds + batch, events + 20 * batch, rejects + reject))
    return counts


def test_the_window_is_five_one_second_samples() -> None:
    assert WINDOW_SECONDS == 5.0
    assert window_ticks(1.0) == 5
    assert window_ticks(0.5) == 10
    assert window_ticks(10.0) == 1


def test_rounds_per_second_is_the_rate_over_the_window_not_a_saw_tooth() -> None:
    counts = steady_floor(8)
    window = StepWindow(counts[0], window_ticks(1.0))
    samples = [window.advance(now) for now in counts[1:]]
    # one second apart these would read 40, 80, 40, 80, ...: the window holds 5 s at most, and
    # never reaches back before the step's baseline (its first seconds are over what it played)
    assert [s["rounds_per_second"] for s in samples] == [
        40.0,  # 40 / 1 s
        60.0,  # 120 / 2 s
        53.33,  # 160 / 3 s
        60.0,  # 240 / 4 s
        56.0,  # 280 / 5 s
        64.0,  # 320 / 5 s: the seconds 2-6
        56.0,  # 280 / 5 s: the seconds 3-7
        64.0,
    ]
    assert [s["device_events_per_second"] for s in samples] == [
        800.0,
        1200.0,
        1066.67,
        1200.0,
        1120.0,
        1280.0,
        1120.0,
        1280.0,
    ]
    assert [s["rejects_per_second"] for s in samples] == [
        0.0,
        0.5,
        0.33,
        0.5,
        0.4,
        0.6,
        0.4,
        0.6,
    ]


def test_lock_to_sign_is_over_the_window_and_null_only_when_it_has_none() -> None:
    counts = steady_floor(7)
    window = StepWindow(counts[0], window_ticks(1.0))
    window.add_locks([(START - 0.2, 9.0)])  # timed before the step's baseline: never counted
    window.add_locks([(START + 0.5, 0.030), (START + 1.5, 0.050)])
    locks = [window.advance(now)["lock_to_sign"] for now in counts[1:]]
    thirty = {"p50_ms": 30.0, "p95_ms": 30.0, "p99_ms": 30.0}
    fifty = {"p50_ms": 50.0, "p95_ms": 50.0, "p99_ms": 50.0}
    assert locks == [
        thirty,  # (100, 101]
        fifty,  # (100, 102]: of two, the upper is the median
        fifty,  # seconds in which no sign moved still have the window's
        fifty,
        fifty,  # (100, 105]
        fifty,  # (101, 106]: the 30 ms sign has left the window
        {"p50_ms": None, "p95_ms": None, "p99_ms": None},  # (102, 107]: nothing timed in it
    ]


def test_a_lock_timed_after_the_sample_waits_for_the_next_one() -> None:
    counts = steady_floor(2)
    window = StepWindow(counts[0], window_ticks(1.0))
    window.add_locks([(START + 1.2, 0.080)])  # received before the sample of 101, timed after
    assert window.advance(counts[1])["lock_to_sign"]["p50_ms"] is None
    assert window.advance(counts[2])["lock_to_sign"]["p50_ms"] == 80.0


def test_percentiles_rank_as_the_steps_summary_does() -> None:
    assert percentiles_ms([ms / 1000 for ms in range(100, 0, -1)]) == {
        "p50_ms": 51.0,
        "p95_ms": 96.0,
        "p99_ms": 100.0,
    }
    assert percentiles_ms([]) == {"p50_ms": None, "p95_ms": None, "p99_ms": None}


def test_a_simulator_process_sends_only_the_locks_timed_since_it_last_sent() -> None:
    stats = FloorStats()
    sent: list[list[tuple[float, float]]] = []
    stats.latencies.add("lock_to_sign", 0.040)
    stats.latencies.add("lock_to_sign", 0.060)
    assert _send_new(stats, sent.append, 0) == 2
    assert _send_new(stats, sent.append, 2) == 2  # nothing new: nothing sent
    stats.latencies.add("lock_to_sign", 0.090)
    assert _send_new(stats, sent.append, 2) == 3
    assert [[seconds for _, seconds in batch] for batch in sent] == [[0.040, 0.060], [0.090]]
    # one stamp per batch: when it was sent
    assert len({at for at, _ in sent[0]}) == 1


@pytest.fixture
def followed() -> MultiFloor:
    table = SimTable("A-CAR-01", Game.CARIBBEAN, "scl-poker", "127.0.0.1:1", "credential")
    return MultiFloor(FloorConfig(tables=[table]), processes=1)


def test_the_floor_hands_over_each_lock_once(followed: MultiFloor) -> None:
    followed._received.extend([(101.0, 0.030)])  # an in-process floor's sender
    inbox: queue.Queue[list[tuple[float, float]]] = queue.Queue()
    inbox.put([(101.2, 0.040), (101.2, 0.050)])  # the simulator processes' sends
    inbox.put([(101.4, 0.060)])
    followed._inbox = inbox
    assert followed.lock_to_sign() == [
        (101.0, 0.030),
        (101.2, 0.040),
        (101.2, 0.050),
        (101.4, 0.060),
    ]
    assert followed.lock_to_sign() == []


def test_a_processors_transactions_are_read_from_its_metrics_page() -> None:
    """The timeline's count of a processor's batch transactions, their seconds and those over
    0.2 s, from the exposition its /metrics serves (a tick's transaction is not a batch's)."""
    registry = CollectorRegistry()
    metrics = ProcessorMetrics(registry)
    for seconds in (0.05, 0.15, 0.3, 1.2):
        metrics.transaction_seconds.labels(kind="batch").observe(seconds)
    metrics.transaction_seconds.labels(kind="tick").observe(0.9)
    page = generate_latest(registry).decode()
    assert _transactions(page) == {"count": 4.0, "seconds": 1.7, "over_200_ms": 2.0}
    assert _transactions("") == {"count": 0.0, "seconds": 0.0, "over_200_ms": 0.0}
