"""R14, M2 on the real broker: a pot state behind its ledger is repaired at the takeover, one
ahead of it halts its partition in one line (issue 36).

The topics are crafted as issue 36's broker fault left them. A pot plays the first part of a
script of two groups on two partitions and stops; the victim group's last state record (and the
resume point of its partition) is kept. A second pot plays a few more events and stops: the
ledger has the victim's entries of them, its state too. Then the kept state is written back to
the state topic: the stored state is one transaction behind its ledger, as when a transaction
committed without its state record. A third pot, the real composition root (``jackpot pot``),
takes over: it repairs the group, says so (log, access log, metric), plays the rest of the
script, and the Kafka ledger equals an uninterrupted in-memory run's entry for entry, every
award once, every update sequence once, and the books audit (``jackpot audit``, GroupAudit)
passes: nothing applied twice, nothing skipped. The events behind the lost state are either
consumed again (the resume point written back too, a new consumer group) and recognised by their
table sequences, or not (resumed after them) and counted from the ledger.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from structlog.testing import capture_logs

from jackpot.platform.access_log import read_entries
from jackpot.platform.kafka import KafkaConnection, idempotent_producer, stop_client
from jackpot.pot.main import compose_pot
from jackpot.pot.metrics import PotMetrics
from jackpot.pot.partitions import key_partition
from jackpot.pot.service import PotService
from jackpot.pot.settings import PotSettings
from jackpot.pot.state_records import state_key
from jackpot.pot.state_repair import RUNBOOK
from jackpot.topics import CHANGELOG_OFFSET_KEY
from jackpot.v1 import pot_pb2, table_events_pb2
from tests.integration.in_process import InProcess
from tests.integration.test_pot_service import (
    SETTLE_TIMEOUT,
    assert_exactly_once,
    create_topics,
    group_names,
    pot_settings,
    produce,
    read_topic,
    running,
    scripted_events,
    wait_processed,
)
from tests.polling import eventually

pytestmark = pytest.mark.integration

PARTITIONS = 2
LOST_EVENTS = 6  # the victim's events whose state record is lost


class Script:
    """Two groups' events, split where the victim's state is kept and where it is lost."""

    def __init__(self) -> None:
        self.victim, self.other = group_names(2, PARTITIONS)
        self.events = scripted_events([self.victim, self.other], rounds_per_table=30, seed=36)
        half = len(self.events) // 2
        after = [
            i for i, e in enumerate(self.events) if i >= half and e.pot_group_id == self.victim
        ][:LOST_EVENTS]
        self.first = self.events[:half]
        self.second = self.events[half : after[-1] + 1]
        self.rest = self.events[after[-1] + 1 :]

    def of(self, events: list[table_events_pb2.TableEvent], group: str) -> int:
        return sum(1 for e in events if e.pot_group_id == group)


async def state_records(settings: PotSettings, partition: int) -> dict[bytes, bytes]:
    """The latest committed value of every key of one state partition."""
    latest: dict[bytes, bytes] = {}
    async with KafkaConnection.of(settings).reader(settings.state_topic) as reader:
        async for record in reader.records(partitions=[partition]):
            if record.key is not None and record.value is not None:
                latest[record.key] = record.value
    return latest


async def write_back(settings: PotSettings, partition: int, records: dict[bytes, bytes]) -> None:
    """Records written to a state partition again, as a stored state older than its ledger."""
    producer = idempotent_producer(settings.bootstrap_servers)
    await producer.start()
    try:
        for key, value in records.items():
            await producer.send_and_wait(settings.state_topic, value, key=key, partition=partition)
    finally:
        await stop_client(producer)


async def last_entry(settings: PotSettings, group: str) -> int:
    values = await read_topic(settings, settings.ledger_topic)
    entries = [pot_pb2.LedgerEntry.FromString(v) for v in values]
    return max(e.ledger_sequence for e in entries if e.pot_group_id == group)


@contextlib.asynccontextmanager
async def jackpot_pot(settings: PotSettings, registry: CollectorRegistry) -> AsyncIterator[None]:
    """``jackpot pot``'s composition root (its access log, metrics in ``registry``)."""
    pot = InProcess("pot", partial(compose_pot, settings, registry=registry))
    await pot.start()
    try:
        yield
    finally:
        assert await pot.stop() == 0


def sampler(registry: CollectorRegistry) -> Any:
    return lambda name, **labels: registry.get_sample_value(name, labels) or 0.0


async def played_then_kept(settings: PotSettings, script: Script) -> tuple[int, dict[bytes, bytes]]:
    """The first part played by one pot; the victim's partition and its state records then."""
    await create_topics(settings)
    await produce(settings, script.first)
    async with running(PotService(settings, PotMetrics())):
        await wait_processed(settings)
    partition = key_partition(script.victim, PARTITIONS)
    return partition, await state_records(settings, partition)


@pytest.mark.parametrize("consumed_again", [True, False], ids=["consumed-again", "resumed-after"])
async def test_R14_M2_a_state_one_transaction_behind_its_ledger_is_repaired_and_plays_on(
    kafka_bootstrap: str, unique: str, consumed_again: bool
) -> None:
    settings = pot_settings(kafka_bootstrap, unique, PARTITIONS, max_batch_records=16)
    script = Script()
    partition, kept = await played_then_kept(settings, script)
    stored = pot_pb2.PotGroupState.FromString(kept[state_key(script.victim)])
    await produce(settings, script.second)
    async with running(PotService(settings, PotMetrics())):
        await wait_processed(settings)
    ledger_at = await last_entry(settings, script.victim)
    assert ledger_at > stored.ledger_sequence, "the second pot should have moved the ledger on"

    damage = {state_key(script.victim): kept[state_key(script.victim)]}
    if consumed_again:  # the resume point of then, and a group that committed nothing
        damage[CHANGELOG_OFFSET_KEY] = kept[CHANGELOG_OFFSET_KEY]
        settings = pot_settings(
            kafka_bootstrap, unique, PARTITIONS, consumer_group=f"test-pot-{unique}-again"
        )
    await write_back(settings, partition, damage)

    registry = CollectorRegistry()
    sample = sampler(registry)
    with capture_logs() as logs:
        async with jackpot_pot(settings, registry):
            await eventually(
                lambda: sample("jackpot_pot_states_repaired_total", pot_group=script.victim),
                "the takeover repairing the victim's state",
                SETTLE_TIMEOUT,
            )
            await wait_processed(settings)
            replayed = script.of(script.second, script.victim) if consumed_again else 0
            ignored = sample("jackpot_events_ignored_total", reason="DUPLICATE_SEQUENCE")
            assert ignored == replayed, "the events behind the lost state, recognised"
            await produce(settings, script.rest)
            await wait_processed(settings)
            assert sample("jackpot_events_applied_total") == len(script.rest)
            assert sample("jackpot_pot_groups_refused", pot_group=script.victim) == 0
            assert sample("jackpot_partitions_halted") == 0
    await assert_exactly_once(settings, script.events, partitions=PARTITIONS)

    (line,) = [e for e in logs if e["event"] == "pot_state_repaired_from_ledger"]
    assert line["log_level"] == "error"
    assert (line["pot_group"], line["state_entry"], line["ledger_entry"]) == (
        script.victim,
        stored.ledger_sequence,
        ledger_at,
    )
    assert line["entries_replayed"] == ledger_at - stored.ledger_sequence
    assert line["runbook"] == RUNBOOK
    assert not [e for e in logs if e["event"] == "restored_state_refused"]
    noted = [
        entry
        async for _, entry in read_entries(
            KafkaConnection.of(settings), settings.access.audit_topic
        )
        if entry is not None and entry.action == "pot_state_repaired_from_ledger"
    ]
    (note,) = noted
    assert (note.target, note.outcome) == (script.victim, "recovered")
    assert note.principal.startswith("pot:")
    expected = f"stored state at ledger entry {stored.ledger_sequence}, ledger at {ledger_at}"
    assert expected in note.detail


async def test_R14_a_state_ahead_of_its_ledger_halts_its_partition_with_one_line(
    kafka_bootstrap: str, unique: str
) -> None:
    """The converse damage (the ledger's records lost, the state's kept): never repaired. The
    victim's partition halts with one line naming the group, both positions and the runbook;
    the other group's partition plays on."""
    settings = pot_settings(kafka_bootstrap, unique, PARTITIONS, max_batch_records=16)
    script = Script()
    partition, kept = await played_then_kept(settings, script)
    ledger_at = await last_entry(settings, script.victim)
    ahead = pot_pb2.PotGroupState.FromString(kept[state_key(script.victim)])
    assert ahead.ledger_sequence == ledger_at
    ahead.ledger_sequence += 2
    await write_back(settings, partition, {state_key(script.victim): ahead.SerializeToString()})

    registry = CollectorRegistry()
    sample = sampler(registry)
    others = [e for e in script.second if e.pot_group_id == script.other]
    with capture_logs() as logs:
        async with jackpot_pot(settings, registry):
            await eventually(
                lambda: sample("jackpot_partitions_halted") == 1,
                "the victim's partition halted",
                SETTLE_TIMEOUT,
            )
            assert sample("jackpot_pot_groups_refused", pot_group=script.victim) == 1
            await produce(settings, others)
            await eventually(
                lambda: sample("jackpot_events_applied_total") == len(others),
                "the other group playing on",
                SETTLE_TIMEOUT,
            )
    assert sample("jackpot_pot_states_repaired_total", pot_group=script.victim) == 0
    (refused,) = [e for e in logs if e["event"] == "restored_state_refused"]
    line = refused["why"]
    assert "\n" not in line
    assert line == (
        f"pot group {script.victim} refused (R14): its stored state is at ledger entry "
        f"{ledger_at + 2}, its ledger at {ledger_at}: the state is ahead of its ledger, which "
        f"never received what the state counts; runbook {RUNBOOK}"
    )
    halted = [e for e in logs if e["event"] == "partition_halted"]
    assert [e["partition"] for e in halted] == [partition]
    assert await last_entry(settings, script.victim) == ledger_at  # nothing played on it
