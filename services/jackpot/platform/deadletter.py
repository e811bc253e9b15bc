"""Dead letters: every refused input goes to jackpot.dead-letter.v1 with its bytes and a reason.

The one builder of a ``DeadLetter``, for every service that refuses input (gateway, pot, payout).
Pure, no I/O: the pot's book builds its letters here and the service writes them with the rest
of its transaction; the gateway spools them.
"""

from __future__ import annotations

import time

from jackpot.domain.errors import Reason
from jackpot.platform.codec import reason_to_proto, timestamp_ns
from jackpot.v1 import dead_letter_pb2


def dead_letter(
    source: str,
    reason: Reason,
    detail: str,
    original: bytes,
    table_id: str = "",
    topic: str = "",
    partition: int = -1,
    offset: int = -1,
    at_ns: int | None = None,
) -> dead_letter_pb2.DeadLetter:
    """The letter for ``original`` refused for ``reason``, rejected at ``at_ns`` (default: now)."""
    now = timestamp_ns(time.time_ns() if at_ns is None else at_ns)
    return dead_letter_pb2.DeadLetter(
        source=source,
        reason=reason_to_proto(reason),
        detail=detail,
        original=original,
        original_topic=topic,
        original_partition=partition,
        original_offset=offset,
        table_id=table_id,
        rejected_at=now,
    )
