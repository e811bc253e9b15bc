"""The broker the project installs works with the clients the services use (issue #2).

A protobuf table event goes through a real broker and comes back equal; a transaction that is
committed is visible to read_committed consumers and one that is aborted is not.
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from aiokafka import TopicPartition
from google.protobuf.timestamp_pb2 import Timestamp

from jackpot.platform.kafka import (
    KafkaConnection,
    committed_consumer,
    follow_latest,
    group_offsets,
    idempotent_producer,
)
from jackpot.v1 import common_pb2, table_events_pb2
from tests.conftest import TopicFactory
from tests.polling import eventually

pytestmark = pytest.mark.integration


async def drain(consumer, expected: int, timeout_ms: int = 10_000) -> list:  # type: ignore[no-untyped-def]
    """Read until `expected` records arrived or the broker has nothing more for `timeout_ms`."""
    records: list = []  # type: ignore[type-arg]
    while len(records) < expected:
        batch = await consumer.getmany(timeout_ms=timeout_ms)
        if not batch:
            break
        for partition_records in batch.values():
            records.extend(partition_records)
    return records


async def test_table_event_round_trips_through_kafka(
    kafka_bootstrap: str, make_topic: TopicFactory, unique: str
) -> None:
    topic = await make_topic("roundtrip")
    event = table_events_pb2.TableEvent(
        event_id=f"evt-{unique}",
        table_id="SCL-CAR-01",
        round_id="R-1",
        sequence=7,
        occurred_at=Timestamp(seconds=1_790_000_000),
        pot_group_id="scl-main",
        game=common_pb2.GAME_CARIBBEAN,
        round_locked=table_events_pb2.RoundLocked(
            bets=[
                table_events_pb2.SeatBet(seat=1, bet=1000),
                table_events_pb2.SeatBet(seat=4, bet=2000),
            ]
        ),
    )
    producer = idempotent_producer(kafka_bootstrap)
    await producer.start()
    try:
        metadata = await producer.send_and_wait(
            topic, event.SerializeToString(), key=event.pot_group_id.encode()
        )
    finally:
        await producer.stop()
    assert metadata.offset == 0

    consumer = committed_consumer(kafka_bootstrap, topic, group_id=f"g-{unique}")
    await consumer.start()
    try:
        records = await drain(consumer, 1)
    finally:
        await consumer.stop()
    assert len(records) == 1
    assert records[0].key == b"scl-main"
    decoded = table_events_pb2.TableEvent.FromString(records[0].value)
    assert decoded == event
    assert decoded.WhichOneof("payload") == "round_locked"
    assert [(b.seat, b.bet) for b in decoded.round_locked.bets] == [(1, 1000), (4, 2000)]


async def test_transactions_commit_and_abort_under_read_committed(
    kafka_bootstrap: str, make_topic: TopicFactory, unique: str
) -> None:
    topic = await make_topic("tx")
    producer = idempotent_producer(kafka_bootstrap, transactional_id=f"tx-{unique}")
    await producer.start()
    try:
        async with producer.transaction():
            await producer.send_and_wait(topic, b"committed-1")
        await producer.begin_transaction()
        await producer.send_and_wait(topic, b"aborted")
        await producer.abort_transaction()
        async with producer.transaction():
            await producer.send_and_wait(topic, b"committed-2")
    finally:
        await producer.stop()

    consumer = committed_consumer(kafka_bootstrap, topic, group_id=f"g-{unique}")
    await consumer.start()
    try:
        records = await drain(consumer, 3, timeout_ms=3_000)
    finally:
        await consumer.stop()
    assert [r.value for r in records] == [b"committed-1", b"committed-2"]


# follow_latest's idle restart, here: ten beat intervals of silence. A producer pausing that long
# between beats would legitimately see the follower rebuilt (and a beat sent meanwhile missed):
# the bound is the idle time, not how many beats may be lost.
BEAT_SECONDS = 0.1
IDLE_RESTART_SECONDS = 10 * BEAT_SECONDS
BEATS = 40


async def test_a_silent_follower_is_rebuilt_and_still_hears_what_comes_next(
    kafka_bootstrap: str, make_topic: TopicFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    """follow_latest's idle restart (a consumer silent after a broker restart keeps tables
    closed): rebuilt after the idle time, it loses nothing produced once it is following: every
    one of the 40 beats is heard, once (a follower from the end misses what was written before
    it found the end, so the beats start once a first record was heard)."""
    topic = await make_topic(partitions=1)
    heard: list[bytes] = []
    follower = asyncio.create_task(
        follow_latest(
            KafkaConnection({"bootstrap_servers": kafka_bootstrap}),
            [topic],
            lambda record: heard.append(record.value or b""),
            idle_restart_seconds=IDLE_RESTART_SECONDS,
        )
    )
    output: list[str] = []

    def rebuilt() -> int:
        output.append(capsys.readouterr().out)
        return "".join(output).count("kafka_follow_idle_restart")

    try:
        await eventually(lambda: rebuilt() >= 2, "not rebuilt twice while quiet", 15, 0.1)
        producer = idempotent_producer(kafka_bootstrap)
        await producer.start()
        try:

            async def following() -> bool:  # a record heard: it found the end and reads on
                await producer.send_and_wait(topic, b"ready")
                return b"ready" in heard

            await eventually(following, "the rebuilt follower heard nothing", 10, BEAT_SECONDS)
            restarts = rebuilt()
            for _ in range(BEATS):  # a beat every 100 ms, as the pot's heartbeats (the pace)
                await producer.send_and_wait(topic, b"beat")
                await asyncio.sleep(BEAT_SECONDS)
        finally:
            await producer.stop()
        await eventually(lambda: heard.count(b"beat") >= BEATS, f"not all {BEATS} beats heard", 10)
        assert heard.count(b"beat") == BEATS, f"{heard.count(b'beat')} beats heard of {BEATS}"
        assert rebuilt() == restarts, "rebuilt while the beats came: a beat could be missed"
    finally:
        follower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follower


async def test_group_offsets_tell_what_a_group_has_not_consumed_yet(
    kafka_bootstrap: str, make_topic: TopicFactory, unique: str
) -> None:
    """What the fault suite waits on before judging the books (the pot applied every event)."""
    topic = await make_topic("lag", partitions=2)
    group = f"g-{unique}"
    connection = KafkaConnection({"bootstrap_servers": kafka_bootstrap})
    assert await group_offsets(connection, group, topic) == {0: (0, 0), 1: (0, 0)}
    producer = idempotent_producer(kafka_bootstrap)
    await producer.start()
    try:
        for n in range(3):
            await producer.send_and_wait(topic, b"event %d" % n, partition=0)
    finally:
        await producer.stop()
    consumer = committed_consumer(kafka_bootstrap, topic, group_id=group)
    await consumer.start()
    try:
        assert len(await drain(consumer, 3)) == 3
        await consumer.commit({TopicPartition(topic, 0): 2})
    finally:
        await consumer.stop()
    assert await group_offsets(connection, group, topic) == {0: (2, 3), 1: (0, 0)}
