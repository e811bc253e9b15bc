"""Kafka plumbing shared by every service: client construction, security, topic creation.

Nothing here connects at import time; callers pass the bootstrap servers (and the security
options, :class:`KafkaSecurity`) from their settings.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

import structlog
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError, for_code

from jackpot.platform.settings import KafkaSecurity as KafkaSecurity
from jackpot.topics import TopicSpec

log = structlog.get_logger("jackpot.kafka")
STARTUP_TOPIC_WAIT_SECONDS = 15.0  # how long a starting service waits for its topics to appear


async def ensure_topics(
    bootstrap_servers: str,
    topics: Iterable[TopicSpec],
    replication_factor: int = 1,
    **client_options: Any,
) -> None:
    """Create the topics that do not exist yet; existing ones are left as they are."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap_servers, **client_options)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        missing = [
            NewTopic(t.name, t.partitions, replication_factor, topic_configs=dict(t.config))
            for t in topics
            if t.name not in existing
        ]
        if missing:
            # Another instance may create them between the listing and now.
            with contextlib.suppress(TopicAlreadyExistsError):
                response = await admin.create_topics(missing)
                # The broker answers per topic; a refusal (ACLs, bad config) is not an exception.
                for topic, code, *message in response.topic_errors:
                    if code not in (0, TopicAlreadyExistsError.errno):
                        raise for_code(code)(f"cannot create topic {topic}: {message}")
    finally:
        await admin.close()


async def topic_partitions(
    options: Mapping[str, Any], topics: Iterable[str], wait_seconds: float = 0.0
) -> dict[str, int]:
    """Partition count per topic; a topic that does not exist is absent from the result.

    ``options`` are the Kafka client options (bootstrap servers, security), as
    :meth:`jackpot.pot.settings.PotSettings.kafka_options` gives them. ``wait_seconds``: keep
    asking while some topic is missing, for a service starting right after its topics were
    created (a broker may not have the new topics' metadata yet).
    """
    wanted = list(topics)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_seconds
    admin = AIOKafkaAdminClient(**options)
    await admin.start()
    try:
        while True:
            described = await admin.describe_topics(wanted)
            counts = {
                topic["topic"]: len(topic["partitions"])
                for topic in described
                if topic["error_code"] == 0 and topic["partitions"]
            }
            if len(counts) == len(set(wanted)) or loop.time() >= deadline:
                return counts
            await asyncio.sleep(0.2)
    finally:
        await admin.close()


async def read_to_end(
    bootstrap_servers: str,
    topic: str,
    client_options: Mapping[str, Any],
    partitions: Collection[int] | None = None,
) -> list[ConsumerRecord[bytes, bytes]]:
    """Every committed record of ``topic`` (or of only its ``partitions``) from its beginning to
    the end offsets it has when the read starts, in offset order per partition (no consumer
    group, nothing committed)."""
    counts = await topic_partitions(
        {"bootstrap_servers": bootstrap_servers, **client_options}, [topic]
    )
    assigned = [
        TopicPartition(topic, p)
        for p in range(counts.get(topic, 0))
        if partitions is None or p in partitions
    ]
    if not assigned:
        return []
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap_servers,
        group_id=None,
        enable_auto_commit=False,
        isolation_level="read_committed",
        # seek_to_beginning waits for the fetch in flight: 20 ms, not the default 500 ms (the
        # pot's takeover reads a ledger partition this way)
        fetch_max_wait_ms=20,
        **client_options,
    )
    found: list[ConsumerRecord[bytes, bytes]] = []
    await consumer.start()
    try:
        consumer.assign(assigned)
        await consumer.seek_to_beginning(*assigned)
        ends = await consumer.end_offsets(assigned)
        remaining = {tp for tp in assigned if ends[tp] > 0}
        while remaining:
            batch = await consumer.getmany(*remaining, timeout_ms=1000)
            for tp, records in batch.items():
                found.extend(r for r in records if r.offset < ends[tp])
            for tp in list(remaining):
                if await consumer.position(tp) >= ends[tp]:
                    remaining.discard(tp)
    finally:
        await stop_client(consumer)
    return found


async def group_offsets(
    bootstrap_servers: str, group_id: str, topic: str, client_options: Mapping[str, Any]
) -> dict[int, tuple[int, int]]:
    """Each partition of ``topic``: (the offset consumer group ``group_id`` committed, 0 if none;
    the partition's end offset). For a topic without transactions the group has consumed a
    partition exactly when the two are equal."""
    counts = await topic_partitions(
        {"bootstrap_servers": bootstrap_servers, **client_options}, [topic]
    )
    partitions = [TopicPartition(topic, p) for p in range(counts.get(topic, 0))]
    if not partitions:
        return {}
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap_servers, group_id=None, **client_options
    )
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap_servers, **client_options)
    await consumer.start()
    try:
        ends = await consumer.end_offsets(partitions)
        await admin.start()
        committed = await admin.list_consumer_group_offsets(group_id, partitions=partitions)
    finally:
        await stop_client(consumer)
        await admin.close()
    offsets = {}
    for tp in partitions:
        done = committed.get(tp)
        offsets[tp.partition] = (max(done.offset, 0) if done is not None else 0, ends[tp])
    return offsets


def idempotent_producer(bootstrap_servers: str, **extra: object) -> AIOKafkaProducer:
    """A producer that never duplicates on retry: idempotence on, acks from all in-sync replicas."""
    options: dict[str, object] = {"linger_ms": 2, **extra}
    return AIOKafkaProducer(
        bootstrap_servers=bootstrap_servers, enable_idempotence=True, acks="all", **options
    )


def committed_consumer(
    bootstrap_servers: str, *topics: str, group_id: str | None, **extra: object
) -> AIOKafkaConsumer:
    """A consumer that reads only committed records and never commits offsets on its own."""
    return AIOKafkaConsumer(
        *topics,
        bootstrap_servers=bootstrap_servers,
        group_id=group_id,
        isolation_level="read_committed",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        **extra,
    )


async def stop_client(client: AIOKafkaConsumer | AIOKafkaProducer) -> None:
    """Stop an aiokafka client whatever state it is in, without ending the caller.

    After a broker restart, aiokafka's ``stop()`` can raise the CancelledError of one of its
    own internal tasks. Let through only a cancellation of the calling task itself: a loop that
    rebuilds its client must not die of the old one's.
    """
    try:
        await client.stop()
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
        log.warning("kafka_client_stop_cancelled", client=type(client).__name__)
    except Exception as error:
        log.warning("kafka_client_stop_failed", client=type(client).__name__, error=repr(error))


async def follow_latest(
    bootstrap_servers: str,
    topics: Sequence[str],
    on_record: Callable[[ConsumerRecord[bytes, bytes]], None],
    client_options: Mapping[str, Any],
    retry_seconds: float = 1.0,
    idle_restart_seconds: float | None = None,
    from_beginning: bool = False,
) -> None:
    """Follow ``topics`` from their end, forever: no consumer group, nothing committed.

    For readers that only need what is current (pot values, liveness, winners). When the broker
    is away the client is rebuilt after ``retry_seconds``; callers decide what silence means.
    ``idle_restart_seconds``: for topics that are never quiet when healthy (heartbeats), a
    client that has heard nothing for that long is rebuilt too - after a broker restart an
    aiokafka consumer can stay connected and silent, and silence keeps tables closed.
    ``from_beginning``: for compacted topics whose latest value per key is the state (payouts):
    read from the start, and again after every rebuild, so a stateless reader rebuilds it.
    """
    loop = asyncio.get_running_loop()
    while True:
        consumer = AIOKafkaConsumer(
            *topics,
            bootstrap_servers=bootstrap_servers,
            group_id=None,
            isolation_level="read_committed",
            enable_auto_commit=False,
            auto_offset_reset="earliest" if from_beginning else "latest",
            request_timeout_ms=5000,
            **client_options,
        )
        try:
            await consumer.start()
            heard = loop.time()
            while True:
                batch = await consumer.getmany(timeout_ms=250)
                for records in batch.values():
                    for record in records:
                        on_record(record)
                if batch:
                    heard = loop.time()
                elif idle_restart_seconds is not None and (
                    loop.time() - heard > idle_restart_seconds
                ):
                    log.info("kafka_follow_idle_restart", topics=list(topics))
                    break
        except asyncio.CancelledError:
            raise
        except Exception as error:
            log.warning("kafka_follow_retry", topics=list(topics), error=repr(error))
            await asyncio.sleep(retry_seconds)
        finally:
            await stop_client(consumer)
