"""The exactly-once processor's decisions, with stand-ins for Kafka (the real thing is in
tests/integration/test_pot_service.py and test_payout.py).

What is checked: a partition is fenced before its state is restored and before the consumer is
positioned (the order that closes the payout's old window); a producer-state error (seen after a
whole-cluster outage: OutOfOrderSequenceNumber forever) replaces the producer and restores the
partition again (the renewal fences like a takeover), any other error aborts on the same producer
and re-reads from the commit point; a fenced
producer halts the partition; a submitted change that is refused, or whose transaction fails,
leaves the handler at its last commit; a change for a partition not owned is refused.

The producer's fatal state is aiokafka's own: a real ``TransactionManager`` (the private
``AIOKafkaProducer._txn_manager`` that ``fatal_cause`` reads) put into its fatal state the way
aiokafka's sender does (issue 24 item 7); a test fails loudly when an aiokafka outside the range
pinned in pyproject.toml no longer has it.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import inspect
import logging
import tomllib
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import aiokafka
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.consumer.group_coordinator import GroupCoordinator
from aiokafka.errors import (
    IllegalOperation,
    KafkaConnectionError,
    KafkaError,
    OutOfOrderSequenceNumber,
    ProducerFenced,
    UnknownProducerId,
)
from aiokafka.producer.message_accumulator import MessageBatch
from aiokafka.producer.transaction_manager import TransactionManager, TransactionState
from aiokafka.structs import ConsumerRecord
from packaging.requirements import Requirement
from packaging.version import Version

from jackpot.platform import processor_clients
from jackpot.platform.aiokafka_private import (
    CONSUMER_COORDINATOR_ATTRIBUTE,
    COORDINATION_TASK_ATTRIBUTE,
    TXN_MANAGER_ATTRIBUTE,
    AiokafkaUnsupported,
    coordination_ended,
    fatal_cause,
    retire_producer,
    settle_failures,
)
from jackpot.platform.changelog import resume_point
from jackpot.platform.exactly_once import ExactlyOnceProcessor
from jackpot.platform.exactly_once_settings import ExactlyOnceSettings
from jackpot.platform.metrics import ProcessorMetrics
from jackpot.platform.partition_handler import OutputRecord
from jackpot.platform.partition_task import PartitionTask
from jackpot.platform.processor_errors import NotCommitted, NotOwned, ProcessorError
from jackpot.platform.waiting import wait_at_most
from jackpot.topics import CHANGELOG_OFFSET_KEY
from tests.polling import eventually

pytestmark = pytest.mark.unit

SETTINGS = ExactlyOnceSettings(
    consumer_group="group",
    transactional_id_prefix="tx",
    instance_id="i-1",
    retry_backoff_ms=1,
    group_commit_interval_ms=0,  # the group's offsets in every batch (the interval: its own tests)
)


@dataclass
class Batch:
    records: list[OutputRecord] = field(default_factory=list)
    value: int = 0


ALONE = 1_000


class Counter:
    """A handler whose state is one number: the sum of the values it committed."""

    def __init__(self, journal: list[str]) -> None:
        self.journal = journal
        self.total = self.committed_total = 0
        self._next = self._committed_next = 0
        self.applied: list[list[int]] = []  # the offsets of each batch applied
        self.ticking = False  # tick() writes a heartbeat record

    @property
    def next_offset(self) -> int:
        return self._next

    def restore(self, changelog: Mapping[bytes, bytes], committed: int | None) -> int | None:
        self.journal.append(f"restore {sorted(changelog.items())} from {committed}")
        self.total = self.committed_total = int(changelog.get(b"total", b"0"))
        self._next = self._committed_next = committed or 0
        return committed

    def apply(self, records: Sequence[Any]) -> Batch:
        if any(r.value == b"bad" for r in records):
            raise ValueError("a bug in the handler")
        # a value of ALONE or more is applied in a transaction of its own (as the pot's book
        # does a studio round's): the batch stops before it
        costly = [i for i, r in enumerate(records) if i and int(r.value) >= ALONE]
        records = records[: costly[0]] if costly else records
        self.applied.append([r.offset for r in records])
        self.total += sum(int(r.value) for r in records)
        self._next = records[-1].offset + 1
        return Batch([OutputRecord("changelog", str(self.total).encode(), b"total", 0)])

    def add(self, value: int) -> Batch:
        if value < 0:
            raise ValueError("refused")
        self.total += value
        return Batch([OutputRecord("changelog", str(self.total).encode(), b"total", 0)], value)

    def tick(self) -> Batch | None:
        if not self.ticking:
            return None
        self.journal.append("tick")
        return Batch([OutputRecord("heartbeats", b"beat", b"beat", 0)])

    def commit(self, batch: Batch) -> None:
        self.committed_total = self.total
        self._committed_next = self._next

    def rollback(self) -> None:
        self.total = self.committed_total
        self._next = self._committed_next

    def close(self) -> None:
        self.journal.append("close")


def transaction_manager(fatal: BaseException | None = None) -> TransactionManager:
    """aiokafka's own transaction manager, as a transactional producer holds it once started
    (its id and epoch given: READY) and in a transaction; with ``fatal``, failed fatally as
    aiokafka's sender fails it when its task dies (``Sender._fail_all``: ``fatal_error``)."""
    manager = TransactionManager("tx-test", 60_000)
    manager.set_pid_and_epoch(1, 0)
    manager.begin_transaction()
    if fatal is not None:
        manager.fatal_error(fatal)
        manager.wait_for_transaction_end().exception()  # retrieved: no asyncio warning
    return manager


@dataclass
class FakeProducer:
    name: str
    journal: list[str]
    fail_commit: BaseException | None = None
    fail_send: BaseException | None = None
    calls: list[str] = field(default_factory=list)
    sent: list[tuple[str, bytes | None]] = field(default_factory=list)
    _txn_manager: TransactionManager = field(default_factory=transaction_manager)
    gate: asyncio.Event | None = None  # set: commits wait for it
    committing: asyncio.Event = field(default_factory=asyncio.Event)  # a commit has begun
    commits: int = 0
    committed: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def begin_transaction(self) -> None:
        self.calls.append("begin")

    async def send(self, topic: str, value: bytes | None, **_: Any) -> Any:
        if self.fail_send is not None:
            raise self.fail_send
        self.sent.append((topic, value))
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        future.set_result(None)
        return future

    async def send_offsets_to_transaction(self, offsets: Any, group: str) -> None:
        self.calls.append(f"offsets {offsets}")

    async def commit_transaction(self) -> None:
        self.committing.set()
        if self.gate is not None:
            await self.gate.wait()
        if self.fail_commit is not None:
            raise self.fail_commit
        self.calls.append("commit")
        async with self.committed:
            self.commits += 1
            self.committed.notify_all()

    async def commits_reach(self, count: int) -> None:
        """Returns once ``count`` transactions have committed (fails the test after 5 s)."""
        async with self.committed:
            await asyncio.wait_for(self.committed.wait_for(lambda: self.commits >= count), 5)

    async def abort_transaction(self) -> None:
        self.calls.append("abort")

    async def stop(self) -> None:
        self.calls.append("stop")


@dataclass
class FakeCoordinationTask:
    """aiokafka's coordination task, as far as whether it has ended goes."""

    ended: bool = False

    def done(self) -> bool:
        return self.ended


@dataclass
class FakeCoordinator:
    """aiokafka's group coordinator, as far as a rejoin and its coordination task go."""

    rejoins: int = 0
    _coordination_task: FakeCoordinationTask = field(default_factory=FakeCoordinationTask)

    def request_rejoin(self) -> None:
        self.rejoins += 1


@dataclass
class FakeConsumer:
    """The group consumer: what the test feeds comes out of ``getmany`` one feed at a time,
    each only when its partition is asked for (or all are)."""

    journal: list[str]
    _coordinator: FakeCoordinator = field(default_factory=FakeCoordinator)
    committed_offset: int | None = 7
    seeks: list[tuple[TopicPartition, int]] = field(default_factory=list)
    pauses: list[int] = field(default_factory=list)
    resumes: list[int] = field(default_factory=list)
    feeds: list[dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]]] = field(
        default_factory=list
    )
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    drained: asyncio.Event = field(default_factory=asyncio.Event)
    requested: list[list[int]] = field(default_factory=list)  # per fetch; [] is all

    def feed(self, partition: int, *offsets: int, value: bytes = b"1") -> None:
        tp = TopicPartition("in", partition)
        self.drained.clear()
        self.feeds.append({tp: [record(partition, offset, value) for offset in offsets]})
        self.arrived.set()

    async def fetched(self) -> None:
        """Returns once every feed it may was handed out: the processor fetches again."""
        await asyncio.wait_for(self.drained.wait(), 5)

    def _take(
        self, partitions: set[TopicPartition]
    ) -> dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]] | None:
        for i, fed in enumerate(self.feeds):
            if not partitions or not partitions.isdisjoint(fed):
                return self.feeds.pop(i)
        return None

    async def getmany(
        self, *partitions: TopicPartition, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]]:
        self.requested.append(sorted(tp.partition for tp in partitions))
        taken = self._take(set(partitions))
        if taken is None:
            self.drained.set()
            self.arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.arrived.wait(), timeout_ms / 1000)
            taken = self._take(set(partitions))
        return taken or {}

    def last_stable_offset(self, tp: TopicPartition) -> int | None:
        return None

    async def stop(self) -> None:
        self.journal.append("consumer stop")

    async def committed(self, tp: TopicPartition) -> int | None:
        return self.committed_offset

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.journal.append(f"seek {tp.partition} {offset}")
        self.seeks.append((tp, offset))

    async def seek_to_beginning(self, tp: TopicPartition) -> None:
        self.journal.append(f"seek {tp.partition} beginning")

    def resume(self, tp: TopicPartition) -> None:
        self.resumes.append(tp.partition)

    def pause(self, tp: TopicPartition) -> None:
        self.journal.append(f"pause {tp.partition}")
        self.pauses.append(tp.partition)


def record(partition: int, offset: int, value: bytes = b"1") -> ConsumerRecord[bytes, bytes]:
    return ConsumerRecord("in", partition, offset, 0, 0, None, value, None, 0, len(value), ())


CREATED: list[ExactlyOnceProcessor[Counter]] = []


@pytest.fixture(autouse=True)
async def no_worker_left() -> AsyncIterator[None]:
    """Every partition worker a test started ends with it."""
    yield
    while CREATED:
        for owned in CREATED.pop()._owned.values():
            worker = getattr(owned, "worker", None)
            if worker is not None:
                worker.cancel()
                await asyncio.wait([worker])


def processor(
    settings: ExactlyOnceSettings = SETTINGS, tick_seconds: float | None = None
) -> tuple[ExactlyOnceProcessor[Counter], list[str], list[str]]:
    journal: list[str] = []
    made: list[str] = []
    eos: ExactlyOnceProcessor[Counter] = ExactlyOnceProcessor(
        "test",
        settings,
        {"bootstrap_servers": "127.0.0.1:1"},
        input_topic="in",
        changelog_topic="changelog",
        handler_factory=lambda p: Counter(journal),
        metrics=ProcessorMetrics(),
        tick_seconds=tick_seconds,
    )
    CREATED.append(eos)
    eos._consumer = FakeConsumer(journal)  # type: ignore[assignment]

    async def fencing_producer(partition: int) -> Any:
        journal.append(f"fence {SETTINGS.transactional_id(partition)}")
        made.append(f"new-{partition}")
        return FakeProducer(f"new-{partition}", journal)

    async def read_changelogs(partitions: list[int]) -> dict[int, dict[bytes, bytes]]:
        journal.append(f"read changelog {partitions}")
        return {p: {b"total": b"40"} for p in partitions}

    eos.fencing_producer = fencing_producer  # type: ignore[method-assign]
    eos.read_changelogs = read_changelogs  # type: ignore[method-assign]
    return eos, journal, made


async def owning(
    partition: int,
) -> tuple[ExactlyOnceProcessor[Counter], PartitionTask[Counter], list[str]]:
    eos, _, made = processor()
    await eos._on_assigned([TopicPartition("in", partition)])
    owned = eos._owned[partition]
    made.clear()
    return eos, owned, made


async def test_a_partition_is_fenced_then_restored_then_positioned() -> None:
    eos, journal, _ = processor()
    await eos._on_assigned([TopicPartition("in", 3)])
    assert journal == [
        "fence tx-3",
        "read changelog [3]",
        "restore [(b'total', b'40')] from 7",
        "seek 3 7",
    ]
    assert eos.owned_partitions == [3]
    handler = eos.handler(3)
    assert handler is not None
    assert handler.total == 40


async def test_a_partition_never_committed_is_read_from_the_beginning() -> None:
    eos, journal, _ = processor()
    eos._consumer.committed_offset = None  # type: ignore[union-attr]
    await eos._on_assigned([TopicPartition("in", 0)])
    assert journal[-1] == "seek 0 0"  # reset to the earliest kept offset


@pytest.mark.parametrize("error", [OutOfOrderSequenceNumber(), UnknownProducerId()])
async def test_a_producer_state_error_renews_the_producer_then_restores_the_partition(
    error: Exception,
) -> None:
    """The new producer fences like a takeover (perhaps the rightful owner, if this instance is
    a zombie), so the partition is restored from its changelog after it, never kept in memory."""
    _eos, owned, made = await owning(4)
    old_producer, old_handler = owned.producer, owned.handler
    old_handler.total = 99  # memory that a stale instance would trust
    journal = old_handler.journal
    journal.clear()
    await owned.abort(error)
    assert made == ["new-4"]
    assert owned.producer is not old_producer
    assert old_producer.calls == ["stop"]  # type: ignore[attr-defined]
    assert journal == [
        "fence tx-4",
        "read changelog [4]",
        "close",
        "restore [(b'total', b'40')] from 7",
        "seek 4 7",
    ]
    assert owned.handler is not old_handler
    assert owned.handler.total == 40
    assert not owned.halted


async def test_any_other_error_aborts_on_the_same_producer() -> None:
    eos, owned, made = await owning(4)
    old = owned.producer
    await owned.abort(KafkaConnectionError())
    assert made == []
    assert owned.producer is old
    assert old.calls == ["abort"]  # type: ignore[attr-defined]
    assert eos._consumer.seeks[-1] == (owned.tp, 7)  # type: ignore[union-attr]


async def test_a_submitted_change_commits_through_the_partitions_producer() -> None:
    eos, owned, _ = await owning(1)
    batch = await eos.submit(1, lambda handler: handler.add(2))
    assert batch.value == 2
    assert owned.handler.committed_total == 42
    assert owned.producer.calls == ["begin", "commit"]  # type: ignore[attr-defined]
    assert owned.producer.sent == [("changelog", b"42")]  # type: ignore[attr-defined]


async def test_a_refused_change_writes_nothing_and_keeps_the_committed_state() -> None:
    eos, owned, _ = await owning(1)
    with pytest.raises(ValueError, match="refused"):
        await eos.submit(1, lambda handler: handler.add(-1))
    assert owned.handler.total == 40
    assert owned.producer.calls == []  # type: ignore[attr-defined]


async def test_a_change_whose_transaction_fails_is_rolled_back_and_reported() -> None:
    eos, owned, _ = await owning(1)
    owned.producer.fail_commit = KafkaConnectionError()  # type: ignore[attr-defined]
    with pytest.raises(NotCommitted):
        await eos.submit(1, lambda handler: handler.add(5))
    assert owned.handler.total == 40
    assert "abort" in owned.producer.calls  # type: ignore[attr-defined]


async def test_a_bug_inside_a_transaction_aborts_it_before_it_is_raised() -> None:
    """An error no rule expects (a bug) in the send path: the transaction is not left open on
    the partition's producer (its next begin would fail), the memory is rolled back, and the
    error still reaches the caller."""
    eos, owned, _ = await owning(1)
    owned.producer.fail_send = RuntimeError("a bug")  # type: ignore[attr-defined]
    with pytest.raises(RuntimeError, match="a bug"):
        await eos.submit(1, lambda handler: handler.add(5))
    assert owned.handler.total == 40
    assert owned.producer.calls == ["begin", "abort"]  # type: ignore[attr-defined]


async def test_a_change_whose_caller_is_cancelled_runs_to_its_commit() -> None:
    """A caller that goes away mid-transaction (a cancelled gRPC call) does not cut it short."""
    eos, owned, _ = await owning(1)
    producer: FakeProducer = owned.producer  # type: ignore[assignment]
    producer.gate = asyncio.Event()
    call = asyncio.create_task(eos.submit(1, lambda handler: handler.add(2)))
    await producer.committing.wait()
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    producer.gate.set()
    await producer.commits_reach(1)
    assert owned.handler.committed_total == 42
    assert producer.calls == ["begin", "commit"]


async def test_a_fenced_producer_halts_the_partition_and_refuses_changes() -> None:
    eos, owned, _ = await owning(2)
    owned.producer.fail_commit = ProducerFenced()  # type: ignore[attr-defined]
    with pytest.raises(NotCommitted):
        await eos.submit(2, lambda handler: handler.add(5))
    assert owned.halted
    assert owned.why_halted == "producer_fenced"
    assert eos.owned_partitions == []
    assert eos.halted_partitions == [2]
    # the group decides: a rejoin gives the partition back, fenced and restored, only if this
    # instance still owns it (a transaction timeout fences too; issue 36)
    assert eos._consumer._coordinator.rejoins == 1  # type: ignore[union-attr]
    assert owned.handler.total == 40
    with pytest.raises(NotOwned):
        await eos.submit(2, lambda handler: handler.add(1))


async def test_a_revoked_partition_is_closed_and_forgotten() -> None:
    eos, owned, _ = await owning(5)
    await eos._on_revoked([TopicPartition("in", 5)])
    assert eos.owned_partitions == []
    assert owned.handler.journal[-1] == "close"
    assert owned.producer.calls[-1] == "stop"  # type: ignore[attr-defined]
    with pytest.raises(NotOwned):
        await eos.submit(5, lambda handler: handler.add(1))


async def test_a_transaction_fenced_while_its_records_are_sent_halts_the_partition() -> None:
    """Seen in the fault suite after a pause: the sender heard of the fencing first, so the next
    send raised IllegalOperation (not a KafkaError) and the whole service exited."""
    eos, owned, _ = await owning(3)
    producer: FakeProducer = owned.producer  # type: ignore[assignment]
    producer.fail_send = IllegalOperation("Can't send messages while not in transaction")
    producer._txn_manager = transaction_manager(fatal=ProducerFenced())
    with pytest.raises(NotCommitted):
        await eos.submit(3, lambda handler: handler.add(5))
    assert owned.halted
    assert owned.why_halted == "producer_fenced"
    assert eos._failure is None  # the service goes on: the group decides who owns it
    assert eos._consumer._coordinator.rejoins == 1  # type: ignore[union-attr]
    assert owned.handler.total == 40


async def test_a_transaction_that_became_abortable_while_sending_is_aborted() -> None:
    eos, owned, _ = await owning(3)
    producer: FakeProducer = owned.producer  # type: ignore[assignment]
    producer.fail_send = IllegalOperation("Can't send messages while not in transaction")
    with pytest.raises(NotCommitted):
        await eos.submit(3, lambda handler: handler.add(5))
    assert not owned.halted
    assert producer.calls[-1] == "abort"
    assert owned.handler.total == 40


async def test_a_producer_whose_sender_died_is_renewed_and_the_partition_restored() -> None:
    """Seen in a whole-cluster outage: a connection reset killed aiokafka's sender task, the
    transaction failed fatally without any fencing, and the abort itself was refused; the
    service exited and the fault suite counted the bets it never collected as lost."""
    eos, owned, made = await owning(3)
    producer: FakeProducer = owned.producer  # type: ignore[assignment]
    producer.fail_send = IllegalOperation("Can't send messages while not in transaction")
    producer._txn_manager = transaction_manager(
        fatal=KafkaError("Unexpected error during batch delivery")
    )
    with pytest.raises(NotCommitted):
        await eos.submit(3, lambda handler: handler.add(5))
    assert made == ["new-3"]
    assert owned.producer is not producer
    assert not owned.halted
    assert eos._failure is None
    assert owned.handler.total == 40


# ------------------------------------------ brokers gone: not fatal, retried (issue 36 item 4)


class UnreachableBrokers:
    """The fencing producer fails while ``down`` (as aiokafka's start does with no broker)."""

    def __init__(self, eos: ExactlyOnceProcessor[Counter]) -> None:
        self.down = True
        self.attempts = 0
        fencing = eos.fencing_producer

        async def fencing_producer(partition: int) -> Any:
            self.attempts += 1
            if self.down:
                raise KafkaConnectionError("Unable to bootstrap from 127.0.0.1:9092")
            return await fencing(partition)

        eos.fencing_producer = fencing_producer  # type: ignore[method-assign]


def cut_off(producer: Any) -> FakeProducer:
    """The producer's commit and abort both fail: the brokers cannot be reached."""

    async def unreachable_abort() -> None:
        raise KafkaConnectionError("Unable to connect to the transaction coordinator")

    producer.fail_commit = KafkaConnectionError()
    producer.abort_transaction = unreachable_abort
    return producer  # type: ignore[no-any-return]


async def test_an_abort_the_brokers_refuse_renews_the_producer_and_goes_on() -> None:
    """Seen in a whole-cluster outage: the abort could not reach the brokers; the partition was
    halted and the service exited ("pot cannot continue")."""
    eos, owned, made = await owning(2)
    producer = cut_off(owned.producer)
    with pytest.raises(NotCommitted):
        await eos.submit(2, lambda handler: handler.add(5))
    assert made == ["new-2"]
    assert owned.producer is not producer
    assert (owned.halted, owned.recovering, eos._failure) == (False, False, None)
    assert owned.handler.total == 40
    assert eos.writable


async def test_a_partition_that_cannot_be_taken_over_again_recovers_when_the_brokers_return() -> (
    None
):
    eos, owned, made = await owning(2)
    owned.start()
    brokers = UnreachableBrokers(eos)
    cut_off(owned.producer)
    with pytest.raises(NotCommitted):
        await eos.submit(2, lambda handler: handler.add(5))
    assert owned.recovering
    assert not owned.halted
    assert (eos.owned_partitions, eos.recovering_partitions, eos.writable) == ([], [2], False)
    assert eos.metrics.writable._value.get() == 0
    with pytest.raises(NotOwned):  # not served while recovering
        await eos.submit(2, lambda handler: handler.add(1))
    await eventually(lambda: brokers.attempts >= 3, "the worker never tried again", within=5)
    assert eos._failure is None
    assert owned.worker is not None
    assert not owned.worker.done()
    brokers.down = False
    await eventually(lambda: eos.writable, "the partition never recovered", within=5)
    assert eos.owned_partitions == [2]
    assert eos.metrics.writable._value.get() == 1
    assert made[-1] == "new-2"
    batch = await eos.submit(2, lambda handler: handler.add(1))
    assert (batch.value, owned.handler.committed_total) == (1, 41)


async def test_a_takeover_the_brokers_refuse_is_retried_through_the_group() -> None:
    eos, _, _ = processor(SETTINGS.model_copy(update={"retry_backoff_ms": 10}))
    brokers = UnreachableBrokers(eos)
    await eos._on_assigned([TopicPartition("in", 1)])
    assert eos._failure is None
    assert (eos.owned_partitions, eos.writable) == ([], False)
    coordinator: FakeCoordinator = eos._consumer._coordinator  # type: ignore[union-attr]
    await eventually(lambda: coordinator.rejoins == 1, "the group was never rejoined", within=5)
    brokers.down = False
    await eos._on_revoked([TopicPartition("in", 1)])  # what the rejoin does
    await eos._on_assigned([TopicPartition("in", 1)])
    assert (eos.owned_partitions, eos.writable) == ([1], True)


async def test_a_processing_bug_is_still_fatal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Waiting cures the brokers, not a bug: a handler that raises halts its partition and a
    worker that dies stops the service (exit 1, restarted)."""
    eos, owned, _ = await owning(0)

    async def broken(_: Any) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(PartitionTask, "_run_batch", broken)
    owned.pending.append(record(0, 7))
    owned.start()
    await eventually(lambda: eos._failure is not None, "the bug was not fatal", within=5)


async def test_a_renewal_checks_the_restored_state_as_a_takeover_does() -> None:
    """The payout's renewal restored without its catch-up and the service exited; the pot's
    would have run without the ledger check (R14)."""
    eos, owned, _ = await owning(4)
    checked: list[str] = []

    class Refusing(Counter):
        async def verify_restored(self) -> str:
            checked.append("verify")
            return "the stored state of g is at ledger entry 66, the ledger at 67"

    eos._factory = lambda p: Refusing([])
    await owned.abort(OutOfOrderSequenceNumber())
    assert checked == ["verify"]
    assert owned.halted
    assert owned.why_halted == "restored_state_refused"
    assert not owned.recovering


async def test_a_commit_the_brokers_never_answer_ends_at_the_deadline_and_renews() -> None:
    """aiokafka retries EndTxn for ever while the coordinator is gone; a worker stuck there
    never said NOT_SERVING. At the deadline the transaction's end is unknown, aiokafka refuses
    the abort of a committing transaction, and only a new producer (which makes the
    coordinator finish the old transaction first) and a restore tell what was committed."""
    eos, owned, made = await owning(2)
    eos.settings = SETTINGS.model_copy(update={"transaction_deadline_ms": 100})
    producer: FakeProducer = owned.producer  # type: ignore[assignment]
    producer.gate = asyncio.Event()  # never set: the commit waits for ever

    async def invalid_abort() -> None:
        raise AssertionError(
            "Invalid state transition TransactionState.COMMITTING_TRANSACTION -> "
            "TransactionState.ABORTING_TRANSACTION"
        )

    producer.abort_transaction = invalid_abort  # type: ignore[method-assign]
    with pytest.raises(NotCommitted):
        await asyncio.wait_for(eos.submit(2, lambda handler: handler.add(5)), 5)
    assert made == ["new-2"]
    assert owned.producer is not producer
    assert owned.handler.total == 40
    assert eos.writable


def test_a_deadline_not_below_the_transaction_timeout_is_refused() -> None:
    with pytest.raises(ValueError, match="transaction_deadline_ms"):
        SETTINGS.model_validate({**SETTINGS.model_dump(), "transaction_deadline_ms": 30_000})


def test_aiokafka_consumers_have_the_group_coordinator_a_rejoin_is_asked_of() -> None:
    """Fails loudly when aiokafka no longer keeps its group coordinator where
    ``ExactlyOnceProcessor._request_rejoin`` asks it (a fenced partition would stay halted)."""
    source = inspect.getsource(AIOKafkaConsumer.start)
    assert f"self.{CONSUMER_COORDINATOR_ATTRIBUTE} = GroupCoordinator(" in source
    assert callable(getattr(GroupCoordinator, "request_rejoin", None))


def test_aiokafka_consumers_keep_the_coordination_task_whose_end_is_watched() -> None:
    """Fails loudly when aiokafka no longer keeps its group coordination where
    ``coordination_ended`` looks, or no longer re-raises its end at every fetch."""
    assert f"self.{COORDINATION_TASK_ATTRIBUTE} = create_task(" in inspect.getsource(
        GroupCoordinator.__init__
    )
    assert f"self.{COORDINATION_TASK_ATTRIBUTE}.done()" in inspect.getsource(
        GroupCoordinator.check_errors
    )
    assert f"{CONSUMER_COORDINATOR_ATTRIBUTE}.check_errors()" in inspect.getsource(
        AIOKafkaConsumer.getmany
    )
    with pytest.raises(AiokafkaUnsupported, match=COORDINATION_TASK_ATTRIBUTE):
        coordination_ended(object())


class CoordinationEnded(FakeConsumer):
    """A group consumer whose coordination task ended: every fetch raises its error (aiokafka's
    ``check_errors``), as in fault campaign seed 36427."""

    def __init__(self, journal: list[str], *, ended: bool = True) -> None:
        super().__init__(journal)
        self._coordinator._coordination_task.ended = ended

    async def getmany(
        self, *partitions: TopicPartition, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]]:
        raise KafkaError(
            "Unexpected error during coordination RuntimeError('unable to perform operation on "
            "<TCPTransport closed=True reading=False>; the handler is closed')"
        )


async def test_a_consumer_whose_group_coordination_ended_is_replaced_after_giving_up_all() -> None:
    """Before, the pot exited ("pot cannot continue") and every restart during the outage
    exited again. Now every partition is given up as at a revocation (its producer retired),
    the consumer stopped, and a new one joins the group, retried while the brokers are gone;
    the instance is not writable meanwhile and nothing exits."""
    eos, journal, _ = processor()
    await eos._on_assigned([TopicPartition("in", 1), TopicPartition("in", 2)])
    producers = [eos._owned[p].producer for p in (1, 2)]
    lost = CoordinationEnded(journal)
    eos._consumer = lost  # type: ignore[assignment]
    joined = FakeConsumer(journal)
    attempts: list[bool] = []

    async def join_group() -> Any:
        attempts.append(eos.writable)
        if len(attempts) == 1:
            raise KafkaConnectionError("Unable to bootstrap from [...]")
        return joined

    eos._join_group = join_group  # type: ignore[method-assign]
    await eos._step()
    assert eos._owned == {}
    assert all(p.calls[-1] == "stop" for p in producers)  # type: ignore[attr-defined]
    assert "consumer stop" in journal
    assert attempts == [False, False]  # the first join refused; not writable while it tried
    assert eos._consumer is joined
    assert eos.writable
    assert eos.metrics.group_consumers_replaced._value.get() == 1
    await eos._on_assigned([TopicPartition("in", 2)])  # the group gives one back: taken over
    assert eos.owned_partitions == [2]


async def test_a_fetch_error_while_the_group_coordination_runs_is_raised() -> None:
    eos, journal, _ = processor()
    lost = CoordinationEnded(journal, ended=False)
    eos._consumer = lost  # type: ignore[assignment]
    with pytest.raises(KafkaError, match="Unexpected error during coordination"):
        await eos._step()
    assert eos.metrics.group_consumers_replaced._value.get() == 0


# ------------------------------------------------- aiokafka's private state (issue 24 item 7)

REPO = Path(__file__).resolve().parents[2]


def pinned_aiokafka() -> Requirement:
    """aiokafka's requirement in pyproject.toml."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    [found] = [r for r in map(Requirement, project["dependencies"]) if r.name == "aiokafka"]
    return found


def test_aiokafka_is_pinned_to_a_bounded_range_that_the_lock_and_the_venv_are_in() -> None:
    """``fatal_cause`` reads a private attribute: an aiokafka release may drop it, so the range
    is bounded above (a newer minor version must be let in on purpose, with this file's tests
    run against it), and what is locked and installed lies inside."""
    pinned = pinned_aiokafka()
    assert any(s.operator in ("<", "<=", "==", "~=") for s in pinned.specifier), pinned
    locked = [
        line.split("==", 1)[1].strip()
        for line in (REPO / "requirements.lock").read_text().splitlines()
        if line.startswith("aiokafka==")
    ]
    assert len(locked) == 1, locked
    assert Version(locked[0]) in pinned.specifier, (locked, str(pinned))
    assert Version(aiokafka.__version__) in pinned.specifier, (aiokafka.__version__, str(pinned))


async def test_a_transactional_producer_of_this_aiokafka_holds_the_transaction_manager() -> None:
    """Fails loudly when aiokafka no longer keeps its transaction state where ``fatal_cause``
    reads it (renamed, moved, or its fatal-state methods gone)."""
    producer = AIOKafkaProducer(bootstrap_servers="127.0.0.1:1", transactional_id="tx-guard")
    try:
        manager = getattr(producer, TXN_MANAGER_ATTRIBUTE, None)
        assert isinstance(manager, TransactionManager), (
            f"aiokafka {aiokafka.__version__}: AIOKafkaProducer.{TXN_MANAGER_ATTRIBUTE} is "
            f"{manager!r}, not a TransactionManager: jackpot.platform.aiokafka_private.fatal_cause "
            "can no longer tell a fenced producer from an abortable one"
        )
        assert manager.state is TransactionState.UNINITIALIZED
        assert fatal_cause(producer) is None
        manager.set_pid_and_epoch(7, 0)  # what the producer's start does on InitProducerId
        manager.begin_transaction()
        manager.fatal_error(ProducerFenced())  # what its sender does on ProducerFenced
        manager.wait_for_transaction_end().exception()
        assert manager.state is TransactionState.FATAL_ERROR
        assert isinstance(fatal_cause(producer), ProducerFenced)
    finally:
        await producer.stop()


async def test_fatal_cause_reads_a_real_managers_states_and_refuses_a_producer_without_one() -> (
    None
):
    fenced, died = ProducerFenced(), KafkaError("Unexpected error during batch delivery")
    healthy = FakeProducer("p", [])
    assert fatal_cause(healthy) is None  # type: ignore[arg-type]
    healthy._txn_manager.error_transaction(KafkaConnectionError())  # abortable, not fatal
    healthy._txn_manager.wait_for_transaction_end().exception()
    assert fatal_cause(healthy) is None  # type: ignore[arg-type]
    for cause in (fenced, died):
        producer = FakeProducer("p", [], _txn_manager=transaction_manager(fatal=cause))
        assert fatal_cause(producer) is cause  # type: ignore[arg-type]
    # the broken input: an aiokafka whose producer keeps no transaction manager there
    with pytest.raises(AiokafkaUnsupported, match=TXN_MANAGER_ATTRIBUTE):
        fatal_cause(object())  # type: ignore[arg-type]


# ------------------------------------------------ what a fenced producer leaves (issue 24 item 10)


def fenced_with_a_batch_unsent(name: str) -> AIOKafkaProducer:
    """A transactional producer as aiokafka's sender leaves it when the coordinator answers
    ProducerFenced to its AddPartitionsToTxn: the batch it held back for that partition failed
    (its message's future taken by the writer, as the processor's gather takes it), and the
    transaction failed fatally (``Sender._fail_all``: ``fail_all``, then ``fatal_error``)."""
    producer = AIOKafkaProducer(bootstrap_servers="127.0.0.1:1", transactional_id=name)
    manager = getattr(producer, TXN_MANAGER_ATTRIBUTE)
    manager.set_pid_and_epoch(3, 0)
    manager.begin_transaction()
    accumulator = producer._message_accumulator
    batch = MessageBatch(TopicPartition("out", 0), accumulator.create_builder(), 30, 0)
    sent = batch.append(key=None, value=b"paid", timestamp_ms=None)
    accumulator._batches[batch.tp].append(batch)
    fenced = ProducerFenced()
    accumulator.fail_all(fenced)
    manager.fatal_error(fenced)
    assert isinstance(sent.exception(), ProducerFenced)  # the writer heard it
    return producer


def never_retrieved(caplog: pytest.LogCaptureFixture) -> list[str]:
    gc.collect()
    return [r.getMessage() for r in caplog.records if "never retrieved" in r.getMessage()]


async def test_a_retired_fenced_producer_leaves_no_failure_for_the_collector_to_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """What a fenced payout left in one test (its transaction's waiter and an unsent batch's
    drain waiter, failed and never awaited) was logged, traceback and all, by a collection in
    a later test, inside its ast.parse: SystemError on Python 3.11.7. Retired by the
    processor, the producer leaves nothing; the broken input, the same producer stopped
    without it, shows what the collector then logs."""
    caplog.set_level(logging.ERROR, logger="asyncio")
    producer = fenced_with_a_batch_unsent("tx-retired")
    await retire_producer(producer)
    del producer
    assert never_retrieved(caplog) == []

    broken = fenced_with_a_batch_unsent("tx-stopped")
    await broken.stop()
    del broken
    logged = never_retrieved(caplog)
    assert len(logged) == 2, logged  # the transaction's waiter and the batch's drain waiter
    assert all("ProducerFenced" in line for line in logged), logged


async def test_settle_failures_takes_each_failure_once_and_nothing_else() -> None:
    producer = fenced_with_a_batch_unsent("tx-settled")
    assert settle_failures(producer) == 2
    assert settle_failures(producer) == 2  # taking again changes nothing
    healthy = AIOKafkaProducer(bootstrap_servers="127.0.0.1:1", transactional_id="tx-fine")
    assert settle_failures(healthy) == 0  # no transaction yet: nothing failed
    for client in (producer, healthy):
        await client.stop()


# ------------------------------------------- a pipeline per partition (issue 26 part 3)

TP0 = TopicPartition("in", 0)
OFFSETS_8 = f"offsets { {TP0: 8} }"


async def owning_many(
    *partitions: int, settings: ExactlyOnceSettings = SETTINGS, tick_seconds: float | None = None
) -> tuple[ExactlyOnceProcessor[Counter], FakeConsumer]:
    eos, _, _ = processor(settings, tick_seconds)
    await eos._on_assigned([TopicPartition("in", p) for p in partitions])
    return eos, eos._consumer  # type: ignore[return-value]


def producer_of(eos: ExactlyOnceProcessor[Counter], partition: int) -> FakeProducer:
    return eos._owned[partition].producer  # type: ignore[return-value]


def gated(eos: ExactlyOnceProcessor[Counter], partition: int) -> FakeProducer:
    """The partition's producer, whose commits wait until its ``gate`` is set."""
    producer = producer_of(eos, partition)
    producer.gate = asyncio.Event()
    return producer


@asynccontextmanager
async def running(eos: ExactlyOnceProcessor[Counter]) -> AsyncIterator[None]:
    """The processor's fetch loop, as :meth:`ExactlyOnceProcessor.run` drives it."""

    async def fetching() -> None:
        while True:
            await eos._step()

    task = asyncio.create_task(fetching())
    try:
        yield
    finally:
        task.cancel()
        await asyncio.wait([task])


async def until(condition: Callable[[], bool]) -> None:
    """Returns once ``condition`` holds, giving the other tasks their turns (5 s at most)."""
    async with asyncio.timeout(5):
        # a state the processor keeps, not an event it sets: checked at every turn
        while not condition():  # noqa: ASYNC110
            await asyncio.sleep(0)


async def in_flight(producer: FakeProducer) -> None:
    await asyncio.wait_for(producer.committing.wait(), 5)


def batches(producer: FakeProducer) -> Iterator[list[str]]:
    """The producer's transactions, each as its calls."""
    current: list[str] = []
    for call in producer.calls:
        current.append(call)
        if call in ("commit", "abort"):
            yield current
            current = []


async def test_a_partition_is_processed_while_anothers_transaction_is_in_flight() -> None:
    """The broken behaviour: one step fetched, ran every partition's transaction, then fetched
    again, so B's record waited for A's transaction before it was even fetched."""
    eos, consumer = await owning_many(0, 1)
    a, b = gated(eos, 0), producer_of(eos, 1)
    async with running(eos):
        consumer.feed(0, 7)
        await in_flight(a)
        consumer.feed(1, 7)
        await b.commits_reach(1)
        assert a.commits == 0  # A's transaction is still in flight
        assert eos._owned[1].handler.committed_total == 41
        a.gate.set()  # type: ignore[union-attr]
        await a.commits_reach(1)
    assert a.calls == ["begin", OFFSETS_8, "commit"]


async def test_what_arrives_during_a_transaction_goes_into_the_next_one() -> None:
    eos, consumer = await owning_many(0)
    a = gated(eos, 0)
    handler = eos._owned[0].handler
    async with running(eos):
        consumer.feed(0, 7)
        await in_flight(a)
        consumer.feed(0, 8)
        consumer.feed(0, 9, 10)
        consumer.feed(0, 11)
        await consumer.fetched()
        assert handler.applied == [[7]]
        a.gate.set()  # type: ignore[union-attr]
        await a.commits_reach(2)
    assert handler.applied == [[7], [8, 9, 10, 11]]  # one transaction for what waited
    assert a.calls == ["begin", OFFSETS_8, "commit", "begin", f"offsets { {TP0: 12} }", "commit"]
    assert handler.committed_total == 45


async def test_what_the_handler_leaves_of_a_batch_goes_first_into_the_next_transaction() -> None:
    """The pot's book stops a batch before a studio round's lock or result, so the records
    fetched with it commit without waiting for its thousands of prizes: what it left is
    neither lost nor applied twice, and comes before what arrived after it."""
    eos, consumer = await owning_many(0)
    a = gated(eos, 0)
    handler = eos._owned[0].handler
    async with running(eos):
        consumer.feed(0, 7)
        await in_flight(a)
        consumer.feed(0, 8, 9)
        consumer.feed(0, 10, value=b"1000")
        consumer.feed(0, 11, 12)
        await consumer.fetched()
        a.gate.set()  # type: ignore[union-attr]
        await a.commits_reach(3)
        consumer.feed(0, 13)
        await a.commits_reach(4)
    assert handler.applied == [[7], [8, 9], [10, 11, 12], [13]]
    assert handler.committed_total == 40 + 1 + (1 + 1) + (1_000 + 1 + 1) + 1
    # each transaction's state, then its resume point: the offset after what it applied
    assert a.sent == [
        ("changelog", value)
        for pair in ((b"41", b"8"), (b"43", b"10"), (b"1045", b"13"), (b"1046", b"14"))
        for value in pair
    ]


async def test_a_partition_at_its_bound_is_not_fetched_until_its_worker_catches_up() -> None:
    """Left out of the fetch, not paused: a pause drops what aiokafka fetched for it."""
    settings = SETTINGS.model_copy(update={"max_batch_records": 2, "pending_batches": 2})
    eos, consumer = await owning_many(0, 1, settings=settings)
    a = gated(eos, 0)
    owned = eos._owned[0]
    async with running(eos):
        consumer.feed(0, 7)
        await in_flight(a)
        consumer.feed(0, 8, 9)
        consumer.feed(0, 10, 11)
        await consumer.fetched()
        assert [r.offset for r in owned.pending] == [8, 9, 10, 11]  # two batches: its bound
        consumer.feed(0, 12)
        consumer.feed(1, 7)
        await producer_of(eos, 1).commits_reach(1)  # the other partition is fetched for
        assert consumer.requested[-1] == [1]
        assert [r.offset for r in owned.pending] == [8, 9, 10, 11]
        a.gate.set()  # type: ignore[union-attr]
        await a.commits_reach(4)
    assert owned.handler.applied == [[7], [8, 9], [10, 11], [12]]
    assert consumer.pauses == []


async def test_a_submitted_change_waits_for_the_partitions_batch_in_flight() -> None:
    eos, consumer = await owning_many(0, 1)
    a = gated(eos, 0)
    decided_on: list[int] = []

    def change(handler: Counter) -> Batch:
        decided_on.append(handler.committed_total)
        return handler.add(5)

    async with running(eos):
        consumer.feed(0, 7)
        await in_flight(a)
        submitted = asyncio.create_task(eos.submit(0, change))
        consumer.feed(1, 7)
        await producer_of(eos, 1).commits_reach(1)  # another partition went on meanwhile
        assert decided_on == []
        a.gate.set()  # type: ignore[union-attr]
        batch = await asyncio.wait_for(submitted, 5)
    assert batch.value == 5
    assert decided_on == [41]  # decided on the state the batch committed
    assert list(batches(a)) == [["begin", OFFSETS_8, "commit"], ["begin", "commit"]]
    assert eos._owned[0].handler.committed_total == 46


async def test_a_batch_waits_for_the_partitions_submitted_change_in_flight() -> None:
    eos, consumer = await owning_many(0, 1)
    a = gated(eos, 0)
    handler = eos._owned[0].handler
    async with running(eos):
        submitted = asyncio.create_task(eos.submit(0, lambda h: h.add(5)))
        await in_flight(a)
        consumer.feed(0, 7)
        consumer.feed(1, 7)
        await producer_of(eos, 1).commits_reach(1)
        await consumer.fetched()
        assert handler.applied == []
        a.gate.set()  # type: ignore[union-attr]
        await asyncio.wait_for(submitted, 5)
        await a.commits_reach(2)
    assert list(batches(a)) == [["begin", "commit"], ["begin", OFFSETS_8, "commit"]]
    assert handler.committed_total == 46


async def test_a_revocation_waits_for_the_transaction_in_flight_and_drops_what_waits() -> None:
    eos, consumer = await owning_many(0)
    a = gated(eos, 0)
    owned = eos._owned[0]
    async with running(eos):
        consumer.feed(0, 7)
        await in_flight(a)
        consumer.feed(0, 8)
        await consumer.fetched()
        revoking = asyncio.create_task(eos._on_revoked([TP0]))
        await until(lambda: owned.closing)
        assert 0 not in eos._owned  # nothing more is handed to it
        assert "stop" not in a.calls  # its producer is not closed under its transaction
        assert "close" not in owned.handler.journal
        a.gate.set()  # type: ignore[union-attr]
        await asyncio.wait_for(revoking, 5)
    assert a.calls == ["begin", OFFSETS_8, "commit", "stop"]
    assert owned.handler.applied == [[7]]  # 8 is the next owner's, from the committed offset
    assert owned.handler.journal[-1] == "close"
    assert owned.worker is not None
    assert owned.worker.done()


async def test_stopping_lets_the_transactions_in_flight_finish() -> None:
    eos, consumer = await owning_many(0)
    a = gated(eos, 0)
    owned = eos._owned[0]
    async with running(eos):
        consumer.feed(0, 7)
        await in_flight(a)
        stopping = asyncio.create_task(eos._shutdown())
        await until(lambda: owned.closing)
        assert "consumer stop" not in owned.handler.journal
        assert "stop" not in a.calls
        a.gate.set()  # type: ignore[union-attr]
        await asyncio.wait_for(stopping, 5)
    assert a.calls == ["begin", OFFSETS_8, "commit", "stop"]
    journal = owned.handler.journal
    assert journal.index("consumer stop") < journal.index("close")
    assert eos.owned_partitions == []


async def test_ticks_go_through_each_partitions_worker_after_its_transaction() -> None:
    eos, consumer = await owning_many(0, 1, tick_seconds=0.0)
    a, b = gated(eos, 0), producer_of(eos, 1)
    await until(lambda: not any(owned.tick_due for owned in eos._owned.values()))  # takeovers'
    for partition in (0, 1):
        eos._owned[partition].handler.ticking = True
    async with running(eos):
        consumer.feed(0, 7)
        await in_flight(a)
        await b.commits_reach(2)  # the idle partition ticks meanwhile
        assert a.calls == ["begin", OFFSETS_8]  # no tick inside A's transaction
        a.gate.set()  # type: ignore[union-attr]
        await a.commits_reach(2)
    assert list(batches(a))[:2] == [["begin", OFFSETS_8, "commit"], ["begin", "commit"]]
    # the batch's state, then where the partition's input resumes, then the tick's heartbeat
    assert a.sent[:3] == [("changelog", b"41"), ("changelog", b"8"), ("heartbeats", b"beat")]


async def test_a_partition_taken_over_ticks_at_once_not_a_tick_period_later() -> None:
    """What the restore found due (the payout's mark after its catch-up) is the worker's first
    transaction, before any batch; here no tick period ever comes (no fetch loop runs). A
    processor without ticks ticks at no takeover either."""
    eos, journal, _ = processor(tick_seconds=3600.0)
    eos._factory = lambda _: ticking(Counter(journal))
    await eos._on_assigned([TP0])
    producer = producer_of(eos, 0)
    await producer.commits_reach(1)
    assert list(batches(producer)) == [["begin", "commit"]]
    assert producer.sent == [("heartbeats", b"beat")]
    untimed, journal, _ = processor()
    untimed._factory = lambda _: ticking(Counter(journal))
    await untimed._on_assigned([TP0])
    assert not untimed._owned[0].tick_due


def ticking(handler: Counter) -> Counter:
    handler.ticking = True
    return handler


async def test_a_processing_failure_halts_the_partition_and_its_worker() -> None:
    eos, consumer = await owning_many(0, 1)
    owned = eos._owned[0]
    async with running(eos):
        consumer.feed(0, 7, value=b"bad")
        assert owned.worker is not None
        await asyncio.wait_for(asyncio.shield(owned.worker), 5)
        consumer.feed(0, 8)
        consumer.feed(1, 7)
        await producer_of(eos, 1).commits_reach(1)
    assert owned.halted
    assert owned.why_halted == "processing_failed"
    assert consumer.pauses == [0]
    assert producer_of(eos, 0).calls == []
    assert owned.pending == []
    assert eos.owned_partitions == [1]
    assert eos._failure is None


async def test_an_aborted_batch_drops_what_waits_and_reads_again_from_the_commit_point() -> None:
    eos, consumer = await owning_many(0)
    a = gated(eos, 0)
    owned = eos._owned[0]
    async with running(eos):
        consumer.feed(0, 7)
        await in_flight(a)
        consumer.feed(0, 8)
        await consumer.fetched()
        a.fail_commit = KafkaConnectionError()
        a.gate.set()  # type: ignore[union-attr]
        await until(lambda: "abort" in a.calls)
        assert consumer.seeks[-1] == (TP0, 7)
        assert owned.pending == []
        a.fail_commit = None
        consumer.feed(0, 7, 8)  # read again from the seek
        await a.commits_reach(1)
    assert owned.handler.applied == [[7], [7, 8]]
    assert owned.handler.committed_total == 42
    assert list(batches(a)) == [
        ["begin", OFFSETS_8, "abort"],
        ["begin", f"offsets { {TP0: 9} }", "commit"],
    ]


async def test_a_linger_gathers_a_batch_of_the_minimum_size() -> None:
    settings = SETTINGS.model_copy(update={"batch_linger_ms": 5_000, "batch_min_records": 3})
    eos, consumer = await owning_many(0, settings=settings)
    a = producer_of(eos, 0)
    async with running(eos):
        consumer.feed(0, 7)
        consumer.feed(0, 8)
        consumer.feed(0, 9)
        await a.commits_reach(1)
    assert eos._owned[0].handler.applied == [[7, 8, 9]]


async def test_a_linger_ends_without_the_minimum() -> None:
    settings = SETTINGS.model_copy(update={"batch_linger_ms": 10, "batch_min_records": 3})
    eos, consumer = await owning_many(0, settings=settings)
    async with running(eos):
        consumer.feed(0, 7)
        await producer_of(eos, 0).commits_reach(1)
    assert eos._owned[0].handler.applied == [[7]]


def test_the_transactional_producers_retry_after_the_configured_backoff() -> None:
    settings = SETTINGS.model_copy(update={"producer_retry_backoff_ms": 15})
    made: list[dict[str, Any]] = []

    class Connection:
        def __init__(self, options: Any) -> None:
            pass

        def producer(self, **extra: Any) -> Any:
            made.append(extra)
            raise RuntimeError("enough")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(processor_clients, "KafkaConnection", Connection)
        with pytest.raises(RuntimeError, match="enough"):
            asyncio.run(processor_clients.start_fencing_producer({}, settings, 2))
    assert made[0]["retry_backoff_ms"] == 15
    assert made[0]["transactional_id"] == "tx-2"
    assert ExactlyOnceSettings.model_fields["producer_retry_backoff_ms"].default == 20


@pytest.mark.parametrize(
    ("field_name", "value"),
    [("batch_min_records", 0), ("pending_batches", 0), ("batch_linger_ms", -1)],
)
def test_pipeline_settings_are_checked(field_name: str, value: int) -> None:
    with pytest.raises(ValueError, match=field_name):
        ExactlyOnceSettings(consumer_group="g", transactional_id_prefix="t", **{field_name: value})


async def test_a_cancellation_that_arrives_as_the_wait_ends_is_not_swallowed() -> None:
    """asyncio.wait_for on Python 3.11 returns instead: a cancelled service ran on (the pot's
    cancelled-mid-stream integration test hung on half its runs)."""
    event = asyncio.Event()
    waiting = asyncio.create_task(wait_at_most(event, 5))
    await asyncio.sleep(0)  # one turn: it is waiting on the event
    event.set()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting


def test_a_back_to_back_transaction_retries_its_partitions_after_the_configured_backoff() -> None:
    """aiokafka's sender answers CONCURRENT_TRANSACTIONS on a transaction's first
    AddPartitionsToTxn (the previous commit's markers still being written) with the pause the
    processor sets, not its own fixed 20 ms (issue 26: most of a back-to-back transaction)."""
    from aiokafka.errors import ConcurrentTransactions
    from aiokafka.producer import sender as aiokafka_sender

    from jackpot.platform.aiokafka_private import set_concurrent_transactions_backoff

    class Manager:
        txn_partitions: ClassVar[set[TopicPartition]] = set()  # nothing added yet: the first

    class Sender:
        _retry_backoff = 0.5
        _txn_manager = Manager()

    class Response:
        errors: ClassVar[list[Any]] = [("topic", [(0, ConcurrentTransactions.errno)])]

    handler = aiokafka_sender.AddPartitionsToTxnHandler(Sender(), [TopicPartition("topic", 0)])
    default = aiokafka_sender.BACKOFF_OVERRIDE
    try:
        set_concurrent_transactions_backoff(3)
        assert handler.handle_response(Response()) == pytest.approx(0.003)
        set_concurrent_transactions_backoff(7)
        assert handler.handle_response(Response()) == pytest.approx(0.007)
    finally:
        aiokafka_sender.BACKOFF_OVERRIDE = default
    assert ExactlyOnceSettings.model_fields["concurrent_transactions_backoff_ms"].default == 2
    with pytest.raises(ValueError, match="concurrent_transactions_backoff_ms"):
        ExactlyOnceSettings(
            consumer_group="g", transactional_id_prefix="t", concurrent_transactions_backoff_ms=0
        )


async def test_the_group_offsets_go_at_most_once_an_interval_and_once_input_stops() -> None:
    """Every batch writes where its partition resumes to the changelog; the consumer group's
    offsets (two more requests per transaction, issue 26) go at most once per
    group_commit_interval_ms, and within it after the last input."""
    settings = SETTINGS.model_copy(update={"group_commit_interval_ms": 300})
    eos, consumer = await owning_many(0, settings=settings)
    a = producer_of(eos, 0)
    async with running(eos):
        consumer.feed(0, 7)
        await a.commits_reach(1)
        consumer.feed(0, 8)
        await a.commits_reach(2)
        assert list(batches(a)) == [["begin", OFFSETS_8, "commit"], ["begin", "commit"]]
        assert a.sent[-1] == ("changelog", b"9")  # the second batch's resume point
        assert eos._owned[0].group_committed == 8
        await a.commits_reach(3)  # nothing more arrives: the group catches up alone
    assert list(batches(a))[2] == ["begin", f"offsets { {TP0: 9} }", "commit"]
    assert a.sent[-1] == ("changelog", b"9")  # that one wrote nothing else
    assert eos._owned[0].group_committed == 9
    await eos._shutdown()


def test_a_takeover_resumes_from_the_changelogs_offset_or_the_groups_whichever_is_further() -> None:
    where = "changelog partition 0"
    changelog = {b"total": b"40", CHANGELOG_OFFSET_KEY: b"12"}
    assert resume_point(changelog, 9, where) == 12  # the group lags by up to an interval
    assert changelog == {b"total": b"40"}  # the handler never sees the processor's record
    assert resume_point({CHANGELOG_OFFSET_KEY: b"12"}, 15, where) == 15
    assert resume_point({CHANGELOG_OFFSET_KEY: b"12"}, None, where) == 12
    assert resume_point({b"total": b"40"}, 9, where) == 9  # a changelog from before the record
    assert resume_point({}, None, where) is None  # never written: the beginning
    with pytest.raises(ProcessorError, match="changelog partition 0: unreadable input offset"):
        resume_point({CHANGELOG_OFFSET_KEY: b"twelve"}, 9, where)


async def test_a_takeover_hands_the_handler_the_changelogs_resume_point() -> None:
    eos, journal, _ = processor()

    async def read_changelogs(partitions: list[int]) -> dict[int, dict[bytes, bytes]]:
        return {p: {b"total": b"40", CHANGELOG_OFFSET_KEY: b"11"} for p in partitions}

    eos.read_changelogs = read_changelogs  # type: ignore[method-assign]
    await eos._on_assigned([TopicPartition("in", 2)])  # the group committed 7 (FakeConsumer)
    assert "restore [(b'total', b'40')] from 11" in journal
    assert "seek 2 11" in journal
    assert eos._owned[2].group_committed == 7  # still behind: it catches up by itself
    await eos._shutdown()
