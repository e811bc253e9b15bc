"""A pot group's records on the pot-state topic (the changelog of the table-events partition it
lives on): its snapshot, the update-sequence mark a heartbeat writes instead, and reading a
snapshot back into the :class:`~jackpot.pot.group_runtime.GroupRuntime` the pot's book runs.

A snapshot is keyed by the group's id, a mark by :data:`~jackpot.topics.SEQUENCE_MARK_PREFIX`
and the id, so compaction keeps the latest of each; a snapshot of another
:data:`STATE_FORMAT` is refused. The same state gives the same bytes (map entries sorted).
"""

from __future__ import annotations

from jackpot.domain.engine import PotGroup
from jackpot.domain.mystery import TriggerSource
from jackpot.platform import codec
from jackpot.pot.group_runtime import GroupRuntime
from jackpot.pot.ledger_audit import GENESIS
from jackpot.topics import SEQUENCE_MARK_PREFIX
from jackpot.v1 import pot_pb2

STATE_FORMAT = 1


def state_key(group_id: str) -> bytes:
    return group_id.encode()


def sequence_mark_key(group_id: str) -> bytes:
    """A group's update-sequence mark: heartbeats write this 40-byte record, not the state."""
    return SEQUENCE_MARK_PREFIX + group_id.encode()


def decode_state(data: bytes) -> tuple[pot_pb2.PotGroupState, PotGroup]:
    """A stored PotGroupState and its engine group; ValueError/DomainError when unreadable."""
    state = pot_pb2.PotGroupState.FromString(data)
    if state.format != STATE_FORMAT:
        raise ValueError(f"unknown pot group state format {state.format}")
    return state, PotGroup.from_snapshot(state.engine_snapshot)


def runtime_from_state(
    data: bytes, trigger_source: TriggerSource, marked_sequence: int = 0
) -> GroupRuntime:
    """The group a snapshot holds, continuing from the higher of its update sequence and
    ``marked_sequence`` (its latest mark's)."""
    state = pot_pb2.PotGroupState.FromString(data)
    if state.format != STATE_FORMAT:
        raise ValueError(f"unknown pot group state format {state.format}")
    group = PotGroup.from_snapshot(state.engine_snapshot, trigger_source)
    return GroupRuntime(
        group=group,
        table_sequences=dict(state.table_sequences),
        recent_event_ids=dict.fromkeys(state.recent_event_ids),
        update_sequence=max(state.update_sequence, marked_sequence),
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


def snapshot(runtime: GroupRuntime, partition: int, next_offset: int, now_ns: int) -> bytes:
    """The group's whole state, as the state topic stores it."""
    return pot_pb2.PotGroupState(
        format=STATE_FORMAT,
        pot_group_id=runtime.group.group_id,
        engine_snapshot=runtime.group.snapshot(),
        table_sequences=runtime.table_sequences,
        recent_event_ids=list(runtime.recent_event_ids),
        update_sequence=runtime.update_sequence,
        last_sign_value=runtime.last_sign_value,
        last_increment=runtime.last_increment,
        ledger_sequence=runtime.ledger_sequence,
        events_applied=runtime.events_applied,
        events_ignored=runtime.events_ignored,
        input_partition=partition,
        input_offset=next_offset,
        written_at=codec.timestamp_ns(now_ns),
        ledger_chain=runtime.ledger_chain,
        checkpoint_sequence=runtime.checkpoint_sequence,
        checkpoint_at=codec.timestamp_ns(runtime.checkpoint_at_ns),
        last_level_sign_values=runtime.last_level_sign_values,
        last_level_increments=runtime.last_level_increments,
    ).SerializeToString(deterministic=True)  # map entries sorted: same state, same bytes


def sequence_mark(runtime: GroupRuntime, partition: int, next_offset: int, now_ns: int) -> bytes:
    """A state record holding only the group's update_sequence (keyed apart, see above)."""
    return pot_pb2.PotGroupState(
        format=STATE_FORMAT,
        pot_group_id=runtime.group.group_id,
        update_sequence=runtime.update_sequence,
        input_partition=partition,
        input_offset=next_offset,
        written_at=codec.timestamp_ns(now_ns),
    ).SerializeToString()
