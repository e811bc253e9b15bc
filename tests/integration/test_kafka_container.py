"""The product's Kafka clients against a broker in a container (issue 25 item 5).

The broker's image is built on this machine from the project's debootstrapped base, Debian's
OpenJDK runtime and the Kafka jars of the local broker (``deploy/image/kafka-image.sh``; nothing
is pulled from a registry) and started through testcontainers on podman's Docker-compatible
socket (``tests/containers.py``, the ``kafka_container`` fixture). Records written through
:class:`~jackpot.platform.kafka.KafkaConnection` come back through its
:class:`~jackpot.platform.kafka.TopicReader`, committed transactions only.
"""

from __future__ import annotations

import pytest

from jackpot.platform.kafka import KafkaConnection, ensure_topics, read_records
from jackpot.topics import TopicSpec
from tests.containers import KafkaBroker

pytestmark = pytest.mark.integration
WITHIN = 30.0  # every read has a deadline: one that does not end fails naming its topic


async def test_the_broker_is_the_containers_own(kafka_container: KafkaBroker) -> None:
    wrapped = kafka_container.container.get_wrapped_container()
    wrapped.reload()
    assert wrapped.status == "running"
    admin = KafkaConnection({"bootstrap_servers": kafka_container.bootstrap}).admin()
    await admin.start()
    try:
        cluster = await admin.describe_cluster()
    finally:
        await admin.close()
    brokers = [f"{b['host']}:{b['port']}" for b in cluster["brokers"]]
    assert brokers == [kafka_container.bootstrap]


async def test_records_and_a_committed_transaction_come_back_an_aborted_one_does_not(
    kafka_container: KafkaBroker, unique: str
) -> None:
    connection = KafkaConnection({"bootstrap_servers": kafka_container.bootstrap})
    topic = f"test.container.{unique}"
    await ensure_topics(connection.bootstrap_servers, [TopicSpec(topic, 2, {})])
    producer = connection.producer()
    await producer.start()
    try:
        for n in range(20):
            await producer.send(topic, b"plain-%d" % n, key=b"k%d" % (n % 4), partition=n % 2)
        await producer.flush()
    finally:
        await producer.stop()
    transactional = connection.producer(transactional_id=f"test-container-{unique}")
    await transactional.start()
    try:
        async with transactional.transaction():
            await transactional.send(topic, b"committed", partition=0)
        await transactional.begin_transaction()
        await transactional.send(topic, b"aborted", partition=1)
        await transactional.abort_transaction()
    finally:
        await transactional.stop()

    read = [r.value async for r in read_records(connection, topic, deadline_seconds=WITHIN)]
    assert sorted(read) == sorted([b"committed", *(b"plain-%d" % n for n in range(20))])
    async with connection.reader(topic) as reader:
        assert reader.partitions == [0, 1]
        firsts, ends = await reader.bounds()
        assert firsts == {0: 0, 1: 0}
        # each transaction's commit or abort marker takes an offset of its partition
        assert ends == {0: 12, 1: 12}
        latest = await reader.latest([b"k0", b"k3"])
        assert {k: r.value for k, r in latest.items() if k in (b"k0", b"k3")} == {
            b"k0": b"plain-16",
            b"k3": b"plain-19",
        }
