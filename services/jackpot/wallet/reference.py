"""A reference wallet: the operator's side of ``jackpot.v1.WalletService`` (protos/jackpot/v1/
wallet.proto), for the demo and the tests of the jackpot's studio payouts (issue 39).

It credits each idempotency key once: the same key again is answered with the same transaction,
marked duplicate, and credits nothing; the same key with another player or amount is refused
(FAILED_PRECONDITION). And it can be made as bad as a real wallet (:class:`WalletFaults`): slow
(a latency per call), failing before it credits (UNAVAILABLE, ``fail_rate``), and losing its
answer after it credited (UNAVAILABLE, ``lost_answer_rate``: the caller cannot tell the two
apart and must send the credit again under the same key), so the jackpot's retries are tested
against what wallets do.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from dataclasses import dataclass

import grpc

from jackpot.v1 import wallet_pb2, wallet_pb2_grpc

SERVICE_NAME = "jackpot.v1.WalletService"


@dataclass(frozen=True, slots=True)
class WalletFaults:
    """How badly the reference wallet behaves (rates are per call, from 0 to 1)."""

    latency_seconds: float = 0.0
    fail_rate: float = 0.0  # UNAVAILABLE before crediting
    lost_answer_rate: float = 0.0  # credited, then UNAVAILABLE (the answer lost)
    seed: int | None = None


@dataclass(frozen=True, slots=True)
class WalletCredit:
    """One credited key."""

    key: str
    player: str
    amount: int
    transaction_id: str


class ReferenceWallet(wallet_pb2_grpc.WalletServiceServicer):
    """Every credit by its key, and each player's balance of them."""

    service_name = SERVICE_NAME

    def __init__(self, faults: WalletFaults | None = None) -> None:
        self.faults = faults or WalletFaults()
        self.credits: dict[str, WalletCredit] = {}
        self.balances: Counter[str] = Counter()
        self.calls = 0
        self.duplicates = 0
        self._rng = random.Random(self.faults.seed)

    def register(self, server: grpc.aio.Server) -> None:
        wallet_pb2_grpc.add_WalletServiceServicer_to_server(self, server)  # type: ignore[no-untyped-call]

    async def Credit(
        self, request: wallet_pb2.CreditRequest, context: grpc.aio.ServicerContext
    ) -> wallet_pb2.CreditResponse:
        self.calls += 1
        faults = self.faults
        if faults.latency_seconds:
            await asyncio.sleep(faults.latency_seconds)
        if self._rng.random() < faults.fail_rate:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "the wallet is unavailable")
        problem = _invalid(request)
        if problem:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, problem)
        credit = self.credits.get(request.idempotency_key)
        duplicate = credit is not None
        if credit is None:
            credit = WalletCredit(
                request.idempotency_key,
                request.player,
                request.amount,
                f"tx-{len(self.credits) + 1}",
            )
            self.credits[credit.key] = credit
            self.balances[credit.player] += credit.amount
        elif (credit.player, credit.amount) != (request.player, request.amount):
            await context.abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"key {credit.key} credited {credit.amount} to {credit.player} already",
            )
        else:
            self.duplicates += 1
        if self._rng.random() < faults.lost_answer_rate:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "the answer was lost")
        return wallet_pb2.CreditResponse(transaction_id=credit.transaction_id, duplicate=duplicate)


def _invalid(request: wallet_pb2.CreditRequest) -> str:
    if not request.idempotency_key:
        return "a credit needs an idempotency key"
    if not request.player:
        return "a credit needs a player"
    if request.amount <= 0:
        return f"a credit of {request.amount} is not a positive whole number of pesos"
    return ""
