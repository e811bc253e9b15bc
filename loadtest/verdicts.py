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
- ``suite_verdict``: the suite passes only if every requested fault ran and passed, the books of
  every floor hold, and no requested fault was skipped (unless skipping is allowed:
  ``--allow-skip``).
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
# Fault 3: every table closed within the heartbeat timeout + this, of the brokers going away ...
OUTAGE_CLOSE_MARGIN_SECONDS = 1.0
# ... and the floor whole again within this of the cluster being up again (provisional).
OUTAGE_RECOVERY_BOUND_SECONDS = 60.0
UNREACHABLE_FROM = (
    "the moment the last broker process was confirmed stopped (`kafka.sh cluster-down` returned "
    "after every broker JVM exited; their ports then refuse connections)"
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
    closed), ``probe_bets`` (site -> answer to a bet while closed) and
    ``recovery_after_restart_seconds`` (from the cluster up again until the floor is whole)."""
    bound = figures["heartbeat_timeout_seconds"] + OUTAGE_CLOSE_MARGIN_SECONDS
    failed: list[str] = []
    if not figures.get("brokers_unreachable_verified"):
        failed.append("brokers still reachable after the stop")
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
# The faults played on the main floor, whose books the report must then carry.
MAIN_FLOOR_FAULTS = frozenset({1, 2, 3, 4, 5, 6, 8})


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
    if MAIN_FLOOR_FAULTS.intersection(requested) and "books_ok" not in result:
        missing.append("no books of the main floor")
    return missing


def statuses(result: Mapping[str, Any]) -> dict[str, str]:
    """The status of every fault and floor the report judged (faults not run left out)."""
    found: dict[str, str] = {}
    for name, fault in result.get("faults", {}).items():
        if fault.get("status", "not run") != "not run":
            found[name] = fault["status"]
    for name in ("cluster_outage", "device_faults", "site_cutoff"):
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
