"""What a partition's task (:mod:`jackpot.platform.partition_task`) and a takeover
(:mod:`jackpot.platform.takeover`) ask of the exactly-once processor that owns the partition, and
the failures they tell apart: those a new producer cures, those waiting cures.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol, TypeVar

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import (
    InvalidProducerEpoch,
    InvalidProducerIdMapping,
    InvalidTxnState,
    KafkaError,
    OutOfOrderSequenceNumber,
    UnknownProducerId,
)

from jackpot.platform.exactly_once_settings import ExactlyOnceSettings
from jackpot.platform.metrics import ProcessorMetrics
from jackpot.platform.partition_handler import PartitionHandler

# The producer's sequence or epoch is out of step with the brokers: only a new producer helps.
PRODUCER_STATE_ERRORS = (
    OutOfOrderSequenceNumber,
    UnknownProducerId,
    InvalidProducerEpoch,
    InvalidProducerIdMapping,
    InvalidTxnState,
)

# What waiting cures: the brokers unreachable or not ready, a request timed out, a restore that
# did not finish in its deadline. A partition that meets one of these while it is taken over
# again is retried, not given up (issue 36: a whole-cluster outage made the pot exit).
RECOVERABLE_ERRORS: tuple[type[BaseException], ...] = (KafkaError, OSError, TimeoutError)

H_co = TypeVar("H_co", bound="PartitionHandler[Any]", covariant=True)


def deadline(settings: ExactlyOnceSettings) -> asyncio.Timeout:
    """TimeoutError after transaction_deadline_ms: aiokafka waits for ever for brokers that are
    gone (a commit, an abort, InitProducerId all retry until answered)."""
    return asyncio.timeout(settings.transaction_deadline_ms / 1000)


class TaskHost(Protocol[H_co]):
    """What a partition's task asks of the processor that owns it."""

    name: str  # the service, for logs and spans
    settings: ExactlyOnceSettings
    metrics: ProcessorMetrics
    changelog_topic: str
    log: Any  # the processor's bound structlog logger

    @property
    def consumer(self) -> AIOKafkaConsumer | None:
        """The group consumer (None while it is being replaced)."""
        ...

    async def fencing_producer(self, partition: int) -> AIOKafkaProducer: ...
    async def read_changelogs(self, partitions: list[int]) -> dict[int, dict[bytes, bytes]]: ...
    def new_handler(self, partition: int) -> H_co: ...
    def heard(self) -> None:
        """The brokers answered (a transaction committed)."""
        ...

    def taken(self) -> None:
        """A worker took a batch: its partition may be under its bound again."""
        ...

    def ownership_changed(self) -> None: ...
    def request_rejoin(self) -> None: ...
    def worker_failed(self, error: BaseException) -> None: ...
