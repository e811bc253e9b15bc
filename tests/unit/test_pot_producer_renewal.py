"""The pot service's answer to a producer the brokers no longer accept (seen after a whole-cluster
outage: every transaction of the old producer failed with OutOfOrderSequenceNumber, forever).

No Kafka here: the partition's producer and the consumer are stand-ins; what is checked is the
decision — a producer-state error replaces the producer (a new epoch), any other error aborts
the transaction on the same producer — and that both undo the batch and re-read from the commit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from aiokafka import TopicPartition
from aiokafka.errors import KafkaConnectionError, OutOfOrderSequenceNumber, UnknownProducerId

from jackpot.pot.processor import PotProcessor
from jackpot.pot.service import OwnedPartition, PotService
from jackpot.pot.settings import PotSettings

pytestmark = pytest.mark.unit


@dataclass
class FakeProducer:
    name: str
    calls: list[str] = field(default_factory=list)

    async def abort_transaction(self) -> None:
        self.calls.append("abort")

    async def stop(self) -> None:
        self.calls.append("stop")


@dataclass
class FakeConsumer:
    seeks: list[tuple[TopicPartition, int]] = field(default_factory=list)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.seeks.append((tp, offset))


def service_with_partition() -> tuple[PotService, OwnedPartition, list[str]]:
    service = PotService(PotSettings(retry_backoff_ms=1, log_json=False))
    tp = TopicPartition("t", 4)
    processor = PotProcessor(4, source="test")
    owned = OwnedPartition(4, tp, processor, FakeProducer("old"))  # type: ignore[arg-type]
    service._consumer = FakeConsumer()  # type: ignore[assignment]
    made: list[str] = []

    async def fencing_producer(partition: int) -> Any:
        made.append(f"new-{partition}")
        return FakeProducer(f"new-{partition}")

    service._fencing_producer = fencing_producer  # type: ignore[method-assign]
    return service, owned, made


@pytest.mark.parametrize("error", [OutOfOrderSequenceNumber(), UnknownProducerId()])
async def test_a_producer_state_error_replaces_the_producer(error: Exception) -> None:
    service, owned, made = service_with_partition()
    old = owned.producer
    await service._abort(owned, error)
    assert made == ["new-4"]
    assert owned.producer is not old
    assert old.calls == ["stop"]  # type: ignore[attr-defined]
    assert not owned.halted
    assert service._consumer.seeks == [(owned.tp, owned.processor.next_offset)]  # type: ignore[union-attr]


async def test_any_other_error_aborts_on_the_same_producer() -> None:
    service, owned, made = service_with_partition()
    old = owned.producer
    await service._abort(owned, KafkaConnectionError())
    assert made == []
    assert owned.producer is old
    assert old.calls == ["abort"]  # type: ignore[attr-defined]
    assert service._consumer.seeks == [(owned.tp, owned.processor.next_offset)]  # type: ignore[union-attr]
