"""The wallet protocol over a real gRPC channel on localhost: the reference wallet credits a key
once however often it is sent, and the jackpot's client sends a credit again under its key until
the wallet answers, through a slow wallet, one that fails and one that loses its answers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import grpc
import pytest

from jackpot.clients.wallet import WalletRefused, credit_until_answered
from jackpot.domain.payout import order_payout
from jackpot.payout.payout_book import PayoutBook
from jackpot.payout.wallet_payer import Pacer, WalletPayer
from jackpot.v1 import wallet_pb2, wallet_pb2_grpc
from jackpot.wallet.reference import ReferenceWallet, WalletFaults
from tests.polling import eventually

pytestmark = pytest.mark.unit


async def serve(wallet: ReferenceWallet, port: int = 0) -> tuple[grpc.aio.Server, int]:
    server = grpc.aio.server()
    wallet.register(server)
    bound = server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    return server, bound


@pytest.fixture
async def bad_wallet() -> AsyncIterator[tuple[ReferenceWallet, wallet_pb2_grpc.WalletServiceStub]]:
    wallet = ReferenceWallet(
        WalletFaults(latency_seconds=0.001, fail_rate=0.2, lost_answer_rate=0.2, seed=39)
    )
    server, port = await serve(wallet)
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        yield wallet, wallet_pb2_grpc.WalletServiceStub(channel)  # type: ignore[no-untyped-call]
    await server.stop(None)


class CountingStub:
    """A wallet stub that counts the calls made through it (answered or not)."""

    def __init__(self, stub: wallet_pb2_grpc.WalletServiceStub) -> None:
        self._stub = stub
        self.calls = 0

    async def Credit(self, request: wallet_pb2.CreditRequest, **options: Any) -> Any:
        self.calls += 1
        return await self._stub.Credit(request, **options)


def credit(n: int, amount: int = 1_010) -> wallet_pb2.CreditRequest:
    return wallet_pb2.CreditRequest(
        idempotency_key=f"g/S-1/R1/{n}/ROYAL_FLUSH", player=f"p{n}", amount=amount
    )


async def test_every_credit_is_credited_once_through_failures_and_lost_answers(
    bad_wallet: tuple[ReferenceWallet, wallet_pb2_grpc.WalletServiceStub],
) -> None:
    """1,000 credits against a wallet that fails one call in five before crediting and loses
    one answer in five after: every one answered, each player credited exactly once."""
    wallet, stub = bad_wallet
    fast = {"first_pause_seconds": 0.001, "max_pause_seconds": 0.01}
    results = await asyncio.gather(
        *(credit_until_answered(stub, credit(n), **fast) for n in range(1, 1001))
    )
    assert len({answer.transaction_id for answer, _ in results}) == 1000
    assert wallet.balances == {f"p{n}": 1_010 for n in range(1, 1001)}
    assert len(wallet.credits) == 1000
    calls = sum(taken for _, taken in results)
    assert calls == wallet.calls > 1000  # the faults were met and outlasted
    assert wallet.duplicates > 0  # a lost answer's resend found its credit made
    assert any(answer.duplicate for answer, _ in results)


async def test_a_key_sent_again_is_the_same_transaction_and_another_amount_is_refused() -> None:
    wallet = ReferenceWallet()
    server, port = await serve(wallet)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = wallet_pb2_grpc.WalletServiceStub(channel)  # type: ignore[no-untyped-call]
            first, _ = await credit_until_answered(stub, credit(1))
            again, _ = await credit_until_answered(stub, credit(1))
            assert (again.transaction_id, again.duplicate) == (first.transaction_id, True)
            with pytest.raises(WalletRefused) as other:
                await credit_until_answered(stub, credit(1, amount=2_020))
            assert other.value.code == grpc.StatusCode.FAILED_PRECONDITION
            with pytest.raises(WalletRefused) as empty:
                await credit_until_answered(stub, credit(2, amount=0))
            assert empty.value.code == grpc.StatusCode.INVALID_ARGUMENT
    finally:
        await server.stop(None)
    assert wallet.balances == {"p1": 1_010}


async def test_a_wallet_that_is_down_is_waited_for() -> None:
    """No server on the port at first: the client keeps sending; the wallet comes up and the
    credit is answered once."""
    probe, port = await serve(ReferenceWallet())
    await probe.stop(None)  # the port, now with nobody on it
    wallet = ReferenceWallet()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = CountingStub(wallet_pb2_grpc.WalletServiceStub(channel))  # type: ignore[no-untyped-call]
        pending = asyncio.create_task(
            credit_until_answered(stub, credit(7), first_pause_seconds=0.05, max_pause_seconds=0.1)
        )
        await eventually(lambda: stub.calls >= 2, "the client never tried twice", within=10)
        assert not pending.done()
        server, _ = await serve(wallet, port)
        try:
            answer, calls = await asyncio.wait_for(pending, 10)
        finally:
            await server.stop(None)
    assert calls > 1
    assert not answer.duplicate
    assert wallet.balances == {"p7": 1_010}


async def test_O9_the_payers_credits_start_at_most_their_rate_and_an_idle_spell_banks_none() -> (
    None
):
    """``wallet_credits_per_second``: eight workers asking at once start 1/rate apart, in the
    order they asked; after an idle spell the next start is at once and the ones after it are
    spaced again (the operator's wallet is never sent a burst); 0 is no limit."""
    now = [100.0]
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(round(seconds, 9))

    pace = Pacer(250, clock=lambda: now[0], sleep=sleep)
    for _ in range(8):
        await pace.turn()
    assert slept == [round(0.004 * n, 9) for n in range(1, 8)]
    slept.clear()
    now[0] += 60.0  # idle for a minute
    for _ in range(3):
        await pace.turn()
    assert slept == [0.004, 0.008]
    slept.clear()
    unlimited = Pacer(0, clock=lambda: now[0], sleep=sleep)
    for _ in range(100):
        await unlimited.turn()
    assert slept == []


def test_O9_a_prize_whose_void_is_being_written_is_not_credited_and_one_crediting_is_marked() -> (
    None
):
    """The void's half of the exclusion (its other half, a void refused while a credit is in
    flight, is on the real broker: test_wallet_payouts.py). At its turn a payable prize whose
    void is being written (decided, its transaction not committed: the book still says
    payable) is dropped, not credited; one credited is marked, so a void is refused."""
    book = PayoutBook()
    prizes = [
        replace(
            order_payout(
                award_id=f"g/S-1/R1/{seat}/ROYAL_FLUSH",
                pot_group_id="g",
                table_id="S-1",
                round_id="R1",
                seat=seat,
                prize="ROYAL_FLUSH",
                amount=1_010,
                cards=("AH", "KH", "QH", "JH", "TH"),
                order=seat,
                approval_threshold=1_000_000,
                at_ns=1,
            ),
            player=f"p{seat}",
        )
        for seat in (1, 2)
    ]
    book.put_many(0, prizes)
    service = SimpleNamespace(
        book=book,
        settings=SimpleNamespace(wallet_credits_per_second=0),
        crediting=set(),
        voiding={prizes[0].award_id},
    )
    payer = WalletPayer(service)  # type: ignore[arg-type]
    assert payer._still_payable(prizes[0]) is None
    assert payer._still_payable(prizes[1]) == prizes[1]
    assert service.crediting == {prizes[1].award_id}
