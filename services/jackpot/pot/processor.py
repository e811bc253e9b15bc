"""The pot service's processing core: table events in; pot updates, awards, ledger, state out.

No Kafka here: the service (``jackpot.pot.service``) feeds the records of one input partition to a
:class:`PotProcessor` and writes what it returns in one Kafka transaction. The processor

- decodes each ``TableEvent`` and refuses, with a specific :class:`~jackpot.domain.errors.Reason`,
  anything malformed, for an unknown pot group or table, or refused by the domain engine: the
  refusal becomes a dead letter and changes nothing;
- ignores an event already applied, recognised by its per-table sequence or its event id, and
  counts it; the idempotency state lives in the group's state snapshot, so it survives restarts;
- applies the rest to the group's :class:`~jackpot.domain.engine.PotGroup` in partition order
  (rule S9) and maps the domain events to ``LedgerEntry`` and ``Award`` records;
- after a batch returns one ``PotUpdate`` and one ``PotGroupState`` snapshot per group it changed;
- folds every ledger entry into the group's hash chain and writes a ``CHECKPOINT`` entry every
  ``checkpoint_entries`` entries, at every configuration activation, and on a heartbeat when the
  last one is ``checkpoint_seconds`` old or the group has none yet (the entries:
  :mod:`jackpot.pot.ledger_writer`; their check: ``jackpot.pot.ledger_audit``): a takeover then
  checks the restored state against the last checkpoint and the entries after it.

A batch whose transaction fails is undone with :meth:`PotProcessor.rollback`, which rebuilds the
touched groups from their last committed snapshots.

A group whose stored state the takeover repaired from the ledger (R14,
``jackpot.pot.state_repair``) is :meth:`PotProcessor.adopt`-ed: the next transaction, a batch or
a tick, writes the ledger entries the repair caused first, then the group's snapshot.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar

import structlog
from google.protobuf.message import DecodeError

from jackpot.domain.config import PotGroupConfig, load_config
from jackpot.domain.engine import PotGroup
from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.events import Event
from jackpot.domain.level_figures import level_sign_values
from jackpot.domain.mystery import TriggerSource, secure_trigger
from jackpot.platform import codec
from jackpot.platform.deadletter import dead_letter
from jackpot.pot import records
from jackpot.pot.group_runtime import EventContext, GroupRuntime, Outputs
from jackpot.pot.ledger_audit import GENESIS
from jackpot.pot.ledger_writer import LedgerWriter
from jackpot.topics import SEQUENCE_MARK_PREFIX
from jackpot.v1 import common_pb2, pot_pb2, table_events_pb2

STATE_FORMAT = 1


def state_key(group_id: str) -> bytes:
    return group_id.encode()


def sequence_mark_key(group_id: str) -> bytes:
    """A group's update-sequence mark: heartbeats write this 40-byte record, not the state."""
    return SEQUENCE_MARK_PREFIX + group_id.encode()


SeatValue = TypeVar("SeatValue")

log = structlog.get_logger("jackpot.pot.processor")


class IgnoreReason(Enum):
    """Why an event was ignored rather than applied: it was applied before."""

    DUPLICATE_SEQUENCE = "DUPLICATE_SEQUENCE"
    DUPLICATE_EVENT_ID = "DUPLICATE_EVENT_ID"


@dataclass(frozen=True, slots=True)
class InputRecord:
    """One consumed table-events record."""

    value: bytes | None
    topic: str
    partition: int
    offset: int
    key: bytes | None = None
    timestamp_ms: int = 0  # the record's Kafka timestamp (a latency-budget stamp only)


def decode_state(data: bytes) -> tuple[pot_pb2.PotGroupState, PotGroup]:
    """A stored PotGroupState and its engine group; ValueError/DomainError when unreadable."""
    state = pot_pb2.PotGroupState.FromString(data)
    if state.format != STATE_FORMAT:
        raise ValueError(f"unknown pot group state format {state.format}")
    return state, PotGroup.from_snapshot(state.engine_snapshot)


class PotProcessor:
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
    ) -> None:
        self.partition = partition
        self.checkpoint_seconds = checkpoint_seconds
        self.source = source
        self.event_id_window = event_id_window
        self._clock_ns = clock_ns
        self._batch_started_ns = 0  # when the batch being applied began (latency budget)
        self._monotonic = monotonic
        self._trigger_source = trigger_source
        self._groups: dict[str, GroupRuntime] = {}
        self._committed: dict[str, bytes] = {}
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
        self, states: Iterable[bytes], next_offset: int, sequence_marks: Iterable[bytes] = ()
    ) -> None:
        """Rebuild the partition's groups from their latest snapshots on the state topic.

        ``sequence_marks`` are the groups' latest update-sequence marks (written by heartbeats);
        a group continues from the higher of its snapshot's and its mark's update_sequence.
        """
        self._groups.clear()
        self._committed.clear()
        self._committed_sequences.clear()
        self._dirty.clear()
        self._repaired.clear()
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
        state = pot_pb2.PotGroupState.FromString(data)
        if state.format != STATE_FORMAT:
            raise ValueError(f"unknown pot group state format {state.format}")
        group = PotGroup.from_snapshot(state.engine_snapshot, self._trigger_source)
        marked = self._committed_sequences.get(state.pot_group_id, 0)
        return GroupRuntime(
            group=group,
            table_sequences=dict(state.table_sequences),
            recent_event_ids=dict.fromkeys(state.recent_event_ids),
            update_sequence=max(state.update_sequence, marked),
            last_sign_value=state.last_sign_value,
            last_increment=state.last_increment,
            last_level_sign_values=dict(state.last_level_sign_values),
            last_level_increments=dict(state.last_level_increments),
            ledger_sequence=state.ledger_sequence,
            events_applied=state.events_applied,
            events_ignored=state.events_ignored,
            # A state written before the chain existed: the takeover check adopts the chain it
            # computes from the ledger (jackpot.pot.service.PotPartition.verify_restored).
            ledger_chain=state.ledger_chain or (GENESIS if not state.ledger_sequence else b""),
            checkpoint_sequence=state.checkpoint_sequence,
            checkpoint_at_ns=state.checkpoint_at.ToNanoseconds(),
        )

    def snapshot(self, group_id: str) -> bytes:
        """The group's whole state, as the state topic stores it."""
        runtime = self._groups[group_id]
        return pot_pb2.PotGroupState(
            format=STATE_FORMAT,
            pot_group_id=group_id,
            engine_snapshot=runtime.group.snapshot(),
            table_sequences=runtime.table_sequences,
            recent_event_ids=list(runtime.recent_event_ids),
            update_sequence=runtime.update_sequence,
            last_sign_value=runtime.last_sign_value,
            last_increment=runtime.last_increment,
            ledger_sequence=runtime.ledger_sequence,
            events_applied=runtime.events_applied,
            events_ignored=runtime.events_ignored,
            input_partition=self.partition,
            input_offset=self.next_offset,
            written_at=codec.timestamp_ns(self._clock_ns()),
            ledger_chain=runtime.ledger_chain,
            checkpoint_sequence=runtime.checkpoint_sequence,
            checkpoint_at=codec.timestamp_ns(runtime.checkpoint_at_ns),
            last_level_sign_values=runtime.last_level_sign_values,
            last_level_increments=runtime.last_level_increments,
        ).SerializeToString(deterministic=True)  # map entries sorted: same state, same bytes

    def sequence_mark(self, group_id: str) -> bytes:
        """A state record holding only the group's update_sequence (keyed apart, see above)."""
        return pot_pb2.PotGroupState(
            format=STATE_FORMAT,
            pot_group_id=group_id,
            update_sequence=self._groups[group_id].update_sequence,
            input_partition=self.partition,
            input_offset=self.next_offset,
            written_at=codec.timestamp_ns(self._clock_ns()),
        ).SerializeToString()

    def commit(self, outputs: Outputs) -> None:
        """The batch's transaction committed: its snapshots are the new rollback point."""
        self._committed.update(outputs.snapshots)
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

    def apply(
        self, value: bytes | None, topic: str, partition: int, offset: int, key: bytes | None = None
    ) -> Outputs:
        """Apply one record; see :meth:`apply_batch`."""
        return self.apply_batch([InputRecord(value, topic, partition, offset, key)])

    def apply_batch(self, batch: Iterable[InputRecord]) -> Outputs:
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
            update = self._pot_update(runtime, heartbeat=False)
            traces = outputs.lock_traces.get(group_id, [])
            for trace in traces:
                trace.pot_applied_unix_nanos = update.produced_at.ToNanoseconds()
            update.lock_traces.extend(traces)
            outputs.pot_updates.append(update)
            runtime.last_update_monotonic = now
        for group_id in changed:
            outputs.snapshots[group_id] = self.snapshot(group_id)
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
            outputs.pot_updates.append(self._pot_update(runtime, heartbeat=True))
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
            outputs.snapshots[group_id] = self.snapshot(group_id)
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

    def _apply_one(self, record: InputRecord, outputs: Outputs) -> str | None:
        """Apply, ignore or refuse one record; the id of the group it changed, if any."""
        event: table_events_pb2.TableEvent | None = None
        try:
            event = self._decode(record)
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
        self, event: table_events_pb2.TableEvent, record: InputRecord
    ) -> common_pb2.LockTrace:
        return common_pb2.LockTrace(
            table_id=event.table_id,
            round_id=event.round_id,
            gateway_accepted_unix_nanos=event.gateway_accepted_unix_nanos,
            kafka_unix_nanos=max(record.timestamp_ms, 0) * 1_000_000,
            pot_fetched_unix_nanos=self._batch_started_ns,
        )

    def _decode(self, record: InputRecord) -> table_events_pb2.TableEvent:
        if record.value is None:
            raise DomainError(Reason.MALFORMED, "empty record (tombstone)")
        try:
            event = table_events_pb2.TableEvent.FromString(record.value)
        except DecodeError as error:
            raise DomainError(Reason.MALFORMED, f"not a TableEvent: {error}") from None
        if not event.event_id:
            raise DomainError(Reason.MALFORMED, "event_id is empty")
        if not event.pot_group_id:
            raise DomainError(Reason.MALFORMED, f"event {event.event_id} has no pot_group_id")
        if record.key is not None and record.key != event.pot_group_id.encode():
            raise DomainError(
                Reason.MALFORMED,
                f"record key {record.key!r} is not the event's pot group {event.pot_group_id!r}: "
                "it would be on another group's partition",
            )
        if event.WhichOneof("payload") is None:
            raise DomainError(Reason.MALFORMED, f"event {event.event_id} has no payload")
        return event

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
            config = _load_config(command.create.config_json)
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
            domain_events = self._group_command(runtime.group, command, kind)
        context = EventContext(
            event.event_id, event.table_id, event.round_id, event.occurred_at, before
        )
        self._record(runtime, event, domain_events, context, outputs)
        _bound(event).info("command_applied", command=kind, requested_by=command.requested_by)
        return group_id

    def _group_command(
        self, group: PotGroup, command: table_events_pb2.PotGroupCommand, kind: str | None
    ) -> list[Event]:
        if kind == "propose_config":
            config = _load_config(command.propose_config.config_json)
            return group.propose_config(config, command.requested_by, command.reason)
        if kind == "link_table":
            link = command.link_table
            game = codec.game_of(link.game)
            if not link.table_id or game is None:
                raise DomainError(Reason.MALFORMED, "link_table needs a table_id and a known game")
            return group.link_table(
                link.table_id,
                game,
                link.site,
                min_bet=link.min_bet,
                max_bet=link.max_bet,
                credit_value=link.credit_value,
            )
        if kind == "unlink_table":
            if not command.unlink_table.table_id:
                raise DomainError(Reason.MALFORMED, "unlink_table needs a table_id")
            return group.unlink_table(command.unlink_table.table_id)
        raise DomainError(Reason.MALFORMED, f"pot group command without a known command ({kind})")

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
        table = group.tables.get(event.table_id)
        if table is None:
            raise DomainError(
                Reason.UNKNOWN_TABLE,
                f"table {event.table_id} is not linked to pot group {event.pot_group_id}",
            )
        if codec.game_of(event.game) != table.game:
            raise DomainError(
                Reason.UNKNOWN_GAME,
                f"event says game {codec.game_name(event.game)}; table {event.table_id} is "
                f"linked as {table.game.value}",
            )
        if not event.round_id:
            raise DomainError(Reason.MALFORMED, f"event {event.event_id} has no round_id")
        before = _config_versions(group)
        self._dirty.add(event.pot_group_id)  # before the engine runs: rollback must see it
        domain_events = self._round_event(group, event)
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

    def _round_event(self, group: PotGroup, event: table_events_pb2.TableEvent) -> list[Event]:
        kind = event.WhichOneof("payload")
        table_id, round_id = event.table_id, event.round_id
        if kind == "round_locked":
            bets = _unique_seats((b.seat, b.bet) for b in event.round_locked.bets)
            return group.lock_round(table_id, round_id, bets)
        if kind == "seat_forfeited":
            forfeit = event.seat_forfeited
            try:
                reason = codec.forfeit_reason_from_proto(forfeit.reason)
            except DomainError as error:
                raise DomainError(error.reason, f"seat {forfeit.seat} {error.detail}") from None
            return group.forfeit(table_id, round_id, forfeit.seat, reason)
        if kind == "round_result":
            result = event.round_result
            hands = _unique_seats((h.seat, list(h.cards)) for h in result.hands)
            return group.resolve_round(table_id, round_id, hands, list(result.community_cards))
        if kind == "round_voided":
            locked = group.locked.get(table_id)
            if locked is not None and locked.round_id == round_id:
                raise DomainError(
                    Reason.INVALID_STATE,
                    f"round {round_id} is locked and its bets collected; only a round voided "
                    "before lock is refunded (rule C1)",
                )
            return []  # never collected, nothing to refund from the pot
        if kind == "seat_closed":
            return []  # the gateway closes the seat (E5); the pot holds no seat state
        raise DomainError(Reason.MALFORMED, f"unknown table event payload {kind}")

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

    def _pot_update(self, runtime: GroupRuntime, heartbeat: bool) -> pot_pb2.PotUpdate:
        group = runtime.group
        sign_value = group.sign_value
        if not heartbeat:
            runtime.last_increment = sign_value - runtime.last_sign_value
            runtime.last_sign_value = sign_value
        runtime.update_sequence += 1
        config = group.config
        levels = self._level_values(runtime, heartbeat)
        return pot_pb2.PotUpdate(
            pot_group_id=group.group_id,
            sign_value=sign_value,
            increment=runtime.last_increment,
            pots=records.pot_balances(group),
            min_bet=config.min_bet,
            max_bet=config.max_bet,
            credit_value=config.credit_value,
            config_version=config.version,
            table_ids=sorted(group.tables),
            heartbeat=heartbeat,
            produced_at=codec.timestamp_ns(self._clock_ns()),
            update_sequence=runtime.update_sequence,
            levels=levels,
        )

    @staticmethod
    def _level_values(runtime: GroupRuntime, heartbeat: bool) -> list[pot_pb2.LevelValue]:
        """L4, D2: each level's sign value and its rise since the group's previous update with
        a change (heartbeats repeat it), as the main sign's; none for a one-level group."""
        group = runtime.group
        if not group.config.has_levels:
            runtime.last_level_sign_values.clear()  # a configuration without levels took effect
            runtime.last_level_increments.clear()
            return []
        values = level_sign_values(group)
        if not heartbeat:
            last = runtime.last_level_sign_values
            runtime.last_level_increments = {
                name: value - last.get(name, value) for name, value in values.items()
            }
            runtime.last_level_sign_values = dict(values)
        return records.level_values(group, runtime.last_level_increments)


def _bound(event: table_events_pb2.TableEvent | None) -> Any:
    """The module logger with the event's pot group, table and round bound (only when logging)."""
    if event is None:
        return log
    return log.bind(pot_group=event.pot_group_id, table=event.table_id, round=event.round_id)


def _config_versions(group: PotGroup) -> tuple[int, tuple[int, ...]]:
    return group.config.version, tuple(config.version for config, _, _ in group.pending)


def _load_config(text: str) -> PotGroupConfig:
    """Operator JSON to a validated configuration; anything hostile is INVALID_CONFIG."""
    try:
        return load_config(_config_json(text))
    except (TypeError, ValueError, OverflowError, RecursionError, AttributeError) as error:
        if isinstance(error, DomainError):
            raise
        raise DomainError(
            Reason.INVALID_CONFIG, f"configuration refused: {error!r}"[:500]
        ) from None


def _config_json(text: str) -> dict[str, object]:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise DomainError(Reason.INVALID_CONFIG, f"configuration is not JSON: {error}") from None
    if not isinstance(data, dict):
        raise DomainError(Reason.INVALID_CONFIG, "configuration JSON must be an object")
    return data


def _unique_seats(pairs: Iterable[tuple[int, SeatValue]]) -> dict[int, SeatValue]:
    seats: dict[int, SeatValue] = {}
    for seat, value in pairs:
        if seat in seats:
            raise DomainError(Reason.MALFORMED, f"seat {seat} appears twice in the event")
        seats[seat] = value
    return seats
