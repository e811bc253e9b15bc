"""The Kafka clients of the exactly-once processor: the group consumer that is given the input
partitions, and each partition's transactional producer, started so that it fences the
partition's previous owner before it is used (:mod:`jackpot.platform.exactly_once`, step 1).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener

from jackpot.platform.aiokafka_private import retire_producer
from jackpot.platform.exactly_once_settings import ExactlyOnceSettings
from jackpot.platform.kafka import KafkaConnection, stop_client


async def start_group_consumer(
    kafka_options: Mapping[str, Any],
    settings: ExactlyOnceSettings,
    assignor: Any,
    topic: str,
    listener: ConsumerRebalanceListener,
) -> AIOKafkaConsumer:
    """A started group consumer subscribed to ``topic``: the group assigns it partitions at its
    first fetch, and ``listener`` hears of each change."""
    consumer = KafkaConnection(kafka_options).consumer(
        group_id=settings.consumer_group,
        auto_offset_reset="earliest",
        partition_assignment_strategy=(assignor,),
        session_timeout_ms=settings.session_timeout_ms,
        heartbeat_interval_ms=settings.heartbeat_ms,
        max_poll_interval_ms=settings.max_poll_interval_ms,
        # aiokafka defaults this to the session timeout: a member still fencing and restoring
        # in its rebalance callback after 3 s would be evicted, rejoin, and evict the others
        # in turn (seen with two pot instances). A dead member still leaves after 3 s.
        rebalance_timeout_ms=settings.max_poll_interval_ms,
        client_id=settings.instance_id,
    )
    try:
        await consumer.start()
    except BaseException:
        await stop_client(consumer)
        raise
    consumer.subscribe([topic], listener=listener)
    return consumer


async def start_fencing_producer(
    kafka_options: Mapping[str, Any], settings: ExactlyOnceSettings, partition: int
) -> AIOKafkaProducer:
    """Start ``partition``'s transactional producer; returns once older epochs are fenced."""
    producer = KafkaConnection(kafka_options).producer(
        # A transaction sends all its records before it waits for any: they batch without
        # lingering, and the 2 ms linger only delayed the commit (bench: p50 6-8 -> 4-4.5 ms).
        linger_ms=0,
        transactional_id=settings.transactional_id(partition),
        transaction_timeout_ms=settings.transaction_timeout_ms,
        client_id=f"{settings.instance_id}-p{partition}",
        # A transaction begun right after a commit meets CONCURRENT_TRANSACTIONS while the
        # previous markers are written; AddOffsetsToTxn then retries after this (100 ms by
        # aiokafka's default), AddPartitionsToTxn after concurrent_transactions_backoff_ms.
        retry_backoff_ms=settings.producer_retry_backoff_ms,
    )
    await producer.start()
    try:
        # begin_transaction waits for InitProducerId, which completes only after the
        # broker finished or aborted the previous epoch's open transaction.
        await producer.begin_transaction()
        await producer.abort_transaction()
    except BaseException:
        await retire_producer(producer)
        raise
    return producer
