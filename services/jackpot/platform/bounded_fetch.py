"""The exactly-once processor's fetch, bounded per partition: only the partitions whose workers
are under their bound (``pending_batches`` batches not taken yet) are fetched for.

A partition at its bound is left out until its worker catches up, and what aiokafka fetched for
it stays in aiokafka's buffer (one fetch per partition). Not ``consumer.pause``: a pause drops
that buffer and a resume fetches it again; the pot's bench (a backlog, pre-published) ran at
about half the rate paused at the bound.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.structs import ConsumerRecord

from jackpot.platform.exactly_once_settings import ExactlyOnceSettings
from jackpot.platform.partition_task import PartitionTask
from jackpot.platform.waiting import wait_at_most

BOUND_RECHECK_MS = 5  # the longest fetch while a partition is left out at its bound

Fetched = dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]]


async def fetch_under_bound(
    consumer: AIOKafkaConsumer,
    tasks: Iterable[PartitionTask[Any]],
    settings: ExactlyOnceSettings,
    taken: asyncio.Event,
) -> Fetched:
    """The records of the partitions whose workers are under their bound; none (after waiting
    for ``taken``, poll_timeout_ms at most) while every worker is at it."""
    bound = settings.pending_batches * settings.max_batch_records
    live = [task for task in tasks if not task.idle]
    ready = [task.tp for task in live if len(task.pending) < bound]
    if live and not ready:  # every worker is at its bound: wait for one to take a batch
        taken.clear()
        await wait_at_most(taken, settings.poll_timeout_ms / 1000)
        return {}
    # Some left out: a short wait, so that one whose worker catches up meanwhile is fetched for
    # again soon. None left out: all assigned, as the group gave them.
    partial = len(ready) < len(live)
    fetched: Fetched = await consumer.getmany(
        *(ready if partial else ()),
        timeout_ms=min(settings.poll_timeout_ms, BOUND_RECHECK_MS)
        if partial
        else settings.poll_timeout_ms,
        max_records=settings.max_batch_records,
    )
    return fetched
