"""`jackpot restore --from-ledger`: pot group states rebuilt from the ledger alone (R14, D4).

When the state topic (jackpot.pot-state.v1) is lost or corrupt, the pot service refuses to run
the groups whose state disagrees with the ledger (``PotPartition.verify_restored``: their tables
stay closed). With the pot service stopped, this command reads the ledger from its beginning
(read_committed), rebuilds each group (``jackpot.pot.ledger_restore``), records on the ledger the
commitment of the new hidden mystery trigger a rebuild draws (X2), then writes the state where the
pot service looks for it (the state topic, created if missing, on the group's table-events
partition). Start the pot service again: it checks the state against the ledger and resumes from
its committed offsets.

Every group is rebuilt before anything is written: a ledger that cannot rebuild one (an unreadable
entry, an old ledger without the opening configuration) or an unknown group writes nothing.
Exit 0 restored, 1 the ledger cannot rebuild, 2 refused input or unreadable topics.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from aiokafka.errors import KafkaError
from aiokafka.partitioner import DefaultPartitioner
from google.protobuf.message import DecodeError

from jackpot.domain.errors import DomainError
from jackpot.domain.money import format_amount
from jackpot.platform.kafka import (
    ensure_topics,
    idempotent_producer,
    read_to_end,
    stop_client,
    topic_partitions,
)
from jackpot.pot.ledger_restore import Rebuilt, rebuild
from jackpot.pot.processor import state_key
from jackpot.pot.settings import PotSettings
from jackpot.topics import POT_STATE, TopicSpec
from jackpot.v1 import pot_pb2


class RestoreRefused(Exception):
    """Why nothing was restored, with the exit status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


async def restore(settings: PotSettings, only_groups: Sequence[str]) -> list[Rebuilt]:
    options = settings.kafka_options()
    bootstrap = str(options.pop("bootstrap_servers"))
    entries: list[pot_pb2.LedgerEntry] = []
    ledger_partition: dict[str, int] = {}
    for record in await read_to_end(bootstrap, settings.ledger_topic, options):
        try:
            entry = pot_pb2.LedgerEntry.FromString(record.value or b"")
        except DecodeError as error:
            raise RestoreRefused(
                f"ledger partition {record.partition} offset {record.offset} cannot be read "
                f"({error}): nothing restored",
                1,
            ) from None
        entries.append(entry)
        ledger_partition[entry.pot_group_id] = record.partition
    groups = sorted(only_groups or ledger_partition)
    unknown = [g for g in groups if g not in ledger_partition]
    if unknown:
        raise RestoreRefused(f"no pot group {', '.join(unknown)} in the ledger", 2)
    sequences = await _update_sequences(bootstrap, settings.pot_updates_topic, options)
    counts = await topic_partitions(
        {"bootstrap_servers": bootstrap, **options}, [settings.table_events_topic]
    )
    inputs = list(range(counts.get(settings.table_events_topic, 0)))
    if not inputs:
        raise RestoreRefused(f"topic {settings.table_events_topic} does not exist", 2)
    partitioner = DefaultPartitioner()
    rebuilt = []
    for group_id in groups:
        partition = partitioner(state_key(group_id), inputs, inputs)
        try:
            rebuilt.append(
                rebuild(
                    group_id,
                    entries,
                    partition=partition,
                    update_sequence=sequences.get(group_id, 0),
                    now_ns=time.time_ns(),
                )
            )
        except (DomainError, ValueError) as error:
            raise RestoreRefused(f"{group_id}: {error}: nothing restored", 1) from None
    await _write(settings, bootstrap, options, rebuilt, ledger_partition)
    return rebuilt


async def _update_sequences(
    bootstrap: str, topic: str, options: Mapping[str, Any]
) -> dict[str, int]:
    """The highest update_sequence each group's pot updates reached (signs and gateways ignore
    older ones, so the restored group continues above it)."""
    highest: dict[str, int] = {}
    for record in await read_to_end(bootstrap, topic, options):
        try:
            update = pot_pb2.PotUpdate.FromString(record.value or b"")
        except DecodeError:
            continue
        group = update.pot_group_id
        highest[group] = max(highest.get(group, 0), update.update_sequence)
    return highest


async def _write(
    settings: PotSettings,
    bootstrap: str,
    options: Mapping[str, Any],
    rebuilt: Sequence[Rebuilt],
    ledger_partition: Mapping[str, int],
) -> None:
    """The new ledger entries first (acknowledged), then the states."""
    spec = TopicSpec(settings.state_topic, POT_STATE.partitions, POT_STATE.config)
    await ensure_topics(bootstrap, [spec], settings.replication_factor, **options)
    producer = idempotent_producer(bootstrap, **options)
    await producer.start()
    try:
        for group in rebuilt:
            key = group.group_id.encode()
            for entry in group.ledger:
                await producer.send_and_wait(
                    settings.ledger_topic,
                    entry.SerializeToString(),
                    key=key,
                    partition=ledger_partition[group.group_id],
                )
            await producer.send_and_wait(
                settings.state_topic,
                group.state.SerializeToString(deterministic=True),
                key=state_key(group.group_id),
                partition=group.state.input_partition,
            )
    finally:
        await stop_client(producer)


def describe(group: Rebuilt) -> str:
    assert group.group is not None
    pots = ", ".join(f"{name} {format_amount(v)}" for name, v in group.group.balances.items())
    mystery = " (a new mystery trigger drawn, its commitment on the ledger)" if group.ledger else ""
    return (
        f"restored {group.group_id} from the ledger: entry {group.state.ledger_sequence}, "
        f"partition {group.state.input_partition}, pots {pots}{mystery}"
    )


def run(settings: PotSettings, only_groups: Sequence[str]) -> int:
    try:
        restored = asyncio.run(restore(settings, only_groups))
    except RestoreRefused as refused:
        print(f"jackpot restore: {refused}", file=sys.stderr)
        return refused.status
    except (LookupError, OSError, KafkaError) as error:
        print(f"jackpot restore: cannot read or write the topics: {error}", file=sys.stderr)
        return 2
    for group in restored:
        print(describe(group))
    print("start the pot service again: it checks each state against the ledger before it plays")
    return 0
