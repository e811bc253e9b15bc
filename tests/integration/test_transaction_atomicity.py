"""All or nothing on the real broker (issue 36): a transaction one of whose records the broker
refuses never commits the others.

The fault is deterministic and the broker's own: one output topic of the pot (or the payout) is
set to accept no record batch larger than :data:`REFUSING_BYTES` (``max.message.bytes``), so the
broker answers that partition's produce with MESSAGE_TOO_LARGE while every other record of the
same transaction is acknowledged. aiokafka's sender waits for a transaction's batches to end,
failed or not, and then sends EndTxn(commit) (``MessageAccumulator.flush_for_commit``): Java's
``commitTransaction`` would throw instead (KAFKA-13967). A processor that commits with records in
flight and looks at their outcomes after the commit therefore commits part of the transaction:
the pot's ledger entries without the state that follows them (the defect of issue 36: "the stored
state of scl-blackjack is at ledger entry 66, the ledger at 67"), the payout's ordered payout
without its ledger entry. While the fault lasts, nothing of the pot's or the payout's
transactions may be visible to a ``read_committed`` reader; once it is cleared everything must be
there exactly once (rule M2, D4).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Coroutine
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import KafkaError
from loadtest.rounds import CONFIG
from prometheus_client import Counter as PromCounter

from jackpot.payout.service import PayoutService
from jackpot.payout.settings import PayoutSettings
from jackpot.pot import commands
from jackpot.pot.api import CommandPublisher
from jackpot.pot.metrics import PotMetrics
from jackpot.pot.service import PotService
from jackpot.topics import TopicSpec
from jackpot.v1 import pot_pb2, table_events_pb2
from tests.integration.test_payout import Running, award, ledger_types, payout_settings, publish
from tests.integration.test_pot_service import (
    assert_exactly_once,
    create_topics,
    pot_settings,
    produce,
    read_topic,
    running,
    scripted_events,
    wait_processed,
)
from tests.polling import eventually

pytestmark = pytest.mark.integration

# Smaller than any record batch of the topic's records (a batch's header alone is 61 bytes).
REFUSING_BYTES = 80
# Aborts seen before the fault is cleared: each is a transaction the broker refused part of.
ABORTS_WANTED = 3


@contextlib.asynccontextmanager
async def refusing(
    bootstrap: str, spec: TopicSpec, max_bytes: int = REFUSING_BYTES
) -> AsyncIterator[None]:
    """The broker refuses every record batch of ``spec``'s topic (larger than ``max_bytes``)
    until the block ends. AlterConfigs replaces a topic's whole configuration: its own is set
    back with it."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()

    async def configure(extra: dict[str, str]) -> None:
        resource = ConfigResource(ConfigResourceType.TOPIC, spec.name, {**spec.config, **extra})
        (response,) = await admin.alter_configs([resource])
        errors = [error for error, *_ in response.resources if error]
        assert not errors, f"AlterConfigs on {spec.name}: {response.resources}"
        wanted = extra.get("max.message.bytes")
        # The broker applies a change from its metadata log, after AlterConfigs answered.
        await eventually(
            lambda: max_message_bytes(admin, spec.name, wanted),
            f"{spec.name}'s max.message.bytes never became {wanted or 'the default'}",
        )

    try:
        await configure({"max.message.bytes": str(max_bytes)})
        yield
        await configure({})
    finally:
        await admin.close()


async def max_message_bytes(admin: AIOKafkaAdminClient, topic: str, wanted: str | None) -> bool:
    """The broker describes ``topic``'s max.message.bytes as ``wanted`` (None: its default)."""
    resource = ConfigResource(ConfigResourceType.TOPIC, topic, {"max.message.bytes": ""})
    (response,) = await admin.describe_configs([resource])
    if any(error for error, *_ in response.resources):
        # UNKNOWN_TOPIC_OR_PARTITION: the broker answering has not applied the topic's creation
        # from the metadata log yet (the controller already took the AlterConfigs): not yet.
        return False
    (entry,) = [e for r in response.resources for e in r[4] if e[0] == "max.message.bytes"]
    # (name, value, read_only, is_default (v0) or config_source (v1+: 5 is the default), ...)
    return entry[1] == wanted if wanted is not None else entry[3] in (True, 5)


@contextlib.asynccontextmanager
async def stopped_at_the_end(run: Coroutine[Any, Any, None]) -> AsyncIterator[asyncio.Task[None]]:
    """A service's ``run()`` as a task the test watches; at the end it is cancelled whatever
    happened to it (the test asserts on it, not this)."""
    task = asyncio.create_task(run)
    try:
        yield task
    finally:
        task.cancel()
        await asyncio.wait([task])
        if not task.cancelled():
            task.exception()  # retrieved: the assertions above judged it


async def refusals(
    aborted: PromCounter, service: asyncio.Task[None], name: str
) -> AsyncIterator[int]:
    """Yields at the first transaction refused, then once ABORTS_WANTED were (its retries): the
    moments to look at what was committed; fails if the service stopped meanwhile."""
    for aborts in (1, ABORTS_WANTED):
        await eventually(
            lambda n=aborts: aborted._value.get() >= n or service.done(),  # type: ignore[misc]
            f"{name} never had {aborts} transactions refused",
            within=60,
        )
        yield aborts
        assert not service.done(), f"{name} stopped: {service.exception()!r}"


def topic(specs: list[TopicSpec], name: str) -> TopicSpec:
    (spec,) = [s for s in specs if s.name == name]
    return spec


async def test_a_pot_transaction_whose_state_record_is_refused_commits_none_of_its_records(
    kafka_bootstrap: str, unique: str
) -> None:
    """Issue 36 item 2, the pot: the state topic refuses the group's snapshot; its ledger
    entries, awards and pot updates, in the same transactions, must not commit without it."""
    settings = pot_settings(kafka_bootstrap, unique, partitions=1, retry_backoff_ms=50)
    await create_topics(settings)
    events = scripted_events(["atomic-pot"], rounds_per_table=20, seed=36)
    metrics = PotMetrics()
    aborted = metrics.processor.transactions_aborted
    state = topic(settings.topic_specs(), settings.state_topic)
    async with refusing(kafka_bootstrap, state):
        await produce(settings, events)
        async with stopped_at_the_end(PotService(settings, metrics).run()) as pot:
            async for _ in refusals(aborted, pot, "the pot"):
                ledger = await read_topic(settings, settings.ledger_topic)
                updates = await read_topic(settings, settings.pot_updates_topic)
                assert (ledger, updates) == ([], []), (
                    f"committed without their state: {len(ledger)} ledger entries, "
                    f"{len(updates)} pot updates"
                )
    service = PotService(settings, PotMetrics())
    async with running(service):
        await wait_processed(settings)
        assert service.owned_partitions == [0], "the group's partition was halted"
    await assert_exactly_once(settings, events, partitions=1)


async def test_a_payout_transaction_whose_ledger_entry_is_refused_orders_nothing(
    kafka_bootstrap: str, unique: str
) -> None:
    """Issue 36 item 2, the payout: the ledger refuses the payout's ORDERED entry; the payout it
    orders, in the same transaction, must not commit without it (rule D4: every step of a
    payout is on the ledger), and once the ledger takes records again it is ordered once."""
    settings: PayoutSettings = await payout_settings(kafka_bootstrap, unique)
    settings = settings.replace(processor={"retry_backoff_ms": 50})
    prize = award("R36", 3, "FLUSH", 70_000)
    ledger = TopicSpec(settings.ledger_topic, 2)
    async with refusing(kafka_bootstrap, ledger):
        await publish(settings, prize)
        first = PayoutService(settings)
        async with stopped_at_the_end(first.run()) as payout:
            aborted = first.processor.metrics.transactions_aborted
            async for _ in refusals(aborted, payout, "the payout"):
                payouts = await read_topic(settings, settings.payouts_topic)
                assert payouts == [], f"{len(payouts)} payouts committed without their ledger entry"
    async with Running(settings) as second:
        await eventually(
            lambda: prize.award_id in second.service.book.payouts, "the prize was never ordered"
        )
    ordered = pot_pb2.LedgerEntryType.Name(pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_ORDERED)
    assert await ledger_types(settings, 1) == [(prize.award_id, ordered)]


async def test_an_admin_command_the_broker_refused_does_not_refuse_every_later_one(
    kafka_bootstrap: str, unique: str
) -> None:
    """A command refused by the broker is an error to its caller; the next one is published.
    On one producer, aiokafka's spent sequence numbers made the broker refuse every later
    command of the partition (OutOfOrderSequenceNumber) until the pot was restarted."""
    settings = pot_settings(kafka_bootstrap, unique, partitions=1)
    await create_topics(settings)
    events = topic(settings.topic_specs(), settings.table_events_topic)
    publisher = CommandPublisher(settings)
    await publisher.start()
    try:
        await publisher.publish(commands.create_group("first", CONFIG))  # the broker knows it
        async with refusing(kafka_bootstrap, events, max_bytes=2_000):
            with pytest.raises(KafkaError):
                await publisher.publish(commands.create_group("big", CONFIG, reason="x" * 4_000))
            await publisher.publish(commands.create_group("small", CONFIG))
    finally:
        await publisher.stop()
    published = [
        table_events_pb2.TableEvent.FromString(v)
        for v in await read_topic(settings, settings.table_events_topic)
    ]
    assert [e.pot_group_id for e in published] == ["first", "small"]
