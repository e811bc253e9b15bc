"""`make bench`: every benchmark in one run on one machine, printed as one table.

1. Domain core, in-process on one core: contributions collected per second (lock_round) and
   rounds resolved per second (resolve_round with seven real shuffled hands).
2. Raw Kafka ceiling: the broker's own ``org.apache.kafka.tools.ProducerPerformance`` and a plain
   aiokafka produce-then-consume of messages the size of a table event.
3. The pot service through Kafka with transactions against a raw aiokafka consume-produce loop
   (``loadtest.bench_pot``); and (3b) what issue 36's all-or-nothing commit costs: the pot's
   low-load transaction p50/p99 with every record acknowledged before the commit, against the
   commit asked for while the records are in flight (9546cb3's unsafe order, the baseline),
   alternated in the same run (``bench_pot.commit_order_ab``).
4. The full pipeline (devices -> gateways -> pot -> display -> signs) stepped up from 10 rounds/s
   until p99 lock-to-sign passes 250 ms (``loadtest.run``), as a ratio to (2), in the device
   protocol's round form and then, as the baseline of the same run, in its per-event form; with
   the simulator's own ceiling against a null gateway (a step counts only while the simulator
   has at least 2x headroom), the latency budget per hop (``jackpot.sim.hops``) at the counted
   rate, and (5') the cost per round of every service and the broker (``loadtest.cost``).
6. What ``compression.type: zstd`` on the ledger and pot-state topics costs the broker's CPU and
   saves on its disk, per round, against the same batches kept uncompressed, alternated in the
   same run on the bench's own broker (``loadtest.bench_compression``; not with
   ``--bootstrap-servers``: another's broker serves others too).
7. Studio tables at the scale of issue 39 against its targets: a lock of 10,000 bets through a
   real gateway to Kafka, a top prize split among 10,000 winners in the pot's book, 10,000
   wallet credits paid by the payout service, and (not with ``--quick``) the land floor's p99
   lock-to-sign without and beside a studio table of 10,000 players (``loadtest.bench_studio``);
   and the payout's transaction for that split, bundled against one record each, beside a
   pot-like transaction on the same ledger partition (``loadtest.bench_payout_hit``).
5. Bounds, printed beside their figure: a gateway's resident memory over 18,000 hostile device
   inputs after a warm-up of 2,000, in a process of its own (``loadtest.bench_memory``), under
   8 MB. The bench exits 1 when a bound is exceeded.

Everything runs against a fresh broker of the bench's own on an empty log (``FreshBroker``),
warmed first by ``WARM_UP_RUNS`` pot benches that are not counted (a cold JVM's transactions are
2-3x slower), unless ``--bootstrap-servers`` or KAFKA_BOOTSTRAP_SERVERS names one. Timings are
never asserted: figures vary with the machine; compare ratios measured in one run.
Bounds are not timings: they hold on any machine. ``--quick`` skips (4).

``--json`` keys (stable; docs/benchmarks.md explains each): ``domain.*``
(``contributions_per_second_one_bet``, ``contributions_per_second_seven_bets``,
``rounds_resolved_per_second``), ``kafka.*`` (``producer_performance_records_per_second``,
``aiokafka_produce_records_per_second``, ``aiokafka_consume_records_per_second``), ``pot.*``
(``rounds_per_second``, ``raw_rounds_per_second``, ``ratio_to_raw``, ``transaction_p50_ms``,
``transaction_p99_ms``, ``processor_rounds_per_second``, ``commit_order`` {the low-load A/B of
issue 36: ``acknowledged_first_p50_ms``, ``..._p99_ms``, ``in_flight_baseline_p50_ms``,
``..._p99_ms``, ``p50_ratio``, ``p99_ratio``}), ``pipeline.*``
(``rounds_per_second``: the highest counted rate; ``p99_lock_to_sign_ms`` and
``p99_traced_lock_to_sign_ms`` at that rate; ``simulator_ceiling_rounds_per_second``,
``simulator_headroom``, ``table_events_per_second``, ``table_events_ratio_to_aiokafka_produce``,
``rounds_per_second_within_100ms``, ``services_cpu_ms_per_round``, ``device_protocol``,
``per_event_protocol`` {the same keys, the per-event device protocol in the same run},
``hops_order``, ``hops`` {hop: p50_ms, p95_ms, p99_ms, count}, ``hops_check``, ``cost``
{process: cpu_ms_per_1000_rounds, cores, rss_mb, rss_growth_mb_per_1000_rounds}, ``steps``,
``lowest_step``), ``compression.*`` (``loadtest.bench_compression``:
``<topic>_<zstd|none>_bytes_per_round``, ``broker_cpu_<zstd|none>_ms_per_round``,
``broker_cpu_ratio``, ``<topic>_ratio``, ``ledger_<zstd|none>_gb_a_year_300_tables``),
``studio.*`` (``lock`` {``bets``, ``ms``, ``peak_rss_growth_mb``, ``target_ms``}, ``spool``
{``chunks``, ``stored_bytes``, ``whole_state_bytes``, ``stored_mean``, ``whole_state_mean``},
``split`` {``winners``, ``median_ms``, ``peak_mb``, ``target_ms``}, ``wallet`` {``prizes``,
``seconds``, ``wallet_calls``, ``target_seconds``}, ``land`` {``land_rounds_per_second``,
``without_studio_p99_ms``, ``with_studio_p99_ms``, ``ratio``, ``target_ratio``,
``studio_rounds``, ``studio_lock_p99_ms``, ``every_15_s_p99_ms``, ``every_15_s_ratio``,
``every_15_s_studio_rounds``, ``seconds`` (of the pair), ``cores`` {service: [alone, beside]}},
``payout_hit`` {``prizes``, ``baseline_worst_ms``, ``bundled`` and ``one each`` {``records``,
``transaction_median_ms``, ``pot_worst_ms_median``, ``pot_worst_ms``}}),
``bounds``. The older flat keys (the
printed row names) stay for comparison.
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
from loadtest.bench_compression import compression_ab
from loadtest.bench_compression import rows as compression_rows
from loadtest.bench_payout_hit import payout_hit, print_payout_hit
from loadtest.bench_pot import bench_pot, commit_order_ab
from loadtest.bench_studio import print_studio, studio_figures

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


# The pipeline's steps: 40 tables from 15 rounds per minute each (10 rounds/s, the low-load end)
# by x1.6 up to about 430 rounds/s, 15 s each; a step past the 250 ms limit ends the run.
PIPELINE_ARGS = ["--tables", "40", "--start", "15", "--factor", "1.6", "--step-seconds", "15",
                 "--max-steps", "9"]  # fmt: skip


def full_pipeline(device_protocol: str = "round") -> dict[str, Any]:
    """The load test's steps (its own processes) in the device protocol's ``device_protocol``
    form, from its report."""
    out = Path(f"build/bench-loadtest-{device_protocol}")
    subprocess.run(
        [sys.executable, "-m", "loadtest.run", *PIPELINE_ARGS, "--device-protocol",
         device_protocol, "--out", str(out)],
        check=False,
    )  # fmt: skip
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    return report


class FreshBroker:
    """A broker of its own for the bench, on an empty log (issue 26: a broker holding many test
    topics read 125-149 ms where an idle one read 114-118), stopped at the end."""

    def __init__(self, port: int = 19492) -> None:
        self.port = port
        self.state = Path("build/bench-kafka").resolve()
        self.kafka = Path(__file__).resolve().parents[1] / "deploy" / "local" / "kafka.sh"
        self.bootstrap = f"127.0.0.1:{port}"
        self.dir = self.state / "kafka" / f"single-{port}"  # kafka.sh's: its kafka.pid, data/

    def _run(self, command: str) -> None:
        env = {**os.environ, "JACKPOT_STATE": str(self.state), "KAFKA_PORT": str(self.port)}
        subprocess.run([str(self.kafka), command], env=env, check=True)

    def __enter__(self) -> str:
        if self.state.exists():
            self._run("down")
            subprocess.run(["rm", "-rf", str(self.state)], check=True)
        self._run("up")
        return self.bootstrap

    def __exit__(self, *exc: object) -> None:
        self._run("down")


WARM_UP_RUNS = 2  # pot benches a fresh broker serves, not counted, before anything is measured


def warm_up(bootstrap: str) -> None:
    """Serve a fresh broker the pot's transactions until its JVM has compiled their paths: the
    figures are of a broker in service, not of its first minute. Measured on 2026-12-03: three
    pot benches in a row on a fresh broker read transaction p50 30, 22 and 18 ms (pot / raw
    0.37, 0.49, 0.50), one on a broker that had served for an hour 10-11 ms."""
    for run in range(1, WARM_UP_RUNS + 1):
        result = asyncio.run(bench_pot(bootstrap))
        print(
            f"warming the fresh broker {run}/{WARM_UP_RUNS}: pot transaction p50 "
            f"{result['transaction_p50_ms']:.1f} ms (not counted)",
            flush=True,
        )


HEADROOM = 2.0  # a pipeline step counts only while the simulator could go this much faster
TARGET_P99_MS = 100.0  # issue 26: p99 lock-to-sign at every step from 10 rounds/s up
NOT_SERVICES = ("kafka",)  # the broker is not one of ours; the simulator is not in `cost`


def services_cpu_ms(step: dict[str, Any]) -> float | None:
    """CPU milliseconds per round of every service of ours (the broker and the simulator
    excepted), summed over their processes; None when the step measured none."""
    cost = step.get("cost", {})
    ours = [c["cpu_ms_per_1000_rounds"] for name, c in cost.items() if name not in NOT_SERVICES]
    return round(sum(ours) / 1000, 3) if ours else None


def pipeline_figures(load: dict[str, Any], pot_events_per_round: float) -> dict[str, Any]:
    """The ``pipeline`` section of bench.json from the load test's report (see the docstring)."""
    ceiling = float(load.get("simulator_ceiling", {}).get("rounds_per_second", 0.0))
    limit = float(load["limit_p99_ms"])
    steps = load["steps"]

    def p99(step: dict[str, Any], name: str) -> float:
        return float(step["latency"].get(name, {}).get("p99_ms", 1e9))

    def headroom(step: dict[str, Any]) -> float:
        return ceiling / max(float(step["rounds_per_second"]), 1e-9)

    counted = [s for s in steps if p99(s, "lock_to_sign") <= limit and headroom(s) >= HEADROOM]
    best = max(counted, key=lambda s: float(s["rounds_per_second"]), default=None)
    within = [s for s in counted if p99(s, "lock_to_sign") <= TARGET_P99_MS]
    best_within = max(within, key=lambda s: float(s["rounds_per_second"]), default=None)
    lowest = steps[0] if steps else None
    figures: dict[str, Any] = {
        "rounds_per_second": 0.0 if best is None else float(best["rounds_per_second"]),
        "rounds_per_second_within_100ms": 0.0
        if best_within is None
        else float(best_within["rounds_per_second"]),
        "p99_lock_to_sign_ms": None if best is None else p99(best, "lock_to_sign"),
        "p99_traced_lock_to_sign_ms": None
        if best is None
        else best["hops"]["traced_lock_to_sign"]["p99_ms"],
        "services_cpu_ms_per_round": None if best is None else services_cpu_ms(best),
        "device_protocol": load.get("device_protocol", "per-event"),
        "simulator_ceiling_rounds_per_second": ceiling,
        "simulator_headroom": None if best is None else headroom(best),
        "limit_p99_ms": limit,
        "table_events_per_second": 0.0
        if best is None
        else float(best["rounds_per_second"]) * pot_events_per_round,
        "hops_order": load.get("hops_order", []),
        "hops": {} if best is None else best["hops"],
        "hops_check": {} if best is None else best["hops_check"],
        "cost": {} if best is None else best.get("cost", {}),
        "simulator_cpu_ms_per_1000_rounds": None
        if best is None
        else best.get("simulator_cpu_ms_per_1000_rounds"),
        "steps": [
            {
                "rounds_per_second": s["rounds_per_second"],
                "p50_lock_to_sign_ms": s["latency"].get("lock_to_sign", {}).get("p50_ms"),
                "p99_lock_to_sign_ms": p99(s, "lock_to_sign"),
                "p50_traced_lock_to_sign_ms": s["hops"]["traced_lock_to_sign"]["p50_ms"],
                "p99_traced_lock_to_sign_ms": s["hops"]["traced_lock_to_sign"]["p99_ms"],
                "simulator_headroom": headroom(s),
                "services_cpu_ms_per_round": services_cpu_ms(s),
                "counted": s in counted,
            }
            for s in steps
        ],
    }
    if lowest is not None:
        figures["lowest_step"] = figures["steps"][0]
    return figures


def print_pipeline(pipeline: dict[str, Any], form: str = "round form") -> None:
    ceiling = pipeline["simulator_ceiling_rounds_per_second"]
    print(
        f"4 the device protocol's {form}: p99 lock-to-sign target {TARGET_P99_MS:g} ms at "
        f"every step; services' CPU {pipeline['services_cpu_ms_per_round']} ms per round"
    )
    print(f"{'4 load test step':22} {'rounds/s':>9} {'headroom':>9} {'p50/p99 lock-to-sign':>21} "
          f"{'traced p50/p99':>16} {'CPU ms/round':>13}")  # fmt: skip
    for step in pipeline["steps"]:
        mark = "" if step["counted"] else "  (not counted)"
        cpu = step.get("services_cpu_ms_per_round")
        print(
            f"{'':22} {step['rounds_per_second']:9.1f} {step['simulator_headroom']:8.1f}x "
            f"{step['p50_lock_to_sign_ms']:9.1f}/{step['p99_lock_to_sign_ms']:<9.1f}  "
            f"{step['p50_traced_lock_to_sign_ms']:7.1f}/{step['p99_traced_lock_to_sign_ms']:<7.1f}"
            f" {'' if cpu is None else f'{cpu:13.2f}'}{mark}"
        )
    print(f"  simulator ceiling against a null gateway: {ceiling:,.1f} rounds/s")
    hops = pipeline["hops"]
    if hops:
        print(f"{'4 hop at the counted rate (ms)':40} {'p50':>8} {'p95':>8} {'p99':>8} {'n':>7}")
        for name in [*pipeline["hops_order"], "traced_lock_to_sign"]:
            hop = hops[name]
            print(
                f"  {name:38} {hop['p50_ms']:8.2f} {hop['p95_ms']:8.2f} {hop['p99_ms']:8.2f} "
                f"{hop['count']:7d}"
            )
        check = pipeline["hops_check"]
        print(
            f"  hops add up: mean of hops summed {check['hops_mean_sum_ms']} ms, end to end "
            f"{check['end_to_end_mean_ms']} ms (error {check['error_ms']} ms; Kafka's timestamp "
            f"is in ms, {check.get('clamped', 0)} negative readings counted as 0)"
        )
    cost = pipeline["cost"]
    if cost:
        print(f"{'5 cost at the counted rate':28} {'CPU ms/1k rounds':>17} {'cores':>7} "
              f"{'RSS MB':>8} {'RSS MB/1k rounds':>17}")  # fmt: skip
        for name, c in sorted(cost.items()):
            print(
                f"  {name:26} {c['cpu_ms_per_1000_rounds']:17,.0f} {c['cores']:7.3f} "
                f"{c['rss_mb']:8.1f} {c['rss_growth_mb_per_1000_rounds']:17.2f}"
            )
        simulator = pipeline.get("simulator_cpu_ms_per_1000_rounds")
        if simulator is not None:
            print(f"  {'simulator (all processes)':26} {simulator:17,.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--quick", action="store_true", help="skip the full-pipeline load test")
    parser.add_argument(
        "--bootstrap-servers",
        default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", ""),
        help="a broker to measure against (default: a fresh one of the bench's own, on an "
        "empty log, stopped at the end)",
    )
    args = parser.parse_args()
    if args.bootstrap_servers:
        failed = bench(args.bootstrap_servers, args.quick, args.json)
    else:
        broker = FreshBroker()
        with broker as bootstrap:
            os.environ["KAFKA_BOOTSTRAP_SERVERS"] = bootstrap  # the load test's services too
            warm_up(bootstrap)
            failed = bench(bootstrap, args.quick, args.json, broker.dir)
    if failed:
        raise SystemExit(1)


def bench(
    bootstrap: str, quick: bool, json_path: str | None, broker_dir: Path | None = None
) -> bool:
    """Every benchmark against ``bootstrap``, printed (and written to ``json_path``); whether a
    bound failed. The broker's CPU and disk (row 6) are measured only on a broker of the bench's
    own (``broker_dir``): another's process serves others too."""
    memory = bench_memory.measure_in_own_process()
    single = bench_contributions(seats=1)
    full = bench_contributions(seats=7)
    resolution = bench_resolution()
    perf = producer_performance(bootstrap)
    produced, consumed = asyncio.run(aiokafka_ceiling(bootstrap))
    pot = asyncio.run(bench_pot(bootstrap))
    pot["commit_order"] = order = asyncio.run(commit_order_ab(bootstrap))
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
        # issue 36: every record acknowledged before the commit, against 9546cb3's commit with
        # the records in flight (unsafe; the baseline only), at low load, alternated
        (
            "3b low-load transaction p50 ms, acked first vs in flight",
            order["acknowledged_first_p50_ms"],
            order["in_flight_baseline_p50_ms"],
        ),
        (
            "3b low-load transaction p99 ms, acked first vs in flight",
            order["acknowledged_first_p99_ms"],
            order["in_flight_baseline_p99_ms"],
        ),
    ]
    compression: dict[str, Any] = {}
    if broker_dir is not None:
        compression = asyncio.run(compression_ab(bootstrap, broker_dir))
        rows += compression_rows(compression)
    else:
        print("6 zstd's broker CPU and disk: not measured (needs the bench's own broker)")
    studio = studio_figures(bootstrap, quick)
    studio["payout_hit"] = asyncio.run(payout_hit(bootstrap))
    pipeline: dict[str, Any] = {}
    if not quick:
        pipeline = both_protocols(pot["events"] / pot["rounds"])
        rows += [
            ("4 full pipeline rounds/s (p99 lock-to-sign <= 250 ms)",
             pipeline["rounds_per_second"], None),
            ("4 the same, per-event device protocol", pipeline["per_event_protocol"]
             ["rounds_per_second"], pipeline["rounds_per_second"] or None),
            ("4 full pipeline rounds/s (p99 lock-to-sign <= 100 ms)",
             pipeline["rounds_per_second_within_100ms"], None),
            ("4 pipeline table events/s vs aiokafka produce", pipeline["table_events_per_second"],
             produced),
        ]  # fmt: skip
    print_rows(rows, resolution)
    print_studio(studio)
    print_payout_hit(studio["payout_hit"])
    if pipeline:
        print_pipeline(pipeline)
        print_pipeline(pipeline["per_event_protocol"], "per-event protocol")
    failed = print_bounds(memory)
    if json_path:
        figures = bench_json(rows, memory, failed, single, full, resolution, perf, produced,
                             consumed, pot)  # fmt: skip
        if pipeline:
            pipeline["table_events_ratio_to_aiokafka_produce"] = (
                pipeline["table_events_per_second"] / produced
            )
            figures["pipeline"] = pipeline
        if compression:
            figures["compression"] = compression
        figures["studio"] = studio
        with open(json_path, "w", encoding="utf-8") as out:
            json.dump(figures, out, indent=2)
    return bool(failed)


def both_protocols(pot_events_per_round: float) -> dict[str, Any]:
    """The pipeline in the round form (its figures) and in the per-event form (under
    ``per_event_protocol``), one after the other on the same broker."""
    pipeline = pipeline_figures(full_pipeline("round"), pot_events_per_round)
    pipeline["per_event_protocol"] = pipeline_figures(
        full_pipeline("per-event"), pot_events_per_round
    )
    return pipeline


def print_rows(rows: list[tuple[str, float, float | None]], resolution: dict[str, float]) -> None:
    print(f"{'benchmark':56} {'figure':>14} {'vs':>12} {'ratio':>7}")
    for name, value, against in rows:
        ratio = f"{value / against:.3f}" if against else ""
        versus = f"{against:,.0f}" if against else ""
        print(f"{name:56} {value:14,.1f} {versus:>12} {ratio:>7}")
    print(f"(hands evaluated/s {resolution['hands_per_s']:,.0f}; prizes hit {resolution['hits']})")


BOUNDED = "5 gateway resident memory growth MB (18,000 hostile inputs)"


def print_bounds(memory: dict[str, Any]) -> list[str]:
    growth = memory["resident_growth_mb"]
    failed = bench_memory.problems(memory)
    print(f"{'bound (exceeded: the bench fails)':56} {'figure':>14} {'bound':>12} {'':>7}")
    figure = "n/a" if growth is None else f"{growth:,.1f}"
    bound = f"< {memory['bound_mb']:g}"
    print(f"{BOUNDED:56} {figure:>14} {bound:>12} {'FAILED' if failed else 'ok':>7}")
    for problem in failed:
        print(f"  bound failed: {problem}")
    return failed


def bench_json(
    rows: list[tuple[str, float, float | None]],
    memory: dict[str, Any],
    failed: list[str],
    single: dict[str, float],
    full: dict[str, float],
    resolution: dict[str, float],
    perf: float,
    produced: float,
    consumed: float,
    pot: dict[str, Any],
) -> dict[str, Any]:
    """``build/bench.json`` but the pipeline (the keys in the module docstring)."""
    growth = memory["resident_growth_mb"]
    figures: dict[str, Any] = {name: value for name, value, _ in rows}
    figures[BOUNDED] = growth
    figures["bounds"] = {BOUNDED: {"figure": growth, "bound": memory["bound_mb"], "ok": not failed}}
    figures["domain"] = {
        "contributions_per_second_one_bet": single["contributions_per_s"],
        "contributions_per_second_seven_bets": full["contributions_per_s"],
        "rounds_resolved_per_second": resolution["rounds_per_s"],
    }
    figures["kafka"] = {
        "producer_performance_records_per_second": perf,
        "aiokafka_produce_records_per_second": produced,
        "aiokafka_consume_records_per_second": consumed,
    }
    figures["pot"] = {
        "rounds_per_second": pot["pot_rounds_per_s"],
        "raw_rounds_per_second": pot["raw_rounds_per_s"],
        "ratio_to_raw": pot["pot_over_raw"],
        "transaction_p50_ms": pot["transaction_p50_ms"],
        "transaction_p99_ms": pot["transaction_p99_ms"],
        "processor_rounds_per_second": pot["processor_rounds_per_s"],
        "commit_order": pot["commit_order"],
    }
    return figures


if __name__ == "__main__":
    main()
