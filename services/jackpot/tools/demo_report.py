"""A demo floor's report: what its books, payouts and access log say once the ledger caught up.

:func:`report` (the books of every group, the payouts by state, the access log's chain, lost or
duplicated pesos) and :func:`judged_report`, with the fault suite's books bet by bet and award by
award (``jackpot.sim.books``). `jackpot demo --report`, the fault suites and the load test write it.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from jackpot.clients.payout import PayoutTargets, all_payouts, call_owner
from jackpot.domain.money import MINOR_PER_PESO, format_amount
from jackpot.tools.demo_floor import Demo
from jackpot.v1 import (
    payout_pb2,
)


async def drained_books(demo: Demo, accepted: int) -> list[Any]:
    """Every group's books once the ledger has caught up with the bets the devices had
    accepted (or after 30 tries a second apart)."""
    from jackpot.tools.audit import audit

    groups: list[Any] = []
    for _ in range(30):
        done = await audit(
            {"bootstrap_servers": demo.bootstrap}, demo.topic("ledger"), demo.topic("pot-updates")
        )
        groups = done.groups
        if sum(g.collected for g in groups) // MINOR_PER_PESO >= accepted:
            break
        await asyncio.sleep(1)
    return groups


async def report(demo: Demo, stats: Any) -> dict[str, Any]:
    from jackpot.platform.access_log import read_entries
    from jackpot.platform.kafka import KafkaConnection
    from jackpot.tools.access_chain import verify_stream

    accepted = stats.bets_accepted
    groups = await drained_books(demo, accepted)
    collected_minor = sum(g.collected for g in groups)
    collected = collected_minor // MINOR_PER_PESO
    listing = await call_owner(
        PayoutTargets(demo.payout_targets()), demo.tls("supervisor"), all_payouts
    )
    states = Counter(payout_pb2.PayoutState.Name(p.state) for p in listing)
    awards: Counter[str] = Counter()
    for group in groups:
        awards.update(group.hits)
    floor = stats.report()
    connection = KafkaConnection({"bootstrap_servers": demo.bootstrap})
    chain = await verify_stream(read_entries(connection, demo.topic("audit")))
    return {
        "run": demo.run_id,
        "tables": len(demo.tables),
        "rounds": stats.rounds,
        "bets_accepted": accepted,
        "collected": collected,
        "commission": sum(g.accounts["commission"] for g in groups) // MINOR_PER_PESO,
        "pots": {g.group_id: {k: format_amount(v) for k, v in g.pots.items()} for g in groups},
        "awards": dict(awards),
        "payouts_paid": states.get("PAYOUT_STATE_PAID", 0),
        "payouts_pending": sum(
            states.get(s, 0)
            for s in (
                "PAYOUT_STATE_ORDERED",
                "PAYOUT_STATE_AWAITING_APPROVAL",
                "PAYOUT_STATE_APPROVED",
            )
        ),
        "audit_ok": bool(groups) and not any(g.problems for g in groups),
        "audit_problems": [p for g in groups for p in g.problems][:20],
        "audit_chain": {
            "ok": chain.ok,
            "entries": chain.entries,
            "chains": len(chain.chains),
            "first_break": chain.first_break.describe() if chain.first_break else None,
        },
        "lost": max(0, accepted - collected),
        "duplicated": max(0, collected - accepted),
        "floor": floor,
    }


async def judged_report(demo: Demo, floor: Any, stats: Any) -> dict[str, Any]:
    """The report with the floor's books (``books``, the fault suite's: ``jackpot.sim.books``):
    bet by bet, award by award with exactly one payout each, and every award against the round
    oracle. ``lost`` and ``duplicated`` become the books' (bet by bet)."""
    from jackpot.sim.books import judge

    result = await report(demo, stats)
    books = await judge(demo, stats, result)
    result.update(lost=books["lost"], duplicated=books["duplicated"], books=books)
    return result
