"""`make bench` row 7: the payout's one transaction for a studio hit, its lifecycle entries in
bundles against one record each, and whether it holds the ledger partition from the pot.

A split among 10,000 bets (O4) is 10,000 payouts ordered in one payout transaction (O9): a
payouts record, an open-payouts record and a ledger entry each. The ledger entries go to the
group's ledger partition, the one the pot's next transactions append the land tables' entries to,
and the broker compresses that topic itself (zstd, ``jackpot.topics``) inside its append. Stop 49
bundled them, measured one pair of land runs worse, reverted, and left the question open: does a
large append hold the partition? This answers it on the broker, apart from the land floor's noise:

- the records are the real ones: the pot's book splits a royal among ``BETS`` bets (with their
  players), the payout's handler orders the awards; the *bundled* transaction is what it writes
  (``PayoutPartition._finish``: the ledger entries in bundles), the *one each* transaction the
  same records with every bundle's entries written as records of their own (as before);
- a process of its own (the pot is one) commits a transaction of one ledger record to the same
  partition every 20 ms throughout;
- the two forms are written alternated, ``bursts`` in all, each to topics configured as the
  real ones, one payout-like transactional producer.

It reports each form's transaction ms (median) and the pot-like transactions' worst ms in the
1.5 s from each burst's start, against their worst far from any burst (the baseline).

    python -m loadtest.bench_payout_hit --bootstrap 127.0.0.1:9092 [--bursts 12]
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import statistics
import sys
import time
import uuid
from typing import Any

from jackpot.payout.payout_book import PayoutBook
from jackpot.payout.payout_partition import PayoutPartition
from jackpot.payout.settings import PayoutSettings
from jackpot.platform.bundles import ledger_entries
from jackpot.platform.kafka import KafkaConnection, ensure_topics, stop_client
from jackpot.platform.partition_handler import OutputRecord
from jackpot.platform.transaction import send_and_commit
from jackpot.pot.pot_book import InputRecord
from jackpot.topics import LEDGER, OPEN_PAYOUTS, PAYOUTS, TopicSpec
from loadtest.bench_studio import BETS, _locked_book, _result

BEAT_SECONDS = 0.02  # the pot-like transactions' pace
AFTER_BURST_SECONDS = 1.5  # a burst's window: the pot-like transactions started in it
CLEAR_SECONDS = 2.5  # a pot-like transaction started this soon after a burst is not the baseline
SETTLE_SECONDS = 4.0  # between bursts
# every prize credited at once, none waits for a supervisor (as row 7's land runs)
SETTINGS = PayoutSettings(studio_approval_threshold=10**12)


def hit_transactions(topics: dict[str, str]) -> dict[str, list[OutputRecord]]:
    """The payout's transaction for a split among ``BETS`` bets, as written now (``bundled``)
    and with each ledger entry a record of its own (``one each``), to ``topics`` (real -> bench)."""
    book, offset = _locked_book(players=True)
    split = book.batch([_result(offset)])
    awards = [r for r in split.records if r.topic == SETTINGS.awards_topic]
    handler = PayoutPartition(0, SETTINGS, PayoutBook())
    consumed = [InputRecord(r.value, r.topic, 0, n, r.key) for n, r in enumerate(awards)]
    written = handler.apply(consumed).records  # type: ignore[arg-type]
    bundled, one_each = [], []
    for record in written:
        topic = topics[record.topic]
        bundled.append(OutputRecord(topic, record.value, record.key, 0))
        if record.topic != SETTINGS.ledger_topic:
            one_each.append(bundled[-1])
            continue
        one_each += [
            OutputRecord(topic, raw, record.key, 0) for _, raw in ledger_entries(record.value)
        ]
    return {"bundled": bundled, "one each": one_each}


async def _beat(bootstrap: str, topic: str, transactional_id: str) -> None:
    """The pot-like process: one ledger record a transaction every 20 ms until SIGTERM, then
    each transaction's start (monotonic) and seconds on stdout."""
    producer = KafkaConnection({"bootstrap_servers": bootstrap}).producer(
        transactional_id=transactional_id
    )
    await producer.start()
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    taken = []
    record = [OutputRecord(topic, bytes(300), b"bench-group", 0)]
    try:
        while not stop.is_set():
            started = time.monotonic()
            await send_and_commit(producer, record, None, "", None)
            taken.append((started, time.monotonic() - started))
            await asyncio.sleep(BEAT_SECONDS)
    finally:
        await stop_client(producer)
    print("\n".join(f"{t} {s}" for t, s in taken), flush=True)


async def payout_hit(bootstrap: str, bursts: int = 12) -> dict[str, Any]:
    """The figures (see the module docstring)."""
    unique = uuid.uuid4().hex[:8]
    specs = {s.name: TopicSpec(f"bench.{s.name}.{unique}", 1, s.config) for s in (LEDGER, PAYOUTS)}
    specs[OPEN_PAYOUTS.name] = TopicSpec(f"bench.open.{unique}", 1, OPEN_PAYOUTS.config)
    await ensure_topics(bootstrap, specs.values())
    forms = hit_transactions({name: spec.name for name, spec in specs.items()})
    ledger = specs[LEDGER.name].name
    beat = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "loadtest.bench_payout_hit", "--bootstrap", bootstrap),
        *("--beat", ledger, f"bench-pot-{unique}"),
        stdout=asyncio.subprocess.PIPE,
    )
    producer = KafkaConnection({"bootstrap_servers": bootstrap}).producer(
        transactional_id=f"bench-payout-{unique}"
    )
    await producer.start()
    took: dict[str, list[tuple[float, float]]] = {form: [] for form in forms}
    try:
        await asyncio.sleep(2 * SETTLE_SECONDS)  # the beat's producer started and steady
        for index in range(bursts):
            form = ("one each", "bundled")[index % 2]
            started = time.monotonic()
            await send_and_commit(producer, forms[form], None, "", None)
            took[form].append((started, time.monotonic() - started))
            await asyncio.sleep(SETTLE_SECONDS)
    finally:
        await stop_client(producer)
        beat.send_signal(signal.SIGTERM)
        out, _ = await beat.communicate()
    beats = [tuple(map(float, line.split())) for line in out.decode().splitlines() if line]
    return _figures(forms, took, beats)


def _figures(
    forms: dict[str, list[OutputRecord]],
    took: dict[str, list[tuple[float, float]]],
    beats: list[tuple[float, ...]],
) -> dict[str, Any]:
    def near(start: float) -> list[float]:
        return [s for t, s in beats if start - 0.05 <= t <= start + AFTER_BURST_SECONDS]

    starts = [start for form in took.values() for start, _ in form]
    far = [s for t, s in beats if all(not (b - 0.2 <= t <= b + CLEAR_SECONDS) for b in starts)]
    figures: dict[str, Any] = {"prizes": BETS, "baseline_worst_ms": max(far) * 1000}
    for form, runs in took.items():
        worst = [max(near(start)) * 1000 for start, _ in runs]
        figures[form] = {
            "records": len(forms[form]),
            "transaction_median_ms": statistics.median(s for _, s in runs) * 1000,
            "pot_worst_ms_median": statistics.median(worst),
            "pot_worst_ms": max(worst),
        }
    return figures


def print_payout_hit(figures: dict[str, Any]) -> None:
    one, bundled = figures["one each"], figures["bundled"]
    print(
        f"  the payout's transaction for the split's {figures['prizes']:,} payouts: "
        f"{bundled['transaction_median_ms']:.0f} ms in {bundled['records']:,} records, its "
        f"ledger entries bundled\n    (one record each, as before: "
        f"{one['transaction_median_ms']:.0f} ms in {one['records']:,}); a pot-like "
        f"transaction on the same ledger partition meanwhile: worst {bundled['pot_worst_ms']:.1f}"
        f" ms\n    (median of the bursts {bundled['pot_worst_ms_median']:.1f}; one each: "
        f"{one['pot_worst_ms']:.1f}, {one['pot_worst_ms_median']:.1f}; far from a burst: "
        f"{figures['baseline_worst_ms']:.1f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=payout_hit.__doc__)
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--bursts", type=int, default=12)
    parser.add_argument("--beat", nargs=2, metavar=("TOPIC", "TRANSACTIONAL_ID"))
    args = parser.parse_args()
    if args.beat:
        asyncio.run(_beat(args.bootstrap, *args.beat))
        return
    print_payout_hit(asyncio.run(payout_hit(args.bootstrap, args.bursts)))


if __name__ == "__main__":
    main()
