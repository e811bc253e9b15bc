"""Pot group states rebuilt from the ledger alone, and restored states checked against it (R14, R2).

Pure, no I/O: `jackpot restore --from-ledger` (``jackpot.tools.restore``) feeds it the ledger's
entries; the pot service feeds it the same when it takes a partition over
(``PotPartition.verify_restored``) and refuses to run a group whose restored state disagrees.

The ledger holds every transfer, meter, table, round and configuration version (rule D4), so
:meth:`jackpot.domain.engine.PotGroup.from_ledger` rebuilds a group exactly, but for one thing it
must never hold: the hidden mystery trigger (X2). A rebuilt group with a mystery prize draws a new
trigger, and its commitment is recorded on the ledger (a ``MYSTERY_COMMITTED`` entry that follows
the group's last one) before the state is written. Idempotency by table sequence comes from the
ledger's entries since a checkpoint alone: each entry carries its table event's sequence and each
checkpoint the sequences before it, so the rebuilt state refuses a replayed table event by its
sequence as the lost state did (and keeps the recent event ids); the pot resumes from its
committed consumer offset.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from jackpot.domain.engine import PotGroup
from jackpot.domain.events import Event
from jackpot.domain.mystery import TriggerSource, secure_trigger
from jackpot.platform import codec
from jackpot.pot import records
from jackpot.pot.ledger_audit import (
    CHECKPOINT,
    PAYOUT_TYPES,
    GroupAudit,
    chain_next,
    checkpoint_state,
)
from jackpot.pot.processor import STATE_FORMAT
from jackpot.v1 import pot_pb2

RECENT_EVENT_IDS = 10_000


@dataclass
class Rebuilt:
    """A group's state rebuilt from its ledger, and the ledger entries to record first."""

    group_id: str
    state: pot_pb2.PotGroupState
    ledger: list[pot_pb2.LedgerEntry] = field(default_factory=list)
    group: PotGroup | None = None


def group_entries(
    entries: Iterable[pot_pb2.LedgerEntry], group_id: str
) -> list[pot_pb2.LedgerEntry]:
    """The pot service's own entries of one group, in ledger order (payout steps left out), from
    its last checkpoint on when the entries hold one."""
    own = [e for e in entries if e.pot_group_id == group_id and e.type not in PAYOUT_TYPES]
    last = max((i for i, e in enumerate(own) if e.type == CHECKPOINT), default=0)
    return own[last:]


def ledger_event(entry: pot_pb2.LedgerEntry) -> dict[str, Any]:
    """A ledger entry back to its domain event's dict, with its transfers in picopesos."""
    event: dict[str, Any] = json.loads(entry.detail_json or "{}")
    event["transfers"] = [
        [t.source, t.target, records.minor_units(t.amount)] for t in entry.transfers
    ]
    return event


def table_sequences(own: Sequence[pot_pb2.LedgerEntry]) -> dict[str, int]:
    """The highest table-event sequence applied per table: the checkpoint's (when ``own`` starts
    at one), raised by every later entry's ``table_sequence``."""
    sequences: dict[str, int] = {}
    if own and own[0].type == CHECKPOINT:
        stated = json.loads(own[0].detail_json).get("table_sequences", {})
        sequences = {str(t): int(n) for t, n in stated.items()}
    for entry in own:
        if entry.table_sequence and entry.table_id:
            sequences[entry.table_id] = max(sequences.get(entry.table_id, 0), entry.table_sequence)
    return sequences


def rebuild(
    group_id: str,
    entries: Sequence[pot_pb2.LedgerEntry],
    *,
    partition: int,
    update_sequence: int,
    now_ns: int,
    trigger_source: TriggerSource = secure_trigger,
    chain: bytes = b"",
) -> Rebuilt:
    """The state the pot service stores for ``group_id``, from its ledger entries alone.

    ``entries`` may start at the group's last checkpoint (:func:`group_entries` starts there):
    the group is rebuilt from the checkpoint's state and the entries after it. ``chain``: the
    hash chain after the group's last entry, as the caller's audit computed it (kept in the
    state; empty when unknown). Raises DomainError (or ValueError) when the entries cannot
    rebuild it (an old ledger without the opening configuration, an unreadable amount).
    """
    own = group_entries(entries, group_id)
    start = checkpoint_state(own[0]) if own and own[0].type == CHECKPOINT else None
    group, new_events = PotGroup.from_ledger(
        group_id, [ledger_event(e) for e in own[1 if start else 0 :]], trigger_source, start
    )
    last = own[-1]
    sequence = last.ledger_sequence
    ledger = []
    for index, event in enumerate(new_events):
        sequence += 1
        ledger.append(_entry(group, event, index, sequence, last, now_ns))
        if chain:
            chain = chain_next(chain, ledger[-1].SerializeToString())
    recent = list(dict.fromkeys(e.source_event_id for e in own))[-RECENT_EVENT_IDS:]
    sequences = table_sequences(own)
    state = pot_pb2.PotGroupState(
        format=STATE_FORMAT,
        pot_group_id=group_id,
        engine_snapshot=group.snapshot(),
        recent_event_ids=recent,
        update_sequence=update_sequence,
        last_sign_value=group.sign_value,
        # L4: each level's sign as the last one (none for a one-level group)
        last_level_sign_values=group.level_sign_values() if group.config.has_levels else {},
        ledger_sequence=sequence,
        events_applied=len({e.source_event_id for e in own}),
        input_partition=partition,
        input_offset=0,  # the pot resumes from its committed consumer offset
        written_at=records.timestamp_ns(now_ns),
        ledger_chain=chain,  # the pot writes a first checkpoint at its first heartbeat
        table_sequences=sequences,
    )
    if start is not None:  # the takeover check begins at this checkpoint, not at the ledger's start
        state.checkpoint_sequence = own[0].ledger_sequence
        state.checkpoint_at.CopyFrom(own[0].recorded_at)
    return Rebuilt(group_id, state, ledger, group)


def _entry(
    group: PotGroup,
    event: Event,
    index: int,
    sequence: int,
    last: pot_pb2.LedgerEntry,
    now_ns: int,
) -> pot_pb2.LedgerEntry:
    """The ledger entry of an event the rebuild caused (a new mystery commitment)."""
    source = f"restore-from-ledger:{group.group_id}:{last.ledger_sequence}"
    return pot_pb2.LedgerEntry(
        entry_id=f"{source}:{index}",
        pot_group_id=group.group_id,
        ledger_sequence=sequence,
        type=codec.ledger_type(event),
        config_version=group.config.version,
        pending_config_versions=[c.version for c, _, _ in group.pending],
        detail_json=records.canonical_json(event.to_dict()),
        source_event_id=source,
        changed_by="jackpot restore --from-ledger",
        reason="state rebuilt from the ledger; the hidden mystery trigger is not on the ledger, "
        "so a new one was drawn",
        occurred_at=records.timestamp_ns(now_ns),
        recorded_at=records.timestamp_ns(now_ns),
    )


@dataclass
class TakeoverAudit:
    """The takeover check's books of one ledger partition (R14): each group audited from the
    checkpoint its stored state names, so the read costs what was written since, not history.

    ``starts``: per group restored here, the ledger_sequence of its last checkpoint (0: it has
    none, audit it from its first entry). Feed every entry of the partition from a point at or
    before those checkpoints (:meth:`add`); a group whose first entry seen lies after its
    checkpoint is in ``missed`` (read again from further back). Groups on the partition that
    have no stored state are counted in ``stateless`` (their last sequence seen).
    """

    starts: dict[str, int]
    audits: dict[str, GroupAudit] = field(default_factory=dict)
    missed: set[str] = field(default_factory=set)
    stateless: dict[str, int] = field(default_factory=dict)
    read: int = 0

    def add(self, entry: pot_pb2.LedgerEntry, raw: bytes) -> None:
        self.read += 1
        if entry.type in PAYOUT_TYPES:
            return  # the payout service's: no part of the pot's state (an award's payment may
            # follow it by days, past the checkpoint the books start from)
        group_id = entry.pot_group_id
        audit = self.audits.get(group_id)
        if audit is not None:
            audit.add(entry, raw)
        elif group_id not in self.starts:
            if entry.ledger_sequence:
                self.stateless[group_id] = max(
                    self.stateless.get(group_id, 0), entry.ledger_sequence
                )
        elif not self.starts[group_id]:
            self.audits[group_id] = audit = GroupAudit(group_id)
            audit.add(entry, raw)
        elif entry.ledger_sequence == self.starts[group_id] and entry.type == CHECKPOINT:
            self.audits[group_id] = GroupAudit.from_checkpoint(entry, raw)
        elif entry.ledger_sequence > self.starts[group_id]:
            self.missed.add(group_id)


def audit_entries(
    group_id: str, entries: Iterable[pot_pb2.LedgerEntry | tuple[pot_pb2.LedgerEntry, bytes]]
) -> GroupAudit:
    """One group's books from its entries (with their bytes, to follow the chain)."""
    audit = GroupAudit(group_id)
    for item in entries:
        entry, raw = item if isinstance(item, tuple) else (item, None)
        if entry.pot_group_id == group_id:
            audit.add(entry, raw)
    return audit


def disagreement(
    group_id: str,
    state_group: PotGroup | None,
    state_ledger_sequence: int,
    audit: GroupAudit | None,
    state_chain: bytes = b"",
) -> str:
    """Why a restored state may not run (R14), or "" when it agrees with the ledger exactly.

    ``audit``: the group's books from its ledger (None: the ledger read holds no entry of it);
    ``state_chain``: the hash chain the state stored, compared when both sides know one."""
    audit = audit or GroupAudit(group_id)
    if audit.problems:
        return f"the ledger of {group_id} does not audit: {audit.problems[0]}"
    if state_group is None:
        if audit.last_sequence:
            return (
                f"no stored state for {group_id}, whose ledger has {audit.last_sequence} entries "
                "(run jackpot restore --from-ledger)"
            )
        return ""
    if state_ledger_sequence != audit.last_sequence:
        return (
            f"the stored state of {group_id} is at ledger entry {state_ledger_sequence}, the "
            f"ledger at {audit.last_sequence}"
        )
    if state_chain and audit.chain is not None and state_chain != audit.chain:
        return (
            f"the stored state of {group_id} holds ledger chain {state_chain.hex()[:16]}..., the "
            f"ledger's entries chain to {audit.chain.hex()[:16]}... (an entry differs)"
        )
    counters = {
        "collected": (state_group.collected, audit.collected),
        "commission": (state_group.commission, audit.accounts["commission"]),
        "awarded": (state_group.awarded, audit.accounts["awards"]),
        "house advances": (state_group.house_advance, audit.house_advances),
        **{
            f"pot {name}": (balance, audit.pots.get(name, 0))
            for name, balance in state_group.balances.items()
        },
    }
    wrong = [
        f"{name} {mine} != {theirs}" for name, (mine, theirs) in counters.items() if mine != theirs
    ]
    if wrong:
        return (
            f"the stored state of {group_id} disagrees with the ledger (picopesos, state != "
            f"ledger): {'; '.join(wrong)}"
        )
    return ""
