"""The fault suite's judging (issue 13 item 7): skipped faults, requested faults that never ran
(issue 24 item 2), books per bet and pot group, fault 3's closing bound, and the kills' recovery
bounds.

Pure functions of ``loadtest.verdicts``, ``jackpot.sim.books`` and ``loadtest.chaos`` over the
figures a run measures; no floor runs here.
"""

from __future__ import annotations

from typing import Any

import pytest
from loadtest.chaos import TerminalViews, terminals_back
from loadtest.verdicts import (
    OUTAGE_CLOSE_MARGIN_SECONDS,
    OUTAGE_RECOVERY_BOUND_SECONDS,
    PAYOUT_RECOVERY_BOUND_SECONDS,
    POT_RECOVERY_BOUND_SECONDS,
    judge_exits,
    judge_floor_held,
    judge_kills,
    judge_outage,
    suite_verdict,
    unrun_faults,
)

from jackpot.sim.books import books_verdict, compare_awards, compare_bets, entry_bets
from jackpot.v1 import pot_pb2

POKER, BLACKJACK = "scl-poker", "scl-blackjack"


def passing_report(**sections: Any) -> dict[str, Any]:
    """A report in which every fault that ran passed and the books hold: faults 1, 4 and 5
    requested, and 3 and 7 when their sections are given."""
    extra = [n for n, name in ((3, "cluster_outage"), (7, "site_cutoff")) if name in sections]
    report: dict[str, Any] = {
        "faults_requested": sorted([1, 4, 5, *extra]),
        "faults": {
            "pot_kill_9": judge_kills("pot_kill_9", [1.2, 0.8]),
            "gateway_kill_9": judge_kills("gateway_kill_9", [3.0]),
            "broker_kill_9": judge_kills("broker_kill_9", []),
        },
        "books_ok": True,
        "device_faults": {"status": "passed"},
        "service_exits": judge_exits([]),
        "floor_held": judge_floor_held({"checks": 40, "lapses": []}),
    }
    report.update(sections)
    return report


# ------------------------------------------------------------------------- skipped faults


def test_a_report_with_a_skipped_fault_fails_without_allow_skip() -> None:
    report = passing_report(site_cutoff={"status": "skipped: needs root (ip netns)"})
    verdict = suite_verdict(report, allow_skip=False)
    assert verdict["ok"] is False
    assert verdict["failed"] == ["site_cutoff (skipped)"]
    assert verdict["skipped"] == {"site_cutoff": "needs root (ip netns)"}


def test_a_report_with_a_skipped_fault_passes_with_allow_skip() -> None:
    report = passing_report(site_cutoff={"status": "skipped: needs root (ip netns)"})
    verdict = suite_verdict(report, allow_skip=True)
    assert verdict["ok"] is True
    assert verdict["failed"] == []
    assert verdict["skipped"] == {"site_cutoff": "needs root (ip netns)"}


def test_a_requested_wan_profile_that_failed_or_did_not_run_fails_the_suite() -> None:
    wan = {"profiles": {"metro": {"status": "passed"}, "regional": {"status": "failed"}}}
    report = passing_report(wan=wan, wan_requested=["metro", "regional", "satellite"])
    verdict = suite_verdict(report)
    assert verdict["ok"] is False
    assert verdict["failed"] == ["wan_regional", "wan_satellite"]
    passed = {"profiles": {"metro": {"status": "passed"}}}
    assert suite_verdict(passing_report(wan=passed, wan_requested=["metro"]))["ok"] is True


def test_allow_skip_does_not_excuse_a_failed_fault() -> None:
    report = passing_report(site_cutoff={"status": "skipped: needs root"})
    report["faults"]["pot_kill_9"] = judge_kills("pot_kill_9", [1.0, 17.9])
    verdict = suite_verdict(report, allow_skip=True)
    assert verdict["ok"] is False
    assert verdict["failed"] == ["pot_kill_9"]


def test_a_report_where_everything_ran_and_passed_is_ok() -> None:
    report = passing_report(site_cutoff={"status": "passed"})
    assert suite_verdict(report)["ok"] is True
    # a fault that did not run is neither passed nor failed; the books failing fails the suite
    assert "broker_kill_9" not in suite_verdict(report)["failed"]
    report["books_ok"] = False
    assert suite_verdict(report, allow_skip=True)["failed"] == ["books"]


# ------------------------------------------------------- requested faults that never ran


def every_fault_report() -> dict[str, Any]:
    """A report asking for every fault (1 to 8), each of which ran and passed."""
    report = passing_report(site_cutoff={"status": "passed"}, cluster_outage=outage())
    report["faults"].update(
        broker_kill_9=judge_kills("broker_kill_9", [10.0, 12.0]),
        payout_kill_9=judge_kills("payout_kill_9", [1.5]),
        display_kill_9=judge_kills("display_kill_9", [2.0]),
        pot_pause=judge_kills("pot_pause", [1.0]),
        payout_pause=judge_kills("payout_pause", [2.0]),
    )
    report["faults_requested"] = [1, 2, 3, 4, 5, 6, 7, 8]
    return report


def test_a_report_where_every_requested_fault_ran_and_passed_is_ok() -> None:
    report = every_fault_report()
    assert unrun_faults(report) == []
    assert suite_verdict(report)["ok"] is True, suite_verdict(report)["failed"]


def test_a_report_asking_for_faults_1_and_6_with_nothing_measured_fails() -> None:
    report = {"faults_requested": [1, 6], "books_ok": True}
    verdict = suite_verdict(report, allow_skip=True)  # not run is not a skip: never excused
    assert verdict["ok"] is False
    assert verdict["failed"] == [
        "fault 1 not run: faults.pot_kill_9",
        "fault 6 not run: faults.payout_kill_9",
        "fault 6 not run: faults.display_kill_9",
        "no judgement of the service exits of the main floor",
        "no judgement of the floor held whole of the main floor",
    ]


def test_a_requested_fault_that_ran_zero_times_fails() -> None:
    report = passing_report()
    report["faults"]["pot_kill_9"] = judge_kills("pot_kill_9", [])  # status "not run"
    verdict = suite_verdict(report, allow_skip=True)
    assert verdict["ok"] is False
    assert verdict["failed"] == ["fault 1 not run: faults.pot_kill_9"]


@pytest.mark.parametrize(
    ("fault", "drop", "reason"),
    [
        (1, "faults.pot_kill_9", "fault 1 not run: faults.pot_kill_9"),
        (2, "faults.broker_kill_9", "fault 2 not run: faults.broker_kill_9"),
        (3, "cluster_outage", "fault 3 not run: cluster_outage"),
        (4, "faults.gateway_kill_9", "fault 4 not run: faults.gateway_kill_9"),
        (5, "device_faults", "fault 5 not run: device_faults"),
        (6, "faults.display_kill_9", "fault 6 not run: faults.display_kill_9"),
        (7, "site_cutoff", "fault 7 not run: site_cutoff"),
        (8, "faults.payout_pause", "fault 8 not run: faults.payout_pause"),
    ],
)
def test_each_requested_fault_missing_from_the_report_fails_the_suite(
    fault: int, drop: str, reason: str
) -> None:
    report = every_fault_report()
    if drop.startswith("faults."):
        # a fault measured zero times: its entry is there, with a count of 0
        name = drop.removeprefix("faults.")
        report["faults"][name] = judge_kills(name, [])
    else:
        del report[drop]
    verdict = suite_verdict(report, allow_skip=True)
    assert verdict["ok"] is False
    assert verdict["failed"] == [reason]
    # the same report, not asking for that fault, passes: the request is what is judged
    report["faults_requested"].remove(fault)
    assert suite_verdict(report, allow_skip=True)["ok"] is True


def test_fault_8_asked_for_with_no_pause_in_the_report_fails() -> None:
    report = passing_report()
    report["faults_requested"].append(8)
    assert unrun_faults(report) == ["fault 8 not run: faults.*_pause (no pause in the report)"]


def test_a_report_without_faults_requested_or_with_an_unknown_fault_fails() -> None:
    report = passing_report()
    del report["faults_requested"]
    assert suite_verdict(report)["failed"] == ["faults_requested missing from the report"]
    report["faults_requested"] = [1, 4, 5, 9]
    assert suite_verdict(report)["failed"] == ["fault 9 (no such fault)"]


def test_main_floor_faults_without_the_main_floors_books_fail() -> None:
    report = passing_report()
    del report["books_ok"]
    assert suite_verdict(report)["failed"] == ["no books of the main floor"]
    # nor without the judgement of its exits and of the floor held whole (issue 36 item 5)
    for key, what in (
        ("service_exits", "the service exits"),
        ("floor_held", "the floor held whole"),
    ):
        report = passing_report()
        del report[key]
        assert suite_verdict(report)["failed"] == [f"no judgement of {what} of the main floor"]
    # fault 7 alone plays on a floor of its own, judged in its own section
    assert unrun_faults({"faults_requested": [7], "site_cutoff": {"status": "passed"}}) == []


# ------------------------------------------------------------------- books, bet by bet


def test_a_lost_and_a_duplicated_bet_of_the_same_size_in_one_group_do_not_cancel_out() -> None:
    accepted = {
        (POKER, "A-CAR-01", "r1"): {1: 3000, 2: 2000},
        (POKER, "A-CAR-01", "r2"): {3: 4000},  # never collected: lost
        (BLACKJACK, "A-BJ-05", "r3"): {1: 1000},
    }
    collections = {
        (POKER, "A-CAR-01", "r1"): [{1: 3000, 2: 2000}],
        (POKER, "A-DRW-02", "r9"): [{4: 4000}],  # no device was told it was accepted
        (BLACKJACK, "A-BJ-05", "r3"): [{1: 1000}],
    }
    bets = compare_bets(accepted, collections)
    poker = bets["by_group"][POKER]
    # the sums agree ...
    assert poker["accepted"] == poker["collected"] == 9000
    # ... the bets do not
    assert (poker["lost"], poker["duplicated"]) == (4000, 4000)
    assert (poker["rounds_lost"], poker["rounds_duplicated"]) == (1, 1)
    assert bets["by_group"][BLACKJACK]["lost"] == bets["by_group"][BLACKJACK]["duplicated"] == 0
    assert (bets["lost"], bets["duplicated"]) == (4000, 4000)
    assert any("A-CAR-01/r2" in example for example in bets["lost_examples"])
    assert any("A-DRW-02/r9" in example for example in bets["duplicated_examples"])

    # the floor's totals would say nothing is wrong; the verdict must not
    totals = sum_books(accepted=9000 + 1000, collected=9000 + 1000)
    verdict = books_verdict(totals, bets, compare_awards({}, {}))
    assert (verdict["lost_in_total"], verdict["duplicated_in_total"]) == (0, 0)
    assert (verdict["lost"], verdict["duplicated"]) == (4000, 4000)
    assert verdict["books_ok"] is False


def test_seats_swapped_within_a_round_and_a_round_collected_twice_are_caught() -> None:
    accepted = {(POKER, "T1", "r1"): {1: 1000, 2: 5000}, (POKER, "T1", "r2"): {1: 2000}}
    collections = {
        (POKER, "T1", "r1"): [{1: 5000, 2: 1000}],  # same total, wrong seats
        (POKER, "T1", "r2"): [{1: 2000}, {1: 2000}],  # the lock applied twice
    }
    bets = compare_bets(accepted, collections)
    assert (bets["lost"], bets["duplicated"]) == (4000, 4000 + 2000)
    poker = bets["by_group"][POKER]
    assert (poker["rounds_lost"], poker["rounds_duplicated"]) == (1, 2)
    assert poker["rounds_collected_twice"] == 1


def test_a_round_locked_without_bets_is_neither_lost_nor_duplicated() -> None:
    bets = compare_bets({}, {(POKER, "T1", "r1"): [{}]})
    poker = bets["by_group"][POKER]
    assert (bets["lost"], bets["duplicated"]) == (0, 0)
    assert (poker["rounds_collected"], poker["rounds_duplicated"]) == (0, 0)


def test_a_loss_in_one_group_and_a_duplicate_in_the_other_do_not_cancel_out() -> None:
    accepted = {(POKER, "T1", "r1"): {1: 3000}, (BLACKJACK, "T5", "r2"): {1: 3000}}
    collections = {
        (POKER, "T1", "r1"): [{1: 3000}, {1: 3000}],
        (BLACKJACK, "T5", "r2"): [],
    }
    bets = compare_bets(accepted, collections)
    assert bets["by_group"][POKER]["duplicated"] == 3000
    assert bets["by_group"][BLACKJACK]["lost"] == 3000


def test_books_that_match_bet_by_bet_pass() -> None:
    accepted = {(POKER, "T1", "r1"): {1: 3000, 4: 1000}}
    bets = compare_bets(accepted, {(POKER, "T1", "r1"): [{4: 1000, 1: 3000}]})
    awards = compare_awards({"g/T1/r1/1": 1}, {"g/T1/r1/1": 1})
    verdict = books_verdict(sum_books(4000, 4000), bets, awards)
    assert (verdict["lost"], verdict["duplicated"]) == (0, 0)
    assert verdict["books_ok"] is True


def test_awards_are_judged_per_award_id() -> None:
    awards = compare_awards(
        {"a1": 1, "a2": 2, "a3": 1},  # a2 awarded twice
        {"a1": 2, "a3": 0, "a4": 0},  # a1 paid twice, a4 with no award
    )
    assert awards["awarded_twice"] == ["a2"]
    assert awards["awards_without_payout"] == ["a2"]
    assert awards["payouts_without_award"] == ["a4"]
    assert awards["paid_twice"] == ["a1"]
    assert awards["ok"] is False
    assert compare_awards({"a1": 1}, {"a1": 1})["ok"] is True
    verdict = books_verdict(sum_books(0, 0), compare_bets({}, {}), awards)
    assert verdict["duplicate_payouts"] == 1
    assert verdict["books_ok"] is False


def test_a_ledger_entry_gives_its_bets_by_seat() -> None:
    entry = pot_pb2.LedgerEntry(
        type=pot_pb2.LEDGER_ENTRY_TYPE_BETS_COLLECTED,
        amount=5000,
        detail_json='{"bets": [[1, 2000], [3, 3000]], "type": "BetsCollected"}',
    )
    assert entry_bets(entry) == {1: 2000, 3: 3000}
    assert entry_bets(pot_pb2.LedgerEntry(amount=700, detail_json="{}")) == {0: 700}


def sum_books(accepted: int, collected: int) -> dict[str, Any]:
    """What ``jackpot.tools.demo_report.report`` gives: totals only."""
    return {
        "rounds": 3,
        "bets_accepted": accepted,
        "collected": collected,
        "lost": max(0, accepted - collected),
        "duplicated": max(0, collected - accepted),
        "audit_ok": True,
        "audit_problems": [],
        "awards": {},
        "audit_chain": {"ok": True, "entries": 10, "chains": 2, "first_break": None},
    }


# --------------------------------------------------------------- fault 3, the outage


def outage(**figures: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "heartbeat_timeout_seconds": 5.0,
        "brokers_unreachable_verified": True,
        "closed_after_seconds": 4.1,
        "devices_told_closed_after_seconds": 4.3,
        "probe_bets": {"A": "PROGRESSIVE_CLOSED", "B": "PROGRESSIVE_CLOSED"},
        "recovery_after_restart_seconds": 12.0,
    }
    base.update(figures)
    return judge_outage(base)


def test_fault_3_passes_when_every_table_closed_within_the_heartbeat_timeout_plus_1s() -> None:
    judged = outage(closed_after_seconds=5.9, devices_told_closed_after_seconds=6.0)
    assert judged["close_bound_seconds"] == 5.0 + OUTAGE_CLOSE_MARGIN_SECONDS == 6.0
    assert judged["status"] == "passed", judged["failed_checks"]
    assert "last broker process was confirmed stopped" in judged["measured_from"]


@pytest.mark.parametrize(
    ("figures", "reason"),
    [
        ({"closed_after_seconds": 8.54}, "every gateway closed all its tables after 8.54 s"),
        ({"devices_told_closed_after_seconds": 6.2}, "told closed after 6.2 s"),
        ({"devices_told_closed_after_seconds": None}, "never: every table's controller"),
        ({"closed_after_seconds": None}, "never: every gateway closed"),
        ({"probe_bets": {"A": "PROGRESSIVE_CLOSED", "B": "ACCEPTED"}}, "site B probe bet"),
        ({"probe_bets": {}}, "no probe bet tried"),
        ({"brokers_unreachable_verified": False}, "brokers still reachable"),
        ({"recovery_after_restart_seconds": None}, "never became whole"),
        ({"recovery_after_restart_seconds": OUTAGE_RECOVERY_BOUND_SECONDS + 1}, "floor whole"),
        ({"stop_took_seconds": 29.8, "stop_bound_seconds": 10}, "the stop took 29.8 s"),
    ],
)
def test_fault_3_fails_on_each_broken_bound(figures: dict[str, Any], reason: str) -> None:
    judged = outage(**figures)
    assert judged["status"] == "failed"
    assert any(reason in check for check in judged["failed_checks"]), judged["failed_checks"]
    report = passing_report(cluster_outage=judged)
    assert "cluster_outage" in suite_verdict(report, allow_skip=True)["failed"]


def test_fault_3_passes_a_stop_that_killed_brokers_at_its_bound() -> None:
    judged = outage(stop_took_seconds=10.4, stop_bound_seconds=10, stop_killed=["node2 (pid 7)"])
    assert judged["status"] == "passed", judged["failed_checks"]
    assert judged["stop_killed"] == ["node2 (pid 7)"]


def test_fault_3_bound_follows_the_gateways_heartbeat_timeout() -> None:
    assert outage(heartbeat_timeout_seconds=8.0, closed_after_seconds=8.54)["status"] == "passed"
    assert outage(heartbeat_timeout_seconds=2.0, closed_after_seconds=3.2)["status"] == "failed"


# --------------------------------------------------------------- kills and their recovery


def test_pot_kills_pass_only_if_the_worst_recovery_is_within_5s() -> None:
    assert POT_RECOVERY_BOUND_SECONDS == 5.0
    passed = judge_kills("pot_kill_9", [0.9, 4.99, 2.0])
    assert (passed["status"], passed["recovery_max_seconds"], passed["bound_seconds"]) == (
        "passed",
        4.99,
        5.0,
    )
    failed = judge_kills("pot_kill_9", [0.9, 17.9, 2.0])
    assert (failed["status"], failed["recovery_max_seconds"], failed["over_bound"]) == (
        "failed",
        17.9,
        1,
    )


def test_a_kill_never_recovered_from_fails() -> None:
    judged = judge_kills("payout_kill_9", [1.0, None])
    assert judged["status"] == "failed"
    assert judged["not_recovered"] == 1
    assert judged["recovery_seconds"] == [1.0, None]
    assert judged["recovery_max_seconds"] == 1.0


def test_payout_kills_are_judged_against_their_own_bound() -> None:
    assert PAYOUT_RECOVERY_BOUND_SECONDS == 5.0
    assert judge_kills("payout_kill_9", [4.2])["status"] == "passed"
    assert judge_kills("payout_kill_9", [5.3])["status"] == "failed"
    assert judge_kills("payout_kill_9", [])["status"] == "not run"


def test_terminals_back_needs_every_terminal_to_see_its_open_payouts_on_a_new_session() -> None:
    killed = 100.0
    at_kill = {"T1": (1, frozenset({"a1", "a2"})), "T2": (3, frozenset())}
    views: TerminalViews = {
        "T1": [
            (99.0, 1, frozenset({"a1", "a2"})),
            (101.0, 2, frozenset()),  # the restarted service's book not rebuilt yet
            (102.5, 2, frozenset({"a1", "a2"})),
        ],
        "T2": [(100.4, 3, frozenset()), (101.2, 4, frozenset())],  # 100.4: the old session
    }
    assert terminals_back(views, at_kill, set(), killed) == pytest.approx(2.5)
    # a payout paid meanwhile need not be shown again
    assert terminals_back(views, at_kill, {"a1", "a2"}, killed) == pytest.approx(1.2)
    # one terminal not back yet: not recovered
    views["T2"] = [(100.4, 3, frozenset())]
    assert terminals_back(views, at_kill, set(), killed) is None
