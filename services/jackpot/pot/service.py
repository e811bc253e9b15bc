"""The pot service's Kafka edge: table events through the one exactly-once processor.

:class:`PotPartition` is the pure :class:`~jackpot.platform.exactly_once.PartitionHandler` of one
jackpot.table-events.v1 partition: a :class:`~jackpot.pot.processor.PotProcessor` (the pot groups
whose events live there) plus the mapping of what it returns to Kafka records. The processor
(``jackpot.platform.exactly_once``) fences the partition's previous owner, restores the groups
from the compacted jackpot.pot-state.v1 (same partition number), and writes every batch's pot
updates, awards, ledger entries, dead letters, state snapshots and consumed offsets in one
transaction. A heartbeat pot update per owned group goes out at least once per second (rule D5),
as a tick of its own with the mark that keeps the group's update sequence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import structlog
from aiokafka.structs import ConsumerRecord
from google.protobuf.message import DecodeError

from jackpot.domain.mystery import TriggerSource, secure_trigger
from jackpot.platform.exactly_once import (
    ExactlyOnceProcessor,
    OutputRecord,
    ProcessorConfig,
)
from jackpot.platform.kafka import read_to_end
from jackpot.pot.ledger_restore import disagreement
from jackpot.pot.metrics import PotMetrics
from jackpot.pot.processor import (
    SEQUENCE_MARK_PREFIX,
    InputRecord,
    Outputs,
    PotProcessor,
    sequence_mark_key,
    state_key,
)
from jackpot.pot.settings import PotSettings
from jackpot.v1 import pot_pb2

log = structlog.get_logger("jackpot.pot.service")


@dataclass(slots=True)
class PotBatch:
    """A batch's outputs and the records one transaction writes for them."""

    outputs: Outputs
    records: list[OutputRecord] = field(default_factory=list)


class PotPartition:
    """The pot groups of one input partition, as the exactly-once processor drives them."""

    def __init__(
        self,
        partition: int,
        settings: PotSettings,
        metrics: PotMetrics,
        trigger_source: TriggerSource = secure_trigger,
    ) -> None:
        self.partition = partition
        self.settings = settings
        self.metrics = metrics
        self.processor = PotProcessor(
            partition,
            source=settings.source,
            event_id_window=settings.event_id_window,
            trigger_source=trigger_source,
        )
        self._log = log.bind(instance=settings.instance_id, partition=partition)

    @property
    def next_offset(self) -> int:
        return self.processor.next_offset

    def restore(self, changelog: Mapping[bytes, bytes], committed: int | None) -> int | None:
        """Groups from their latest snapshots and update-sequence marks; consume from the
        committed offset, or from a snapshot's if the state is ahead of it."""
        snapshots: list[tuple[pot_pb2.PotGroupState, bytes]] = []
        marks: list[bytes] = []
        for key, data in changelog.items():
            state = pot_pb2.PotGroupState.FromString(data)
            if state.input_partition != self.partition:
                self._log.warning(
                    "state_on_wrong_partition",
                    pot_group=state.pot_group_id,
                    input_partition=state.input_partition,
                )
            elif key.startswith(SEQUENCE_MARK_PREFIX):
                marks.append(data)
            else:
                snapshots.append((state, data))
        restored_offsets = [state.input_offset for state, _ in snapshots]
        next_offset = max([committed or 0, *restored_offsets])
        if committed is not None and restored_offsets and max(restored_offsets) > committed:
            self._log.warning(
                "state_ahead_of_committed_offset",
                committed=committed,
                state_offset=max(restored_offsets),
            )
        self.processor.restore((data for _, data in snapshots), next_offset, sequence_marks=marks)
        for group_id, runtime in self.processor.groups.items():
            self.metrics.set_balances(group_id, runtime.group.balances)
        if committed is None and not restored_offsets:
            return None
        return next_offset

    async def verify_restored(self) -> str:
        """R14: each group restored here, and each group the ledger holds on this partition,
        must agree with the ledger exactly, or the partition is not run (its tables stay
        closed); the operator is told by the log, ``jackpot_pot_groups_refused`` and
        ``jackpot_partitions_halted``. "" when everything agrees.

        A group's entries are on the ledger partition of the same number, as the ledger has as
        many partitions as the table events (``jackpot.topics``) and both are keyed by group.
        The whole partition is read at every takeover: its cost grows with the ledger."""
        settings = self.settings
        options = settings.kafka_options()
        bootstrap = str(options.pop("bootstrap_servers"))
        entries: list[pot_pb2.LedgerEntry] = []
        for record in await read_to_end(
            bootstrap, settings.ledger_topic, options, [self.partition]
        ):
            try:
                entries.append(pot_pb2.LedgerEntry.FromString(record.value or b""))
            except DecodeError as error:
                return f"ledger partition {record.partition} offset {record.offset}: {error}"
        groups = self.processor.groups
        for group_id in sorted({e.pot_group_id for e in entries} | set(groups)):
            runtime = groups.get(group_id)
            why = disagreement(
                group_id,
                runtime.group if runtime else None,
                runtime.ledger_sequence if runtime else 0,
                entries,
            )
            if why:
                self.metrics.groups_refused.labels(pot_group=group_id).set(1)
                self._log.error("restored_state_refused", pot_group=group_id, why=why)
                return why
            self.metrics.groups_refused.labels(pot_group=group_id).set(0)
        return ""

    def apply(self, records: Sequence[ConsumerRecord[bytes, bytes]]) -> PotBatch:
        inputs = [
            InputRecord(r.value, r.topic, r.partition, r.offset, r.key, r.timestamp)
            for r in records
        ]
        return self._batch(self.processor.apply_batch(inputs))

    def tick(self) -> PotBatch | None:
        """Heartbeats of the groups due one (rule D5)."""
        due = self.processor.heartbeat_due(self.settings.heartbeat_interval_ms / 1000)
        return self._batch(self.processor.heartbeat(due)) if due else None

    def commit(self, batch: PotBatch) -> None:
        outputs = batch.outputs
        self.processor.commit(outputs)
        self.metrics.record_outcomes(outputs.applied, outputs.ignored, outputs.rejected)
        for group_id in outputs.snapshots:
            self.metrics.set_balances(group_id, self.processor.groups[group_id].group.balances)

    def rollback(self) -> None:
        self.processor.rollback()

    def close(self) -> None:
        for group_id, runtime in self.processor.groups.items():
            self.metrics.forget_group(group_id, runtime.group.balances)

    def _batch(self, outputs: Outputs) -> PotBatch:
        """Outputs keyed by pot group; state and marks pinned to this partition."""
        settings = self.settings
        records = [
            OutputRecord(topic, m.SerializeToString(), m.pot_group_id.encode())
            for topic, messages in (
                (settings.pot_updates_topic, outputs.pot_updates),
                (settings.awards_topic, outputs.awards),
                (settings.ledger_topic, outputs.ledger),
            )
            for m in messages
        ]
        records += [
            OutputRecord(settings.dead_letter_topic, d.SerializeToString(), d.source.encode())
            for d in outputs.dead_letters
        ]
        records += [
            OutputRecord(settings.state_topic, snapshot, state_key(g), self.partition)
            for g, snapshot in outputs.snapshots.items()
        ]
        records += [
            OutputRecord(settings.state_topic, mark, sequence_mark_key(g), self.partition)
            for g, mark in outputs.sequence_marks.items()
        ]
        return PotBatch(outputs, records)


def processor_config(settings: PotSettings) -> ProcessorConfig:
    """The exactly-once processor's configuration from the pot's settings."""
    return ProcessorConfig.of(
        "pot",
        settings,
        input_topic=settings.table_events_topic,
        changelog_topic=settings.state_topic,
    )


class PotService:
    """Consumes table events, applies them, and writes everything in Kafka transactions."""

    def __init__(
        self,
        settings: PotSettings,
        metrics: PotMetrics | None = None,
        *,
        trigger_source: TriggerSource = secure_trigger,
    ) -> None:
        self.settings = settings
        self.metrics = metrics if metrics is not None else PotMetrics()
        # Heartbeats are checked after every poll (poll_timeout_ms <= heartbeat_interval_ms).
        self.processor: ExactlyOnceProcessor[PotPartition] = ExactlyOnceProcessor(
            processor_config(settings),
            lambda p: PotPartition(p, settings, self.metrics, trigger_source),
            self.metrics.processor,
            tick_seconds=0.0,
        )

    @property
    def owned_partitions(self) -> list[int]:
        return self.processor.owned_partitions

    def owned_groups(self) -> list[str]:
        return sorted(g for h in self.processor.handlers() for g in h.processor.groups)

    async def run(self) -> None:
        """Process until :meth:`stop` or a fatal error (ProcessorError)."""
        await self.processor.run()

    async def stop(self) -> None:
        await self.processor.stop()
