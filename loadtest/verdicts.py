"""The fault suite's verdicts: every figure it measures, judged against a named bound.

Pure functions over the figures ``loadtest.chaos`` measures, so that the judging is tested on its
own (tests/unit/test_chaos_verdicts.py):

- ``judge_kills``: the recovery of every ``kill -9`` of one service (or broker) against its bound
  (``RECOVERY_BOUNDS_SECONDS``); a kill the floor never recovered from (None) fails;
- ``judge_outage``: fault 3, the whole cluster stopped: every table of every gateway must refuse
  progressive bets within the gateway's heartbeat timeout + ``OUTAGE_CLOSE_MARGIN_SECONDS`` of the
  brokers becoming unreachable (``UNREACHABLE_FROM``: the moment the last broker process was
  confirmed stopped), and the floor be whole again within ``OUTAGE_RECOVERY_BOUND_SECONDS`` of the
  cluster's restart;
- ``unrun_faults``: every fault of ``faults_requested`` must have run, at least once, with the
  figures of its section of the report (``REQUESTED_SECTIONS``); a fault asked for and not
  measured did not pass;
- ``judge_exits``: every service exit of the run (``loadtest.exits``), each with its time and
  last error; one the suite did not cause itself (a ``kill -9`` of its own) fails the run;
- ``judge_floor_held``: 'floor whole' held from each recovery to the next fault and to the end of
  play (``loadtest.floor_held``): a lapse fails the run;
- ``suite_verdict``: the suite passes only if every requested fault ran and passed, the books of
  every floor hold, no service exited unexpectedly, the floor stayed whole between faults, and
  no requested fault was skipped (unless skipping is allowed: ``--allow-skip``);
- ``run_violations`` and ``campaign_summary``: the fault campaign's (``loadtest.campaign``)
  judgement of one run by kind of violation, and of all its runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# Issue 13: a pot or payout service killed with kill -9 must be back, for the floor, within 5 s.
POT_RECOVERY_BOUND_SECONDS = 5.0
PAYOUT_RECOVERY_BOUND_SECONDS = 5.0
# Provisional bounds for the other kills (issue 13 sets none): a gateway's restart includes its
# resynchronising devices; a broker's includes the JVM's start on a loaded machine.
GATEWAY_RECOVERY_BOUND_SECONDS = 30.0
DISPLAY_RECOVERY_BOUND_SECONDS = 30.0
BROKER_RECOVERY_BOUND_SECONDS = 60.0
# Issue 19: from the SIGCONT of a paused pot or payout (a second instance took over meanwhile)
# until the floor pays prizes again / is whole again.
POT_PAUSE_BOUND_SECONDS = 5.0
PAYOUT_PAUSE_BOUND_SECONDS = 5.0
# Provisional: a resumed gateway's devices resynchronise; the display answers its health check.
GATEWAY_PAUSE_BOUND_SECONDS = 30.0
DISPLAY_PAUSE_BOUND_SECONDS = 30.0
# Fault 3: the stop SIGKILLs the brokers still running after its bound (kafka.sh
# KAFKA_STOP_SECONDS); the kills and the wait for the processes to go take at most this more ...
STOP_MARGIN_SECONDS = 5.0
# ... every table closed within the heartbeat timeout + this, of the brokers going away ...
OUTAGE_CLOSE_MARGIN_SECONDS = 1.0
# ... and the floor whole again within this of the cluster being up again (provisional).
OUTAGE_RECOVERY_BOUND_SECONDS = 60.0
UNREACHABLE_FROM = (
    "the moment the last broker process was confirmed stopped (`kafka.sh cluster-down` returned "
    "after every broker JVM exited, those not shut down within its bound SIGKILLed; their ports "
    "then refuse connections)"
)
PROBE_CLOSED = "PROGRESSIVE_CLOSED"

RECOVERY_BOUNDS_SECONDS = {
    "pot_kill_9": POT_RECOVERY_BOUND_SECONDS,
    "payout_kill_9": PAYOUT_RECOVERY_BOUND_SECONDS,
    "gateway_kill_9": GATEWAY_RECOVERY_BOUND_SECONDS,
    "display_kill_9": DISPLAY_RECOVERY_BOUND_SECONDS,
    "broker_kill_9": BROKER_RECOVERY_BOUND_SECONDS,
    "pot_pause": POT_PAUSE_BOUND_SECONDS,
    "payout_pause": PAYOUT_PAUSE_BOUND_SECONDS,
    "gateway_pause": GATEWAY_PAUSE_BOUND_SECONDS,
    "display_pause": DISPLAY_PAUSE_BOUND_SECONDS,
}
FLOOR_WHOLE = (
    "the pot's updates of every pot group are heard again, both gateways count no table closed "
    "and a probe bet at each site is accepted"
)
MEASURED = {
    "pot_kill_9": "from the kill -9 until the restarted pot answers its health check and "
    "(heard after that) " + FLOOR_WHOLE,
    "payout_kill_9": "from the kill -9 until every dealer terminal, on a new session, is shown "
    "its table's open payouts again (those open at the kill and not paid since) and, when a "
    "payout was waiting to be paid, a payment confirms again",
    "gateway_kill_9": "from the kill -9 until " + FLOOR_WHOLE,
    "display_kill_9": "from the kill -9 until the restarted display answers its health check",
    "broker_kill_9": "from the kill -9 of the broker (restarted 3 s later) until " + FLOOR_WHOLE,
    "pot_pause": "from the SIGCONT of the paused pot (a second pot took over meanwhile) until "
    "(heard after the resume) " + FLOOR_WHOLE,
    "payout_pause": "from the SIGCONT of the paused payout (a second instance took over "
    "meanwhile) until the resumed one reports NOT_SERVING and a prize is paid again",
    "gateway_pause": "from the SIGCONT of the paused gateway until " + FLOOR_WHOLE,
    "display_pause": "from the SIGCONT of the paused display until it answers its health check",
}


def judge_kills(name: str, recoveries: Sequence[float | None]) -> dict[str, Any]:
    """One service's kills: passed only if every kill recovered within the service's bound."""
    bound = RECOVERY_BOUNDS_SECONDS[name]
    recovered = [t for t in recoveries if t is not None]
    if not recoveries:
        status = "not run"
    elif len(recovered) == len(recoveries) and max(recovered) <= bound:
        status = "passed"
    else:
        status = "failed"
    return {
        "count": len(recoveries),
        "recovery_seconds": [None if t is None else round(t, 2) for t in recoveries],
        "recovery_max_seconds": round(max(recovered), 2) if recovered else None,
        "not_recovered": len(recoveries) - len(recovered),
        "over_bound": sum(1 for t in recovered if t > bound),
        "bound_seconds": bound,
        "measured": MEASURED[name],
        "status": status,
    }


def judge_outage(figures: Mapping[str, Any]) -> dict[str, Any]:
    """Fault 3 from its figures (seconds, all from ``UNREACHABLE_FROM`` but the recovery's):

    ``heartbeat_timeout_seconds``, ``brokers_unreachable_verified``, ``closed_after_seconds``
    (every gateway counts all its tables closed; negative: closed before the last broker was
    gone), ``devices_told_closed_after_seconds`` (the last played table pushed ProgressiveStatus
    closed), ``probe_bets`` (site -> answer to a bet while closed),
    ``recovery_after_restart_seconds`` (from the cluster up again until the floor is whole) and,
    when given, ``stop_took_seconds`` against ``stop_bound_seconds`` + ``STOP_MARGIN_SECONDS``."""
    bound = figures["heartbeat_timeout_seconds"] + OUTAGE_CLOSE_MARGIN_SECONDS
    failed: list[str] = []
    if not figures.get("brokers_unreachable_verified"):
        failed.append("brokers still reachable after the stop")
    took, limit = figures.get("stop_took_seconds"), figures.get("stop_bound_seconds")
    if took is not None and limit is not None and took > limit + STOP_MARGIN_SECONDS:
        failed.append(
            f"the stop took {took} s, more than its {limit} s bound + {STOP_MARGIN_SECONDS:g} s"
        )
    for key, what in (
        ("closed_after_seconds", "every gateway closed all its tables"),
        ("devices_told_closed_after_seconds", "every table's controller was told closed"),
    ):
        seconds = figures.get(key)
        if seconds is None:
            failed.append(f"never: {what}")
        elif seconds > bound:
            failed.append(f"{what} after {seconds} s > {bound:g} s")
    probes = figures.get("probe_bets") or {}
    if not probes:
        failed.append("no probe bet tried")
    for site, answer in sorted(probes.items()):
        if answer != PROBE_CLOSED:
            failed.append(f"site {site} probe bet answered {answer}, not {PROBE_CLOSED}")
    recovery = figures.get("recovery_after_restart_seconds")
    if recovery is None:
        failed.append("the floor never became whole after the restart")
    elif recovery > OUTAGE_RECOVERY_BOUND_SECONDS:
        failed.append(
            f"floor whole {recovery} s after the restart > {OUTAGE_RECOVERY_BOUND_SECONDS:g} s"
        )
    return {
        **figures,
        "measured_from": UNREACHABLE_FROM,
        "close_bound_seconds": bound,
        "recovery_bound_seconds": OUTAGE_RECOVERY_BOUND_SECONDS,
        "failed_checks": failed,
        "status": "failed" if failed else "passed",
    }


def judge_exits(exits: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Every service exit of a run (``ServiceExit`` as dicts): failed if one was not caused by
    the suite itself; each unexpected one is a failed check naming the service, the time and
    its last error."""
    unexpected = [e for e in exits if not e["expected"]]
    failed = [
        f"{e['service']} (pid {e['pid']}) {e['how']} at {e['at_seconds']:g} s, not caused by "
        f"the suite; last error: {e['last_error'] or '(none logged)'}"
        for e in unexpected
    ]
    return {
        "count": len(exits),
        "expected": len(exits) - len(unexpected),
        "unexpected": len(unexpected),
        "exits": [dict(e) for e in exits],
        "failed_checks": failed,
        "status": "failed" if failed else "passed",
    }


def judge_floor_held(held: Mapping[str, Any]) -> dict[str, Any]:
    """'Floor whole' from each recovery on (``FloorGuard.report()``): failed on any lapse, or
    if the floor was never checked while armed (nothing was judged)."""
    failed = [
        f"{lapse['condition']}: {lapse['seen']} for {lapse['seconds']:g} s from "
        f"{lapse['since_seconds']:g} s"
        for lapse in held.get("lapses", [])
    ]
    if not held.get("checks"):
        failed.append("the floor was never checked between faults or after the last one")
    return {**held, "failed_checks": failed, "status": "failed" if failed else "passed"}


# What each fault number of ``faults_requested`` leaves in the report when it ran: kills and
# pauses under ``faults`` (each run at least once), the other faults a section of their own.
# Fault 8 is every ``<service>_pause`` of ``faults`` (one per ``--pause``).
REQUESTED_SECTIONS: dict[int, tuple[str, ...]] = {
    1: ("faults.pot_kill_9",),
    2: ("faults.broker_kill_9",),
    3: ("cluster_outage",),
    4: ("faults.gateway_kill_9",),
    5: ("device_faults",),
    6: ("faults.payout_kill_9", "faults.display_kill_9"),
    7: ("site_cutoff",),
    8: ("faults.*_pause",),
}
# The faults played on the main floor, whose books, exits and held floor the report must carry.
MAIN_FLOOR_FAULTS = frozenset({1, 2, 3, 4, 5, 6, 8})
MAIN_FLOOR_JUDGED = {
    "books_ok": "books",
    "service_exits": "judgement of the service exits",
    "floor_held": "judgement of the floor held whole",
}


def _section_ran(result: Mapping[str, Any], where: str) -> list[str]:
    """The parts of one ``REQUESTED_SECTIONS`` entry that did not run ([] when it did)."""
    if not where.startswith("faults."):
        section = result.get(where)
        return [] if isinstance(section, Mapping) and "status" in section else [where]
    faults = result.get("faults") or {}
    name = where.removeprefix("faults.")
    if name == "*_pause":
        pauses = {key: fault for key, fault in faults.items() if key.endswith("_pause")}
        if not pauses:
            return ["faults.*_pause (no pause in the report)"]
        return [f"faults.{key}" for key, fault in sorted(pauses.items()) if not fault.get("count")]
    return [] if (faults.get(name) or {}).get("count") else [where]


def unrun_faults(result: Mapping[str, Any]) -> list[str]:
    """Every requested fault that did not run, or ran zero times, one line each; a report with
    no ``faults_requested`` is not judged to have run anything."""
    if "faults_requested" not in result:
        return ["faults_requested missing from the report"]
    missing: list[str] = []
    requested = sorted(result["faults_requested"])
    for number in requested:
        if number not in REQUESTED_SECTIONS:
            missing.append(f"fault {number} (no such fault)")
            continue
        for where in REQUESTED_SECTIONS[number]:
            missing += [f"fault {number} not run: {part}" for part in _section_ran(result, where)]
    if MAIN_FLOOR_FAULTS.intersection(requested):
        for key, what in MAIN_FLOOR_JUDGED.items():
            if key not in result:
                missing.append(f"no {what} of the main floor")
    return missing


def statuses(result: Mapping[str, Any]) -> dict[str, str]:
    """The status of every fault and floor the report judged (faults not run left out)."""
    found: dict[str, str] = {}
    for name, fault in result.get("faults", {}).items():
        if fault.get("status", "not run") != "not run":
            found[name] = fault["status"]
    for name in ("cluster_outage", "device_faults", "site_cutoff", "service_exits", "floor_held"):
        section = result.get(name)
        if section and "status" in section:
            found[name] = section["status"]
    profiles = result.get("wan", {}).get("profiles", {})
    for name in result.get("wan_requested", []):  # a requested profile that did not run failed
        found[f"wan_{name}"] = profiles.get(name, {}).get("status", "failed: not run")
    if "books_ok" in result:
        found["books"] = "passed" if result["books_ok"] else "failed"
    return found


def suite_verdict(result: Mapping[str, Any], allow_skip: bool = False) -> dict[str, Any]:
    """``ok`` only if nothing failed, every requested fault ran (``unrun_faults``) and, unless
    ``allow_skip``, nothing requested was skipped (a fault that did not run did not pass)."""
    found = statuses(result)
    skipped = {
        name: status.removeprefix("skipped: ")
        for name, status in found.items()
        if status.startswith("skipped")
    }
    failed = sorted(
        name for name, status in found.items() if status != "passed" and name not in skipped
    )
    if not allow_skip:
        failed += sorted(f"{name} (skipped)" for name in skipped)
    # a skipped section is in the report (its skip is judged above); a missing one is not
    failed += unrun_faults(result)
    return {"ok": not failed, "failed": failed, "skipped": skipped, "allow_skip": allow_skip}


# ------------------------------------------------------------------------- the campaign

# Kinds of violation of one campaign run, in the order the report lists them.
VIOLATION_KINDS: dict[str, str] = {
    "unexpected_exit": "a service exited and the run did not cause it",
    "lost": "pesos accepted at a table and not collected (bet by bet)",
    "duplicated": "pesos collected twice (bet by bet)",
    "awards": "an award without exactly one payout, paid twice, or never paid",
    "round_oracle": "an award that is not what the rules give for the cards dealt",
    "audit": "the ledger or the access log's hash chain does not audit",
    "takeover_refused": "the pot's stored state disagrees with its ledger (R14 takeover check)",
    "payout_records": "the payouts topic and the ledger disagree on a payout",
    "floor_not_held": "the floor was not whole between faults or after the last one",
    "not_recovered": "the floor never became whole again after a fault",
    "not_judged": "a judgement is missing from the run's report",
    "run_error": "the run itself failed (its error)",
}
AWARD_FAILURES = ("awarded_twice", "awards_without_payout", "payouts_without_award", "paid_twice")
RUN_SECTIONS = ("books", "service_exits", "floor_held", "takeover", "payout_records")


def _books_violations(books: Mapping[str, Any]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    if books.get("lost"):
        found["lost"] = [f"{books['lost']} pesos", *books.get("lost_examples", [])[:5]]
    if books.get("duplicated"):
        found["duplicated"] = [
            f"{books['duplicated']} pesos",
            *books.get("duplicated_examples", [])[:5],
        ]
    awards = books.get("awards_check") or {}
    if not awards.get("ok", False):
        found["awards"] = [
            f"{kind.replace('_', ' ')} {len(awards[kind])}: {list(awards[kind])[:5]}"
            for kind in AWARD_FAILURES
            if awards.get(kind)
        ]
        if awards.get("unpaid"):
            found["awards"].append(f"never paid {awards['unpaid']}")
        found["awards"] = found["awards"] or ["the awards check failed"]
    oracle = books.get("awards_oracle") or {}
    if not oracle.get("ok", False):
        found["round_oracle"] = [f"mismatches {oracle.get('by_kind') or 'unknown'}"]
    chain = books.get("audit_chain") or {}
    if not books.get("audit_ok", False) or not chain.get("ok", False):
        found["audit"] = [
            *[str(p) for p in books.get("audit_problems", [])[:5]],
            *(
                [f"access log's chain: {chain.get('first_break')}"]
                if not chain.get("ok", False)
                else []
            ),
        ] or ["the audit failed"]
    return found


def run_violations(run: Mapping[str, Any]) -> dict[str, list[str]]:
    """One campaign run's violations by kind (``VIOLATION_KINDS``), each with what was found;
    {} when the run passed every judgement."""
    found: dict[str, list[str]] = {}
    if run.get("error"):
        found["run_error"] = [str(run["error"])]
    missing = [name for name in RUN_SECTIONS if name not in run]
    if missing and not run.get("error"):
        found["not_judged"] = missing
    if "books" in run:
        found.update(_books_violations(run["books"]))
    for kind, section in (
        ("unexpected_exit", "service_exits"),
        ("floor_not_held", "floor_held"),
        ("takeover_refused", "takeover"),
        ("payout_records", "payout_records"),
    ):
        checks = (run.get(section) or {}).get("failed_checks") or []
        if checks:
            found[kind] = list(checks)
    never = [
        f"{fault['kind']} at {fault['at_seconds']:g} s ({fault.get('what') or 'no detail'})"
        for fault in run.get("faults", [])
        if fault.get("recovery_seconds") is None
    ]
    if never:
        found["not_recovered"] = never
    return found


def campaign_summary(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Runs, faults injected by kind, violations by kind (runs, instances and the seeds of the
    runs that showed each), and the seed of every failing run."""
    faults: dict[str, int] = {}
    violations: dict[str, dict[str, Any]] = {}
    failing: list[int] = []
    for run in runs:
        for fault in run.get("faults", []):
            faults[fault["kind"]] = faults.get(fault["kind"], 0) + 1
        found = run.get("violations") or {}
        if found:
            failing.append(run["seed"])
        for kind, instances in found.items():
            entry = violations.setdefault(kind, {"runs": 0, "instances": 0, "seeds": []})
            entry["runs"] += 1
            entry["instances"] += len(instances)
            entry["seeds"].append(run["seed"])
    ordered = {k: violations[k] for k in VIOLATION_KINDS if k in violations}
    return {
        "runs": len(runs),
        "passed": len(runs) - len(failing),
        "failed": len(failing),
        "faults_injected": dict(sorted(faults.items())),
        "faults_injected_total": sum(faults.values()),
        "violations": ordered,
        "violations_total": sum(v["instances"] for v in ordered.values()),
        "failing_seeds": failing,
        "ok": bool(runs) and not failing,
    }
