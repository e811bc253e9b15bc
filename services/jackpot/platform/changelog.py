"""A processor's changelog read back at a takeover: the latest value per key of its partitions,
the input offset the last transaction wrote there, and the checks a restored state passes.

Input partition *p*'s state lives on changelog partition *p* (compacted); the processor
(:mod:`jackpot.platform.exactly_once`) reads it after it has fenced the previous owner, so nothing
is committed to it behind the read's back.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition

from jackpot.platform.kafka import STARTUP_TOPIC_WAIT_SECONDS, KafkaConnection, topic_partitions
from jackpot.platform.partition_handler import OutputRecord
from jackpot.platform.processor_errors import ProcessorError
from jackpot.topics import CHANGELOG_OFFSET_KEY

RESTORE_TIMEOUT_SECONDS = 120.0  # a takeover's changelog read at most


async def check_changelog_partitions(
    kafka_options: Mapping[str, Any], input_topic: str, changelog_topic: str
) -> None:
    """The state of input partition p is kept on changelog partition p: the changelog needs
    at least as many partitions as the input."""
    counts = await topic_partitions(
        kafka_options,
        [input_topic, changelog_topic],
        wait_seconds=STARTUP_TOPIC_WAIT_SECONDS,
    )
    inputs = counts.get(input_topic, 0)
    changelogs = counts.get(changelog_topic, 0)
    if not inputs or not changelogs:
        raise ProcessorError(
            f"topics {input_topic} and {changelog_topic} must exist "
            "(let the service create them, or create them from jackpot.topics)"
        )
    if changelogs < inputs:
        raise ProcessorError(
            f"{changelog_topic} has {changelogs} partitions, fewer than the {inputs} "
            f"of {input_topic}"
        )


def resume_record(topic: str, partition: int, next_offset: int) -> OutputRecord:
    """The changelog record of where a takeover resumes (written with the state, in the same
    transaction as the input it follows): :func:`resume_point` reads it back."""
    return OutputRecord(topic, str(next_offset).encode(), CHANGELOG_OFFSET_KEY, partition)


def resume_point(changelog: dict[bytes, bytes], committed: int | None, where: str) -> int | None:
    """Take the offset record out of a partition's changelog (``where``: its topic and
    partition); where its input resumes: the further of that offset and the consumer group's
    (None: neither was written). The changelog's is the last transaction's; the group's lags by
    up to ``group_commit_interval_ms``, and is all a changelog written before the record has."""
    raw = changelog.pop(CHANGELOG_OFFSET_KEY, None)
    if raw is None:
        return committed
    try:
        written = int(raw)
    except ValueError:
        raise ProcessorError(f"{where}: unreadable input offset {raw!r}") from None
    return written if committed is None else max(committed, written)


class RestoreTimedOut(TimeoutError):
    """A changelog was not read to its end within the restore deadline (the brokers slow or
    gone): the takeover is tried again."""


class RestoredStateRefused(Exception):
    """The handler refused the state it restored (the pot: it disagrees with the ledger)."""


async def verify_restored(handler: object) -> str:
    """A handler's optional ``verify_restored()``: why its restored state may not run, or ""."""
    verify = getattr(handler, "verify_restored", None)
    return str(await verify()) if verify is not None else ""


def changelog_consumer(kafka_options: Mapping[str, Any], client_id: str) -> AIOKafkaConsumer:
    """The consumer a processor reads its changelogs with (:func:`read_compacted` assigns it the
    partitions of each read; it is in no group)."""
    return KafkaConnection(kafka_options).consumer(
        auto_offset_reset="earliest",
        # A new assignment waits for the fetch in flight: with the default 500 ms every
        # restore took at least half a second, even of an empty changelog.
        fetch_max_wait_ms=20,
        client_id=client_id,
    )


async def read_compacted(
    consumer: AIOKafkaConsumer, topic: str, partitions: list[int], timeout_seconds: float
) -> dict[int, dict[bytes, bytes]]:
    """The latest value per key of ``topic``'s ``partitions``, read to their end offsets."""
    tps = [TopicPartition(topic, p) for p in partitions]
    consumer.assign(tps)
    latest: dict[int, dict[bytes, bytes]] = {p: {} for p in partitions}
    try:
        await consumer.seek_to_beginning(*tps)
        ends = await consumer.end_offsets(tps)
        remaining = {tp for tp in tps if ends[tp] > 0}
        deadline = time.monotonic() + timeout_seconds
        while remaining:
            if time.monotonic() > deadline:
                raise RestoreTimedOut(
                    f"restoring {topic} partitions {sorted(partitions)} took more than "
                    f"{timeout_seconds:g} s"
                )
            batch = await consumer.getmany(*remaining, timeout_ms=500)
            for tp, records in batch.items():
                for record in records:
                    if record.key is None:
                        continue
                    if record.value is None:
                        latest[tp.partition].pop(record.key, None)
                    else:
                        latest[tp.partition][record.key] = record.value
            for tp in list(remaining):
                if await consumer.position(tp) >= ends[tp]:
                    remaining.discard(tp)
    finally:
        consumer.assign([])
    return latest
