"""One Kafka transaction, all or nothing: begin, send every record (and the consumer group's
offsets when due), then commit only once every record is acknowledged.

aiokafka's commit flushes the batches and sends EndTxn(commit) whether or not they were
delivered (``MessageAccumulator.flush_for_commit``); Java's ``commitTransaction`` throws if a send
of the transaction failed (KAFKA-13967). Committing first committed transactions without one of
their records (issue 36; tests/integration/test_transaction_atomicity.py), so the outcome of
every send is awaited before the commit is asked for, and any failure is raised instead: the
caller aborts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from aiokafka import AIOKafkaProducer, TopicPartition

from jackpot.platform.partition_handler import OutputRecord


async def send_and_commit(
    producer: AIOKafkaProducer,
    records: list[OutputRecord],
    offsets: Mapping[TopicPartition, int] | None,
    consumer_group: str,
    traced: list[tuple[str, bytes]] | None,
) -> None:
    """One transaction of ``records`` (each without headers of its own carries ``traced``) and,
    when given, ``offsets`` for ``consumer_group``; raises the first failed send's error
    without committing."""
    await producer.begin_transaction()
    sent = [
        await producer.send(
            r.topic,
            r.value,
            key=r.key,
            partition=r.partition,
            headers=list(r.headers) or traced,
        )
        for r in records
    ]
    # Each failure marked retrieved whatever happens next (unretrieved ones are logged by the
    # garbage collector: settle_failures).
    delivered = asyncio.gather(*sent, return_exceptions=True)
    if offsets is not None:  # the offsets go while the records are in flight
        await producer.send_offsets_to_transaction(dict(offsets), consumer_group)
    # All or nothing: every record acknowledged before the commit is asked for (shielded: a
    # deadline must not cancel aiokafka's own delivery futures).
    for outcome in await asyncio.shield(delivered):
        if isinstance(outcome, BaseException):
            raise outcome
    await producer.commit_transaction()
