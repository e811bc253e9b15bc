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

The same rebuild serves the pot's repair of a stored state behind its ledger
(:mod:`jackpot.pot.state_repair`): it starts from that state (``since``), verified against the
ledger at its own entry, and replays the entries after it; the state's hidden trigger stays when
no entry after it drew another, so nothing new is recorded then.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jackpot.domain.canonical import canonical_json
from jackpot.domain.engine import PotGroup
from jackpot.domain.events import Event
from jackpot.domain.level_figures import level_sign_values
from jackpot.domain.mystery import TriggerSource, secure_trigger
from jackpot.platform import codec
from jackpot.pot.ledger_audit import (
    CHECKPOINT,
    PAYOUT_TYPES,
    GroupAudit,
    chain_next,
    checkpoint_state,
)
from jackpot.pot.state_records import STATE_FORMAT
from jackpot.v1 import pot_pb2

RESTORE_TOOL = "jackpot restore --from-ledger"

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
        [t.source, t.target, codec.minor_units(t.amount)] for t in entry.transfers
    ]
    return event


def table_sequences(own: Sequence[pot_pb2.LedgerEntry]) -> dict[str, int]:
    """The highest table-event sequence applied per table: the checkpoint's (when ``own`` starts
    at one), raised by every later entry's ``table_sequence``."""
    sequences: dict[str, int] = {}
    if own and own[0].type == CHECKPOINT:
        stated = json.loads(own[0].detail_json).get("table_sequences", {})
        sequences = {str(t): int(n) for t, n in stated.items()}
    return raised(sequences, own)


def raised(sequences: Mapping[str, int], entries: Iterable[pot_pb2.LedgerEntry]) -> dict[str, int]:
    """``sequences`` (table -> the highest table-event sequence applied) raised by each entry's
    ``table_sequence``."""
    result = dict(sequences)
    for entry in entries:
        if entry.table_sequence and entry.table_id:
            result[entry.table_id] = max(result.get(entry.table_id, 0), entry.table_sequence)
    return result


@dataclass
class Start:
    """Where a rebuild begins: an engine snapshot (None: the group's opening entry) and what the
    group knew there, and the entries to replay after it."""

    snapshot: bytes | None
    replay: list[pot_pb2.LedgerEntry]
    table_sequences: dict[str, int]
    recent_event_ids: list[str]
    events_applied: int
    events_ignored: int = 0
    checkpoint: pot_pb2.LedgerEntry | None = None  # the last checkpoint among what it read

    @classmethod
    def at_checkpoint(cls, own: Sequence[pot_pb2.LedgerEntry]) -> Start:
        """From the group's last checkpoint in ``own`` (:func:`group_entries`), or its opening."""
        start = own[0] if own and own[0].type == CHECKPOINT else None
        return cls(
            snapshot=checkpoint_state(start) if start is not None else None,
            replay=list(own[1 if start is not None else 0 :]),
            table_sequences=table_sequences(own),
            recent_event_ids=list(dict.fromkeys(e.source_event_id for e in own)),
            events_applied=len({e.source_event_id for e in own}),
            checkpoint=start,
        )

    @classmethod
    def at_state(cls, since: pot_pb2.PotGroupState, after: Sequence[pot_pb2.LedgerEntry]) -> Start:
        """From a stored state (its hidden trigger included) and the entries after it."""
        applied = [e for e in after if e.type != CHECKPOINT]
        new_ids = list(dict.fromkeys(e.source_event_id for e in applied))
        checkpoints = [e for e in after if e.type == CHECKPOINT]
        return cls(
            snapshot=since.engine_snapshot,
            replay=applied,
            table_sequences=raised(since.table_sequences, applied),
            recent_event_ids=[*since.recent_event_ids, *new_ids],
            events_applied=since.events_applied + len(new_ids),
            events_ignored=since.events_ignored,
            checkpoint=checkpoints[-1] if checkpoints else None,
        )


def rebuild(
    group_id: str,
    entries: Sequence[pot_pb2.LedgerEntry],
    *,
    partition: int,
    update_sequence: int,
    now_ns: int,
    trigger_source: TriggerSource = secure_trigger,
    chain: bytes = b"",
    since: pot_pb2.PotGroupState | None = None,
    by: str = RESTORE_TOOL,
) -> Rebuilt:
    """The state the pot service stores for ``group_id``, from its ledger entries alone.

    ``entries`` may start at the group's last checkpoint (:func:`group_entries` starts there):
    the group is rebuilt from the checkpoint's state and the entries after it. ``since``: a stored
    state the entries extend (the pot's repair at takeover): the group is rebuilt from it and the
    entries after its ``ledger_sequence``, and keeps its idempotency, counters, checkpoint and
    hidden trigger. ``chain``: the hash chain after the group's last entry, as the caller's audit
    computed it (kept in the state; empty when unknown). ``by``: who records a new mystery
    commitment. Raises DomainError (or ValueError) when the entries cannot rebuild it (an old
    ledger without the opening configuration, an unreadable amount, nothing after ``since``).
    """
    own, start = _start(group_id, entries, since)
    group, new_events = PotGroup.from_ledger(
        group_id, [ledger_event(e) for e in start.replay], trigger_source, start.snapshot
    )
    last = own[-1]
    sequence = last.ledger_sequence
    ledger = []
    for index, event in enumerate(new_events):
        sequence += 1
        ledger.append(_entry(group, event, index, sequence, last, now_ns, by))
        if chain:
            chain = chain_next(chain, ledger[-1].SerializeToString())
    state = _state(group, start, sequence, update_sequence, partition, now_ns, chain)
    if start.checkpoint is not None:  # the takeover check begins there, not at the ledger's start
        state.checkpoint_sequence = start.checkpoint.ledger_sequence
        state.checkpoint_at.CopyFrom(start.checkpoint.recorded_at)
    elif since is not None:
        state.checkpoint_sequence = since.checkpoint_sequence
        state.checkpoint_at.CopyFrom(since.checkpoint_at)
    return Rebuilt(group_id, state, ledger, group)


def _start(
    group_id: str, entries: Sequence[pot_pb2.LedgerEntry], since: pot_pb2.PotGroupState | None
) -> tuple[list[pot_pb2.LedgerEntry], Start]:
    """The group's own entries a rebuild reads, and where it starts (see :func:`rebuild`)."""
    if since is None:
        own = group_entries(entries, group_id)
        return own, Start.at_checkpoint(own)
    own = [
        e
        for e in entries
        if e.pot_group_id == group_id
        and e.type not in PAYOUT_TYPES
        and e.ledger_sequence > since.ledger_sequence
    ]
    if not own:
        raise ValueError(f"no ledger entry of {group_id} after {since.ledger_sequence}")
    return own, Start.at_state(since, own)


def _state(
    group: PotGroup,
    start: Start,
    ledger_sequence: int,
    update_sequence: int,
    partition: int,
    now_ns: int,
    chain: bytes,
) -> pot_pb2.PotGroupState:
    """The rebuilt group as the pot service stores it."""
    return pot_pb2.PotGroupState(
        format=STATE_FORMAT,
        pot_group_id=group.group_id,
        engine_snapshot=group.snapshot(),
        recent_event_ids=start.recent_event_ids[-RECENT_EVENT_IDS:],
        update_sequence=update_sequence,
        last_sign_value=group.sign_value,
        # L4: each level's sign as the last one (none for a one-level group)
        last_level_sign_values=level_sign_values(group) if group.config.has_levels else {},
        ledger_sequence=ledger_sequence,
        events_applied=start.events_applied,
        events_ignored=start.events_ignored,
        input_partition=partition,
        input_offset=0,  # the pot resumes from its committed consumer offset
        written_at=codec.timestamp_ns(now_ns),
        ledger_chain=chain,  # the pot writes a first checkpoint at its first heartbeat
        table_sequences=start.table_sequences,
    )


def _entry(
    group: PotGroup,
    event: Event,
    index: int,
    sequence: int,
    last: pot_pb2.LedgerEntry,
    now_ns: int,
    by: str,
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
        detail_json=canonical_json(event.to_dict()),
        source_event_id=source,
        changed_by=by,
        reason="state rebuilt from the ledger; the hidden mystery trigger is not on the ledger, "
        "so a new one was drawn",
        occurred_at=codec.timestamp_ns(now_ns),
        recorded_at=codec.timestamp_ns(now_ns),
    )


@dataclass(frozen=True, slots=True)
class BooksAt:
    """A group's books at one of its entries: the hash chain after it and the figures."""

    sequence: int
    chain: bytes | None
    figures: dict[str, Any]


@dataclass
class TakeoverAudit:
    """The takeover check's books of one ledger partition (R14): each group audited from the
    checkpoint its stored state names, so the read costs what was written since, not history.

    ``starts``: per group restored here, the ledger_sequence of its last checkpoint (0: it has
    none, audit it from its first entry). Feed every entry of the partition from a point at or
    before those checkpoints (:meth:`add`); a group whose first entry seen lies after its
    checkpoint is in ``missed`` (read again from further back). Groups on the partition that
    have no stored state are counted in ``stateless`` (their last sequence seen); ``ends``: every
    group's last sequence seen.

    ``positions``: per group restored here, the ledger entry its stored state is at. The books
    at that entry go to ``at_state`` and the entries after it to ``after`` (none when the state
    is where its ledger ends): what the repair of a state behind its ledger needs
    (:mod:`jackpot.pot.state_repair`).
    """

    starts: dict[str, int]
    positions: dict[str, int] = field(default_factory=dict)
    audits: dict[str, GroupAudit] = field(default_factory=dict)
    missed: set[str] = field(default_factory=set)
    stateless: dict[str, int] = field(default_factory=dict)
    at_state: dict[str, BooksAt] = field(default_factory=dict)
    after: dict[str, list[pot_pb2.LedgerEntry]] = field(default_factory=dict)
    ends: dict[str, int] = field(default_factory=dict)
    read: int = 0

    def add(self, entry: pot_pb2.LedgerEntry, raw: bytes) -> None:
        self.read += 1
        if entry.type in PAYOUT_TYPES:
            return  # the payout service's: no part of the pot's state (an award's payment may
            # follow it by days, past the checkpoint the books start from)
        group_id = entry.pot_group_id
        self.ends[group_id] = max(self.ends.get(group_id, 0), entry.ledger_sequence)
        audit = self.audits.get(group_id)
        if audit is None:
            audit = self._begin(entry, raw)
        else:
            audit.add(entry, raw)
        if audit is not None:
            self._follow(audit, entry)

    def _begin(self, entry: pot_pb2.LedgerEntry, raw: bytes) -> GroupAudit | None:
        """The group's books, begun at this entry if they begin here (it added)."""
        group_id = entry.pot_group_id
        if group_id not in self.starts:
            if entry.ledger_sequence:
                self.stateless[group_id] = max(
                    self.stateless.get(group_id, 0), entry.ledger_sequence
                )
            return None
        start = self.starts[group_id]
        if not start:
            audit = GroupAudit(group_id)
            audit.add(entry, raw)
        elif entry.ledger_sequence == start and entry.type == CHECKPOINT:
            audit = GroupAudit.from_checkpoint(entry, raw)
        else:
            if entry.ledger_sequence > start:
                self.missed.add(group_id)
            return None
        self.audits[group_id] = audit
        return audit

    def _follow(self, audit: GroupAudit, entry: pot_pb2.LedgerEntry) -> None:
        position = self.positions.get(audit.group_id)
        if position is None:
            return
        if entry.ledger_sequence > position:
            self.after.setdefault(audit.group_id, []).append(entry)
        elif audit.last_sequence == position:
            self.at_state[audit.group_id] = BooksAt(position, audit.chain, audit.figures())


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
    wrong = mismatches(state_group, audit.figures())
    if wrong:
        return (
            f"the stored state of {group_id} disagrees with the ledger (picopesos, state != "
            f"ledger): {'; '.join(wrong)}"
        )
    return ""


def mismatches(state_group: PotGroup, figures: Mapping[str, Any]) -> list[str]:
    """Each counter and pot balance of the state that differs from the ledger's ``figures``
    (:meth:`GroupAudit.figures`), as "name state != ledger" (picopesos)."""
    pots = figures["pots"]
    counters = {
        "collected": (state_group.collected, figures["collected"]),
        "commission": (state_group.commission, figures["commission"]),
        "awarded": (state_group.awarded, figures["awarded"]),
        "house advances": (state_group.house_advance, figures["house_advances"]),
        **{
            f"pot {name}": (balance, pots.get(name, 0))
            for name, balance in state_group.balances.items()
        },
    }
    return [
        f"{name} {mine} != {theirs}" for name, (mine, theirs) in counters.items() if mine != theirs
    ]
