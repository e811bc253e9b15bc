"""The books' bounded parts (issue 23): the window of recent ids, the overflow read from a
collection's detail, and how partitions are dealt to the processes that read them side by side."""

from __future__ import annotations

import json

import pytest

from jackpot.pot.ledger_audit import (
    GroupAudit,
    RecentIds,
    audit_from_dict,
    audit_to_dict,
    overflow_of,
)
from jackpot.tools.partitions import RECORDS_PER_PROCESS, shares
from jackpot.v1 import pot_pb2

pytestmark = pytest.mark.unit


def test_recent_ids_remember_the_last_ones_and_forget_the_oldest() -> None:
    recent = RecentIds(limit=3)
    assert [recent.add(k) for k in ("a", "b", "c")] == [True, True, True]
    assert not recent.add("b")  # a repeat within the window
    assert recent.add("d")  # the oldest, "a", is forgotten
    assert list(recent) == ["b", "c", "d"]
    assert "a" not in recent
    assert "b" in recent
    assert len(recent) == 3
    assert recent.add("a")  # beyond the window: no longer seen as a repeat


def test_an_audit_saved_and_loaded_keeps_its_window_in_order() -> None:
    audit = GroupAudit("g")
    for key in ("x", "y", "z"):
        audit.recent_ids.add(key)
    again = audit_from_dict(json.loads(json.dumps(audit_to_dict(audit))))
    assert list(again.recent_ids) == ["x", "y", "z"]
    assert not again.recent_ids.add("y")


def test_a_replayed_entry_within_the_window_is_a_problem() -> None:
    audit = GroupAudit("g")
    entry = pot_pb2.LedgerEntry(
        entry_id="e1",
        pot_group_id="g",
        ledger_sequence=1,
        type=pot_pb2.LEDGER_ENTRY_TYPE_ROUND_SETTLED,
    )
    audit.add(entry)
    audit.add(pot_pb2.LedgerEntry(**{**_fields(entry), "ledger_sequence": 2}))
    assert "entry e1 appears twice" in audit.problems


def _fields(entry: pot_pb2.LedgerEntry) -> dict[str, object]:
    return {field.name: value for field, value in entry.ListFields()}


@pytest.mark.parametrize(
    ("detail", "picopesos"),
    [
        ('{"bets":[[1,4000]],"overflow":[],"round_id":"r"}', 0),
        ('{"bets":[[1,4000]],"round_id":"r"}', 0),
        ('{"overflow":[["reserve1","main",720],["reserve1","main",5]],"round_id":"r"}', 725),
        ('{"overflow": [["reserve1", "main", 9]]}', 9),  # not canonical: still read
        ('{"overflow": []}', 0),
    ],
)
def test_overflow_is_read_from_the_collection_detail(detail: str, picopesos: int) -> None:
    assert overflow_of(detail) == picopesos
    assert picopesos == sum(a for _, _, a in json.loads(detail).get("overflow", ()))


def test_partitions_are_dealt_into_shares_of_about_as_many_records() -> None:
    many = 10 * RECORDS_PER_PROCESS
    records = {0: many, 1: many // 2, 2: many // 2, 3: 0, 4: many // 10}
    assert shares(records, 2) == [[0, 4], [1, 2]]  # 1.1 and 1.0 of ``many``; 3 has nothing
    assert shares(records, 8) == [[0], [1], [2], [4]]
    assert shares(records, 1) == [[0, 1, 2, 4]]
    assert shares({}, 2) == []


def test_a_small_read_stays_in_one_process() -> None:
    """Spawning costs more than it saves below RECORDS_PER_PROCESS records a process."""
    assert shares({0: 10, 1: 10}, 2) == [[0, 1]]
    half = RECORDS_PER_PROCESS // 2
    assert shares({0: half, 1: half + 1}, 2) == [[0, 1]]
    assert shares({0: RECORDS_PER_PROCESS, 1: RECORDS_PER_PROCESS}, 2) == [[0], [1]]
