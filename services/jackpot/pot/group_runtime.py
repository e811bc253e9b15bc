"""A pot group as the pot service runs it, and what one batch of its partition produces.

:class:`GroupRuntime` is the engine's :class:`~jackpot.domain.engine.PotGroup` plus what the
service keeps beside it (table sequences and recent event ids for idempotency, the update
sequence and the signs' last values, the ledger's sequence and hash chain, the last checkpoint),
all of it in the group's snapshot; :class:`EventContext` is where a domain event came from;
:class:`Outputs` is everything a batch writes in its one transaction.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from google.protobuf.timestamp_pb2 import Timestamp

from jackpot.domain.engine import PotGroup
from jackpot.pot.ledger_audit import GENESIS
from jackpot.v1 import common_pb2, dead_letter_pb2, pot_pb2

# A round of this many bets or more is a studio round's size (O1; a land table's has a few seats):
# it is locked and settled in a pot transaction of its own (jackpot.pot.transaction_cut), and
# written apart from its group's snapshot while it is locked (jackpot.pot.state_records)
LARGE_ROUND_BETS = 1_000


@dataclass(slots=True)
class Outputs:
    """Everything one batch produces; the service writes it in one transaction."""

    pot_updates: list[pot_pb2.PotUpdate] = field(default_factory=list)
    awards: list[pot_pb2.Award] = field(default_factory=list)
    ledger: list[pot_pb2.LedgerEntry] = field(default_factory=list)
    dead_letters: list[dead_letter_pb2.DeadLetter] = field(default_factory=list)
    snapshots: dict[str, bytes] = field(default_factory=dict)  # pot group id -> PotGroupState
    # pot group id -> PotGroupState holding only update_sequence (heartbeats)
    sequence_marks: dict[str, bytes] = field(default_factory=dict)
    # (pot group id, table id) -> its large locked round's LockedRoundState, None: its tombstone
    locked_rounds: dict[tuple[str, str], bytes | None] = field(default_factory=dict)
    applied: int = 0
    ignored: Counter[str] = field(default_factory=Counter)
    rejected: Counter[str] = field(default_factory=Counter)
    # pot group id -> the locks applied, stamped for the latency budget (observation only)
    lock_traces: dict[str, list[common_pb2.LockTrace]] = field(default_factory=dict)
    # id() of a ledger entry -> its bytes, serialized once for the group's hash chain: the
    # transaction writes those (the entry is not changed after it is chained)
    serialized: dict[int, bytes] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (
            self.pot_updates
            or self.awards
            or self.ledger
            or self.dead_letters
            or self.snapshots
            or self.sequence_marks
            or self.locked_rounds
        )


@dataclass(slots=True)
class GroupRuntime:
    """A pot group plus what the service keeps beside the engine state (all of it snapshotted)."""

    group: PotGroup
    table_sequences: dict[str, int] = field(default_factory=dict)
    recent_event_ids: dict[str, None] = field(default_factory=dict)  # insertion-ordered set
    update_sequence: int = 0
    last_sign_value: int = 0
    last_increment: int = 0
    # L4, a group with levels: each level's sign value and increment in its last update with a
    # change, by level name (empty for a one-level group: last_sign_value is its only level's)
    last_level_sign_values: dict[str, int] = field(default_factory=dict)
    last_level_increments: dict[str, int] = field(default_factory=dict)
    ledger_sequence: int = 0
    events_applied: int = 0
    events_ignored: int = 0
    ledger_chain: bytes = GENESIS  # the hash chain after the group's last ledger entry
    checkpoint_sequence: int = 0  # the group's last checkpoint entry (0: none yet)
    checkpoint_at_ns: int = 0
    last_update_monotonic: float = 0.0  # not snapshotted: a restored group beats at once
    # table -> round id of each locked round whose record is on the state topic, written apart
    # from the snapshot (jackpot.pot.state_records.apart_records); not snapshotted: read back
    apart: dict[str, str] = field(default_factory=dict)

    def remember(self, event_id: str, window: int) -> None:
        self.recent_event_ids[event_id] = None
        while len(self.recent_event_ids) > window:
            del self.recent_event_ids[next(iter(self.recent_event_ids))]


@dataclass(frozen=True, slots=True)
class EventContext:
    """Where a domain event came from, for the records it becomes."""

    event_id: str
    table_id: str
    round_id: str
    occurred_at: Timestamp
    config_before: tuple[int, tuple[int, ...]]  # (version in force, pending versions)
    table_sequence: int = 0  # the table event's sequence (0 for an admin command)
