"""`jackpot payouts [--pending]`: what is unpaid and for how long, from the payouts topic."""

from __future__ import annotations

import asyncio
import time

from jackpot.domain.payout import OPEN
from jackpot.payout.service import PayoutService
from jackpot.payout.settings import PayoutSettings


async def load(settings: PayoutSettings) -> PayoutService:
    service = PayoutService(settings)
    await service.restore()
    return service


def render(service: PayoutService, pending_only: bool, now_ns: int | None = None) -> list[str]:
    now_ns = time.time_ns() if now_ns is None else now_ns
    lines = [
        f"{'award':54} {'table':12} {'seat':>4} {'prize':16} {'amount':>12} {'state':18} {'age':>8}"
    ]
    for payout in service.book.listing(pending_only):
        age = (now_ns - payout.ordered_at_ns) / 1e9 if payout.state in OPEN else 0
        lines.append(
            f"{payout.award_id:54} {payout.table_id:12} {payout.seat:>4} {payout.prize:16} "
            f"{payout.amount:>12,} {payout.state.value:18} {age:>7.0f}s"
        )
    open_count = sum(1 for p in service.book.payouts.values() if p.state in OPEN)
    lines.append(f"{open_count} unpaid of {len(service.book.payouts)} payouts")
    return lines


def run(pending_only: bool) -> int:
    service = asyncio.run(load(PayoutSettings.from_env()))
    print("\n".join(render(service, pending_only)))
    return 0
