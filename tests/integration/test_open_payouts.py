"""Issue 23: a casino runs for years, and start-up must not grow with history.

The payout service writes what is open of its payouts to the open-payouts topic (same partitions,
same transactions, tombstones once settled) and restores from it; the display restores its
pending prizes from it and follows it from where that read ended. On a payouts topic holding
20,000 settled awards and a few open ones (as an older version leaves it), the first start of the
payout service seeds the open topic from the payouts topic once; after that a display and a
restarted payout service read a bounded number of records (counted, not timed) and show exactly
what is open. A first start stopped the moment it serves (as `make bench-history` stops it) has
marked every partition, so the next start reads none of the history. Nothing is paid twice
across a restart, even with the awards consumer group's offsets gone, and the log cleaner leaves
only the open payouts on the topic.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer
from loadtest.free_ports import free_port
from prometheus_client import REGISTRY

from jackpot.display.main import run_display
from jackpot.display.settings import DisplaySettings
from jackpot.domain.errors import DomainError
from jackpot.domain.payout import OPEN, PayoutState
from jackpot.payout.payout_book import PayoutBook
from jackpot.payout.service import PayoutService
from jackpot.payout.settings import PayoutSettings
from jackpot.platform import exactly_once
from jackpot.platform.kafka import KafkaConnection, ensure_topics, idempotent_producer
from jackpot.tools.payouts import load
from jackpot.topics import OPEN_PAYOUTS_MARK_KEY, TopicSpec
from jackpot.v1 import payout_pb2, pot_pb2
from tests.integration.gateway_harness import read_topic
from tests.integration.test_payout import Running, award, payout_settings, publish
from tests.polling import eventually

pytestmark = pytest.mark.integration

SETTLED = 20_000
DAY_NS = 86_400 * 1_000_000_000
# What a start may read of the open-payouts topic here: the open payouts, a mark per partition
# and the few transactions of the test, never the history.
RESTORE_BOUND = 60


def legacy_payout(i: int, state: int, at_ns: int) -> payout_pb2.Payout:
    """Award i's payout at its latest state, as an older payout service left it."""
    payout = payout_pb2.Payout(
        award_id=f"g/T{i % 40}/R{i}/{i % 7 + 1}/FLUSH",
        pot_group_id="g",
        table_id=f"T{i % 40}",
        round_id=f"R{i}",
        seat=i % 7 + 1,
        prize="FLUSH",
        amount=10_000 + i if state == payout_pb2.PAYOUT_STATE_ORDERED else 2_000_000 + i,
        cards=["AS", "KS", "QS", "JS", "TS"],
        state=state,  # type: ignore[arg-type]
        order=i + 1,
    )
    first = (
        payout_pb2.PAYOUT_STATE_ORDERED
        if state == payout_pb2.PAYOUT_STATE_ORDERED
        else payout_pb2.PAYOUT_STATE_AWAITING_APPROVAL
    )
    steps = [first] if state == first else [first, state]
    for n, step in enumerate(steps):
        transition = payout.history.add(state=step, by="payout-service" if n == 0 else "dealer")
        transition.at.FromNanoseconds(at_ns + n * 60_000_000_000)
    return payout


async def write_legacy_history(settings: PayoutSettings, settled: int) -> dict[str, int]:
    """``settled`` payouts paid or voided two days ago, then three awaiting approval and two
    ordered (open), on the payouts topic only: award id -> state of the open ones."""
    producer = idempotent_producer(settings.bootstrap_servers)
    await producer.start()
    opened: dict[str, int] = {}
    try:
        sent = []
        old = time.time_ns() - 2 * DAY_NS
        for i in range(settled + 5):
            if i < settled:
                state = (
                    payout_pb2.PAYOUT_STATE_VOIDED if i % 50 == 0 else payout_pb2.PAYOUT_STATE_PAID
                )
            else:
                state = (
                    payout_pb2.PAYOUT_STATE_AWAITING_APPROVAL
                    if i < settled + 3
                    else payout_pb2.PAYOUT_STATE_ORDERED
                )
                opened[legacy_payout(i, state, old).award_id] = state
            payout = legacy_payout(i, state, old if i < settled else time.time_ns())
            sent.append(
                await producer.send(
                    settings.payouts_topic,
                    payout.SerializeToString(),
                    key=payout.award_id.encode(),
                    partition=i % 2,
                )
            )
        await asyncio.gather(*sent)
    finally:
        await producer.stop()
    return opened


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


class Counted:
    """Records the processor's restores read (``read_compacted``'s fetches), by topic."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.read: dict[str, int] = {}
        original = exactly_once.read_compacted

        async def counting(
            consumer: AIOKafkaConsumer, topic: str, partitions: list[int], seconds: float
        ) -> dict[int, dict[bytes, bytes]]:
            return await original(_Counting(consumer, self.read, topic), topic, partitions, seconds)

        monkeypatch.setattr(exactly_once, "read_compacted", counting)


class _Counting:
    def __init__(self, consumer: AIOKafkaConsumer, read: dict[str, int], topic: str) -> None:
        self._consumer, self._read, self._topic = consumer, read, topic

    def __getattr__(self, name: str) -> Any:
        return getattr(self._consumer, name)

    async def getmany(self, *partitions: Any, **options: Any) -> Any:
        batch = await self._consumer.getmany(*partitions, **options)
        self._read[self._topic] = self._read.get(self._topic, 0) + sum(map(len, batch.values()))
        return batch


@asynccontextmanager
async def display_of(payouts: PayoutSettings) -> AsyncIterator[Callable[[], Awaitable[Any]]]:
    """A display service on ``payouts``' topics; yields a reader of its /api/signs."""
    settings = DisplaySettings(
        bootstrap_servers=payouts.bootstrap_servers,
        grpc_address=f"127.0.0.1:{free_port()}",
        http_port=free_port(),
        metrics_port=0,
        pot_updates_topic=payouts.awards_topic.replace("awards", "pot-updates"),
        awards_topic=payouts.awards_topic,
        payouts_topic=payouts.payouts_topic,
    )
    await ensure_topics(settings.bootstrap_servers, [TopicSpec(settings.pot_updates_topic, 1)])
    stop = asyncio.Event()
    task = asyncio.create_task(run_display(settings, stop))

    async def signs() -> Any:
        def get() -> Any:
            url = f"http://127.0.0.1:{settings.http_port}/api/signs"
            with urllib.request.urlopen(url, timeout=5) as answer:
                return json.loads(answer.read())

        try:
            return await asyncio.to_thread(get)
        except OSError:
            return None  # not listening yet

    try:
        yield signs
    finally:
        stop.set()
        assert await asyncio.wait_for(task, 30) == 0


async def pending_on_signs(signs: Callable[[], Awaitable[Any]]) -> set[str]:
    shown = await signs()
    return {p["award_id"] for sign in shown or [] for p in sign["pending"]}


async def open_topic_records(settings: PayoutSettings) -> list[Any]:
    """Every record of the open-payouts topic now (what a restore reads)."""
    async with KafkaConnection.of(settings).reader(settings.open_payouts_topic) as reader:
        return [r async for r in reader.records(deadline_seconds=30)]


async def test_a_display_and_a_restarted_payout_read_only_what_is_open_of_20000_awards(
    kafka_bootstrap: str, unique: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = await payout_settings(kafka_bootstrap, unique)
    opened = await write_legacy_history(settings, SETTLED)
    awaiting = {a for a, s in opened.items() if s == payout_pb2.PAYOUT_STATE_AWAITING_APPROVAL}
    payouts_read = "jackpot_display_restore_records_total"

    # Before: a deployment without open payouts. The display reads the payouts history whole.
    async with display_of(settings) as signs:
        await eventually(lambda: _shows(signs, awaiting), "the pending prizes", within=30)
    before = sample(payouts_read, topic=settings.payouts_topic)
    assert before == SETTLED + 5

    # The first start of the payout service seeds the open payouts from the payouts topic, once.
    counted = Counted(monkeypatch)
    seeded = sample("jackpot_payout_catch_up_records_total")
    async with Running(settings) as running:
        book = running.service.book
        assert {a for a, p in book.payouts.items() if p.state in OPEN} == set(opened)
        assert len(book.payouts) == len(opened)  # nothing of the history
        assert sample("jackpot_payout_catch_up_records_total") - seeded == SETTLED + 5
        await eventually(lambda: _marked(settings), "a mark on every open-payouts partition")

        # After: a display reads the open payouts only, and follows them.
        async with display_of(settings) as signs:
            await eventually(lambda: _shows(signs, awaiting), "the pending prizes", within=30)
            restored = sample(payouts_read, topic=settings.open_payouts_topic)
            assert 0 < restored <= RESTORE_BOUND
            assert sample(payouts_read, topic=settings.payouts_topic) == before
            # Prizes settled (or approved) after the start leave the signs.
            approved, voided, still = sorted(awaiting)
            await running.service.approve(approved, "sup-luis")
            await running.service.void(voided, "sup-luis", "misread hand")
            await eventually(lambda: _shows(signs, {still}), "only the prize still pending")
        print(
            f"\nrecords read at start on {SETTLED:,} settled awards + {len(opened)} open: "
            f"display {before:.0f} before, {restored:.0f} after; payout seed "
            f"{SETTLED + 5} once"
        )
    seed_restore = counted.read.get(settings.open_payouts_topic, 0)

    # A restart reads the open payouts and the payouts written since the last checkpoint.
    read, tail = await restart_reads_only_what_is_open(
        settings, counted, set(opened) - {voided}, voided
    )
    assert read <= RESTORE_BOUND
    assert tail <= 10  # the approval and the void, not the history
    print(
        f"payout restore: {seed_restore} open-payouts records at the seeding start, "
        f"{read} + {tail:.0f} payouts records at the restart (before: {SETTLED + 5} at every start)"
    )


async def restart_reads_only_what_is_open(
    settings: PayoutSettings, counted: Counted, open_now: set[str], voided: str
) -> tuple[int, float]:
    """A restarted payout's book: the open payouts and the one voided just now (kept), nothing
    of the history; (open-payouts records its restore read, payouts records it caught up)."""
    caught_up = sample("jackpot_payout_catch_up_records_total")
    counted.read.clear()
    async with Running(settings) as running:
        book = running.service.book
        assert {a for a, p in book.payouts.items() if p.state in OPEN} == open_now
        assert book.payouts[voided].state is PayoutState.VOIDED  # kept: settled just now
        assert set(book.payouts) == open_now | {voided}
        assert {p.award_id for p in (await load(settings)).listing(True)} == open_now
        tail = sample("jackpot_payout_catch_up_records_total") - caught_up
    return counted.read.get(settings.open_payouts_topic, 0), tail


async def _shows(signs: Callable[[], Awaitable[Any]], expected: set[str]) -> bool:
    return await pending_on_signs(signs) == expected


async def _listening(signs: Callable[[], Awaitable[Any]]) -> bool:
    return await signs() is not None


def _in_book(book: PayoutBook, award_id: str) -> bool:
    return award_id in book.payouts


async def _marked(settings: PayoutSettings) -> bool:
    records = await open_topic_records(settings)
    return {r.partition for r in records if r.key == OPEN_PAYOUTS_MARK_KEY} == {0, 1}


UNMARKED = 5_000  # settled payouts of a deployment's history that has no mark yet


async def test_a_first_start_stopped_as_soon_as_it_serves_has_marked_every_partition(
    kafka_bootstrap: str, unique: str
) -> None:
    """The first start on a history without a mark reads the whole payouts partitions. Stopped
    the moment it serves, with no award and no call meanwhile, it has written each partition's
    mark in a transaction of its own (its first tick, at the takeover, not a tick period
    later), so the next start reads none of the history: only what is open, from the mark."""
    settings = await payout_settings(kafka_bootstrap, unique)
    opened = await write_legacy_history(settings, UNMARKED)
    caught_up = sample("jackpot_payout_catch_up_records_total")
    assert await serve_then_stop(settings) == set(opened)
    assert sample("jackpot_payout_catch_up_records_total") - caught_up == UNMARKED + 5

    async with KafkaConnection.of(settings).reader(settings.payouts_topic) as reader:
        _, ends = await reader.bounds([0, 1])
    marks = {
        r.partition: payout_pb2.OpenPayoutsMark.FromString(r.value)
        for r in await open_topic_records(settings)
        if r.key == OPEN_PAYOUTS_MARK_KEY
    }
    assert {p: m.payouts_offset for p, m in marks.items()} == ends  # committed, up to the end
    assert min(m.next_order for m in marks.values()) > UNMARKED  # past every order ever paid

    caught_up = sample("jackpot_payout_catch_up_records_total")
    restored = sample("jackpot_payout_restored_payouts_total")
    assert await serve_then_stop(settings) == set(opened)
    assert sample("jackpot_payout_catch_up_records_total") - caught_up == 0
    assert sample("jackpot_payout_restored_payouts_total") - restored == len(opened)


async def serve_then_stop(settings: PayoutSettings) -> set[str]:
    """A payout service started, and stopped the moment it serves (the history bench's start):
    the award ids open in its book then."""
    service = PayoutService(settings)
    task = asyncio.create_task(service.run())
    try:
        await eventually(lambda: service.serving or task.done(), "the payout serving", 60)
        return {a for a, p in service.book.payouts.items() if p.state in OPEN}
    finally:
        await service.stop()
        await task


async def test_nothing_is_paid_twice_across_a_restart_even_without_the_groups_offsets(
    kafka_bootstrap: str, unique: str
) -> None:
    """Settled payouts leave the book at once (keep time 0) and the awards consumer group is
    new at the restart (its offsets expired or reset): the awards are not read again, as the
    partition's mark carries the awards offset, so the paid award is not ordered again."""
    settings = (await payout_settings(kafka_bootstrap, unique)).replace(settled_kept_seconds=0)
    paid, unpaid = award("R1", 2, "FLUSH", 50_000), award("R1", 3, "FULL_HOUSE", 80_000)
    await publish(settings, paid, unpaid)
    async with Running(settings) as running:
        service = running.service
        await eventually(lambda: len(service.book.payouts) == 2, "both payouts ordered")
        await service.paid("T1", paid.award_id, "dealer-ana")
        assert set(service.book.payouts) == {unpaid.award_id}  # settled: out of the book
    restarted = settings.replace(
        processor={"consumer_group": f"{settings.processor.consumer_group}-new"}
    )
    later = award("R2", 1, "FLUSH", 40_000)
    await publish(settings, later)
    async with Running(restarted) as running:
        service = running.service
        await eventually(lambda: later.award_id in service.book.payouts, "the new award")
        assert set(service.book.payouts) == {unpaid.award_id, later.award_id}
        with pytest.raises(DomainError):
            await service.paid("T1", paid.award_id, "dealer-ana")
        # the payment order goes on from the mark, though nothing open held the highest one
        assert service.book.payouts[later.award_id].order == 3
    records = await read_topic(settings.bootstrap_servers, settings.payouts_topic, 20)
    created = [
        payout_pb2.Payout.FromString(r.value).award_id
        for r in records
        if len(payout_pb2.Payout.FromString(r.value).history) == 1
    ]
    assert sorted(created) == sorted(a.award_id for a in (paid, unpaid, later))  # once each
    ledger = [
        pot_pb2.LedgerEntry.FromString(r.value)
        for r in await read_topic(settings.bootstrap_servers, settings.ledger_topic, 20)
    ]
    paid_entries = [e for e in ledger if e.type == pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_PAID]
    assert [e.source_event_id for e in paid_entries] == [paid.award_id]


async def test_a_tombstone_takes_a_settled_prize_off_the_signs(
    kafka_bootstrap: str, unique: str
) -> None:
    """With no keep time a void is a tombstone on the open-payouts topic: the display following
    it takes the prize down, and one started afterwards never shows it."""
    settings = (await payout_settings(kafka_bootstrap, unique)).replace(settled_kept_seconds=0)
    large = award("R1", 5, "ROYAL_FLUSH", 2_000_000)
    await publish(settings, large)
    async with Running(settings) as running:
        await eventually(lambda: large.award_id in running.service.book.payouts, "the payout")
        async with display_of(settings) as signs:
            await eventually(lambda: _shows(signs, {large.award_id}), "the pending prize", 30)
            await running.service.void(large.award_id, "sup-luis", "misread hand")
            await eventually(lambda: _shows(signs, set()), "the prize taken down")
        mine = [r for r in await open_topic_records(settings) if r.key == large.award_id.encode()]
        assert mine[-1].value is None  # its tombstone
        read = "jackpot_display_restore_records_total"
        before = sample(read, topic=settings.open_payouts_topic)
        async with display_of(settings) as signs:
            await eventually(
                lambda: sample(read, topic=settings.open_payouts_topic) > before, "a restore"
            )
            await eventually(lambda: _listening(signs), "the web signs up")
            assert await pending_on_signs(signs) == set()


async def test_the_log_cleaner_leaves_only_the_open_payouts(
    kafka_bootstrap: str, unique: str
) -> None:
    """Settled payouts are tombstoned (keep time 0); with segments that roll at once, the
    broker's cleaner (every 15 s by default) removes them and their tombstones, and a restore
    then reads the open payouts and the marks, whatever was paid."""
    settings = (await payout_settings(kafka_bootstrap, unique)).replace(settled_kept_seconds=0)
    eager = {"segment.ms": "100", "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "0"}
    topic = TopicSpec(settings.open_payouts_topic, 2, {"cleanup.policy": "compact", **eager})
    await ensure_topics(kafka_bootstrap, [topic])
    prizes = [award(f"R{i}", 1, "FLUSH", 10_000 + i, table=f"T{i % 5}") for i in range(200)]
    for i, prize in enumerate(prizes):
        prize.pot_group_id = f"g{i % 4}"  # both partitions
    kept_open = prizes[:3]
    await publish(settings, *prizes)
    async with Running(settings) as running:
        service = running.service
        book = service.book
        await eventually(lambda: len(book.payouts) == len(prizes), "every payout", 30)
        groups = {book.partition_of[p.award_id]: p.pot_group_id for p in prizes}  # one each
        for prize in prizes[3:]:
            await service.paid(prize.table_id, prize.award_id, "dealer")
        written = len(await open_topic_records(settings))
        nudges = iter(range(10_000))

        async def cleaned() -> bool:
            # New records roll each partition's active segment (never cleaned), so the cleaner
            # can take the one before: a nudge on each partition, paid at once.
            for group in groups.values():
                nudge = award(f"N{next(nudges)}", 1, "FLUSH", 1, table="T0")
                nudge.pot_group_id = group
                await publish(settings, nudge)
                await eventually(partial(_in_book, book, nudge.award_id), "the nudge")
                await service.paid("T0", nudge.award_id, "dealer")
            keys = {r.key for r in await open_topic_records(settings)}
            return not keys & settled and keys >= {p.award_id.encode() for p in kept_open}

        settled = {p.award_id.encode() for p in prizes[3:]}
        await eventually(cleaned, "the cleaner removing the settled payouts", 120, step=3.0)
    left = len(await open_topic_records(settings))
    print(
        f"\nopen-payouts records: {written} written for {len(prizes)} awards, {left} after cleaning"
    )
    assert left <= 100  # the open ones, the marks and the last nudges' records
    async with Running(settings) as running:
        assert {a for a, p in running.service.book.payouts.items()} == {
            p.award_id for p in kept_open
        }
