"""How the jackpot credits a studio prize to the player's wallet (protos/jackpot/v1/wallet.proto):
one ``Credit`` under the award id as its idempotency key, sent again until the wallet answers.

A wallet that is unavailable, slow past the call's deadline, or whose answer was lost cannot be
told apart by the caller, and each may have credited or not: the same key is simply sent again,
after a pause that doubles up to ``max_pause_seconds``, for as long as the caller waits (the
payout stays unpaid meanwhile). A refusal the wallet means (an invalid credit, the key credited
with another player or amount) is not retried: :class:`WalletRefused`.
"""

from __future__ import annotations

import asyncio

import grpc

from jackpot.v1 import wallet_pb2, wallet_pb2_grpc

RETRIED = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.ABORTED,
        grpc.StatusCode.INTERNAL,
    }
)


class WalletRefused(Exception):
    """The wallet refused the credit for a reason a retry does not change."""

    def __init__(self, code: grpc.StatusCode, detail: str) -> None:
        super().__init__(f"{code.name}: {detail}")
        self.code = code
        self.detail = detail


async def credit_until_answered(
    wallet: wallet_pb2_grpc.WalletServiceStub,
    request: wallet_pb2.CreditRequest,
    *,
    call_timeout_seconds: float = 5.0,
    first_pause_seconds: float = 0.05,
    max_pause_seconds: float = 2.0,
) -> tuple[wallet_pb2.CreditResponse, int]:
    """The wallet's answer to ``request`` and the calls it took; runs until answered or refused
    (cancel it to give up: the key stays the same for the next try)."""
    pause = first_pause_seconds
    calls = 0
    while True:
        calls += 1
        try:
            answer = await wallet.Credit(request, timeout=call_timeout_seconds)
            return answer, calls
        except grpc.aio.AioRpcError as error:
            if error.code() not in RETRIED:
                raise WalletRefused(error.code(), error.details() or "") from None
        await asyncio.sleep(pause)
        pause = min(pause * 2, max_pause_seconds)
