"""Pot group states rebuilt from the ledger alone, and restored states checked against it (R14, R2).

Pure, no I/O: `jackpot restore --from-ledger` (``jackpot.tools.restore``) feeds it the ledger's
entries; the pot service feeds it the same when it takes a partition over
(``PotPartition.verify_restored``) and refuses to run a group whose restored state disagrees.

The ledger holds every transfer, meter, table, round and configuration version (rule D4), so
:meth:`jackpot.domain.engine.PotGroup.from_ledger` rebuilds a group exactly, but for one thing it
must never hold: the hidden mystery trigger (X2). A rebuilt group with a mystery prize draws a new
trigger, and its commitment is recorded on the ledger (a ``MYSTERY_COMMITTED`` entry that follows
the group's last one) before the state is written. Idempotency by table sequence is not on the
ledger: the rebuilt state keeps the recent event ids and the pot resumes from its committed
consumer offset, so nothing already applied is read again.
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
from jackpot.pot.processor import STATE_FORMAT
from jackpot.tools.audit import PAYOUT_TYPES, GroupAudit
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
    """The pot service's own entries of one group, in ledger order (payout steps left out)."""
    return [e for e in entries if e.pot_group_id == group_id and e.type not in PAYOUT_TYPES]


def ledger_event(entry: pot_pb2.LedgerEntry) -> dict[str, Any]:
    """A ledger entry back to its domain event's dict, with its transfers in picopesos."""
    event: dict[str, Any] = json.loads(entry.detail_json or "{}")
    event["transfers"] = [
        [t.source, t.target, records.minor_units(t.amount)] for t in entry.transfers
    ]
    return event


def rebuild(
    group_id: str,
    entries: Sequence[pot_pb2.LedgerEntry],
    *,
    partition: int,
    update_sequence: int,
    now_ns: int,
    trigger_source: TriggerSource = secure_trigger,
) -> Rebuilt:
    """The state the pot service stores for ``group_id``, from its ledger entries alone.

    Raises DomainError (or ValueError) when the entries cannot rebuild it (an old ledger without
    the opening configuration, an unreadable amount).
    """
    own = group_entries(entries, group_id)
    group, new_events = PotGroup.from_ledger(
        group_id, [ledger_event(e) for e in own], trigger_source
    )
    last = own[-1]
    sequence = last.ledger_sequence
    ledger = []
    for index, event in enumerate(new_events):
        sequence += 1
        ledger.append(_entry(group, event, index, sequence, last, now_ns))
    recent = list(dict.fromkeys(e.source_event_id for e in own))[-RECENT_EVENT_IDS:]
    state = pot_pb2.PotGroupState(
        format=STATE_FORMAT,
        pot_group_id=group_id,
        engine_snapshot=group.snapshot(),
        recent_event_ids=recent,
        update_sequence=update_sequence,
        last_sign_value=group.sign_value,
        ledger_sequence=sequence,
        events_applied=len({e.source_event_id for e in own}),
        input_partition=partition,
        input_offset=0,  # the pot resumes from its committed consumer offset
        written_at=records.timestamp_ns(now_ns),
    )
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


def disagreement(
    group_id: str,
    state_group: PotGroup | None,
    state_ledger_sequence: int,
    entries: Sequence[pot_pb2.LedgerEntry],
) -> str:
    """Why a restored state may not run (R14), or "" when it agrees with the ledger exactly."""
    audit = GroupAudit(group_id)
    for entry in entries:
        if entry.pot_group_id == group_id:
            audit.add(entry)
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
