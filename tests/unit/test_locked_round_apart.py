"""A studio round written apart from its group's snapshot while it is locked
(``jackpot.pot.state_records``, issue 39 item 6): its 10,000 bets and players on a record of
their own, written once at the lock and tombstoned at the settling; the snapshots the land tables'
batches write meanwhile name it and keep its forfeits. Restored, rolled back and taken over, the
group is the one that never stopped (R14, M2); a snapshot without its round is refused.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import pytest

from jackpot.domain.errors import DomainError, Reason
from jackpot.platform.bundles import ledger_entries
from jackpot.platform.partition_handler import OutputRecord
from jackpot.pot import commands
from jackpot.pot.ledger_restore import TakeoverAudit
from jackpot.pot.metrics import PotMetrics
from jackpot.pot.pot_book import InputRecord
from jackpot.pot.service import PotPartition
from jackpot.pot.settings import PotSettings
from jackpot.pot.state_records import locked_round_key, locked_round_of, state_key
from jackpot.pot.state_repair import RUN
from jackpot.topics import LOCKED_ROUND_PREFIX, is_bookkeeping_key
from jackpot.v1 import pot_pb2, table_events_pb2
from tests.unit.test_studio import GROUP, NOTHING, ROYAL, TOPIC, Book, identity_holds, opened_book

STATE = "jackpot.pot-state.v1"
LEDGER = "jackpot.ledger.v1"
KEY = locked_round_key(GROUP, "S1")
STUDIO_BETS = 10_000


class Topics(Book):
    """The test book, with its state topic as compaction leaves it and its ledger's bytes."""

    def __init__(self) -> None:
        super().__init__()
        self.state: dict[bytes, bytes] = {}
        self.state_records: list[OutputRecord] = []  # every one written, in order
        self.raw_ledger: list[tuple[pot_pb2.LedgerEntry, bytes]] = []

    def __call__(self, *events: table_events_pb2.TableEvent) -> object:
        batch = super().__call__(*events)
        self.written(batch.records)  # type: ignore[attr-defined]
        return batch

    def written(self, records: Iterable[OutputRecord]) -> None:
        for record in records:
            if record.topic == STATE and record.key is not None:
                self.state_records.append(record)
                if record.value is None:
                    self.state.pop(record.key, None)
                else:
                    self.state[record.key] = record.value
            elif record.topic == LEDGER and record.value is not None:
                self.raw_ledger += ledger_entries(record.value)

    def taken_over(self) -> PotPartition:
        """A pot taking the partition over from the state topic, its check against the ledger
        passed (R14)."""
        partition = PotPartition(0, PotSettings(), PotMetrics())
        partition.restore(dict(self.state), committed=self.offset)
        books = TakeoverAudit({GROUP: 0})
        for entry, data in self.raw_ledger:
            books.add(entry, data)
        assert partition._verdict(GROUP, books) == RUN
        return partition


def studio_book() -> Topics:
    book = opened_book(0, Topics())
    assert isinstance(book, Topics)
    return book


def studio_lock(book: Book, round_id: str) -> table_events_pb2.TableEvent:
    locked = table_events_pb2.RoundLocked(
        bets=[
            table_events_pb2.SeatBet(seat=seat, bet=1000, player=f"p{seat}")
            for seat in range(1, STUDIO_BETS + 1)
        ]
    )
    return book.table_event("S1", round_id, round_locked=locked)


def engine_state(data: bytes) -> dict[str, object]:
    return json.loads(pot_pb2.PotGroupState.FromString(data).engine_snapshot)


def test_O1_a_studio_round_is_written_once_apart_and_the_snapshots_name_it() -> None:
    book = studio_book()
    lock = book(studio_lock(book, "S-1"))
    apart = [r for r in lock.records if r.key == KEY]  # type: ignore[attr-defined]
    assert len(apart) == 1
    assert apart[0].value is not None
    record = pot_pb2.LockedRoundState.FromString(apart[0].value)
    assert (record.pot_group_id, record.table_id, record.round_id) == (GROUP, "S1", "S-1")
    assert len(json.loads(record.locked_round)["bets"]) == STUDIO_BETS
    kept = engine_state(book.state[state_key(GROUP)])["locked"]["S1"]  # type: ignore[index]
    assert kept == {"round_id": "S-1", "apart": True, "forfeited": []}
    # the land table's batches and the studio's folds while it is locked: small snapshots
    for round_id in ("L-1", "L-2"):
        book(book.table_event("L1", round_id, round_locked=commands.locked({4: 1000})))
        book(book.table_event("L1", round_id, round_result=commands.result({4: ROYAL})))
    fold = table_events_pb2.SeatForfeited(seat=7, reason=table_events_pb2.FORFEIT_REASON_FOLD)
    book(book.table_event("S1", "S-1", seat_forfeited=fold))
    after_lock = book.state_records[book.state_records.index(apart[0]) + 1 :]
    assert [r.key for r in after_lock if r.key.startswith(LOCKED_ROUND_PREFIX)] == []
    snapshot = book.state[state_key(GROUP)]
    assert len(snapshot) < len(apart[0].value) / 20, (len(snapshot), len(apart[0].value))
    assert engine_state(snapshot)["locked"]["S1"]["forfeited"] == [[7, "FOLD"]]  # type: ignore[index]
    # taken over mid-round: the group is the one that never stopped, its round whole
    restored = book.taken_over().book.groups[GROUP].group
    assert restored.snapshot() == book.book.groups[GROUP].group.snapshot()
    assert len(restored.locked["S1"].bets) == STUDIO_BETS
    assert restored.locked["S1"].players[STUDIO_BETS] == f"p{STUDIO_BETS}"
    # settled: the record's tombstone follows the snapshot that no longer names it
    settle = book(book.table_event("S1", "S-1", round_result=table_events_pb2.RoundResult(
        shared_hand=ROYAL)))  # fmt: skip
    keys = [r.key for r in settle.records if r.topic == STATE]  # type: ignore[attr-defined]
    assert keys.index(KEY) > keys.index(state_key(GROUP))
    assert KEY not in book.state
    assert "S1" not in engine_state(book.state[state_key(GROUP)])["locked"]  # type: ignore[operator]
    awards = settle.outputs.awards  # type: ignore[attr-defined]
    assert len(awards) == STUDIO_BETS - 1  # seat 7 folded (O5)
    assert book.taken_over().book.groups[GROUP].group.snapshot() == (
        book.book.groups[GROUP].group.snapshot()
    )
    assert identity_holds(book.book.groups[GROUP].group)


def test_R14_a_failed_transaction_rolls_back_to_the_round_written_apart() -> None:
    """The batch after the lock fails: the group comes back from the committed snapshot and the
    committed record (without them its round could not be read back); a lock whose own
    transaction failed is written apart again when it is applied again."""
    book = studio_book()
    book(studio_lock(book, "S-1"))
    event = book.table_event("L1", "L-1", round_locked=commands.locked({4: 1000}))
    record = InputRecord(event.SerializeToString(), TOPIC, 0, book.offset, GROUP.encode())
    book.book.batch([record])
    book.book.rollback()
    group = book.book.groups[GROUP].group
    assert len(group.locked["S1"].bets) == STUDIO_BETS
    assert "L1" not in group.locked
    nothing = table_events_pb2.RoundResult(shared_hand=NOTHING)
    book(book.table_event("S1", "S-1", round_result=nothing))
    lock = studio_lock(book, "S-2")
    record = InputRecord(lock.SerializeToString(), TOPIC, 0, book.offset, GROUP.encode())
    first = book.book.batch([record])
    assert [r.key for r in first.records].count(KEY) == 1
    book.book.rollback()
    again = book.book.batch([record])
    written = [r for r in again.records if r.key == KEY]
    assert len(written) == 1
    assert written[0].value is not None
    assert pot_pb2.LockedRoundState.FromString(written[0].value).round_id == "S-2"


def test_R14_a_snapshot_whose_round_written_apart_is_missing_or_another_is_refused() -> None:
    book = studio_book()
    book(studio_lock(book, "S-1"))
    record = book.state.pop(KEY)
    with pytest.raises(DomainError) as missing:
        book.taken_over()
    assert missing.value.reason == Reason.MALFORMED
    assert "S1's locked round S-1 of studio-group was written apart" in missing.value.detail
    other = pot_pb2.LockedRoundState.FromString(record)
    other.round_id = "S-0"
    other.locked_round = json.dumps({**json.loads(other.locked_round), "round_id": "S-0"}).encode()
    book.state[KEY] = other.SerializeToString()
    with pytest.raises(DomainError, match="the record found holds round 'S-0'"):
        book.taken_over()


def test_R14_a_record_no_snapshot_names_is_tombstoned_and_a_whole_round_written_apart() -> None:
    """The restore tool writes whole snapshots (``jackpot restore``): a record left from
    before is taken down at the group's next write, and a locked round the snapshot holds whole
    is written apart then."""
    book = studio_book()
    book(studio_lock(book, "S-1"))
    whole = book.book.snapshot(GROUP)  # the locked round in it, as a repair writes it
    book.state[state_key(GROUP)] = whole
    stale = pot_pb2.LockedRoundState.FromString(book.state[KEY])
    stale.table_id, stale.round_id = "S9", "S9-1"
    book.state[locked_round_key(GROUP, "S9")] = stale.SerializeToString()
    del book.state[KEY]
    partition = book.taken_over()
    assert len(partition.book.groups[GROUP].group.locked["S1"].bets) == STUDIO_BETS
    book.book = partition.book
    batch = book(book.table_event("L1", "L-1", round_locked=commands.locked({4: 1000})))
    written = {r.key: r.value for r in batch.records if r.topic == STATE}  # type: ignore[attr-defined]
    assert written[locked_round_key(GROUP, "S9")] is None
    assert written[KEY] is not None
    restored = book.taken_over().book.groups[GROUP].group
    assert restored.snapshot() == book.book.groups[GROUP].group.snapshot()


def test_a_locked_round_key_names_its_group_and_table_and_no_group_reads_it_as_its_own() -> None:
    """Readers of the state topic that do not read locked rounds pass over it as bookkeeping
    (``jackpot.topics.is_bookkeeping_key``): no pot group's key starts as it does."""
    key = locked_round_key("scl-poker", "S-LIVE-1")
    assert locked_round_of(key) == ("scl-poker", "S-LIVE-1")
    assert is_bookkeeping_key(key)
    assert not is_bookkeeping_key(state_key("scl-poker"))
