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
import gc
import logging
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiokafka
import pytest
from aiokafka import AIOKafkaProducer, TopicPartition
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
from packaging.requirements import Requirement
from packaging.version import Version

from jackpot.platform.exactly_once import (
    TXN_MANAGER_ATTRIBUTE,
    ExactlyOnceProcessor,
    ExactlyOnceSettings,
    NotCommitted,
    NotOwned,
    OutputRecord,
    Owned,
    ProcessorError,
    fatal_cause,
    retire_producer,
    settle_failures,
)
from jackpot.platform.metrics import ProcessorMetrics

pytestmark = pytest.mark.unit

SETTINGS = ExactlyOnceSettings(
    consumer_group="group", transactional_id_prefix="tx", instance_id="i-1", retry_backoff_ms=1
)


@dataclass
class Batch:
    records: list[OutputRecord] = field(default_factory=list)
    value: int = 0


class Counter:
    """A handler whose state is one number: the sum of the values it committed."""

    def __init__(self, journal: list[str]) -> None:
        self.journal = journal
        self.total = self.committed_total = 0
        self._next = self._committed_next = 0

    @property
    def next_offset(self) -> int:
        return self._next

    def restore(self, changelog: Mapping[bytes, bytes], committed: int | None) -> int | None:
        self.journal.append(f"restore {sorted(changelog.items())} from {committed}")
        self.total = self.committed_total = int(changelog.get(b"total", b"0"))
        self._next = self._committed_next = committed or 0
        return committed

    def apply(self, records: Sequence[Any]) -> Batch:
        self.total += sum(int(r.value) for r in records)
        self._next = records[-1].offset + 1
        return Batch([OutputRecord("changelog", str(self.total).encode(), b"total", 0)])

    def add(self, value: int) -> Batch:
        if value < 0:
            raise ValueError("refused")
        self.total += value
        return Batch([OutputRecord("changelog", str(self.total).encode(), b"total", 0)], value)

    def tick(self) -> None:
        return None

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
        if self.fail_commit is not None:
            raise self.fail_commit
        self.calls.append("commit")

    async def abort_transaction(self) -> None:
        self.calls.append("abort")

    async def stop(self) -> None:
        self.calls.append("stop")


@dataclass
class FakeConsumer:
    journal: list[str]
    committed_offset: int | None = 7
    seeks: list[tuple[TopicPartition, int]] = field(default_factory=list)

    async def committed(self, tp: TopicPartition) -> int | None:
        return self.committed_offset

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.journal.append(f"seek {tp.partition} {offset}")
        self.seeks.append((tp, offset))

    async def seek_to_beginning(self, tp: TopicPartition) -> None:
        self.journal.append(f"seek {tp.partition} beginning")

    def resume(self, tp: TopicPartition) -> None:
        pass

    def pause(self, tp: TopicPartition) -> None:
        self.journal.append(f"pause {tp.partition}")


def processor() -> tuple[ExactlyOnceProcessor[Counter], list[str], list[str]]:
    journal: list[str] = []
    made: list[str] = []
    eos: ExactlyOnceProcessor[Counter] = ExactlyOnceProcessor(
        "test",
        SETTINGS,
        {"bootstrap_servers": "127.0.0.1:1"},
        input_topic="in",
        changelog_topic="changelog",
        handler_factory=lambda p: Counter(journal),
        metrics=ProcessorMetrics(),
    )
    eos._consumer = FakeConsumer(journal)  # type: ignore[assignment]

    async def fencing_producer(partition: int) -> Any:
        journal.append(f"fence {SETTINGS.transactional_id(partition)}")
        made.append(f"new-{partition}")
        return FakeProducer(f"new-{partition}", journal)

    async def read_changelogs(partitions: list[int]) -> dict[int, dict[bytes, bytes]]:
        journal.append(f"read changelog {partitions}")
        return {p: {b"total": b"40"} for p in partitions}

    eos._fencing_producer = fencing_producer  # type: ignore[method-assign]
    eos._read_changelogs = read_changelogs  # type: ignore[method-assign]
    return eos, journal, made


async def owning(partition: int) -> tuple[ExactlyOnceProcessor[Counter], Owned[Counter], list[str]]:
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
    eos, owned, made = await owning(4)
    old_producer, old_handler = owned.producer, owned.handler
    old_handler.total = 99  # memory that a stale instance would trust
    journal = old_handler.journal
    journal.clear()
    await eos._abort(owned, error)
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
    await eos._abort(owned, KafkaConnectionError())
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


async def test_a_fenced_producer_halts_the_partition_and_refuses_changes() -> None:
    eos, owned, _ = await owning(2)
    owned.producer.fail_commit = ProducerFenced()  # type: ignore[attr-defined]
    with pytest.raises(NotCommitted):
        await eos.submit(2, lambda handler: handler.add(5))
    assert owned.halted
    assert owned.why_halted == "producer_fenced"
    assert eos.owned_partitions == []
    assert eos.halted_partitions == [2]
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
    assert eos._failure is None  # the service goes on: the rebalance takes the partition away
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
            f"{manager!r}, not a TransactionManager: jackpot.platform.exactly_once.fatal_cause "
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
    with pytest.raises(ProcessorError, match=TXN_MANAGER_ATTRIBUTE):
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
