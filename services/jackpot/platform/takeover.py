"""How an instance takes input partitions over (steps 1-3 of :mod:`jackpot.platform.exactly_once`):
fence the previous owners, then restore each partition's handler from its changelog, then check
the restored state, in that order, whether the group just assigned them or a task renews its
own producer (a renewal fences like a takeover, so it restores like one).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic

from aiokafka import AIOKafkaProducer, TopicPartition

from jackpot.platform import heap
from jackpot.platform.aiokafka_private import retire_producer
from jackpot.platform.changelog import resume_point, verify_restored
from jackpot.platform.partition_handler import H
from jackpot.platform.task_host import TaskHost, deadline


@dataclass(frozen=True, slots=True)
class Restored(Generic[H]):
    """One partition taken over: its fencing producer and its restored handler."""

    tp: TopicPartition
    producer: AIOKafkaProducer
    handler: H
    start: int | None  # the input offset to consume from (None: the partition's beginning)
    committed: int | None  # the consumer group's offset
    refused: str  # why the restored state may not run ('' when it may)


async def take_over(
    host: TaskHost[H],
    partitions: list[TopicPartition],
    replacing: Callable[[], None] | None = None,
) -> list[Restored[H]]:
    """Fence, restore and check ``partitions``; ``replacing`` (a renewal: the handler it
    replaces) is closed just before the new handlers are made. Raises what the brokers answered
    when they cannot be reached; the new producers are retired then."""
    settings = host.settings
    started = time.perf_counter()
    async with deadline(settings):
        producers = await asyncio.gather(
            *(host.fencing_producer(tp.partition) for tp in partitions)
        )
    fenced = time.perf_counter()
    try:
        changelogs = await host.read_changelogs([tp.partition for tp in partitions])
        restored = time.perf_counter()
        consumer = host.consumer
        assert consumer is not None
        async with deadline(settings):
            offsets = await asyncio.gather(*(consumer.committed(tp) for tp in partitions))
        host.log.info(
            "partitions_taken_over",
            partitions=[tp.partition for tp in partitions],
            fence_seconds=round(fenced - started, 3),
            restore_seconds=round(restored - fenced, 3),
            offsets_seconds=round(time.perf_counter() - restored, 3),
        )
        if replacing is not None:
            replacing()
        handlers = [host.new_handler(tp.partition) for tp in partitions]
        starts = [
            handler.restore(
                changelogs[tp.partition],
                resume_point(
                    changelogs[tp.partition],
                    committed,
                    f"{host.changelog_topic} partition {tp.partition}",
                ),
            )
            for tp, handler, committed in zip(partitions, handlers, offsets, strict=True)
        ]
        # Every partition's check at once: each reads its own ledger partition, and one after
        # another they added seconds to a takeover (the pot's kill -9 recovery).
        refusals = await asyncio.gather(*(verify_restored(h) for h in handlers))
        heap.settle()  # the restored state lives until the next takeover
    except BaseException:
        for producer in producers:
            await retire_producer(producer)
        raise
    return [
        Restored(tp, producer, handler, start, committed, refused)
        for tp, producer, handler, start, committed, refused in zip(
            partitions, producers, handlers, starts, offsets, refusals, strict=True
        )
    ]
