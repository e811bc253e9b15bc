"""Kafka plumbing shared by every service: client construction and topic creation.

Nothing here connects at import time; callers pass the bootstrap servers from their settings.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError

from jackpot.topics import TopicSpec


async def ensure_topics(
    bootstrap_servers: str, topics: Iterable[TopicSpec], replication_factor: int = 1
) -> None:
    """Create the topics that do not exist yet; existing ones are left as they are."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap_servers)
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
                await admin.create_topics(missing)
    finally:
        await admin.close()


def idempotent_producer(bootstrap_servers: str, **extra: object) -> AIOKafkaProducer:
    """A producer that never duplicates on retry: idempotence on, acks from all in-sync replicas."""
    options: dict[str, object] = {"linger_ms": 2, **extra}
    return AIOKafkaProducer(
        bootstrap_servers=bootstrap_servers, enable_idempotence=True, acks="all", **options
    )


def transactional_producer(bootstrap_servers: str, transactional_id: str) -> AIOKafkaProducer:
    """An idempotent producer with a transactional id (one per input partition fences zombies)."""
    return idempotent_producer(bootstrap_servers, transactional_id=transactional_id)


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
