"""The one way the product reads Kafka (``jackpot.platform.kafka.TopicReader``), on a real broker.

A range is streamed from given offsets or from the broker's offsets-for-times, up to the end
offsets seen when the read began (a record written meanwhile is not read); ``latest`` finds each
key's last record from the tail in growing windows, so its cost is the tail, not the retention.
"""

from __future__ import annotations

import pytest
from structlog.testing import CapturingLogger

from jackpot.platform import kafka
from jackpot.platform.kafka import KafkaConnection, read_records
from tests.conftest import TopicFactory

pytestmark = pytest.mark.integration
HOUR_MS = 3_600_000
T0_MS = 1_796_000_000_000
WITHIN = 30.0  # a read that does not end fails here, naming the topic, not at the suite's timeout


async def write(bootstrap: str, topic: str, rows: list[tuple[int, bytes, bytes, int]]) -> None:
    """(partition, key, value, timestamp ms) each, in order."""
    producer = KafkaConnection({"bootstrap_servers": bootstrap}).producer()
    await producer.start()
    try:
        for partition, key, value, at_ms in rows:
            await producer.send(topic, value, key=key, partition=partition, timestamp_ms=at_ms)
        await producer.flush()
    finally:
        await producer.stop()


async def test_a_range_by_offsets_and_by_time_and_nothing_written_after_it_began(
    kafka_bootstrap: str, make_topic: TopicFactory
) -> None:
    topic = await make_topic("reader", partitions=2)
    rows = [(i % 2, b"k%d" % (i % 5), b"v%d" % i, T0_MS + i * HOUR_MS) for i in range(40)]
    await write(kafka_bootstrap, topic, rows)
    connection = KafkaConnection({"bootstrap_servers": kafka_bootstrap})
    whole = [r.value async for r in read_records(connection, topic, deadline_seconds=WITHIN)]
    assert sorted(whole) == sorted(v for _, _, v, _ in rows)  # every record, once
    async with connection.reader(topic) as reader:
        assert reader.partitions == [0, 1]
        firsts, ends = await reader.bounds()
        assert firsts == {0: 0, 1: 0}
        assert ends == {0: 20, 1: 20}
        at = await reader.offsets_for_time(T0_MS + 30 * HOUR_MS)
        assert at == {0: 15, 1: 15}  # records 30 and 31, the first at or after that time
        assert await reader.offsets_for_time(T0_MS + 99 * HOUR_MS) == ends
        got = [r.value async for r in reader.records(at, deadline_seconds=WITHIN)]
        assert sorted(got) == sorted(b"v%d" % i for i in range(30, 40))
        middle = [
            (r.partition, r.offset)
            async for r in reader.records({0: 3}, {0: 6}, deadline_seconds=WITHIN)
        ]
        assert middle == [(0, 3), (0, 4), (0, 5)]
        stream = reader.records(deadline_seconds=WITHIN)
        first = await anext(stream)
        await write(kafka_bootstrap, topic, [(first.partition, b"late", b"late", T0_MS)])
        rest = [r.value async for r in stream]
        assert b"late" not in rest
        assert len(rest) + 1 == 40


async def test_a_reader_closes_at_once_after_reading_to_the_end(
    kafka_bootstrap: str, make_topic: TopicFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # aiokafka's fetcher swallowed the stop's cancellation when the reader unassigned its
    # partitions just before closing: one close in two hung (caught only by stop_client's bound).
    topic = await make_topic("close", partitions=2)
    await write(kafka_bootstrap, topic, [(i % 2, b"k", b"v%d" % i, T0_MS + i) for i in range(6)])
    # a record written while the reader reads leaves a fetch in flight when it has read its end
    connection = KafkaConnection({"bootstrap_servers": kafka_bootstrap})
    logs = CapturingLogger()
    monkeypatch.setattr(kafka, "log", logs)
    for late in range(12):
        async with connection.reader(topic) as reader:
            stream = reader.records(deadline_seconds=WITHIN)
            first = await anext(stream)
            await write(kafka_bootstrap, topic, [(first.partition, b"k", b"late", T0_MS)])
            assert len([r async for r in stream]) == 5 + late  # not the one just written
    assert [c.args for c in logs.calls] == []  # no stop cut short by stop_client's bound


async def test_latest_reads_the_tail_in_growing_windows_until_every_key_is_found(
    kafka_bootstrap: str, make_topic: TopicFactory
) -> None:
    topic = await make_topic("latest", partitions=1)
    # "quiet" wrote once, long ago; "busy" writes on every record after it.
    rows = [(0, b"quiet", b"q0", T0_MS)]
    rows += [(0, b"busy", b"b%d" % i, T0_MS + i) for i in range(1, 200)]
    await write(kafka_bootstrap, topic, rows)
    connection = KafkaConnection({"bootstrap_servers": kafka_bootstrap})
    async with connection.reader(topic) as reader:
        tail_only = await reader.latest(window=10)
        assert {k: r.value for k, r in tail_only.items()} == {b"busy": b"b199"}
        both = await reader.latest([b"busy", b"quiet"], window=10)
        assert {k: r.value for k, r in both.items()} == {b"busy": b"b199", b"quiet": b"q0"}
        before = await reader.latest([b"busy"], end={0: 100}, window=10)
        assert before[b"busy"].value == b"b99"
        absent = await reader.latest([b"never"], window=10)
        assert absent.keys() == {b"busy", b"quiet"}  # read to the beginning, not found
