"""The broker keeps the ledger and the pot state zstd-compressed, and the services read them.

``jackpot.topics`` sets ``compression.type: zstd`` on LEDGER and POT_STATE (issue 37, item 4;
docs/capacity.md): the producers send uncompressed batches and the broker compresses them. A
consumer then receives zstd batches, which aiokafka decodes only with its ``zstd`` extra
(cramjam): without it every reader of the ledger (the pot's takeover, the audit, the report, the
restore) would fail. This test asks the broker itself which codec its stored batches carry, by a
raw Fetch, and reads them back with the services' own consumer.
"""

from __future__ import annotations

import pytest
from aiokafka.client import AIOKafkaClient
from aiokafka.protocol.fetch import FetchRequest
from aiokafka.record.default_records import DefaultRecordBatch
from aiokafka.record.memory_records import MemoryRecords
from aiokafka.structs import TopicPartition

from jackpot.platform.kafka import KafkaConnection, ensure_topics, stop_client
from jackpot.topics import LEDGER, POT_STATE, TABLE_EVENTS, renamed

pytestmark = pytest.mark.integration

# Ledger-like values: what a zstd batch shrinks (a ledger entry repeats its group and table ids)
VALUES = [f"ledger entry {n} of scl-blackjack table scl-bj-01 seat 3".encode() for n in range(200)]
CODECS = {
    DefaultRecordBatch.CODEC_NONE: "none",
    DefaultRecordBatch.CODEC_GZIP: "gzip",
    DefaultRecordBatch.CODEC_SNAPPY: "snappy",
    DefaultRecordBatch.CODEC_LZ4: "lz4",
    DefaultRecordBatch.CODEC_ZSTD: "zstd",
}


async def stored_codecs(bootstrap: str, topic: str) -> set[str]:
    """The codecs of the record batches the broker holds at the start of partition 0, as a raw
    Fetch returns them (the consumer would hide them: it decompresses)."""
    client = AIOKafkaClient(bootstrap_servers=bootstrap)
    await client.bootstrap()
    try:
        await client.force_metadata_update()
        leader = client.cluster.leader_for_partition(TopicPartition(topic, 0))
        request = FetchRequest(1000, 1, 10_000_000, 1, [(topic, [(0, 0, 10_000_000)])])
        response = await client.send(leader, request)
        codecs = set()
        for _, partitions in response.topics:
            for _, error_code, *_, message_set in partitions:
                assert error_code == 0, f"fetch of {topic} refused: error {error_code}"
                records = MemoryRecords(message_set)
                while (batch := records.next_batch()) is not None:
                    codecs.add(CODECS[batch.compression_type])
        return codecs
    finally:
        await client.close()


async def test_the_ledger_and_pot_state_are_stored_zstd_and_read_back_whole(
    kafka_bootstrap: str, unique: str
) -> None:
    ledger = renamed(LEDGER, f"test.ledger.{unique}", 1)
    state = renamed(POT_STATE, f"test.pot-state.{unique}", 1)
    events = renamed(TABLE_EVENTS, f"test.table-events.{unique}", 1)  # no compression.type
    await ensure_topics(kafka_bootstrap, [ledger, state, events])
    connection = KafkaConnection({"bootstrap_servers": kafka_bootstrap})
    producer = connection.producer()
    await producer.start()
    try:
        for spec in (ledger, state, events):
            batch = producer.create_batch()
            for value in VALUES:
                assert batch.append(key=b"scl-blackjack", value=value, timestamp=None)
            batch.close()
            await (await producer.send_batch(batch, spec.name, partition=0))
    finally:
        await stop_client(producer)

    assert await stored_codecs(kafka_bootstrap, ledger.name) == {"zstd"}
    assert await stored_codecs(kafka_bootstrap, state.name) == {"zstd"}
    # the check tells codecs apart: a topic without the setting keeps what the producer sent
    assert await stored_codecs(kafka_bootstrap, events.name) == {"none"}

    for spec in (ledger, state):
        consumer = connection.consumer(auto_offset_reset="earliest")
        await consumer.start()
        try:
            consumer.assign([TopicPartition(spec.name, 0)])
            read: list[bytes] = []
            while len(read) < len(VALUES):
                fetched = await consumer.getmany(timeout_ms=10_000)
                assert fetched, f"{spec.name}: {len(read)} of {len(VALUES)} records read"
                read += [r.value for records in fetched.values() for r in records if r.value]
            assert read == VALUES
        finally:
            await stop_client(consumer)
