"""`jackpot payouts`: what is unpaid and for how long (from the payouts topic), and a supervisor's
approvals and voids (through the payout service's gRPC API, with the caller's certificate).

    jackpot payouts [--pending]
    jackpot payouts --approve AWARD_ID --reason "cards checked on camera"
    jackpot payouts --void AWARD_ID --reason "dealer error, round voided"

``--approve``/``--void`` call ``JACKPOT_PAYOUT_GRPC`` (default 127.0.0.1:50053) with the client
certificate of ``JACKPOT_TLS_CERT``/``_KEY``/``_CA`` (a ``supervisor`` certificate from
``jackpot pki``); without TLS only a payout service started with
``JACKPOT_INSECURE_ROLES=supervisor`` accepts them.
"""

from __future__ import annotations

import asyncio
import getpass
import time

import grpc

from jackpot.domain.payout import OPEN
from jackpot.payout.service import PayoutService
from jackpot.payout.settings import PayoutSettings
from jackpot.platform.tls import secure_channel
from jackpot.v1 import payout_pb2, payout_pb2_grpc


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


async def decide(settings: PayoutSettings, action: str, award_id: str, reason: str) -> str:
    """Approve or void one payout; the payout's new state, or the refusal."""
    target = settings.grpc_address.replace("0.0.0.0", "127.0.0.1")
    async with secure_channel(target, settings.access.tls) as channel:
        stub = payout_pb2_grpc.PayoutServiceStub(channel)  # type: ignore[no-untyped-call]
        try:
            if action == "approve":
                response = await stub.ApprovePayout(
                    payout_pb2.ApprovePayoutRequest(
                        award_id=award_id, reason=reason, supervisor=getpass.getuser()
                    ),
                    timeout=15,
                )
            else:
                response = await stub.VoidPayout(
                    payout_pb2.VoidPayoutRequest(
                        award_id=award_id, reason=reason, supervisor=getpass.getuser()
                    ),
                    timeout=15,
                )
        except grpc.aio.AioRpcError as error:
            raise SystemExit(f"refused ({error.code().name}): {error.details()}") from None
    return f"{award_id}: {payout_pb2.PayoutState.Name(response.payout.state)}"


def run(pending_only: bool, approve: str = "", void: str = "", reason: str = "") -> int:
    settings = PayoutSettings.from_env()
    if approve or void:
        if not reason:
            raise SystemExit("--reason is required to approve or void a payout")
        action, award_id = ("approve", approve) if approve else ("void", void)
        print(asyncio.run(decide(settings, action, award_id, reason)))
        return 0
    service = asyncio.run(load(settings))
    print("\n".join(render(service, pending_only)))
    return 0
