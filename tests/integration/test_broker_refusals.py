"""A record the broker refuses is never acknowledged to its source (issue 36 item 7).

The places that tell a source "it is on Kafka" (docs/architecture.md, "What we trust the Kafka
client to do"), on the real broker, with a deterministic fault of the broker's own: one topic is
set to accept no record batch larger than some bytes (``max.message.bytes``), so the broker
answers MESSAGE_TOO_LARGE for the one large record and takes the others.

- The gateway's publisher (its spool's outbox): the refused record stays in the spool, the table
  closes (rule D5), nothing of its partition after it reaches the topic meanwhile (the pot would
  ignore the refused event once a later one of its table is applied, ``DUPLICATE_SEQUENCE``), the
  records of other topics the broker took are published once, and once the fault is cleared
  everything is on the topics exactly once, in spool order.
- The access log: an entry the broker refused is not reported written; it is written once the
  fault is cleared (aiokafka's producer refuses every later batch of the partition after a
  failed one: the writer must not stay stuck on it), and the chain verifies.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from jackpot.domain.access import Principal, Role
from jackpot.domain.cards import Game
from jackpot.gateway import metrics
from jackpot.platform.access_log import AccessLog, read_entries
from jackpot.platform.kafka import KafkaConnection, ensure_topics
from jackpot.tools.access_chain import verify_stream
from jackpot.topics import AUDIT, TopicSpec
from jackpot.v1 import dead_letter_pb2
from tests.integration.gateway_harness import (
    Device,
    read_topic,
    serving,
    table_events,
    wait_until,
)
from tests.integration.test_transaction_atomicity import refusing
from tests.polling import eventually

pytestmark = pytest.mark.integration

# The table-events topic takes batches up to this size: every event of the test but the large
# void, alone or together.
TABLE_EVENTS_MAX_BYTES = 10_000
# The refused void's reason: larger than the limit, and than a producer batch (16 KiB), so the
# void is a batch of its own and the records after it go in another.
LARGE_REASON = "the dealer explains at length " * 700
FAILED_ROUNDS = 3  # publishing rounds the broker refused before the fault is cleared
ANA = Principal("ana", frozenset({Role.OPERATOR}))


def failed_rounds() -> float:
    return float(metrics.PUBLISH_FAILURES.labels("MessageSizeTooLargeError")._value.get())


async def test_a_record_the_broker_refuses_stays_spooled_and_nothing_overtakes_it(
    kafka_bootstrap: str, unique: str, tmp_path: Path
) -> None:
    async with serving(kafka_bootstrap, unique, tmp_path / "spool.sqlite") as (running, _):
        gateway, settings = running.gateway, running.settings
        device = Device(running.target, "CAR-1", Game.CARIBBEAN)
        await device.connect()
        assert (await device.open_round("R0")).accepted
        assert (await device.void("before the fault")).accepted
        assert await gateway.drained()
        failed_before = failed_rounds()
        async with refusing(
            kafka_bootstrap, TopicSpec(settings.table_events_topic, 3), TABLE_EVENTS_MAX_BYTES
        ):
            assert (await device.open_round("R1")).accepted
            assert (await device.void(LARGE_REASON)).accepted  # durable in the spool
            for n in range(2, 6):
                assert (await device.open_round(f"R{n}")).accepted
                assert (await device.void(f"after the large one {n}")).accepted
            assert not (await device.void("no round is open")).accepted  # a dead letter
            await eventually(
                lambda: failed_rounds() - failed_before >= FAILED_ROUNDS,
                f"the broker never refused {FAILED_ROUNDS} publishing rounds",
                within=60,
            )
            waiting = [r.value for r in gateway.spool.pending()]
            assert any(LARGE_REASON.encode() in value for value in waiting), (
                "the refused void left the spool without the broker's acknowledgement"
            )
            await wait_until(lambda: not gateway.tables["CAR-1"].progressive_open, within=10)
            assert gateway.closed_reason["CAR-1"] == "events cannot be delivered to Kafka"
            published = table_events(await read_topic(kafka_bootstrap, settings.table_events_topic))
            assert [e.sequence for e in published] == [1], (
                "records of the partition overtook the refused one: "
                f"{[(e.sequence, e.round_voided.reason[:25]) for e in published]}"
            )
            letters = await read_topic(kafka_bootstrap, settings.dead_letter_topic)
            assert len(letters) == 1, f"the dead letter was published {len(letters)} times"
        assert await gateway.drained(within_seconds=30), "the spool did not drain"
        await wait_until(lambda: gateway.tables["CAR-1"].progressive_open, within=10)
    published = table_events(
        await read_topic(kafka_bootstrap, settings.table_events_topic, expected=6)
    )
    reasons = ["before the fault", LARGE_REASON, *(f"after the large one {n}" for n in range(2, 6))]
    assert [(e.sequence, e.round_voided.reason) for e in published] == list(
        enumerate(reasons, start=1)
    ), "not every event exactly once in spool order"
    letters = await read_topic(kafka_bootstrap, settings.dead_letter_topic, expected=1)
    (letter,) = [dead_letter_pb2.DeadLetter.FromString(r.value) for r in letters]
    assert letter.table_id == "CAR-1"


async def test_an_audit_entry_the_broker_refuses_is_not_reported_written_until_it_is(
    kafka_bootstrap: str, unique: str
) -> None:
    spec = dataclasses.replace(AUDIT, name=f"test.audit.{unique}")
    await ensure_topics(kafka_bootstrap, [spec])
    audit = AccessLog(kafka_bootstrap, spec.name, "pot-api:refusals")
    await audit.start()
    try:
        # The broker then knows the writer's producer on the audit partition.
        await asyncio.wait_for(audit.record(ANA, "configure_pot", "allowed", "scl", "before"), 30)
        async with refusing(kafka_bootstrap, spec):
            refused = audit.record(ANA, "configure_pot", "allowed", "scl", "while refused")
            await eventually(
                lambda: audit.write_failures >= 2, "the broker never refused the entry", within=30
            )
            assert not refused.done(), "an entry the broker refused was reported written"
            assert await details(kafka_bootstrap, spec.name) == ["before"]
        written = await asyncio.wait_for(refused, 30)
        after = await asyncio.wait_for(
            audit.record(ANA, "configure_pot", "allowed", "scl", "after"), 30
        )
        assert after.sequence == written.sequence + 1
    finally:
        await audit.stop()
    assert await details(kafka_bootstrap, spec.name) == ["before", "while refused", "after"]
    entries = read_entries(KafkaConnection({"bootstrap_servers": kafka_bootstrap}), spec.name)
    report = await verify_stream(entries)
    assert report.first_break is None, report.first_break


async def details(bootstrap: str, topic: str) -> list[str]:
    """The details of the test's entries on the audit topic, in order (not the writer's own
    software_verified entry, when the process verified its software)."""
    connection = KafkaConnection({"bootstrap_servers": bootstrap})
    return [
        entry.detail
        async for _, entry in read_entries(connection, topic)
        if entry is not None and entry.principal == ANA.name
    ]
