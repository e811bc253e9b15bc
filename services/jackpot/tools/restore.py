"""`jackpot restore --from-ledger`: pot group states rebuilt from the ledger alone (R14, D4).

When the state topic (jackpot.pot-state.v1) is lost or corrupt, the pot service refuses to run
the groups whose state disagrees with the ledger (``PotPartition.verify_restored``: their tables
stay closed). With the pot service stopped, this command reads the ledger (read_committed),
rebuilds each group (``jackpot.pot.ledger_restore``), records on the ledger the
commitment of the new hidden mystery trigger a rebuild draws (X2), then writes the state where the
pot service looks for it (the state topic, created if missing, on the group's table-events
partition). Each group is rebuilt from its last checkpoint whose figures and hash chain the
entries before it verify (found by reading the ledger from two checkpoint intervals back, by
time), with the entries after it; only a group without such a checkpoint (a ledger from before
checkpoints) is read from the beginning, streamed. Start the pot service again: it checks the
state against the ledger and resumes from its committed offsets.

Every group is rebuilt before anything is written: a ledger that cannot rebuild one (an unreadable
entry, an old ledger without the opening configuration) or an unknown group writes nothing.
Exit 0 restored, 1 the ledger cannot rebuild, 2 refused input or unreadable topics.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafka.errors import KafkaError
from aiokafka.partitioner import DefaultPartitioner
from aiokafka.structs import ConsumerRecord
from google.protobuf.message import DecodeError

from jackpot.domain.errors import DomainError
from jackpot.domain.money import format_amount
from jackpot.platform.bundles import ledger_entries
from jackpot.platform.kafka import (
    KafkaConnection,
    TopicReader,
    ensure_topics,
    stop_client,
    topic_partitions,
)
from jackpot.pot.ledger_audit import CHECKPOINT, PAYOUT_TYPES, GroupAudit
from jackpot.pot.ledger_restore import Rebuilt, rebuild
from jackpot.pot.settings import PotSettings
from jackpot.pot.state_records import state_key
from jackpot.topics import POT_STATE, TopicSpec
from jackpot.v1 import pot_pb2


class RestoreRefused(Exception):
    """Why nothing was restored, with the exit status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class GroupScan:
    """One group's ledger as restore reads it: bounded books, and the entries from the last
    checkpoint that verified (its figures and chain agree with the entries before it)."""

    audit: GroupAudit
    partition: int
    since: list[pot_pb2.LedgerEntry] = field(default_factory=list)
    verified: bool = False  # ``since`` starts at a verified checkpoint (else at the first entry)

    def add(self, entry: pot_pb2.LedgerEntry, raw: bytes) -> None:
        problems = len(self.audit.problems)
        self.audit.add(entry, raw)
        if entry.type == CHECKPOINT and len(self.audit.problems) == problems:
            self.since.clear()
            self.verified = True
        self.since.append(entry)


async def scan_ledger(
    reader: TopicReader, start: dict[int, int] | None, groups: set[str] | None = None
) -> dict[str, GroupScan]:
    """Each group's scan (or only ``groups``'), from ``start`` (None: the beginning). From a
    later point, a group's books begin at its first checkpoint there, which the next one must
    then verify; the payout service's entries are left out (they move no money)."""
    scans: dict[str, GroupScan] = {}
    async for record in reader.records(start):
        for entry, raw in _entries(record):
            group_id = entry.pot_group_id
            if entry.type in PAYOUT_TYPES or (groups is not None and group_id not in groups):
                continue
            scan = scans.get(group_id)
            if scan is not None:
                scan.add(entry, raw)
            elif start is None:
                scans[group_id] = GroupScan(GroupAudit(group_id), record.partition, [entry])
                scans[group_id].audit.add(entry, raw)
            elif entry.type == CHECKPOINT:
                audit = GroupAudit.from_checkpoint(entry, raw)
                scans[group_id] = GroupScan(audit, record.partition, [entry])
    return scans


def _entries(record: ConsumerRecord[bytes, bytes]) -> list[tuple[pot_pb2.LedgerEntry, bytes]]:
    """The entries of one ledger record (a bundle's too), or the refusal naming the record."""
    try:
        return ledger_entries(record.value or b"")
    except DecodeError as error:
        raise RestoreRefused(
            f"ledger partition {record.partition} offset {record.offset} cannot be read "
            f"({error}): nothing restored",
            1,
        ) from None


async def read_groups(settings: PotSettings, named: Sequence[str]) -> dict[str, GroupScan]:
    """Every group's scan, from two checkpoint intervals before each partition's last record
    (by time: the pot checkpoints every group at least that often while it runs), and from the
    beginning for groups whose last checkpoint there did not verify, or ``named`` groups that
    have no entry there (a group silent since long before the pot stopped)."""
    connection = KafkaConnection.of(settings)
    async with connection.reader(settings.ledger_topic) as reader:
        if not reader.partitions:
            raise RestoreRefused(f"topic {settings.ledger_topic} does not exist", 2)
        window_ms = int(2 * settings.checkpoint_interval_seconds * 1000) + 60_000
        start: dict[int, int] = {}
        for partition in reader.partitions:
            last_ms = await _last_record_ms(reader, partition)
            found = await reader.offsets_for_time(last_ms - window_ms, [partition])
            start[partition] = found.get(partition, 0)
        scans = await scan_ledger(reader, start)
        again = {g for g, scan in scans.items() if not scan.verified}
        again |= set(named) - set(scans)
        if again:
            scans.update(await scan_ledger(reader, None, again))
    return scans


async def _last_record_ms(reader: TopicReader, partition: int) -> int:
    """The time of the partition's last records (0 when it is empty)."""
    _, ends = await reader.bounds([partition])
    end = ends.get(partition, 0)
    latest = 0
    async for record in reader.records({partition: max(end - 100, 0)}):
        latest = max(latest, record.timestamp)
    return latest


async def restore(settings: PotSettings, only_groups: Sequence[str]) -> list[Rebuilt]:
    scans = await read_groups(settings, only_groups)
    groups = sorted(only_groups or scans)
    unknown = [g for g in groups if g not in scans]
    if unknown:
        raise RestoreRefused(f"no pot group {', '.join(unknown)} in the ledger", 2)
    for group_id in groups:
        if scans[group_id].audit.problems:
            problem = scans[group_id].audit.problems[0]
            raise RestoreRefused(f"the ledger of {group_id} does not audit: {problem}", 1)
    options = settings.kafka_options()
    bootstrap = str(options.pop("bootstrap_servers"))
    sequences = await _update_sequences(settings, groups)
    counts = await topic_partitions(
        {"bootstrap_servers": bootstrap, **options}, [settings.table_events_topic]
    )
    inputs = list(range(counts.get(settings.table_events_topic, 0)))
    if not inputs:
        raise RestoreRefused(f"topic {settings.table_events_topic} does not exist", 2)
    partitioner = DefaultPartitioner()
    rebuilt = []
    for group_id in groups:
        scan = scans[group_id]
        try:
            rebuilt.append(
                rebuild(
                    group_id,
                    scan.since,
                    partition=partitioner(state_key(group_id), inputs, inputs),
                    update_sequence=sequences.get(group_id, 0),
                    now_ns=time.time_ns(),
                    chain=scan.audit.chain or b"",
                )
            )
        except (DomainError, ValueError) as error:
            raise RestoreRefused(f"{group_id}: {error}: nothing restored", 1) from None
    await _write(settings, bootstrap, options, rebuilt, {g: scans[g].partition for g in groups})
    return rebuilt


async def _update_sequences(settings: PotSettings, groups: Sequence[str]) -> dict[str, int]:
    """The highest update_sequence each group's pot updates reached (signs and gateways ignore
    older ones, so the restored group continues above it): its latest update, near the topic's
    tail (a heartbeat every 500 ms while the pot ran)."""
    highest: dict[str, int] = {}
    async with KafkaConnection.of(settings).reader(settings.pot_updates_topic) as reader:
        latest = await reader.latest([g.encode() for g in groups])
    for key, record in latest.items():
        try:
            update = pot_pb2.PotUpdate.FromString(record.value or b"")
        except DecodeError:
            continue
        highest[key.decode()] = update.update_sequence
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
    producer = KafkaConnection({"bootstrap_servers": bootstrap, **options}).producer()
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
