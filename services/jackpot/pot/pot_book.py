"""The pot's book: the pot groups of one table-events partition, what each table event does to
them, and what they write: pot updates, awards, ledger entries, state.

No Kafka here: the service (``jackpot.pot.service``) feeds the consumer's records of one input
partition to a :class:`PotBook` and the exactly-once processor writes the records it returns
(:meth:`PotBook.batch`, :meth:`PotBook.tick`: :mod:`jackpot.pot.batch_records`) in one Kafka
transaction ("processor" is only that one, :mod:`jackpot.platform.exactly_once`). The book

- decodes each ``TableEvent`` and refuses, with a specific :class:`~jackpot.domain.errors.Reason`,
  anything malformed, for an unknown pot group or table, or refused by the domain engine: the
  refusal becomes a dead letter and changes nothing;
- ignores an event already applied, recognised by its per-table sequence or its event id, and
  counts it; the idempotency state lives in the group's state snapshot, so it survives restarts;
- applies the rest to the group's :class:`~jackpot.domain.engine.PotGroup` in partition order
  (rule S9; a studio round and a land round of one batch too, O7) and maps the domain events
  to ``LedgerEntry`` and ``Award`` records;
- after a batch returns one ``PotUpdate`` and one ``PotGroupState`` snapshot per group it changed;
- folds every ledger entry into the group's hash chain and writes a ``CHECKPOINT`` entry every
  ``checkpoint_entries`` entries, at every configuration activation, and on a heartbeat when the
  last one is ``checkpoint_seconds`` old or the group has none yet (the entries:
  :mod:`jackpot.pot.ledger_writer`; their check: ``jackpot.pot.ledger_audit``): a takeover then
  checks the restored state against the last checkpoint and the entries after it.

A batch whose transaction fails is undone with :meth:`PotBook.rollback`, which rebuilds the
touched groups from their last committed snapshots. How a record is read and which engine call it
makes is :mod:`jackpot.pot.table_event_reading`; how a group is written to and read from the state
topic, :mod:`jackpot.pot.state_records`. The service hands the consumer's records as they are.

A group whose stored state the takeover repaired from the ledger (R14,
``jackpot.pot.state_repair``) is :meth:`PotBook.adopt`-ed: the next transaction, a batch or
a tick, writes the ledger entries the repair caused first, then the group's snapshot.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import structlog

from jackpot.domain.engine import PotGroup
from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.events import Event
from jackpot.domain.mystery import TriggerSource, secure_trigger
from jackpot.platform.deadletter import dead_letter
from jackpot.pot import state_records
from jackpot.pot import table_event_reading as reading
from jackpot.pot.batch_records import OutputTopics, PotBatch, batch_records
from jackpot.pot.group_runtime import EventContext, GroupRuntime, Outputs
from jackpot.pot.ledger_writer import LedgerWriter
from jackpot.pot.pot_updates import pot_update
from jackpot.pot.table_event_reading import ConsumedRecord
from jackpot.topics import AWARDS, DEAD_LETTER, LEDGER, POT_STATE, POT_UPDATES
from jackpot.v1 import common_pb2, pot_pb2, table_events_pb2

log = structlog.get_logger("jackpot.pot.book")
# Where a book's records go unless the service's settings name other topics.
STANDARD_TOPICS = OutputTopics(
    POT_UPDATES.name, AWARDS.name, LEDGER.name, DEAD_LETTER.name, POT_STATE.name
)


class IgnoreReason(Enum):
    """Why an event was ignored rather than applied: it was applied before."""

    DUPLICATE_SEQUENCE = "DUPLICATE_SEQUENCE"
    DUPLICATE_EVENT_ID = "DUPLICATE_EVENT_ID"


@dataclass(frozen=True, slots=True)
class InputRecord:
    """A table-events record built by a test or a tool (the service hands the consumer's own
    records): the fields of :class:`~jackpot.pot.table_event_reading.ConsumedRecord`."""

    value: bytes | None
    topic: str
    partition: int
    offset: int
    key: bytes | None = None
    timestamp: int = 0  # the record's Kafka timestamp, ms (a latency-budget stamp only)


class PotBook:
    """The pot groups of one table-events partition and the pure logic that changes them."""

    def __init__(
        self,
        partition: int,
        *,
        source: str = "pot",
        event_id_window: int = 256,
        clock_ns: Callable[[], int] = time.time_ns,
        monotonic: Callable[[], float] = time.monotonic,
        trigger_source: TriggerSource = secure_trigger,
        checkpoint_entries: int = 10_000,
        checkpoint_seconds: float = 3600.0,
        topics: OutputTopics = STANDARD_TOPICS,
    ) -> None:
        self.partition = partition
        self.topics = topics
        self.checkpoint_seconds = checkpoint_seconds
        self.source = source
        self.event_id_window = event_id_window
        self._clock_ns = clock_ns
        self._batch_started_ns = 0  # when the batch being applied began (latency budget)
        self._monotonic = monotonic
        self._trigger_source = trigger_source
        self._groups: dict[str, GroupRuntime] = {}
        self._committed: dict[str, bytes] = {}
        # pot group id -> table id -> its locked round's record written apart, as committed
        self._committed_apart: dict[str, dict[str, bytes]] = {}
        self._committed_sequences: dict[str, int] = {}
        self._dirty: set[str] = set()
        # pot group id -> the ledger entries its repair caused (R14), until its snapshot is written
        self._repaired: dict[str, list[pot_pb2.LedgerEntry]] = {}
        self.next_offset = 0
        self._committed_offset = 0
        self._writer = LedgerWriter(clock_ns, checkpoint_entries)

    # ---------------------------------------------------------------------------- state

    @property
    def groups(self) -> Mapping[str, GroupRuntime]:
        return self._groups

    def restore(
        self,
        states: Iterable[bytes],
        next_offset: int,
        sequence_marks: Iterable[bytes] = (),
        locked_rounds: Iterable[bytes] = (),
    ) -> None:
        """Rebuild the partition's groups from their latest snapshots on the state topic.

        ``sequence_marks`` are the groups' latest update-sequence marks (written by heartbeats);
        a group continues from the higher of its snapshot's and its mark's update_sequence.
        ``locked_rounds``: the locked rounds written apart from the snapshots (LockedRoundState).
        """
        self._groups.clear()
        self._committed.clear()
        self._committed_apart.clear()
        self._committed_sequences.clear()
        self._dirty.clear()
        self._repaired.clear()
        for data in locked_rounds:
            record = state_records.decode_locked_round(data)
            self._committed_apart.setdefault(record.pot_group_id, {})[record.table_id] = data
        for data in sequence_marks:
            mark = pot_pb2.PotGroupState.FromString(data)
            self._committed_sequences[mark.pot_group_id] = mark.update_sequence
        for data in states:
            runtime = self._runtime_from_state(data)
            self._groups[runtime.group.group_id] = runtime
            self._committed[runtime.group.group_id] = data
        self.next_offset = self._committed_offset = next_offset

    def adopt(self, state: bytes, ledger: Sequence[pot_pb2.LedgerEntry] = ()) -> None:
        """A group's state repaired from the ledger at the takeover (R14) replaces the one
        restored and is its rollback point; ``ledger``: the entries the repair caused (a new
        mystery commitment, X2), already counted in the state's sequence and chain. The next
        transaction writes them, then the group's snapshot."""
        runtime = self._runtime_from_state(state)
        group_id = runtime.group.group_id
        self._groups[group_id] = runtime
        self._committed[group_id] = state
        self._repaired[group_id] = list(ledger)

    @property
    def unwritten(self) -> list[str]:
        """Groups repaired at the takeover whose snapshot no transaction has written yet."""
        return list(self._repaired)

    def _runtime_from_state(self, data: bytes) -> GroupRuntime:
        group_id = pot_pb2.PotGroupState.FromString(data).pot_group_id
        marked = self._committed_sequences.get(group_id, 0)
        apart = self._committed_apart.get(group_id)
        return state_records.runtime_from_state(data, self._trigger_source, marked, apart)

    def snapshot(self, group_id: str) -> bytes:
        """The group's whole state, its locked rounds in it (what a repair starts from)."""
        now = self._clock_ns()
        return state_records.snapshot(self._groups[group_id], self.partition, self.next_offset, now)

    def _write_state(self, group_id: str, outputs: Outputs) -> None:
        """The group's state into the batch's records: its snapshot, and its large locked
        rounds' records apart from it when they changed (:mod:`jackpot.pot.state_records`)."""
        now = self._clock_ns()
        runtime = self._groups[group_id]
        state_records.apart_records(runtime, self.partition, now, outputs)
        outputs.snapshots[group_id] = state_records.snapshot(
            runtime, self.partition, self.next_offset, now, runtime.apart
        )

    def sequence_mark(self, group_id: str) -> bytes:
        """A state record holding only the group's update_sequence (keyed apart)."""
        now = self._clock_ns()
        runtime = self._groups[group_id]
        return state_records.sequence_mark(runtime, self.partition, self.next_offset, now)

    def commit(self, outputs: Outputs) -> None:
        """The batch's transaction committed: its snapshots are the new rollback point."""
        self._committed.update(outputs.snapshots)
        for (group_id, table_id), record in outputs.locked_rounds.items():
            written = self._committed_apart.setdefault(group_id, {})
            if record is None:
                written.pop(table_id, None)
            else:
                written[table_id] = record
        for group_id in outputs.snapshots:
            self._repaired.pop(group_id, None)
        for group_id in (*outputs.snapshots, *outputs.sequence_marks):
            self._committed_sequences[group_id] = self._groups[group_id].update_sequence
        self._dirty.clear()
        self._committed_offset = self.next_offset

    def rollback(self) -> None:
        """The batch's transaction failed: rebuild what it touched from the committed snapshots."""
        for group_id in self._dirty:
            committed = self._committed.get(group_id)
            if committed is None:
                self._groups.pop(group_id, None)
            else:
                self._groups[group_id] = self._runtime_from_state(committed)
        self._dirty.clear()
        self.next_offset = self._committed_offset

    # ------------------------------------------------------------------------- batches

    def batch(self, consumed: Iterable[ConsumedRecord]) -> PotBatch:
        """The consumer's records applied (:meth:`apply_batch`), as one transaction's records."""
        return batch_records(self.apply_batch(consumed), self.topics, self.partition)

    def tick(self, heartbeat_interval_seconds: float) -> PotBatch | None:
        """Heartbeats of the groups due one (rule D5), and checkpoints of those due one."""
        due = self.heartbeat_due(heartbeat_interval_seconds)
        checkpoints = self.checkpoints_due()
        if not due and not checkpoints:
            return None
        outputs = self.checkpoint(checkpoints, self.heartbeat(due))
        return batch_records(outputs, self.topics, self.partition)

    def apply(
        self, value: bytes | None, topic: str, partition: int, offset: int, key: bytes | None = None
    ) -> Outputs:
        """Apply one record; see :meth:`apply_batch`."""
        return self.apply_batch([InputRecord(value, topic, partition, offset, key)])

    def apply_batch(self, batch: Iterable[ConsumedRecord]) -> Outputs:
        """Apply records in order; one pot update and one snapshot per group changed."""
        outputs = Outputs()
        changed: dict[str, None] = {}
        for repaired, entries in self._repaired.items():  # before any entry of this batch
            outputs.ledger.extend(entries)
            changed[repaired] = None
            self._dirty.add(repaired)
        self._batch_started_ns = self._clock_ns()
        for record in batch:
            group_id = self._apply_one(record, outputs)
            if group_id is not None:
                changed[group_id] = None
            self.next_offset = record.offset + 1
        now = self._monotonic()
        for group_id in changed:
            runtime = self._groups[group_id]
            update = pot_update(runtime, self._clock_ns(), heartbeat=False)
            traces = outputs.lock_traces.get(group_id, [])
            for trace in traces:
                trace.pot_applied_unix_nanos = update.produced_at.ToNanoseconds()
            update.lock_traces.extend(traces)
            outputs.pot_updates.append(update)
            runtime.last_update_monotonic = now
        for group_id in changed:
            self._write_state(group_id, outputs)
        return outputs

    def heartbeat_due(self, interval_seconds: float) -> list[str]:
        """Groups whose last pot update is older than ``interval_seconds`` (rule D5)."""
        now = self._monotonic()
        return [
            group_id
            for group_id, runtime in self._groups.items()
            if now - runtime.last_update_monotonic >= interval_seconds
        ]

    def heartbeat(self, group_ids: Iterable[str]) -> Outputs:
        """A liveness pot update per group (rule D5), with the mark that keeps its sequence."""
        outputs = Outputs()
        now = self._monotonic()
        for group_id in group_ids:
            runtime = self._groups[group_id]
            outputs.pot_updates.append(pot_update(runtime, self._clock_ns(), heartbeat=True))
            runtime.last_update_monotonic = now
            self._dirty.add(group_id)
            outputs.sequence_marks[group_id] = self.sequence_mark(group_id)
        return outputs

    # ---------------------------------------------------------------------- checkpoints

    def checkpoints_due(self) -> list[str]:
        """Groups to checkpoint on a tick: none yet, or the last one is ``checkpoint_seconds``
        old (a quiet group too, so that a takeover never reads further back than that), and a
        group repaired at the takeover whose state is not written yet."""
        return [
            g
            for g, runtime in self._groups.items()
            if g in self._repaired or self._checkpoint_due_by_time(runtime)
        ]

    def checkpoint(self, group_ids: Iterable[str], outputs: Outputs | None = None) -> Outputs:
        """A checkpoint entry and a snapshot per group (added to ``outputs`` if given)."""
        outputs = outputs or Outputs()
        for group_id in group_ids:
            self._dirty.add(group_id)
            outputs.ledger.extend(self._repaired.get(group_id, ()))  # what its repair caused
            outputs.ledger.append(self._writer.checkpoint(self._groups[group_id]))
            self._write_state(group_id, outputs)
            outputs.sequence_marks.pop(group_id, None)  # the snapshot holds the sequence
        return outputs

    def _checkpoint_due_by_time(self, runtime: GroupRuntime) -> bool:
        if not runtime.ledger_chain:
            return False  # chain unknown until the takeover check adopts it
        if not runtime.checkpoint_sequence:
            return runtime.ledger_sequence > 0
        age_ns = self._clock_ns() - runtime.checkpoint_at_ns
        return age_ns >= self.checkpoint_seconds * 1e9

    # ---------------------------------------------------------------------- one record

    def _apply_one(self, record: ConsumedRecord, outputs: Outputs) -> str | None:
        """Apply, ignore or refuse one record; the id of the group it changed, if any."""
        event: table_events_pb2.TableEvent | None = None
        try:
            event = reading.decode(record)
            if event.WhichOneof("payload") == "pot_group_command":
                return self._apply_command(event, outputs)
            group_id = self._apply_table_event(event, outputs)
            if group_id is not None and event.WhichOneof("payload") == "round_locked":
                outputs.lock_traces.setdefault(group_id, []).append(self._trace(event, record))
            return group_id
        except DomainError as refusal:
            outputs.rejected[refusal.reason.value] += 1
            outputs.dead_letters.append(
                dead_letter(
                    self.source,
                    refusal.reason,
                    refusal.detail,
                    record.value or b"",
                    table_id=event.table_id if event is not None else "",
                    topic=record.topic,
                    partition=record.partition,
                    offset=record.offset,
                    at_ns=self._clock_ns(),
                )
            )
            _bound(event).warning(
                "event_refused",
                reason=refusal.reason.value,
                detail=refusal.detail,
                event_id=event.event_id if event is not None else "",
                partition=record.partition,
                offset=record.offset,
            )
            return None

    def _trace(
        self, event: table_events_pb2.TableEvent, record: ConsumedRecord
    ) -> common_pb2.LockTrace:
        return common_pb2.LockTrace(
            table_id=event.table_id,
            round_id=event.round_id,
            gateway_accepted_unix_nanos=event.gateway_accepted_unix_nanos,
            kafka_unix_nanos=max(record.timestamp, 0) * 1_000_000,
            pot_fetched_unix_nanos=self._batch_started_ns,
        )

    def _is_duplicate(
        self, runtime: GroupRuntime, event: table_events_pb2.TableEvent, outputs: Outputs
    ) -> bool:
        reason: IgnoreReason | None = None
        is_table_event = not event.HasField("pot_group_command")
        if is_table_event and event.sequence <= runtime.table_sequences.get(event.table_id, 0):
            reason = IgnoreReason.DUPLICATE_SEQUENCE
        if reason is None and event.event_id in runtime.recent_event_ids:
            reason = IgnoreReason.DUPLICATE_EVENT_ID
        if reason is None:
            return False
        outputs.ignored[reason.value] += 1
        runtime.events_ignored += 1  # snapshotted with the group's next change
        self._dirty.add(event.pot_group_id)
        _bound(event).info(
            "event_ignored", event_id=event.event_id, sequence=event.sequence, reason=reason.value
        )
        return True

    def _apply_command(self, event: table_events_pb2.TableEvent, outputs: Outputs) -> str | None:
        command = event.pot_group_command
        kind = command.WhichOneof("command")
        group_id = event.pot_group_id
        runtime = self._groups.get(group_id)
        if runtime is not None and self._is_duplicate(runtime, event, outputs):
            return None
        if kind == "create":
            if runtime is not None:
                raise DomainError(Reason.INVALID_STATE, f"pot group {group_id} exists already")
            config = reading.load_config_json(command.create.config_json)
            self._dirty.add(group_id)
            group, domain_events = PotGroup.open(
                group_id,
                config,
                trigger_source=self._trigger_source,
                changed_by=command.requested_by,
                reason=command.reason,
            )
            runtime = GroupRuntime(group=group, last_sign_value=group.sign_value)
            self._groups[group_id] = runtime
            before: tuple[int, tuple[int, ...]] = (config.version, ())
        else:
            if runtime is None:
                raise DomainError(Reason.UNKNOWN_POT_GROUP, f"pot group {group_id} does not exist")
            before = _config_versions(runtime.group)
            self._dirty.add(group_id)
            domain_events = reading.group_command(runtime.group, command, kind)
        context = EventContext(
            event.event_id, event.table_id, event.round_id, event.occurred_at, before
        )
        self._record(runtime, event, domain_events, context, outputs)
        _bound(event).info("command_applied", command=kind, requested_by=command.requested_by)
        return group_id

    def _apply_table_event(
        self, event: table_events_pb2.TableEvent, outputs: Outputs
    ) -> str | None:
        if not event.table_id:
            raise DomainError(Reason.MALFORMED, f"event {event.event_id} has no table_id")
        if event.sequence == 0:
            raise DomainError(Reason.MALFORMED, f"event {event.event_id} has no table sequence")
        runtime = self._groups.get(event.pot_group_id)
        if runtime is None:
            raise DomainError(
                Reason.UNKNOWN_POT_GROUP, f"pot group {event.pot_group_id} does not exist"
            )
        if self._is_duplicate(runtime, event, outputs):
            return None
        group = runtime.group
        reading.check_table_event(group, event)
        before = _config_versions(group)
        self._dirty.add(event.pot_group_id)  # before the engine runs: rollback must see it
        domain_events = reading.round_event(group, event)
        last = runtime.table_sequences.get(event.table_id, 0)
        if event.sequence != last + 1 and last:
            _bound(event).warning("sequence_gap", previous=last, sequence=event.sequence)
        runtime.table_sequences[event.table_id] = event.sequence
        context = EventContext(
            event.event_id,
            event.table_id,
            event.round_id,
            event.occurred_at,
            before,
            event.sequence,
        )
        self._record(runtime, event, domain_events, context, outputs)
        return event.pot_group_id

    # ------------------------------------------------------------------------- records

    def _record(
        self,
        runtime: GroupRuntime,
        event: table_events_pb2.TableEvent,
        domain_events: Sequence[Event],
        context: EventContext,
        outputs: Outputs,
    ) -> None:
        runtime.remember(event.event_id, self.event_id_window)
        runtime.events_applied += 1
        outputs.applied += 1
        self._writer.ledger(runtime, domain_events, context, outputs)


def _bound(event: table_events_pb2.TableEvent | None) -> Any:
    """The module logger with the event's pot group, table and round bound (only when logging)."""
    if event is None:
        return log
    return log.bind(pot_group=event.pot_group_id, table=event.table_id, round=event.round_id)


def _config_versions(group: PotGroup) -> tuple[int, tuple[int, ...]]:
    return group.config.version, tuple(config.version for config, _, _ in group.pending)
