"""A pot group's records on the pot-state topic (the changelog of the table-events partition it
lives on): its snapshot, the update-sequence mark a heartbeat writes instead, its large locked
rounds written apart, and reading them back into the
:class:`~jackpot.pot.group_runtime.GroupRuntime` the pot's book runs.

A snapshot is keyed by the group's id, a mark by :data:`~jackpot.topics.SEQUENCE_MARK_PREFIX`
and the id, a locked round by :data:`~jackpot.topics.LOCKED_ROUND_PREFIX`, the id and its table,
so compaction keeps the latest of each; a record of another :data:`STATE_FORMAT` is refused. The
same state gives the same bytes (map entries sorted).

A round of :data:`~jackpot.pot.group_runtime.LARGE_ROUND_BETS` bets or more (a studio round, O1)
is written apart while it is locked (:func:`apart_records`): its 10,000 bets and players once, at
the lock, and a tombstone when it is settled or voided, while the group's snapshot, written after
every batch that changes the group, keeps only its round id and forfeits. A real studio keeps a
round locked 15 to 30 s while its players decide, and the land tables' batches of the same group
wrote those 350 KB each, in their transactions (issue 39 item 6).
"""

from __future__ import annotations

from collections.abc import Mapping

from jackpot.domain import group_persistence
from jackpot.domain.engine import PotGroup
from jackpot.domain.mystery import TriggerSource
from jackpot.platform import codec
from jackpot.pot.group_runtime import LARGE_ROUND_BETS, GroupRuntime, Outputs
from jackpot.pot.ledger_audit import GENESIS
from jackpot.topics import LOCKED_ROUND_PREFIX, SEQUENCE_MARK_PREFIX
from jackpot.v1 import pot_pb2

STATE_FORMAT = 1


def state_key(group_id: str) -> bytes:
    return group_id.encode()


def sequence_mark_key(group_id: str) -> bytes:
    """A group's update-sequence mark: heartbeats write this 40-byte record, not the state."""
    return SEQUENCE_MARK_PREFIX + group_id.encode()


def locked_round_key(group_id: str, table_id: str) -> bytes:
    """A locked round written apart: its group's and its table's (0x00 occurs in neither)."""
    return LOCKED_ROUND_PREFIX + group_id.encode() + b"\x00" + table_id.encode()


def locked_round_of(key: bytes) -> tuple[str, str]:
    """The group and the table a :func:`locked_round_key` names."""
    group_id, _, table_id = key.removeprefix(LOCKED_ROUND_PREFIX).decode().partition("\x00")
    return group_id, table_id


def decode_locked_round(data: bytes) -> pot_pb2.LockedRoundState:
    """A stored LockedRoundState; ValueError when of another format."""
    record = pot_pb2.LockedRoundState.FromString(data)
    if record.format != STATE_FORMAT:
        raise ValueError(f"unknown locked round record format {record.format}")
    return record


def _decoded(records: Mapping[str, bytes]) -> dict[str, pot_pb2.LockedRoundState]:
    """A group's LockedRoundStates by table, decoded."""
    return {table: decode_locked_round(data) for table, data in records.items()}


def decode_state(
    data: bytes, apart: Mapping[str, bytes] | None = None
) -> tuple[pot_pb2.PotGroupState, PotGroup]:
    """A stored PotGroupState and its engine group (``apart``: the group's LockedRoundStates
    by table); ValueError/DomainError when unreadable."""
    state = pot_pb2.PotGroupState.FromString(data)
    if state.format != STATE_FORMAT:
        raise ValueError(f"unknown pot group state format {state.format}")
    records = _decoded(apart or {})
    group = PotGroup.from_snapshot(
        state.engine_snapshot, apart={t: r.locked_round for t, r in records.items()}
    )
    return state, group


def runtime_from_state(
    data: bytes,
    trigger_source: TriggerSource,
    marked_sequence: int = 0,
    apart: Mapping[str, bytes] | None = None,
) -> GroupRuntime:
    """The group a snapshot holds, continuing from the higher of its update sequence and
    ``marked_sequence`` (its latest mark's); ``apart``: the group's LockedRoundStates on the
    topic, by table (the runtime knows them written, so it writes them again only if its
    round changed, and tombstones those whose round is no longer locked)."""
    state = pot_pb2.PotGroupState.FromString(data)
    if state.format != STATE_FORMAT:
        raise ValueError(f"unknown pot group state format {state.format}")
    records = _decoded(apart or {})
    engine = {table: record.locked_round for table, record in records.items()}
    group = PotGroup.from_snapshot(state.engine_snapshot, trigger_source, engine)
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
        apart={table: record.round_id for table, record in records.items()},
    )


def snapshot(
    runtime: GroupRuntime,
    partition: int,
    next_offset: int,
    now_ns: int,
    apart: Mapping[str, str] | None = None,
) -> bytes:
    """The group's whole state, as the state topic stores it (``apart``: tables whose locked
    round is in a record of its own, :func:`apart_records`)."""
    return pot_pb2.PotGroupState(
        format=STATE_FORMAT,
        pot_group_id=runtime.group.group_id,
        engine_snapshot=runtime.group.snapshot(apart=apart or ()),
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


def apart_records(runtime: GroupRuntime, partition: int, now_ns: int, outputs: Outputs) -> None:
    """The group's large locked rounds written apart, into ``outputs``: a round locked since
    its last state was written gets its record, a round no longer locked its tombstone; the
    snapshot written with them names the rounds apart (``runtime.apart`` after this)."""
    group = runtime.group
    large = {
        table: locked.round_id
        for table, locked in group.locked.items()
        if len(locked.bets) >= LARGE_ROUND_BETS
    }
    for table, round_id in large.items():
        if runtime.apart.get(table) != round_id:
            record = pot_pb2.LockedRoundState(
                format=STATE_FORMAT,
                pot_group_id=group.group_id,
                table_id=table,
                round_id=round_id,
                locked_round=group_persistence.locked_round_record(group, table),
                input_partition=partition,
                written_at=codec.timestamp_ns(now_ns),
            )
            outputs.locked_rounds[(group.group_id, table)] = record.SerializeToString()
    for table in runtime.apart.keys() - large.keys():
        outputs.locked_rounds[(group.group_id, table)] = None
    runtime.apart = large
