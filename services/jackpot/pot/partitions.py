"""Which partition holds what: partition counts from the broker, and the key -> partition map.

A pot group's records are keyed by its id; Kafka's default partitioner (murmur2, as the Java
client) decides the partition, so the same group id lands on the same partition of every topic
with the same partition count.
"""

from __future__ import annotations

from aiokafka.partitioner import murmur2

from jackpot.platform.kafka import topic_partitions

__all__ = ["key_partition", "topic_partitions"]


def key_partition(key: str, partitions: int) -> int:
    """The partition Kafka's default partitioner gives a key."""
    hashed: int = murmur2(key.encode())
    return (hashed & 0x7FFFFFFF) % partitions
