"""The fault suite's judges: the ledger against the simulator's books, and payouts per award.

After a floor has played through its faults, ``judge`` audits the ledger (``jackpot audit``),
compares what it collected with the pesos the devices were told were accepted (nothing lost,
nothing duplicated) and asks the payout service how often each award was paid (never twice).
"""

from __future__ import annotations

from typing import Any

from jackpot.platform.tls import secure_channel
from jackpot.tools.demo import Demo, report
from jackpot.v1 import payout_pb2, payout_pb2_grpc
from loadtest.floor import FloorStats


async def payouts_per_award(demo: Demo) -> dict[str, int]:
    """How many PAID transitions each award's payout has (more than one is a double payout)."""
    async with secure_channel(demo.target("payout"), demo.tls("supervisor")) as channel:
        stub = payout_pb2_grpc.PayoutServiceStub(channel)  # type: ignore[no-untyped-call]
        listing = await stub.ListPayouts(payout_pb2.ListPayoutsRequest())
    return {
        p.award_id: sum(1 for t in p.history if t.state == payout_pb2.PAYOUT_STATE_PAID)
        for p in listing.payouts
    }


async def judge(demo: Demo, stats: FloorStats) -> dict[str, Any]:
    """The books of one floor: rounds, pesos accepted and collected, lost, duplicated, audit,
    and the audit chain."""
    books = await report(demo, stats)
    paid = await payouts_per_award(demo)
    verdict = {
        "rounds": books["rounds"],
        "rounds_voided_by_resync": stats.rejects.get("GATEWAY_UNREACHABLE", 0),
        "bets_accepted": books["bets_accepted"],
        "collected": books["collected"],
        "lost": books["lost"],
        "duplicated": books["duplicated"],
        "audit_ok": books["audit_ok"],
        "audit_problems": books["audit_problems"],
        "awards": books["awards"],
        "payouts": len(paid),
        "duplicate_payouts": sum(1 for n in paid.values() if n > 1),
        # The hash-chained audit log (faults, approvals, payments) must hold through the faults.
        "audit_chain": books["audit_chain"],
    }
    verdict["books_ok"] = bool(
        verdict["audit_ok"]
        and books["audit_chain"]["ok"]
        and verdict["lost"] == 0
        and verdict["duplicated"] == 0
        and verdict["duplicate_payouts"] == 0
    )
    return verdict
