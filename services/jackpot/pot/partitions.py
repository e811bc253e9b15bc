"""Which partition holds what: partition counts from the broker, and the key -> partition map.

A pot group's records are keyed by its id; Kafka's default partitioner (murmur2, as the Java
client) decides the partition, so the same group id lands on the same partition of every topic
with the same partition count.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.partitioner import murmur2


async def topic_partitions(options: Mapping[str, Any], topics: Iterable[str]) -> dict[str, int]:
    """Partition count per topic; a topic that does not exist is absent from the result.

    ``options`` are the Kafka client options (bootstrap servers, security), as
    :meth:`jackpot.pot.settings.PotSettings.kafka_options` gives them.
    """
    wanted = list(topics)
    admin = AIOKafkaAdminClient(**options)
    await admin.start()
    try:
        described = await admin.describe_topics(wanted)
    finally:
        await admin.close()
    return {
        topic["topic"]: len(topic["partitions"])
        for topic in described
        if topic["error_code"] == 0 and topic["partitions"]
    }


def key_partition(key: str, partitions: int) -> int:
    """The partition Kafka's default partitioner gives a key."""
    hashed: int = murmur2(key.encode())
    return (hashed & 0x7FFFFFFF) % partitions
