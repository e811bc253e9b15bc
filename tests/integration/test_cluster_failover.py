"""Three local brokers: acknowledged messages survive `kill -9` of the partition leader (issue #2).

Uses `deploy/local/kafka.sh cluster-up` (RF 3, min.insync.replicas 2); slow, marked `cluster`.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator

import pytest
from aiokafka import TopicPartition

from jackpot.platform.kafka import committed_consumer, ensure_topics, idempotent_producer
from jackpot.topics import TopicSpec
from tests.conftest import KAFKA_SH
from tests.integration.test_kafka_roundtrip import drain

pytestmark = pytest.mark.cluster

CLUSTER = "127.0.0.1:9192,127.0.0.1:9292,127.0.0.1:9392"


@pytest.fixture(scope="module")
def cluster_bootstrap() -> Iterator[str]:
    subprocess.run([KAFKA_SH, "cluster-up"], check=True)
    try:
        yield CLUSTER
    finally:
        subprocess.run([KAFKA_SH, "cluster-down"], check=False)


async def kafka_sh(*args: str) -> str:
    """Run deploy/local/kafka.sh off the event loop; return what it printed."""
    done = await asyncio.to_thread(
        subprocess.run, [KAFKA_SH, *args], check=True, capture_output=True, text=True
    )
    return done.stdout


async def produce(bootstrap: str, topic: str, values: list[bytes]) -> tuple[list[bytes], int]:
    """Send each value with acks=all; return those acknowledged and the partition leader's id."""
    producer = idempotent_producer(bootstrap, request_timeout_ms=15_000)
    await producer.start()
    acknowledged = []
    try:
        for value in values:
            await producer.send_and_wait(topic, value)
            acknowledged.append(value)
        leader = producer.client.cluster.leader_for_partition(TopicPartition(topic, 0))
    finally:
        await producer.stop()
    return acknowledged, leader


async def test_acknowledged_messages_survive_kill_of_the_leader(
    cluster_bootstrap: str, unique: str
) -> None:
    topic = f"test.failover.{unique}"
    await ensure_topics(
        cluster_bootstrap,
        [TopicSpec(topic, 1, {"min.insync.replicas": "2"})],
        replication_factor=3,
    )
    before, leader = await produce(cluster_bootstrap, topic, [b"a%d" % i for i in range(300)])
    assert leader in (1, 2, 3)

    await kafka_sh("kill", str(leader))
    survivors = ",".join(f"127.0.0.1:9{n}92" for n in (1, 2, 3) if n != leader)
    after, new_leader = await produce(survivors, topic, [b"b%d" % i for i in range(300)])
    assert new_leader != leader

    consumer = committed_consumer(survivors, topic, group_id=f"g-{unique}")
    await consumer.start()
    try:
        records = await drain(consumer, len(before) + len(after))
    finally:
        await consumer.stop()
    values = [r.value for r in records]
    assert values == before + after  # nothing lost, nothing duplicated, order kept

    await kafka_sh("start", str(leader))
    status = await kafka_sh("cluster-status")
    assert status.count("running") == 3, status
