"""Studio prizes paid into the players' wallets (rules O1, O9; protos/jackpot/v1/wallet.proto).

Every payable payout of a studio prize (``Payout.to_wallet``: ORDERED, or APPROVED once a
supervisor approved one at or above ``studio_approval_threshold``) is credited to its player's
wallet under its award id as the idempotency key, sent again until the wallet answers
(:func:`jackpot.clients.wallet.credit_until_answered`), and only then PAID, by the service's one
way of changing a payout (:meth:`PayoutService.paid_to_wallet`: a transition in a Kafka
transaction, on the ledger). A credit the wallet answered whose PAID could not be written (the
instance lost the payouts meanwhile) is sent again by whoever owns them next, under the same key:
the wallet answers it as a duplicate and nothing is credited twice. A credit the wallet refuses
(another amount under the key, an invalid player) is not retried: the payout stays open for a
supervisor, and the log and ``jackpot_payout_wallet_credits_total`` say so.
"""

from __future__ import annotations

import asyncio
import contextlib

import structlog

from jackpot.clients.wallet import WalletRefused, credit_until_answered
from jackpot.domain.errors import DomainError
from jackpot.domain.payout import PAYABLE, Payout
from jackpot.payout import metrics
from jackpot.payout.service import PayoutService
from jackpot.platform.grpc_edge import Unavailable
from jackpot.platform.tls import secure_channel
from jackpot.v1 import wallet_pb2, wallet_pb2_grpc

log = structlog.get_logger("jackpot.payout.wallet")
SCAN_SECONDS = 0.1  # how often the open payouts are looked at for a studio prize to credit


class WalletPayer:
    """Credits the owned payouts of studio prizes, ``wallet_concurrency`` at a time."""

    def __init__(self, service: PayoutService) -> None:
        self.service = service
        self.settings = service.settings
        self._in_flight: dict[str, asyncio.Task[None]] = {}
        self._refused: set[str] = set()  # award ids the wallet refused: left to a supervisor
        self._slots = asyncio.Semaphore(self.settings.wallet_concurrency)

    async def run(self) -> None:
        """Until cancelled: every payable studio payout credited once and PAID."""
        settings = self.settings
        async with secure_channel(settings.wallet_target, settings.access.tls) as channel:
            wallet = wallet_pb2_grpc.WalletServiceStub(channel)  # type: ignore[no-untyped-call]
            try:
                while True:
                    if self.service.serving:
                        for payout in self._due():
                            task = asyncio.create_task(self._credit(wallet, payout))
                            self._in_flight[payout.award_id] = task
                    await asyncio.sleep(SCAN_SECONDS)
            finally:
                for task in self._in_flight.values():
                    task.cancel()
                await asyncio.gather(*self._in_flight.values(), return_exceptions=True)

    def _due(self) -> list[Payout]:
        return [
            payout
            for payout in self.service.book.payouts.values()
            if payout.to_wallet
            and payout.state in PAYABLE
            and payout.award_id not in self._in_flight
            and payout.award_id not in self._refused
        ]

    async def _credit(self, wallet: wallet_pb2_grpc.WalletServiceStub, payout: Payout) -> None:
        request = wallet_pb2.CreditRequest(
            idempotency_key=payout.award_id,
            player=payout.player,
            amount=payout.amount,
            reference=f"jackpot {payout.prize}, table {payout.table_id} round {payout.round_id}",
        )
        try:
            async with self._slots:
                answer, calls = await credit_until_answered(wallet, request)
                await self.service.paid_to_wallet(
                    payout.award_id, f"wallet {answer.transaction_id}"
                )
            metrics.WALLET_CREDITS.labels("duplicate" if answer.duplicate else "credited").inc()
            log.info(
                "wallet_credited", award=payout.award_id, calls=calls, duplicate=answer.duplicate
            )
        except WalletRefused as refused:
            self._refused.add(payout.award_id)
            metrics.WALLET_CREDITS.labels("refused").inc()
            log.error("wallet_refused", award=payout.award_id, why=str(refused))
        except (DomainError, Unavailable) as changed:  # paid or voided meanwhile, or not ours
            log.info("wallet_credit_left", award=payout.award_id, why=str(changed))
        finally:
            with contextlib.suppress(KeyError):
                del self._in_flight[payout.award_id]
