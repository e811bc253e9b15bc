"""Dead letters: every refused input goes to jackpot.dead-letter.v1 with its bytes and a reason."""

from __future__ import annotations

import time

from aiokafka import AIOKafkaProducer
from google.protobuf.timestamp_pb2 import Timestamp

from jackpot.domain.errors import Reason
from jackpot.topics import DEAD_LETTER
from jackpot.v1 import common_pb2, dead_letter_pb2


def reject_reason(reason: Reason) -> int:
    """The protobuf RejectReason for a domain Reason (they share names)."""
    return int(common_pb2.RejectReason.Value(f"REJECT_REASON_{reason.value}"))


def dead_letter(
    source: str,
    reason: Reason,
    detail: str,
    original: bytes,
    table_id: str = "",
    topic: str = "",
    partition: int = -1,
    offset: int = -1,
) -> dead_letter_pb2.DeadLetter:
    now = Timestamp()
    now.FromNanoseconds(time.time_ns())
    return dead_letter_pb2.DeadLetter(
        source=source,
        reason=reject_reason(reason),  # type: ignore[arg-type]
        detail=detail,
        original=original,
        original_topic=topic,
        original_partition=partition,
        original_offset=offset,
        table_id=table_id,
        rejected_at=now,
    )


async def send_dead_letter(
    producer: AIOKafkaProducer, letter: dead_letter_pb2.DeadLetter, topic: str = DEAD_LETTER.name
) -> None:
    await producer.send_and_wait(topic, letter.SerializeToString(), key=letter.source.encode())
