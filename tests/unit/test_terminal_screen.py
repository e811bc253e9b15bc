"""The dealer terminal's screen state (rule D3): nothing is payable while a link is down, prizes
keep the service's payment order (S5), a prize awaiting approval says who must approve it, and a
bad setting stops the terminal with one line (exit 2)."""

from __future__ import annotations

import subprocess
import sys

from jackpot.terminal.screen import Screen
from jackpot.v1 import payout_pb2


def test_D3_nothing_is_payable_while_either_link_is_down() -> None:
    screen = Screen("CAR-1", "ana")
    assert "payout service" in screen.payable("a1")
    screen.link(screen.payout, True, "connected")
    assert "gateway" in screen.payable("a1")
    screen.link(screen.gateway, True, "watching the table")
    assert screen.payable("a1") == ""
    assert screen.payable("") == "no award named"
    screen.link(screen.gateway, False, "UNAVAILABLE: connection refused")
    assert "UNAVAILABLE: connection refused" in screen.payable("a1")


def test_D3_S5_prizes_in_the_services_order_and_the_locked_one_names_its_approver() -> None:
    screen = Screen("CAR-1", "ana")
    screen.open_payouts(
        [
            payout_pb2.Payout(
                award_id="b", seat=2, amount=90_000, state=payout_pb2.PAYOUT_STATE_ORDERED
            ),
            payout_pb2.Payout(
                award_id="a",
                seat=4,
                amount=2_000_000,
                state=payout_pb2.PAYOUT_STATE_AWAITING_APPROVAL,
            ),
        ]
    )
    shown = screen.to_json()["payouts"]
    assert [(p["award_id"], p["payable"]) for p in shown] == [("b", True), ("a", False)]
    assert "supervisor" in shown[1]["approver"]
    assert shown[0]["approver"] == ""


def test_a_terminal_without_a_table_stops_with_one_line_naming_the_setting() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "jackpot.cli", "terminal"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("jackpot terminal: bad setting: JACKPOT_TERMINAL_TABLE")
