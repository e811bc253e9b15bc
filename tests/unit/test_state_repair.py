"""R14, M2: a stored state behind its ledger, judged and repaired at the takeover
(``jackpot.pot.state_repair``), without Kafka.

The floor is the real pot processor playing interleaved rounds of three tables on a group with a
mystery pot (``tests.unit.test_restore``), one event at a time, keeping the group's state after
each. The damage is issue 36's: a transaction of a few events committed its ledger entries but
not the group's state, so the stored state is the one before it. The repaired group, fed the
same events again (consumed again from an earlier resume point) or not (resumed after them),
must go on exactly as the floor that never lost anything: nothing applied twice, nothing
skipped, every picopeso accounted for (M2). Every other disagreement is refused in one line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from jackpot.domain.engine import PotGroup
from jackpot.pot.ledger_audit import CHECKPOINT, GroupAudit
from jackpot.pot.ledger_restore import TakeoverAudit
from jackpot.pot.pot_book import InputRecord, PotBook
from jackpot.pot.state_repair import REPAIR, RUN, RUNBOOK, Verdict, judge, repair
from jackpot.v1 import pot_pb2, table_events_pb2
from tests.unit.test_restore import GROUP, Floor, played, trigger

pytestmark = pytest.mark.unit

MYSTERY_COMMITTED = pot_pb2.LEDGER_ENTRY_TYPE_MYSTERY_COMMITTED
LOST = 3  # events of the transaction whose state record was lost
REPO = Path(__file__).resolve().parents[2]


@dataclass
class Run:
    """A floor played one event at a time: its events, and after each of them the group's state
    and the ledger's length."""

    events: list[table_events_pb2.TableEvent]
    ledger: list[pot_pb2.LedgerEntry]
    states: list[bytes]
    ends: list[int]

    def produced(self, first: int, last: int) -> list[pot_pb2.LedgerEntry]:
        """The entries events first..last (inclusive) wrote."""
        return self.ledger[self.ends[first - 1] : self.ends[last]]

    def index_where(self, wanted: bool, after: int = 10) -> int:
        """An event index k whose next LOST events redraw the mystery trigger (or do not)."""
        for k in range(after, len(self.events) - LOST - 20):
            kinds = {e.type for e in self.produced(k + 1, k + LOST)}
            if (MYSTERY_COMMITTED in kinds) == wanted and CHECKPOINT not in kinds:
                return k
        raise AssertionError("no such point in the floor")


@pytest.fixture(scope="module")
def run() -> Run:
    script, _ = played(80)
    floor = Floor()
    states: list[bytes] = []
    ends: list[int] = []
    for event in script.events:
        floor.play([event])
        states.append(floor.book.snapshot(GROUP))
        ends.append(len(floor.ledger))
    kinds = {e.type for e in floor.ledger}
    assert MYSTERY_COMMITTED in kinds
    assert pot_pb2.LEDGER_ENTRY_TYPE_MYSTERY_AWARDED in kinds
    return Run(floor.events, floor.ledger, states, ends)


def books_of(entries: list[pot_pb2.LedgerEntry], state: pot_pb2.PotGroupState) -> TakeoverAudit:
    """The takeover's read of the ledger for a group restored from ``state``."""
    books = TakeoverAudit({GROUP: state.checkpoint_sequence}, {GROUP: state.ledger_sequence})
    for entry in entries:
        books.add(entry, entry.SerializeToString())
    return books


def restored(state: bytes, offset: int) -> PotBook:
    processor = PotBook(0, trigger_source=trigger)
    processor.restore([state], offset)
    return processor


def verdict_of(processor: PotBook, books: TakeoverAudit) -> Verdict:
    runtime = processor.groups[GROUP]
    return judge(
        GROUP,
        runtime.group,
        runtime.ledger_sequence,
        runtime.ledger_chain,
        books.audits.get(GROUP),
        books.at_state.get(GROUP),
    )


def feed(processor: PotBook, events: list[table_events_pb2.TableEvent], offset: int) -> list:
    """Apply events one by one from ``offset``, committing each; every output."""
    outputs = []
    for at, event in enumerate(events, start=offset):
        record = InputRecord(event.SerializeToString(), "t", 0, at, GROUP.encode())
        out = processor.apply_batch([record])
        assert not out.dead_letters, out.dead_letters
        processor.commit(out)
        outputs.append(out)
    return outputs


def comparable(entry: pot_pb2.LedgerEntry) -> tuple[object, ...]:
    """An entry but for when it was recorded (and so a checkpoint's chain, which folds that),
    and its ledger sequence (one later after a repair that recorded a new commitment)."""
    transfers = tuple((t.source, t.target, t.amount) for t in entry.transfers)
    detail = json.loads(entry.detail_json)
    entry_id = entry.entry_id
    if entry.type == CHECKPOINT:
        detail.pop("chain")
        entry_id = "checkpoint"  # its id names its sequence
    return (entry_id, entry.type, transfers, detail, entry.table_sequence)


@pytest.mark.parametrize("redrawn", [False, True], ids=["trigger-kept", "trigger-redrawn"])
@pytest.mark.parametrize("consumed_again", [True, False], ids=["consumed-again", "resumed-after"])
def test_R14_M2_a_state_behind_its_ledger_is_repaired_and_goes_on_as_if_nothing_was_lost(
    run: Run, redrawn: bool, consumed_again: bool
) -> None:
    """The state stops LOST events before its ledger; the repair rebuilds it from the state and
    those entries, recognises their table events when they come again, and the floor plays on
    to the same ledger, entry for entry, as the one that lost nothing."""
    k = run.index_where(redrawn)
    last = k + LOST
    stored = pot_pb2.PotGroupState.FromString(run.states[k])
    ledger = run.ledger[: run.ends[last]]
    books = books_of(ledger, stored)
    processor = restored(run.states[k], k + 1)
    assert verdict_of(processor, books) == REPAIR

    rebuilt = repair(
        GROUP,
        stored,
        books,
        partition=0,
        update_sequence=stored.update_sequence,
        now_ns=1,
        trigger_source=trigger,  # the floor's, so that a redrawn trigger is the one it drew
    )
    assert rebuilt.group is not None
    lost = pot_pb2.PotGroupState.FromString(run.states[last])
    assert dict(rebuilt.state.table_sequences) == dict(lost.table_sequences)
    assert rebuilt.group.balances == PotGroup.from_snapshot(lost.engine_snapshot).balances
    if redrawn:  # the trigger drawn after the state was only in the lost state: a new one (X2)
        (commitment,) = rebuilt.ledger
        assert commitment.type == MYSTERY_COMMITTED
        assert rebuilt.state.ledger_sequence == lost.ledger_sequence + 1
    else:  # the state's own trigger still holds: the repair records nothing, changes nothing
        assert rebuilt.ledger == []
        assert rebuilt.group.snapshot() == lost.engine_snapshot
        assert rebuilt.state.ledger_chain == lost.ledger_chain

    processor.adopt(rebuilt.state.SerializeToString(), rebuilt.ledger)
    written: list[pot_pb2.LedgerEntry] = []
    if consumed_again:
        again = feed(processor, run.events[k + 1 : last + 1], k + 1)
        assert sum(out.applied for out in again) == 0, "a lost event applied a second time"
        assert sum(sum(out.ignored.values()) for out in again) == LOST
        assert [e for out in again for e in out.ledger] == rebuilt.ledger
        assert GROUP in again[0].snapshots
        written += rebuilt.ledger
    rest = feed(processor, run.events[last + 1 :], last + 1)
    written += [e for out in rest for e in out.ledger]
    if not consumed_again:
        written_first = rest[0].ledger[: len(rebuilt.ledger)]
        assert written_first == rebuilt.ledger  # the repair's entries go first
    assert processor.unwritten == []

    expected = run.ledger[run.ends[last] :]
    got = [e for e in written if e not in rebuilt.ledger]
    assert [comparable(e) for e in got] == [comparable(e) for e in expected]
    audit = GroupAudit(GROUP)
    for entry in [*ledger, *written]:
        audit.add(entry, entry.SerializeToString())
    assert audit.problems == []
    final = processor.groups[GROUP].group
    assert audit.pots == {k: v for k, v in final.balances.items()}
    reference = PotGroup.from_snapshot(
        pot_pb2.PotGroupState.FromString(run.states[-1]).engine_snapshot
    )
    assert (final.collected, final.awarded, final.balances) == (
        reference.collected,
        reference.awarded,
        reference.balances,
    )


def refused_line(verdict: Verdict, state_at: int, ledger_at: int) -> str:
    line = verdict.refused
    assert not verdict.repair
    assert "\n" not in line
    assert f"pot group {GROUP} refused (R14)" in line
    assert f"stored state is at ledger entry {state_at}, its ledger at {ledger_at}" in line
    assert line.endswith(f"runbook {RUNBOOK}")
    return line


def test_R14_a_state_ahead_of_its_ledger_is_refused_in_one_line(run: Run) -> None:
    """The converse damage (the ledger's record lost, the state's kept): never repaired."""
    stored = pot_pb2.PotGroupState.FromString(run.states[-1])
    short = run.ledger[: run.ends[-4]]
    books = books_of(short, stored)
    line = refused_line(
        verdict_of(restored(run.states[-1], 0), books),
        stored.ledger_sequence,
        short[-1].ledger_sequence,
    )
    assert "ahead of its ledger" in line


def test_R14_a_state_behind_a_ledger_whose_chain_does_not_extend_it_is_refused(
    run: Run,
) -> None:
    """An entry the state folded differs on the ledger (one byte of its recorded time): the
    ledger's later entries are not the continuation of this state's books."""
    k = run.index_where(False)
    stored = pot_pb2.PotGroupState.FromString(run.states[k])
    ledger = [pot_pb2.LedgerEntry.FromString(e.SerializeToString()) for e in run.ledger]
    at = run.ends[k] - 1  # the state's own last entry
    ledger[at].recorded_at.nanos += 1
    books = books_of(ledger[: run.ends[k + LOST]], stored)
    line = refused_line(
        verdict_of(restored(run.states[k], 0), books),
        stored.ledger_sequence,
        ledger[run.ends[k + LOST] - 1].ledger_sequence,
    )
    assert "which does not extend it" in line
    assert "an entry differs" in line
    untouched = books_of(run.ledger[: run.ends[k + LOST]], stored)
    assert verdict_of(restored(run.states[k], 0), untouched) == REPAIR


def test_R14_a_state_behind_its_ledger_with_other_counters_is_refused(run: Run) -> None:
    """The chain agrees, a figure does not (a state written by something else): refused."""
    k = run.index_where(False)
    stored = pot_pb2.PotGroupState.FromString(run.states[k])
    books = books_of(run.ledger[: run.ends[k + LOST]], stored)
    processor = restored(run.states[k], 0)
    group = processor.groups[GROUP].group
    group.balances["main"] += 10**12
    group.house_advance += 10**12  # still conserves (M2), but the ledger never said so
    line = refused_line(
        verdict_of(processor, books),
        stored.ledger_sequence,
        run.ledger[run.ends[k + LOST] - 1].ledger_sequence,
    )
    assert f"differs from the ledger's books at entry {stored.ledger_sequence}" in line
    assert "pot main" in line
    assert "house advances" in line


def test_R14_a_state_behind_a_ledger_with_a_gap_after_it_is_refused(run: Run) -> None:
    """An entry after the state missing from the ledger: nothing may be skipped, so no repair."""
    k = run.index_where(False)
    stored = pot_pb2.PotGroupState.FromString(run.states[k])
    ledger = run.ledger[: run.ends[k + LOST]]
    del ledger[run.ends[k]]  # the first entry after the state's
    line = refused_line(
        verdict_of(restored(run.states[k], 0), books_of(ledger, stored)),
        stored.ledger_sequence,
        ledger[-1].ledger_sequence,
    )
    assert "does not audit" in line
    assert "a gap or a duplicate" in line


def test_R14_a_state_at_its_ledgers_end_runs_only_when_every_counter_agrees(run: Run) -> None:
    stored = pot_pb2.PotGroupState.FromString(run.states[-1])
    books = books_of(run.ledger, stored)
    processor = restored(run.states[-1], 0)
    assert verdict_of(processor, books) == RUN
    assert GROUP not in books.after  # nothing kept when the state is where its ledger ends
    processor.groups[GROUP].group.commission += 1  # one picopeso
    processor.groups[GROUP].group.balances["main"] -= 1
    line = refused_line(
        verdict_of(processor, books), stored.ledger_sequence, stored.ledger_sequence
    )
    assert "disagrees with the ledger" in line
    assert "commission" in line


def test_an_adopted_group_is_written_first_by_the_next_tick_or_batch(run: Run) -> None:
    """The repair's entries, then the group's snapshot, go with the next transaction; a failed
    one leaves them to the one after, and a committed one clears them."""
    k = run.index_where(True)
    stored = pot_pb2.PotGroupState.FromString(run.states[k])
    books = books_of(run.ledger[: run.ends[k + LOST]], stored)
    rebuilt = repair(GROUP, stored, books, partition=0, update_sequence=1, now_ns=1)
    (commitment,) = rebuilt.ledger
    processor = restored(run.states[k], k + 1)
    processor.adopt(rebuilt.state.SerializeToString(), rebuilt.ledger)
    assert processor.unwritten == [GROUP]
    assert processor.checkpoints_due() == [GROUP]
    tick = processor.checkpoint(processor.checkpoints_due())
    assert tick.ledger[0] == commitment
    assert tick.ledger[1].type == CHECKPOINT
    assert tick.ledger[1].ledger_sequence == commitment.ledger_sequence + 1
    assert GROUP in tick.snapshots
    processor.rollback()  # its transaction failed
    assert processor.unwritten == [GROUP]
    assert processor.groups[GROUP].ledger_sequence == rebuilt.state.ledger_sequence
    batch = processor.apply_batch([])
    assert batch.ledger == [commitment]
    assert GROUP in batch.snapshots
    processor.commit(batch)
    assert processor.unwritten == []
    assert processor.apply_batch([]).empty


def test_the_runbook_step_exists_in_the_operations_guide() -> None:
    """The refusal line and the alerts point at docs/operations.md#<step>: that heading exists."""
    path, anchor = RUNBOOK.split("#")
    headings = re.findall(r"^#+ (.+)$", (REPO / path).read_text(encoding="utf-8"), re.M)
    slugs = {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}
    assert anchor in slugs, sorted(slugs)
