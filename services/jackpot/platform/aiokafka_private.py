"""What the exactly-once processor reads and sets of aiokafka's private state, and why.

aiokafka (0.14, the range pinned in pyproject.toml) keeps a transaction's fatal state, its
sender's CONCURRENT_TRANSACTIONS back-off, its consumer's rejoin request and whether its group
coordination still runs where no public API reaches them. Each is named here once, with the
reason the processor needs it; each raises
:class:`AiokafkaUnsupported` (or a unit test in tests/unit/test_exactly_once.py fails) when an
aiokafka release moves it, rather than letting the processor guess.
"""

from __future__ import annotations

from typing import Any

import aiokafka
import aiokafka.producer.sender as aiokafka_sender
from aiokafka import AIOKafkaProducer
from aiokafka.errors import IllegalOperation

from jackpot.platform.kafka import stop_client


class AiokafkaUnsupported(RuntimeError):
    """aiokafka does not keep, where this module reads it, what the processor needs to run
    safely: the service must not start, or must stop (an aiokafka outside the pinned range)."""


# The group coordinator of aiokafka's consumer, whose request_rejoin makes it rejoin at its next
# poll (aiokafka 0.14 consumer/group_coordinator.py); tests/unit/test_exactly_once.py fails when
# it is gone.
CONSUMER_COORDINATOR_ATTRIBUTE = "_coordinator"


def request_rejoin(consumer: object) -> None:
    """Make a group consumer rejoin its group at its next poll (aiokafka has no public call for
    it). AiokafkaUnsupported when the coordinator has no ``request_rejoin``."""
    why = "a fenced partition cannot be given back"
    _coordinator_part(consumer, "request_rejoin", why)()


def _coordinator_part(consumer: object, attribute: str, why: str) -> Any:
    """An attribute of the consumer's private group coordinator; AiokafkaUnsupported, saying
    ``why`` it is needed, when this aiokafka has none."""
    coordinator = getattr(consumer, CONSUMER_COORDINATOR_ATTRIBUTE, None)
    part = getattr(coordinator, attribute, None)
    if part is None:
        raise AiokafkaUnsupported(
            f"aiokafka {aiokafka.__version__}: the consumer has no "
            f"{CONSUMER_COORDINATOR_ATTRIBUTE}.{attribute}, so {why} "
            "(see the range pinned in pyproject.toml)"
        )
    return part


# The group coordinator's background task (aiokafka 0.14 consumer/group_coordinator.py). It ends
# on any unexpected error (seen in a whole-cluster restart: RuntimeError "unable to perform
# operation on <TCPTransport closed=True ...>", fault campaign seed 36427), and from then on every
# getmany raises KafkaError "Unexpected error during coordination": the consumer never joins its
# group again and is only fit to be replaced. tests/unit/test_exactly_once.py fails when it is gone.
COORDINATION_TASK_ATTRIBUTE = "_coordination_task"


def coordination_ended(consumer: object) -> bool:
    """The group consumer's coordination task has ended: it will never rejoin its group.
    AiokafkaUnsupported when aiokafka keeps no such task (an aiokafka outside the pinned range)."""
    why = "a group consumer whose coordination ended cannot be told"
    return bool(_coordinator_part(consumer, COORDINATION_TASK_ATTRIBUTE, why).done())


# aiokafka keeps a transaction's fatal state only in the producer's private transaction manager
# (an ``aiokafka.producer.transaction_manager.TransactionManager``). The versions known to have
# it are the range pinned in pyproject.toml; tests/unit/test_exactly_once.py fails when it is
# gone, and so does ``fatal_cause`` (a processor that cannot tell fenced from abortable must not
# guess: it would abort where it must halt, and a fenced zombie would go on).
TXN_MANAGER_ATTRIBUTE = "_txn_manager"


# aiokafka retries a transaction's first AddPartitionsToTxn after CONCURRENT_TRANSACTIONS (the
# previous transaction's markers are still being written) after this module constant of its
# sender, not after the producer's retry_backoff_ms (aiokafka 0.14 producer/sender.py).
# tests/unit/test_exactly_once.py fails when it is gone or no longer read there.
CONCURRENT_TRANSACTIONS_BACKOFF_ATTRIBUTE = "BACKOFF_OVERRIDE"


def set_concurrent_transactions_backoff(milliseconds: int) -> None:
    """Make aiokafka retry a transaction's first AddPartitionsToTxn after CONCURRENT_TRANSACTIONS
    in ``milliseconds`` (process-wide: it is a constant of aiokafka's sender module)."""
    if not hasattr(aiokafka_sender, CONCURRENT_TRANSACTIONS_BACKOFF_ATTRIBUTE):
        raise AiokafkaUnsupported(
            f"aiokafka {aiokafka.__version__}: its sender has no "
            f"{CONCURRENT_TRANSACTIONS_BACKOFF_ATTRIBUTE}, so the back-to-back transaction's "
            "retry cannot be paced (see the range pinned in pyproject.toml)"
        )
    setattr(aiokafka_sender, CONCURRENT_TRANSACTIONS_BACKOFF_ATTRIBUTE, milliseconds / 1000)


def fatal_cause(producer: AIOKafkaProducer) -> BaseException | None:
    """Why the producer's transactions can never go on, if they cannot: fenced by a newer
    producer with its transactional id (ProducerFenced), or its sender task died (seen in a
    whole-cluster outage: a connection reset during a coordinator lookup). aiokafka keeps that
    state only in its transaction manager and has no public accessor for it: AiokafkaUnsupported
    when the producer has none (an aiokafka outside the pinned range)."""
    try:
        manager = getattr(producer, TXN_MANAGER_ATTRIBUTE)
    except AttributeError:
        raise AiokafkaUnsupported(
            f"aiokafka {aiokafka.__version__}: the producer has no {TXN_MANAGER_ATTRIBUTE}, so "
            "a failed transaction's fatal cause cannot be read (see the range pinned in "
            "pyproject.toml)"
        ) from None
    if manager is None or not manager.is_fatal_error():
        return None
    ended = manager.wait_for_transaction_end()
    cause: BaseException | None = (
        ended.exception() if ended.done() and not ended.cancelled() else None
    )
    return cause or IllegalOperation("the producer's transactions failed fatally")


def settle_failures(producer: AIOKafkaProducer) -> int:
    """Take (mark retrieved) the failures aiokafka leaves on a producer that nobody awaits: a
    fenced or dead sender fails its transaction's waiter and the drain waiter of every batch it
    had not sent yet. Left unretrieved, each is logged with its traceback when the garbage
    collector finds it, at a moment of its own; on Python 3.11.7 a traceback formatted by a
    collection that interrupted an ``ast.parse`` makes that parse raise SystemError (issue 24
    item 10: a fenced payout in one test broke a later test's parse). How many it took."""
    manager = getattr(producer, TXN_MANAGER_ATTRIBUTE, None)
    futures = [manager.wait_for_transaction_end()] if manager is not None else []
    # more private state: where it is not, only the collector's log lines come back (the
    # unit tests fail on it: tests/unit/test_exactly_once.py)
    accumulator = getattr(producer, "_message_accumulator", None)
    queues = getattr(accumulator, "_batches", {}).values()
    batches = [b for queue in queues for b in queue]
    batches += list(getattr(accumulator, "_pending_batches", ()))
    futures += [getattr(batch, "_drain_waiter", None) for batch in batches]
    settled = 0
    for future in futures:
        if future is not None and future.done() and not future.cancelled():
            settled += future.exception() is not None
    return settled


async def retire_producer(producer: AIOKafkaProducer) -> None:
    """Stop a producer this processor is done with, leaving no failure of it unretrieved."""
    await stop_client(producer)
    settle_failures(producer)
