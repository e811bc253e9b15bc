"""The soak's counting and judging (issue 13 item 6): payouts paid twice, created twice, awards
without a payout and payouts without an award, from the ledger and the payouts topic.

Pure functions of ``loadtest.soak`` over ledger entries and payout records built here; no floor
runs.
"""

from __future__ import annotations

import json
from typing import Any, TypeAlias

from loadtest.soak import count_payouts, soak_verdict, summarize_faults, tally

from jackpot.v1 import payout_pb2, pot_pb2

GROUP = "scl-poker"
State: TypeAlias = payout_pb2.PayoutState
ORDERED = payout_pb2.PAYOUT_STATE_ORDERED
AWAITING = payout_pb2.PAYOUT_STATE_AWAITING_APPROVAL
APPROVED = payout_pb2.PAYOUT_STATE_APPROVED
PAID = payout_pb2.PAYOUT_STATE_PAID
STEP_TYPES = {
    ORDERED: pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_ORDERED,
    AWAITING: pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_AWAITING_APPROVAL,
    APPROVED: pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_APPROVED,
    PAID: pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_PAID,
}


def award(award_id: str) -> pot_pb2.LedgerEntry:
    return pot_pb2.LedgerEntry(
        entry_id=f"award:{award_id}",
        pot_group_id=GROUP,
        type=pot_pb2.LEDGER_ENTRY_TYPE_PRIZE_AWARDED,
        amount=50_000,
        detail_json=json.dumps({"award_id": award_id}),
    )


def step(award_id: str, state: State, index: int, by: str = "dealer") -> pot_pb2.LedgerEntry:
    """The payout service's ledger entry for transition ``index`` of an award's payout."""
    return pot_pb2.LedgerEntry(
        entry_id=f"payout:{award_id}:{index}",
        pot_group_id=GROUP,
        type=STEP_TYPES[state],
        changed_by=by,
        source_event_id=award_id,
    )


def payout(award_id: str, *steps: tuple[State, str, int]) -> payout_pb2.Payout:
    """A payouts-topic record: its history as (state, by, at seconds)."""
    message = payout_pb2.Payout(award_id=award_id, pot_group_id=GROUP, state=steps[-1][0])
    for state, by, at in steps:
        message.history.add(state=state, by=by).at.FromSeconds(at)
    return message


def paid_once(award_id: str) -> tuple[list[pot_pb2.LedgerEntry], list[payout_pb2.Payout]]:
    """An award, its payout ordered and then paid: the ledger entries and the two records."""
    ordered = payout(award_id, (ORDERED, "payout-service", 10))
    paid = payout(award_id, (ORDERED, "payout-service", 10), (PAID, "dealer", 12))
    return [award(award_id), step(award_id, ORDERED, 0), step(award_id, PAID, 1)], [ordered, paid]


def records(*payouts: payout_pb2.Payout, partition: int = 3) -> list[Any]:
    return [(partition, offset, p) for offset, p in enumerate(payouts)]


def passing_books() -> dict[str, Any]:
    return {
        "audit_ok": True,
        "audit_problems": [],
        "audit_chain": {"ok": True, "first_break": None},
        "lost": 0,
        "duplicated": 0,
        "lost_in_total": 0,
        "duplicated_in_total": 0,
        "awards_oracle": {"ok": True, "by_kind": {}, "rounds_checked": 10},
    }


def test_each_award_paid_once_counts_and_passes() -> None:
    entries_a, records_a = paid_once("A-1")
    entries_b, records_b = paid_once("B-2")
    counts = count_payouts(entries_a + entries_b, records(*records_a, *records_b))
    assert counts["awards"] == 2
    assert counts["payouts_created"] == 2
    assert counts["payouts_paid"] == 2
    assert counts["ledger_paid_entries"] == 2
    assert counts["paid_twice"] == 0
    assert counts["created_twice"] == 0
    assert counts["awards_without_payout"] == counts["payouts_without_award"] == 0
    assert counts["open_at_end"] == 0
    assert soak_verdict(passing_books(), counts, {}) == {"ok": True, "failed": []}


def test_two_paid_ledger_entries_for_one_award_is_paid_twice() -> None:
    entries, payouts = paid_once("A-1")
    # the same payment's entry written again (a zombie's commit): same entry id, still twice
    entries.append(step("A-1", PAID, 1, by="zombie"))
    counts = count_payouts(entries, records(*payouts))
    assert counts["paid_twice"] == 1
    assert counts["ledger_paid_entries"] == 2
    assert len(counts["paid_twice_examples"]["A-1"]["ledger"]) == 2
    verdict = soak_verdict(passing_books(), counts, {})
    assert not verdict["ok"]
    assert "1 payouts paid twice" in verdict["failed"]


def test_two_owners_each_moving_the_payout_to_paid_is_paid_twice() -> None:
    """The zombie and the new owner each wrote ORDERED -> PAID: the ledger may show one entry (if
    one of them was not committed to it), the payouts topic two different PAID transitions."""
    entries, payouts = paid_once("A-1")
    zombie = payout("A-1", (ORDERED, "payout-service", 10), (PAID, "dealer-2", 15))
    counts = count_payouts(entries, records(*payouts, zombie))
    assert counts["paid_twice"] == 1
    assert len(counts["paid_twice_examples"]["A-1"]["payouts_topic"]) == 2
    assert not soak_verdict(passing_books(), counts, {})["ok"]


def test_one_history_with_two_paid_transitions_is_paid_twice() -> None:
    entries, _ = paid_once("A-1")
    twice = payout(
        "A-1", (ORDERED, "payout-service", 10), (PAID, "dealer", 12), (PAID, "dealer", 12)
    )
    assert count_payouts(entries, records(twice))["paid_twice"] == 1


def test_the_same_paid_transition_in_later_records_is_paid_once() -> None:
    """A record re-read or written again unchanged (a restore, a compaction copy) repeats the
    transition: the same position, dealer and time count once."""
    entries, payouts = paid_once("A-1")
    counts = count_payouts(entries, records(*payouts, payouts[-1], partition=3))
    assert counts["paid_twice"] == 0
    assert counts["payouts_paid"] == 1


def test_award_without_payout_and_payout_without_award_fail() -> None:
    entries, payouts = paid_once("A-1")
    entries.append(award("A-2"))  # awarded, never ordered
    stray = payout("X-9", (ORDERED, "payout-service", 20))  # ordered, never awarded
    counts = count_payouts(entries, records(*payouts, stray))
    assert counts["awards_without_payout"] == 1
    assert counts["awards_without_payout_examples"] == ["A-2"]
    assert counts["payouts_without_award"] == 1
    assert counts["payouts_without_award_examples"] == ["X-9"]
    assert counts["open_at_end"] == 1  # X-9's latest record is still ORDERED
    failed = soak_verdict(passing_books(), counts, {})["failed"]
    assert failed == ["1 awards without a payout", "1 payouts without an award"]


def test_an_award_ordered_twice_is_created_twice() -> None:
    entries, payouts = paid_once("A-1")
    again = payout("A-1", (AWAITING, "payout-service", 11))
    counts = count_payouts([*entries, step("A-1", AWAITING, 0)], records(*payouts, again))
    assert counts["created_twice"] == 1
    assert counts["paid_twice"] == 0
    assert soak_verdict(passing_books(), counts, {})["failed"] == ["1 payouts created twice"]


def test_open_payouts_at_the_end_are_counted_not_failed() -> None:
    entries = [award("A-1"), step("A-1", AWAITING, 0)]
    counts = count_payouts(entries, records(payout("A-1", (AWAITING, "payout-service", 10))))
    assert counts["open_at_end"] == 1
    assert counts["payouts_paid"] == 0
    assert soak_verdict(passing_books(), counts, {})["ok"]


def test_audit_pesos_and_faults_never_recovered_fail_the_soak() -> None:
    entries, payouts = paid_once("A-1")
    counts = count_payouts(entries, records(*payouts))
    books = {**passing_books(), "audit_ok": False, "audit_problems": ["award A-1 paid twice"]}
    assert soak_verdict(books, counts, {})["failed"] == ["audit: award A-1 paid twice"]
    books = {**passing_books(), "lost": 0, "lost_in_total": 5, "duplicated": 3}
    assert soak_verdict(books, counts, {})["failed"] == ["5 pesos lost", "3 pesos duplicated"]
    faults = summarize_faults(
        {"payout_kill_9": [{"recovery_seconds": 2.5}, {"recovery_seconds": None}]}
    )
    assert faults["payout_kill_9"]["not_recovered"] == 1
    assert faults["payout_kill_9"]["recovery_max_seconds"] == 2.5
    assert soak_verdict(passing_books(), counts, faults)["failed"] == [
        "payout_kill_9: 1 of 2 never recovered"
    ]


def test_an_award_the_rules_do_not_give_fails_the_soak() -> None:
    """Issue 24 item 1: the round oracle's mismatches fail the soak, and so does an oracle that
    compared no round."""
    entries, payouts = paid_once("A-1")
    counts = count_payouts(entries, records(*payouts))
    wrong = {"ok": False, "by_kind": {"amount": 2}, "rounds_checked": 10}
    books = {**passing_books(), "awards_oracle": wrong}
    assert soak_verdict(books, counts, {})["failed"] == ["round oracle: 2 amount"]
    idle = {"ok": False, "by_kind": {}, "rounds_checked": 0}
    books = {**passing_books(), "awards_oracle": idle}
    assert soak_verdict(books, counts, {})["failed"] == ["round oracle: no round compared"]


def test_zombie_commits_before_its_revoke_are_counted() -> None:
    events: list[dict[str, Any]] = [
        {"event": "payout_transition", "state": "PAID"},
        {"event": "payout_transitions", "states": {"PAID": 70, "ORDERED": 2}},  # a studio round's
        {"event": "partition_halted", "why": "producer_fenced"},
        {"event": "partitions_revoked", "partitions": [0, 1]},
        {"event": "payout_transition", "state": "ORDERED"},
        {"event": "something_else"},
    ]
    counted = tally(events)
    assert counted["commits_before_revoke"] == 73
    assert counted["halted"] == {"producer_fenced": 1}
    assert counted["transitions"] == {"PAID": 71, "ORDERED": 3}
    assert "something_else" not in counted["events"]
