"""Fault 7 of the fault suite, short: a site cut off from the central cluster by network namespaces.

`python -m loadtest.chaos --faults 7` with a cut of 8 s (longer than the gateway's 5 s heartbeat
timeout): the site's gateway runs in its own namespace on a broker of its own, its WAN link goes
down, its tables must close within the timeout + 1 s while the other site keeps playing, and after
the link is back they must reopen, the spool drain and the books balance. Needs root (ip netns);
skipped, with the reason, otherwise.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from loadtest.netns import unavailable_reason

pytestmark = pytest.mark.e2e

CUT_SECONDS = 8
RUN_SECONDS = 300  # the fault suite's own run; the test's timeout leaves a minute beyond it


@pytest.mark.timeout(RUN_SECONDS + 60)
def test_cut_off_site_fails_closed_and_loses_nothing(tmp_path: Path) -> None:
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(f"fault 7 needs network namespaces: {reason}")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "loadtest.chaos",
            "--faults",
            "7",
            "--site-cutoff",
            str(CUT_SECONDS),
            "--tables",
            "8",
            "--settle-seconds",
            "3",
            "--out",
            str(tmp_path),
        ],
        env=os.environ,
        capture_output=True,
        text=True,
        timeout=RUN_SECONDS,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    site = json.loads((tmp_path / "report.json").read_text())["site_cutoff"]
    assert site["status"] == "passed", site
    assert site["network"]["cut_verified"] is True, site["network"]
    assert site["closed_after_seconds"] <= site["heartbeat_timeout_seconds"] + 1
    assert site["probe_bet_during_cut"] == "PROGRESSIVE_CLOSED"
    assert site["other_site_rounds_during_cut"] > 0
    assert site["reopened_after_restore_seconds"] is not None
    assert site["spool_delivered_after_restore_seconds"] is not None
    assert site["spool_max_records_during_cut"] > 0
    assert (site["lost"], site["duplicated"], site["duplicate_payouts"]) == (0, 0, 0)
    assert site["audit_ok"] is True
    assert "site cut-off" in done.stdout
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert site["network"]["namespace"] not in namespaces  # cleaned up
