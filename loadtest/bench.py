"""`make bench`: every benchmark in one run on one machine, printed as one table.

1. Domain core, in-process on one core: contributions collected per second (lock_round) and
   rounds resolved per second (resolve_round with seven real shuffled hands).
2. Raw Kafka ceiling: the broker's own ``org.apache.kafka.tools.ProducerPerformance`` and a plain
   aiokafka produce-then-consume of messages the size of a table event.
3. The pot service through Kafka with transactions against a raw aiokafka consume-produce loop
   (``loadtest.bench_pot``).
4. The full pipeline (devices -> gateways -> pot -> display -> signs) stepped up until p99
   lock-to-sign passes 250 ms (``loadtest.run``), as a ratio to (2).
5. Bounds, printed beside their figure: a gateway's resident memory over 18,000 hostile device
   inputs after a warm-up of 2,000, in a process of its own (``loadtest.bench_memory``), under
   8 MB. The bench exits 1 when a bound is exceeded.

Timings are never asserted: figures vary with the machine; compare ratios measured in one run.
Bounds are not timings: they hold on any machine. ``--quick`` skips (4).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jackpot.domain.cards import RANKS, SUITS
from jackpot.domain.config import load_config
from jackpot.domain.engine import PotGroup
from jackpot.platform.kafka import committed_consumer, ensure_topics, idempotent_producer
from jackpot.topics import TopicSpec
from loadtest import bench_memory
from loadtest.bench_pot import bench_pot

DECK = [r + s for r in RANKS for s in SUITS]
CONFIG = {
    "commission_percent": "12.5",
    "base": 500_000,
    "pots": [
        {"name": "main", "percent": "70"},
        {"name": "reserve1", "percent": "30", "ceiling": 50_000_000, "overflow_to": "main"},
    ],
    "min_bet": 1000,
    "max_bet": 5000,
    "credit_value": 1000,
}


def _group(tables: int) -> PotGroup:
    group, _ = PotGroup.open("bench", load_config(CONFIG))
    for t in range(tables):
        group.link_table(f"T{t}", "caribbean", min_bet=1000, max_bet=5000, credit_value=1000)
    return group


def _timed(action: Callable[[], None]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def bench_contributions(tables: int = 2000, repeats: int = 10, seats: int = 1) -> dict[str, float]:
    """Bets collected per second by lock_round, `seats` bets per lock."""
    group = _group(tables)
    bets = {s: 1000 * (1 + s % 5) for s in range(1, seats + 1)}
    elapsed = 0.0
    for r in range(repeats):
        round_id = f"R{r}"

        def lock_all(round_id: str = round_id) -> None:
            for t in range(tables):
                group.lock_round(f"T{t}", round_id, bets)

        elapsed += _timed(lock_all)
        for t in range(tables):
            group.resolve_round(f"T{t}", round_id, {})
    locks = tables * repeats
    return {"locks_per_s": locks / elapsed, "contributions_per_s": locks * seats / elapsed}


def bench_resolution(tables: int = 2000, repeats: int = 5, seats: int = 7) -> dict[str, float]:
    """Rounds resolved per second: seven seats, real shuffled one-deck hands, every rule applied."""
    rng = random.Random(20261129)
    group = _group(tables)
    elapsed = 0.0
    hits = 0
    for r in range(repeats):
        round_id = f"R{r}"
        hands = []
        for t in range(tables):
            group.lock_round(f"T{t}", round_id, dict.fromkeys(range(1, seats + 1), 1000))
            deck = rng.sample(DECK, 5 * seats)
            hands.append({s: deck[5 * (s - 1) : 5 * s] for s in range(1, seats + 1)})

        def resolve_all(round_id: str = round_id, hands: list = hands) -> None:  # type: ignore[type-arg]
            for t in range(tables):
                group.resolve_round(f"T{t}", round_id, hands[t])

        elapsed += _timed(resolve_all)
    hits = sum(group.hits.values())
    rounds = tables * repeats
    return {"rounds_per_s": rounds / elapsed, "hands_per_s": rounds * seats / elapsed, "hits": hits}


MESSAGE_BYTES = 120  # about one TableEvent with a lock of five bets


def producer_performance(bootstrap: str, records: int = 200_000) -> float:
    """Records/s from the broker's own perf tool, idempotent producer with acks=all."""
    kafka = Path(__file__).resolve().parents[1] / "deploy" / "local" / "kafka.sh"
    subprocess.run([str(kafka), "install"], check=True)
    version = re.search(
        r"<kafka.version>(.*)</kafka.version>", (kafka.parent / "pom.xml").read_text()
    )
    assert version is not None
    libs = Path(os.environ.get("JACKPOT_CACHE", Path.home() / ".cache" / "jackpot"))
    classpath = str(libs / f"kafka-{version.group(1)}" / "libs" / "*")
    topic = f"bench.perf.{uuid.uuid4().hex[:8]}"
    asyncio.run(ensure_topics(bootstrap, [TopicSpec(topic, 1)]))
    done = subprocess.run(
        [
            "java", "-Xmx512m", "-cp", classpath, "org.apache.kafka.tools.ProducerPerformance",
            "--topic", topic, "--num-records", str(records), "--record-size", str(MESSAGE_BYTES),
            "--throughput", "-1", "--producer-props", f"bootstrap.servers={bootstrap}",
            "acks=all", "enable.idempotence=true", "linger.ms=5",
        ],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    match = re.findall(r"([\d.]+) records/sec", done.stdout)
    return float(match[-1])


async def aiokafka_ceiling(bootstrap: str, messages: int = 50_000) -> tuple[float, float]:
    """(produced/s, consumed/s) of plain aiokafka: idempotent acks=all producer, then a reader."""
    topic = f"bench.raw.{uuid.uuid4().hex[:8]}"
    await ensure_topics(bootstrap, [TopicSpec(topic, 1)])
    payload = os.urandom(MESSAGE_BYTES)
    producer = idempotent_producer(bootstrap, linger_ms=5)
    await producer.start()
    try:
        started = time.perf_counter()
        futures = [await producer.send(topic, payload) for _ in range(messages)]
        await asyncio.gather(*futures)
        produced = messages / (time.perf_counter() - started)
    finally:
        await producer.stop()
    consumer = committed_consumer(bootstrap, topic, group_id=None)
    await consumer.start()
    try:
        seen = 0
        started = time.perf_counter()
        while seen < messages:
            batch = await consumer.getmany(timeout_ms=2000, max_records=10_000)
            if not batch:
                break
            seen += sum(len(records) for records in batch.values())
        consumed = seen / (time.perf_counter() - started)
    finally:
        await consumer.stop()
    return produced, consumed


def full_pipeline() -> dict[str, Any]:
    """The load test's highest sustainable rate (its own processes), from its report."""
    out = Path("build/bench-loadtest")
    subprocess.run(
        [sys.executable, "-m", "loadtest.run", "--tables", "40", "--start", "60",
         "--factor", "1.5", "--step-seconds", "15", "--max-steps", "6", "--out", str(out)],
        check=False,
    )  # fmt: skip
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--quick", action="store_true", help="skip the full-pipeline load test")
    parser.add_argument(
        "--bootstrap-servers", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092")
    )
    args = parser.parse_args()
    bootstrap = args.bootstrap_servers
    memory = bench_memory.measure_in_own_process()
    single = bench_contributions(seats=1)
    full = bench_contributions(seats=7)
    resolution = bench_resolution()
    perf = producer_performance(bootstrap)
    produced, consumed = asyncio.run(aiokafka_ceiling(bootstrap))
    pot = asyncio.run(bench_pot(bootstrap))
    rows: list[tuple[str, float, float | None]] = [
        ("1 domain: contributions/s (1 bet per lock)", single["contributions_per_s"], 200_000),
        ("1 domain: contributions/s (7 bets per lock)", full["contributions_per_s"], 200_000),
        ("1 domain: rounds resolved/s (7 seats)", resolution["rounds_per_s"], 50_000),
        ("2 Kafka ProducerPerformance records/s", perf, None),
        ("2 aiokafka produce records/s", produced, perf),
        ("2 aiokafka consume records/s", consumed, None),
        ("3 pot service rounds/s (transactions)", pot["pot_rounds_per_s"], None),
        ("3 raw aiokafka consume-produce rounds/s", pot["raw_rounds_per_s"], None),
        ("3 pot / raw loop", pot["pot_over_raw"], None),
        ("3 transaction p50 ms", pot["transaction_p50_ms"], None),
        ("3 transaction p99 ms", pot["transaction_p99_ms"], None),
    ]
    if not args.quick:
        load = full_pipeline()
        best = float(load["highest_sustainable_rounds_per_second"])
        events_per_round = pot["events"] / pot["rounds"]
        rows += [
            ("4 full pipeline rounds/s (p99 lock-to-sign <= 250 ms)", best, None),
            ("4 pipeline table events/s vs aiokafka produce", best * events_per_round, produced),
        ]
    print(f"{'benchmark':56} {'figure':>14} {'vs':>12} {'ratio':>7}")
    for name, value, against in rows:
        ratio = f"{value / against:.3f}" if against else ""
        versus = f"{against:,.0f}" if against else ""
        print(f"{name:56} {value:14,.1f} {versus:>12} {ratio:>7}")
    print(f"(hands evaluated/s {resolution['hands_per_s']:,.0f}; prizes hit {resolution['hits']})")
    growth = memory["resident_growth_mb"]
    failed = bench_memory.problems(memory)
    print(f"{'bound (exceeded: the bench fails)':56} {'figure':>14} {'bound':>12} {'':>7}")
    bounded = "5 gateway resident memory growth MB (18,000 hostile inputs)"
    figure = "n/a" if growth is None else f"{growth:,.1f}"
    bound = f"< {memory['bound_mb']:g}"
    print(f"{bounded:56} {figure:>14} {bound:>12} {'FAILED' if failed else 'ok':>7}")
    for problem in failed:
        print(f"  bound failed: {problem}")
    if args.json:
        figures: dict[str, Any] = {name: value for name, value, _ in rows}
        figures[bounded] = growth
        figures["bounds"] = {
            bounded: {"figure": growth, "bound": memory["bound_mb"], "ok": not failed}
        }
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(figures, out, indent=2)
    if failed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
