"""What the dealer's screen shows (rule D3): pure state, fed by the two links, read by the page.

The table's round and seats come from the gateway's watch, the prizes to pay from the payout
service's DealerTerminal stream (already in payment order, rule S5); each link says whether it is
up and, when not, why. Nothing can be paid while either link is down: the page disables its
buttons, and :meth:`Screen.payable` refuses on the server too.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from jackpot.v1 import device_pb2, payout_pb2

ROUND_STATES = {
    device_pb2.ROUND_STATE_IDLE: "idle",
    device_pb2.ROUND_STATE_OPEN: "open",
    device_pb2.ROUND_STATE_LOCKED: "locked",
    device_pb2.ROUND_STATE_RESULTS: "results",
}
PAYOUT_STATES = {
    payout_pb2.PAYOUT_STATE_ORDERED: "ordered",
    payout_pb2.PAYOUT_STATE_AWAITING_APPROVAL: "awaiting_approval",
    payout_pb2.PAYOUT_STATE_APPROVED: "approved",
    payout_pb2.PAYOUT_STATE_PAID: "paid",
    payout_pb2.PAYOUT_STATE_VOIDED: "voided",
}
PAYABLE = frozenset({payout_pb2.PAYOUT_STATE_ORDERED, payout_pb2.PAYOUT_STATE_APPROVED})
WHO_APPROVES = "a supervisor (their own certificate or a one-time code)"


@dataclass(slots=True)
class Link:
    """One connection the screen depends on."""

    name: str
    up: bool = False
    detail: str = "connecting"
    target: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"up": self.up, "detail": self.detail, "target": self.target}


@dataclass(slots=True)
class Answer:
    """The service's answer to the dealer's last action on one prize."""

    award_id: str
    ok: bool
    message: str
    at: float = field(default_factory=time.time)

    def to_json(self) -> dict[str, Any]:
        return {"award_id": self.award_id, "ok": self.ok, "message": self.message, "at": self.at}


def table_json(view: device_pb2.TableView) -> dict[str, Any]:
    return {
        "table_id": view.table_id,
        "pot_group_id": view.pot_group_id,
        "round_id": view.round_id,
        "round_state": ROUND_STATES.get(view.round_state, "unknown"),
        "sign_value": view.sign_value,
        "progressive_open": view.progressive_open,
        "closed_reason": view.closed_reason,
        "device_connected": view.device_connected,
        "seats": [
            {
                "seat": s.seat,
                "bet_credits": s.bet_credits,
                "bet": s.bet,
                "lamp": s.lamp,
                "locked": s.locked,
                "closed": s.closed,
                "forfeited": s.forfeited,
            }
            for s in view.seats
        ],
    }


def payout_json(payout: payout_pb2.Payout) -> dict[str, Any]:
    awaiting = payout.state == payout_pb2.PAYOUT_STATE_AWAITING_APPROVAL
    return {
        "award_id": payout.award_id,
        "round_id": payout.round_id,
        "seat": payout.seat,
        "prize": payout.prize,
        "amount": payout.amount,
        "cards": list(payout.cards),
        "state": PAYOUT_STATES.get(payout.state, "unknown"),
        "payable": payout.state in PAYABLE,
        "approver": WHO_APPROVES if awaiting else "",
        "order": payout.order,
    }


class Screen:
    """The terminal's state; ``changed`` wakes every open page."""

    def __init__(self, table_id: str, dealer: str) -> None:
        self.table_id = table_id
        self.dealer = dealer
        self.gateway = Link("gateway")
        self.payout = Link("payout")
        self.table: device_pb2.TableView | None = None
        self.payouts: list[payout_pb2.Payout] = []
        self.answers: list[Answer] = []
        self.version = 0
        self._changed = asyncio.Event()

    def _touch(self) -> None:
        self.version += 1
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def wait_changed(self, version: int) -> None:
        """Returns once the state is newer than ``version``."""
        while self.version <= version:
            await self._changed.wait()

    def link(self, link: Link, up: bool, detail: str, target: str = "") -> None:
        if (link.up, link.detail, link.target) != (up, detail, target or link.target):
            link.up, link.detail, link.target = up, detail, target or link.target
            self._touch()

    def table_view(self, view: device_pb2.TableView) -> None:
        self.table = view
        self._touch()

    def open_payouts(self, payouts: list[payout_pb2.Payout]) -> None:
        self.payouts = list(payouts)
        self._touch()

    def answer(self, answer: Answer) -> None:
        self.answers = [answer, *self.answers][:10]
        self._touch()

    def payable(self, award_id: str) -> str:
        """Why ``award_id`` cannot be confirmed from this screen now ("" when it can be sent;
        the payout service still decides)."""
        if not self.payout.up:
            return f"no link to the payout service ({self.payout.detail}): nothing can be paid"
        if not self.gateway.up:
            return f"no link to the table's gateway ({self.gateway.detail}): nothing can be paid"
        if not award_id:
            return "no award named"
        return ""

    def to_json(self) -> dict[str, Any]:
        return {
            "table_id": self.table_id,
            "dealer": self.dealer,
            "version": self.version,
            "links": {"gateway": self.gateway.to_json(), "payout": self.payout.to_json()},
            "table": None if self.table is None else table_json(self.table),
            "payouts": [payout_json(p) for p in self.payouts],
            "answers": [a.to_json() for a in self.answers],
        }
