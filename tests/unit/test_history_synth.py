"""The history synthesizer of `make bench-history` writes books that audit (loadtest.history_synth).

A tiny floor (3 tables, 20 minutes, a round every 6 s so prizes come) through the real pot
processor: each group's ledger passes the same judge as `jackpot audit` (sequences continuous,
M2, every payment matching its award, the latest pot update's balances), its record times run
forward for time-based seeks, its state names the last entry and the last table event, and its
access log's chains hold. Corrupting one amount makes the judge fail.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest
from loadtest.history_synth import (
    DAY_NS,
    MINUTE_NS,
    SETUP_LEAD_NS,
    Fact,
    GroupHistory,
    Plan,
    Record,
    audit_records,
    floor_facts,
    group_plans,
    instance_starts,
)

from jackpot.domain.access_chain import verify
from jackpot.platform.access_log import from_record
from jackpot.pot.ledger_audit import GroupAudit  # the judge of `jackpot audit` (tools.audit)
from jackpot.pot.state_records import state_key
from jackpot.v1 import audit_pb2, pot_pb2

END_NS = 1_790_000_000 * 10**9
Floor = dict[str, tuple[list[Record], list[Fact], GroupHistory]]
PLAN = Plan(tables=3, days=20 * MINUTE_NS / DAY_NS, end_ns=END_NS, rounds_per_minute=10)


@pytest.fixture(scope="module")
def floor() -> Floor:
    made = {}
    for group in group_plans(PLAN.tables):
        history = GroupHistory(PLAN, group)
        records: list[Record] = []
        facts: list[Fact] = []
        for chunk in history.chunks():
            records += chunk.records
            facts += chunk.facts
        made[group.group_id] = (records, facts, history)
    return made


def judged(group_id: str, records: list[Record]) -> GroupAudit:
    """The group's books as `jackpot audit` recomputes them from its ledger and pot updates."""
    audit = GroupAudit(group_id)
    for record in records:
        if record.kind == "ledger" and record.value is not None:
            audit.add(pot_pb2.LedgerEntry.FromString(record.value), record.value)
    updates = [
        pot_pb2.PotUpdate.FromString(r.value or b"") for r in records if r.kind == "pot-updates"
    ]
    audit.update = max(updates, key=lambda u: u.update_sequence)
    audit.finish()
    return audit


def test_each_group_audits_clean(
    floor: Floor,
) -> None:
    totals: Counter[str] = Counter()
    for group_id, (records, _, history) in floor.items():
        audit = judged(group_id, records)
        assert audit.problems == [], group_id
        counts = history.counts
        assert audit.last_sequence == counts.ledger_entries  # 1, 2, 3 ... every entry the pot made
        totals.update(rounds=counts.rounds, awards=counts.awards, paid=counts.paid)
    assert totals["rounds"] > 500
    assert totals["awards"] > 0  # prizes came
    assert totals["paid"] > 0  # and were paid


def test_times_run_forward_and_the_state_is_the_last(
    floor: Floor,
) -> None:
    for group_id, (records, _, history) in floor.items():
        ledger_times = [r.time_ms for r in records if r.kind == "ledger"]
        assert ledger_times == sorted(ledger_times)
        assert (PLAN.start_ns - SETUP_LEAD_NS) // 10**6 <= ledger_times[0]
        assert ledger_times[-1] <= PLAN.end_ns // 10**6
        states = {r.key: r.value for r in records if r.kind == "pot-state"}
        state = pot_pb2.PotGroupState.FromString(states[state_key(group_id)] or b"")
        assert state.ledger_sequence == history.counts.ledger_entries
        assert state.input_offset == history.counts.table_events
        events = [r for r in records if r.kind == "table-events"]
        assert len(events) == history.counts.table_events
        assert {r.partition for r in records} == {history.group.partition}


def test_the_audit_log_chains_hold(
    floor: Floor,
) -> None:
    facts = floor_facts(PLAN, group_plans(PLAN.tables), "0" * 64)
    for _, group_facts, _ in floor.values():
        facts += group_facts
    log = audit_records(facts, instance_starts(PLAN))
    entries = [
        (n, from_record(audit_pb2.AuditRecord.FromString(r.value or b"")))
        for n, r in enumerate(log)
    ]
    report = verify(entries)
    assert report.ok
    assert report.entries == len(facts)
    assert {"confirm_payment", "configure_pot", "software_verified"} <= {
        e.action for _, e in entries
    }


def _corrupt_collection(entry: pot_pb2.LedgerEntry) -> bool:
    if entry.type != pot_pb2.LEDGER_ENTRY_TYPE_BETS_COLLECTED or not entry.transfers:
        return False
    entry.transfers[0].amount.numerator += 1
    return True


def _corrupt_payment(entry: pot_pb2.LedgerEntry) -> bool:
    if entry.type != pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_PAID:
        return False
    entry.amount += 1
    return True


@pytest.mark.parametrize("corrupt", [_corrupt_collection, _corrupt_payment])
def test_one_corrupted_amount_fails_the_judge(
    floor: Floor, corrupt: Callable[[pot_pb2.LedgerEntry], bool]
) -> None:
    group_id, (records, _, _) = next((g, f) for g, f in floor.items() if f[2].counts.paid)
    tampered, done = [], False
    for record in records:
        if record.kind == "ledger" and not done and record.value is not None:
            entry = pot_pb2.LedgerEntry.FromString(record.value)
            if corrupt(entry):
                record = record._replace(value=entry.SerializeToString())
                done = True
        tampered.append(record)
    assert done
    assert judged(group_id, records).problems == []
    assert judged(group_id, tampered).problems != []
