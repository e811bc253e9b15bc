"""Ledger checkpoints and the hash chain (issue 23; R14, D4, M2): a takeover, a restore and an
incremental audit start from a checkpoint instead of the ledger's beginning, and get the same
answer as the whole ledger would give, or refuse.

The ledger comes from the real pot processor (``tests.unit.test_restore.Floor``) checkpointing
every 25 entries; each judge is shown refusing a ledger altered by one peso or one byte.
"""

from __future__ import annotations

import json

import pytest

from jackpot.pot.ledger_audit import (
    CHECKPOINT,
    GroupAudit,
    audit_from_dict,
    audit_to_dict,
)
from jackpot.pot.ledger_restore import TakeoverAudit, audit_entries, disagreement, rebuild
from jackpot.pot.metrics import PotMetrics
from jackpot.pot.service import PotPartition
from jackpot.pot.settings import PotSettings
from jackpot.pot.state_repair import RUN
from jackpot.v1 import pot_pb2
from tests.unit.test_restore import GROUP, Floor, played, without_trigger

pytestmark = pytest.mark.unit
EVERY = 25


@pytest.fixture(scope="module")
def floor() -> Floor:
    floor, _ = played(80, checkpoint_entries=EVERY)
    return floor


def raw(floor: Floor) -> list[tuple[pot_pb2.LedgerEntry, bytes]]:
    """The entries with the bytes the ledger topic would hold (as the service serializes)."""
    return [(e, e.SerializeToString()) for e in floor.ledger]


def checkpoint_positions(floor: Floor) -> list[int]:
    return [i for i, e in enumerate(floor.ledger) if e.type == CHECKPOINT]


def test_checkpoints_are_written_at_the_interval_and_every_one_verifies(floor: Floor) -> None:
    positions = checkpoint_positions(floor)
    runtime = floor.book.groups[GROUP]
    assert len(positions) >= len(floor.ledger) // (EVERY + 5)
    assert all(not floor.ledger[i].transfers for i in positions)  # a checkpoint moves no money
    audit = audit_entries(GROUP, raw(floor))
    assert audit.problems == []
    assert audit.checkpoints == len(positions)
    assert audit.chain == runtime.ledger_chain  # the state holds the chain of what it wrote
    assert runtime.checkpoint_sequence == floor.ledger[positions[-1]].ledger_sequence


def test_an_entry_altered_by_one_peso_breaks_the_chain_at_the_next_checkpoint(
    floor: Floor,
) -> None:
    """A prize that conserves money but is one peso off: the figures and the chain say so."""
    entries = raw(floor)
    award = next(
        i
        for i, (e, _) in enumerate(entries)
        if e.type == pot_pb2.LEDGER_ENTRY_TYPE_PRIZE_AWARDED and i < checkpoint_positions(floor)[-1]
    )
    altered = pot_pb2.LedgerEntry()
    altered.CopyFrom(entries[award][0])
    altered.amount += 1
    entries[award] = (altered, altered.SerializeToString())
    problems = audit_entries(GROUP, entries).problems
    assert any("hash chain" in p for p in problems), problems


def test_a_checkpoint_that_misstates_a_figure_is_refused(floor: Floor) -> None:
    entries = raw(floor)
    at = checkpoint_positions(floor)[1]
    altered = pot_pb2.LedgerEntry()
    altered.CopyFrom(entries[at][0])
    detail = json.loads(altered.detail_json)
    detail["commission"] += 1
    altered.detail_json = json.dumps(detail, sort_keys=True, separators=(",", ":"))
    entries[at] = (altered, altered.SerializeToString())
    problems = audit_entries(GROUP, entries).problems
    assert any("checkpoint at ledger entry" in p and "commission" in p for p in problems)


def takeover(floor: Floor, begin: int) -> TakeoverAudit:
    runtime = floor.book.groups[GROUP]
    books = TakeoverAudit({GROUP: runtime.checkpoint_sequence})
    for entry, data in raw(floor)[begin:]:
        books.add(entry, data)
    return books


def test_takeover_checks_the_state_from_its_last_checkpoint_only(floor: Floor) -> None:
    runtime = floor.book.groups[GROUP]
    last = checkpoint_positions(floor)[-1]
    books = takeover(floor, last - 3)  # a time seek lands a little before the checkpoint
    assert books.read == len(floor.ledger) - last + 3
    assert books.read < len(floor.ledger) // 3
    audit = books.audits[GROUP]
    assert not books.missed
    why = disagreement(GROUP, runtime.group, runtime.ledger_sequence, audit, runtime.ledger_chain)
    assert why == ""
    assert audit.figures() == audit_entries(GROUP, raw(floor)).figures()


def test_takeover_refuses_a_state_whose_chain_differs_and_notices_a_late_start(
    floor: Floor,
) -> None:
    runtime = floor.book.groups[GROUP]
    last = checkpoint_positions(floor)[-1]
    audit = takeover(floor, last).audits[GROUP]
    why = disagreement(GROUP, runtime.group, runtime.ledger_sequence, audit, b"\x01" * 32)
    assert "ledger chain" in why
    late = takeover(floor, last + 1)  # the checkpoint lies before the read's start
    assert late.missed == {GROUP}
    assert GROUP not in late.audits


def test_restore_from_the_last_checkpoint_equals_the_rebuild_from_the_beginning(
    floor: Floor,
) -> None:
    runtime = floor.book.groups[GROUP]
    last = checkpoint_positions(floor)[-1]
    whole = rebuild(GROUP, floor.ledger, partition=0, update_sequence=9, now_ns=1)
    tail = audit_entries(GROUP, raw(floor))
    from_checkpoint = rebuild(
        GROUP,
        floor.ledger[last:],
        partition=0,
        update_sequence=9,
        now_ns=1,
        chain=tail.chain or b"",
    )
    assert whole.group is not None
    assert from_checkpoint.group is not None
    assert without_trigger(from_checkpoint.group.snapshot()) == without_trigger(
        runtime.group.snapshot()
    )
    assert without_trigger(from_checkpoint.group.snapshot()) == without_trigger(
        whole.group.snapshot()
    )
    # The rebuilt state carries the chain on, through the commitment it records.
    assert from_checkpoint.state.ledger_chain
    books = audit_entries(
        GROUP, [*raw(floor), *((e, e.SerializeToString()) for e in from_checkpoint.ledger)]
    )
    assert books.chain == from_checkpoint.state.ledger_chain
    # The restored state names the checkpoint it was rebuilt from, so the pot's next takeover
    # check reads from there, not from the ledger's first entry (a year of a floor).
    state = from_checkpoint.state
    assert state.checkpoint_sequence == floor.ledger[last].ledger_sequence
    assert state.checkpoint_at == floor.ledger[last].recorded_at
    assert whole.state.checkpoint_sequence == state.checkpoint_sequence  # group_entries: the last
    check = TakeoverAudit({GROUP: state.checkpoint_sequence})
    written = [(e, e.SerializeToString()) for e in from_checkpoint.ledger]
    for entry, data in [*raw(floor)[last:], *written]:
        check.add(entry, data)
    assert check.read == len(floor.ledger) - last + len(written)
    group = from_checkpoint.group
    why = disagreement(GROUP, group, state.ledger_sequence, check.audits[GROUP], state.ledger_chain)
    assert why == ""


def test_an_audit_saved_halfway_goes_on_to_the_same_verdict(floor: Floor) -> None:
    entries = raw(floor)
    half = len(entries) // 2
    first = audit_entries(GROUP, entries[:half])
    resumed = audit_from_dict(json.loads(json.dumps(audit_to_dict(first))))
    for entry, data in entries[half:]:
        resumed.add(entry, data)
    whole = audit_entries(GROUP, entries)
    assert resumed.problems == whole.problems == []
    assert resumed.figures() == whole.figures()
    assert resumed.chain == whole.chain
    assert resumed.last_sequence == whole.last_sequence
    # ... and a resumed audit still sees a gap right after where it stopped.
    gap = audit_from_dict(audit_to_dict(first))
    for entry, data in entries[half + 1 :]:
        gap.add(entry, data)
    assert any("a gap or a duplicate" in p for p in gap.problems)


def test_an_audit_from_a_checkpoint_needs_no_entry_before_it(floor: Floor) -> None:
    entries = raw(floor)
    at = checkpoint_positions(floor)[2]
    audit = GroupAudit.from_checkpoint(*entries[at])
    for entry, data in entries[at + 1 :]:
        audit.add(entry, data)
    assert audit.problems == []
    assert audit.figures() == audit_entries(GROUP, entries).figures()


def test_a_state_from_before_checkpoints_is_checked_whole_then_adopts_the_chain(
    floor: Floor,
) -> None:
    """The first start after the upgrade: a state without a chain is checked from the ledger's
    beginning, takes the chain that check computed, and is checkpointed at the next tick."""
    old = pot_pb2.PotGroupState.FromString(floor.book.snapshot(GROUP))
    for name in ("ledger_chain", "checkpoint_sequence", "checkpoint_at"):
        old.ClearField(name)
    partition = PotPartition(0, PotSettings(), PotMetrics())
    partition.restore({GROUP.encode(): old.SerializeToString()}, committed=floor.offset)
    runtime = partition.book.groups[GROUP]
    assert runtime.ledger_chain == b""
    assert partition.book.checkpoints_due() == []  # not before the chain is known
    books = TakeoverAudit({GROUP: 0})  # no checkpoint named: every entry from the first
    for entry, data in raw(floor):
        books.add(entry, data)
    assert books.read == len(floor.ledger)
    assert partition._verdict(GROUP, books) == RUN
    assert runtime.ledger_chain == floor.book.groups[GROUP].ledger_chain
    assert partition.book.checkpoints_due() == [GROUP]


def test_takeover_from_a_checkpoint_ignores_payments_of_awards_made_before_it(
    floor: Floor,
) -> None:
    """An award paid days later, past the group's last checkpoint: the payout service's entry
    is no part of the pot's state and must not halt the partition (found by make bench-history)."""
    runtime = floor.book.groups[GROUP]
    last = checkpoint_positions(floor)[-1]
    award = next(
        e for e in floor.ledger[:last] if e.type == pot_pb2.LEDGER_ENTRY_TYPE_PRIZE_AWARDED
    )
    paid = pot_pb2.LedgerEntry(
        entry_id=f"payout:{award.entry_id}:1",
        pot_group_id=GROUP,
        type=pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_PAID,
        amount=award.amount,
        source_event_id=json.loads(award.detail_json)["award_id"],
    )
    books = TakeoverAudit({GROUP: runtime.checkpoint_sequence})
    for entry, data in [*raw(floor)[last:], (paid, paid.SerializeToString())]:
        books.add(entry, data)
    audit = books.audits[GROUP]
    assert audit.problems == []
    assert (
        disagreement(GROUP, runtime.group, runtime.ledger_sequence, audit, runtime.ledger_chain)
        == ""
    )


def test_overflow_is_counted_and_checkpointed_when_a_reserve_reaches_its_ceiling() -> None:
    """C5: a reserve at its ceiling overflows to main; the audit counts the overflow the
    collections carry and every checkpoint's figure agrees (the parse the audit skips only for
    collections whose canonical detail says "overflow":[])."""
    floor, _ = played(120, checkpoint_entries=EVERY, reserve_ceiling=50_000)
    overflow = floor.book.groups[GROUP].group.overflow
    assert overflow > 0
    audit = audit_entries(GROUP, raw(floor))
    assert audit.problems == []
    assert audit.overflow == overflow
    assert audit.checkpoints > 2
