"""Studio prizes paid into the players' wallets (rules O1, O9; protos/jackpot/v1/wallet.proto).

Every payable payout of a studio prize (``Payout.to_wallet``: ORDERED, or APPROVED once a
supervisor approved one at or above ``studio_approval_threshold``) is credited to its player's
wallet under its award id as the idempotency key, sent again until the wallet answers
(:func:`jackpot.clients.wallet.credit_until_answered`), and only then PAID, by the service's one
way of changing a payout (:meth:`PayoutService.paid_to_wallets`: the wallets' answers of one
moment in one transaction per partition, on the ledger). A credit the wallet answered whose PAID
could not be written (the instance lost the payouts meanwhile, the transaction failed) is sent
again, here or by whoever owns the payouts next, under the same key: the wallet answers it as a
duplicate and nothing is credited twice. A credit the wallet refuses (another amount under the
key, an invalid player) is not retried: the payout stays open for a supervisor, and the log and
``jackpot_payout_wallet_credits_total`` say so. A prize being credited cannot be voided (the
wallet may have credited it already), and one whose void is being written is not credited
(``PayoutService.crediting`` and ``voiding``): a void never leaves a credited prize VOIDED.
Credits start at most ``wallet_credits_per_second`` a second (:class:`Pacer`): a studio round's
10,000 prizes at once would flood the operator's wallet and, on a shared machine, take the cores
from the land tables for as long as the burst lasts.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import structlog

from jackpot.clients.wallet import WalletRefused, credit_until_answered
from jackpot.domain.payout import PAYABLE, Payout
from jackpot.payout import metrics
from jackpot.payout.service import PayoutService
from jackpot.platform.grpc_edge import Unavailable
from jackpot.platform.processor_errors import NotCommitted
from jackpot.platform.tls import secure_channel
from jackpot.v1 import wallet_pb2, wallet_pb2_grpc

log = structlog.get_logger("jackpot.payout.wallet")
SCAN_SECONDS = 0.1  # how often the open payouts are looked at for a studio prize to credit


class Pacer:
    """Starts spaced at least ``1 / per_second`` apart, whoever asks (0: no limit); a start
    not taken for a while does not bank a burst."""

    def __init__(
        self,
        per_second: int,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._gap = 1.0 / per_second if per_second else 0.0
        self._next = 0.0  # the clock's seconds: the earliest next start
        self._clock, self._sleep = clock, sleep

    async def turn(self) -> None:
        """Returns at this caller's start."""
        if not self._gap:
            return
        now = self._clock()
        start = max(now, self._next)
        self._next = start + self._gap
        if start > now:
            await self._sleep(start - now)


class WalletPayer:
    """Credits the owned payouts of studio prizes, ``wallet_concurrency`` at a time, and writes
    the PAID of every credit the wallets answered since the last write in one transaction per
    partition (a transaction per prize made 10,000 credits take minutes)."""

    def __init__(self, service: PayoutService) -> None:
        self.service = service
        self.settings = service.settings
        self._in_flight: set[str] = set()  # queued, crediting, or answered and not PAID
        # ``wallet_concurrency`` workers take the due payouts in turn: a task per payout made a
        # studio round's 10,000 tasks wait on a semaphore, a cost per credit
        self._due_payouts: asyncio.Queue[Payout] = asyncio.Queue()
        self._answered: dict[str, str] = {}  # award id -> the wallet's transaction
        self._refused: set[str] = set()  # award ids the wallet refused: left to a supervisor
        self._pace = Pacer(self.settings.wallet_credits_per_second)
        self._scanned: int | None = None  # the book's changes at the last scan
        self._released = False  # a payout left the in-flight ones since: scan again

    async def run(self) -> None:
        """Until cancelled: every payable studio payout credited once and PAID."""
        settings = self.settings
        async with secure_channel(settings.wallet_target, settings.access.tls) as channel:
            wallet = wallet_pb2_grpc.WalletServiceStub(channel)  # type: ignore[no-untyped-call]
            workers = [
                asyncio.create_task(self._crediting(wallet))
                for _ in range(settings.wallet_concurrency)
            ]
            try:
                while True:
                    if self.service.serving:
                        await self._write_paid()
                        for payout in self._due():
                            self._in_flight.add(payout.award_id)
                            self._due_payouts.put_nowait(payout)
                    await asyncio.sleep(SCAN_SECONDS)
            finally:
                for task in workers:
                    task.cancel()
                await asyncio.gather(*workers, return_exceptions=True)

    def _due(self) -> list[Payout]:
        """The payable studio payouts not being credited; none to look at while the queue still
        holds some (those found now would be credited after them anyway: a studio round's
        10,000 take half a minute) or when neither the book nor the in-flight ones changed."""
        if not self._due_payouts.empty():
            return []
        if self._scanned == self.service.book.changes and not self._released:
            return []
        self._scanned, self._released = self.service.book.changes, False
        return [
            payout
            for payout in self.service.book.payable_to_wallets()
            if payout.award_id not in self._in_flight and payout.award_id not in self._refused
        ]

    async def _crediting(self, wallet: wallet_pb2_grpc.WalletServiceStub) -> None:
        """One of the workers: the due payouts credited one after the other, until cancelled."""
        while True:
            queued = await self._due_payouts.get()
            try:
                await self._pace.turn()
                payout = self._still_payable(queued)
                if payout is not None:
                    await self._credit(wallet, payout)
            except Exception:  # not retried (the payout stays in flight, its void refused: the
                # wallet may have credited it); the worker goes on
                log.exception("wallet_credit_failed", award=queued.award_id)

    def _still_payable(self, queued: Payout) -> Payout | None:
        """The queued payout as the book holds it at its turn, if a wallet may still be credited
        it: one voided (or lost to another instance) while it waited is not credited (a studio
        round's queue is half a minute long), nor one whose void is being written, and leaves
        the ones in flight. One it returns is *crediting*: its void is refused from now on."""
        current = self.service.book.payouts.get(queued.award_id)
        voiding = queued.award_id in self.service.voiding
        if current is not None and current.state in PAYABLE and not voiding:
            self.service.crediting.add(queued.award_id)
            return current
        self._in_flight.discard(queued.award_id)
        self._released = True
        log.info(
            "wallet_credit_dropped", award=queued.award_id, state=current and current.state.value
        )
        return None

    async def _credit(self, wallet: wallet_pb2_grpc.WalletServiceStub, payout: Payout) -> None:
        request = wallet_pb2.CreditRequest(
            idempotency_key=payout.award_id,
            player=payout.player,
            amount=payout.amount,
            reference=f"jackpot {payout.prize}, table {payout.table_id} round {payout.round_id}",
        )
        try:
            answer, calls = await credit_until_answered(wallet, request)
            self._answered[payout.award_id] = answer.transaction_id
            outcome = "duplicate" if answer.duplicate else "credited"
            metrics.WALLET_CREDITS.labels(outcome).inc()
            if calls > 1 or answer.duplicate:  # the many first-call credits: the PAID line counts
                log.info("wallet_answered", award=payout.award_id, calls=calls, outcome=outcome)
        except WalletRefused as refused:
            self._refused.add(payout.award_id)
            self._in_flight.discard(payout.award_id)
            self.service.crediting.discard(payout.award_id)
            self._released = True
            metrics.WALLET_CREDITS.labels("refused").inc()
            log.error("wallet_refused", award=payout.award_id, why=str(refused))

    async def _write_paid(self) -> None:
        """PAID for every credit answered since the last write; what could not be written (the
        payouts lost meanwhile, a transaction that failed) is credited again later under its
        key, by this instance or the next owner, and the wallet answers it as a duplicate."""
        answered, self._answered = self._answered, {}
        if not answered:
            return
        try:
            paid = await self.service.paid_to_wallets(answered)
            log.info("wallet_payouts_paid", paid=len(paid), answered=len(answered))
            self.service.crediting.difference_update(answered)
        except (Unavailable, NotCommitted) as failed:
            # credited, not PAID: their voids stay refused until they are (credited again)
            log.warning("wallet_payouts_not_written", answered=len(answered), why=str(failed))
        finally:
            self._in_flight.difference_update(answered)
            self._released = True
