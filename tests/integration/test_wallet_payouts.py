"""Studio prizes paid into the players' wallets by the real payout service on a real broker,
through a reference wallet that is slow, fails one call in five before crediting and loses one
answer in five after (rules O1-O8; protos/jackpot/v1/wallet.proto): each credited once under its
award id and PAID only once the wallet answered; one at or above the studio approval threshold
credited only after a supervisor approved it; a land prize left to its dealer terminal."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from functools import partial

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from loadtest.free_ports import free_port

from jackpot.clients.payout import all_payouts
from jackpot.domain.errors import DomainError
from jackpot.domain.payout import PayoutState
from jackpot.payout.settings import PayoutSettings
from jackpot.payout.wallet_payer import WalletPayer
from jackpot.platform.bundles import awards_of, bundle_awards, ledger_entries
from jackpot.platform.runtime import serve
from jackpot.v1 import payout_pb2, payout_pb2_grpc, pot_pb2, wallet_pb2, wallet_pb2_grpc
from jackpot.v1.dead_letter_pb2 import DeadLetter
from jackpot.wallet.main import compose_wallet
from jackpot.wallet.reference import ReferenceWallet, WalletFaults
from jackpot.wallet.settings import WalletSettings
from tests.integration.gateway_harness import read_topic, wait_until
from tests.integration.test_payout import (
    Running,
    award,
    payout_settings,
    publish,
    publish_records,
)
from tests.polling import eventually

pytestmark = pytest.mark.integration

STUDIO_PRIZES = 200


def studio_award(seat: int, amount: int = 1_010) -> pot_pb2.Award:
    prize = award("R1", seat, "ROYAL_FLUSH", amount, table="S-1")
    prize.player = f"p{seat}"
    return prize


@pytest.fixture
async def wallet() -> AsyncIterator[tuple[ReferenceWallet, int]]:
    faults = WalletFaults(latency_seconds=0.02, fail_rate=0.2, lost_answer_rate=0.2, seed=39)
    reference = ReferenceWallet(faults)
    server = grpc.aio.server()
    reference.register(server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    yield reference, port
    await server.stop(None)


async def test_O9_studio_prizes_are_credited_once_and_paid_only_when_the_wallet_answers(
    kafka_bootstrap: str, unique: str, wallet: tuple[ReferenceWallet, int]
) -> None:
    reference, port = wallet
    base = await payout_settings(kafka_bootstrap, unique)
    settings: PayoutSettings = base.replace(
        wallet_target=f"127.0.0.1:{port}", studio_approval_threshold=100_000
    )
    large = studio_award(999, amount=250_000)  # at or above the studio threshold
    land = award("R1", 3, "FLUSH", 50_000)
    prizes = [studio_award(s) for s in range(1, STUDIO_PRIZES + 1)]
    bundled = bundle_awards(prizes)  # one table event's prizes, as the pot writes them
    assert len(bundled) == 1
    assert awards_of(bundled[0][1]) == prizes
    stranger = pot_pb2.Award(award_id="other/x", pot_group_id="another-group")
    broken = pot_pb2.Award(pot_group_id=prizes[0].pot_group_id, bundled=[b"\xff\xff"])
    foreign = pot_pb2.Award(
        pot_group_id=prizes[0].pot_group_id, bundled=[stranger.SerializeToString()]
    )
    refused = [(prizes[0].pot_group_id, b.SerializeToString()) for b in (broken, foreign)]
    await publish_records(settings, [*bundled, *refused])
    await publish(settings, large, land)
    async with Running(settings) as running:
        service = running.service
        payer = asyncio.create_task(WalletPayer(service).run())
        try:
            studio_ids = {studio_award(s).award_id for s in range(1, STUDIO_PRIZES + 1)}

            def all_paid() -> bool:
                payouts = service.book.payouts
                return all(
                    a in payouts and payouts[a].state is PayoutState.PAID for a in studio_ids
                )

            await wait_until(all_paid, within=60)
            payouts = service.book.payouts
            by = {payouts[a].history[-1].by for a in studio_ids}
            assert payouts[large.award_id].state is PayoutState.AWAITING_APPROVAL
            assert large.award_id not in reference.credits  # not credited before approval
            assert payouts[land.award_id].state is PayoutState.ORDERED  # its terminal pays it
            with pytest.raises(DomainError, match="paid to the player's wallet"):
                await service.paid("S-1", studio_award(1).award_id, "dealer")
            await service.approve(large.award_id, "sara")
            await wait_until(lambda: payouts[large.award_id].state is PayoutState.PAID, within=30)
        finally:
            payer.cancel()
            await asyncio.gather(payer, return_exceptions=True)
    expected = {f"p{s}": 1_010 for s in range(1, STUDIO_PRIZES + 1)} | {"p999": 250_000}
    assert reference.balances == expected  # each credited exactly once
    assert reference.calls > len(expected)  # the faults were met and outlasted
    assert all(who.startswith("wallet tx-") for who in by)
    assert len(by) == STUDIO_PRIZES  # one transaction each
    records = await read_topic(kafka_bootstrap, settings.ledger_topic)
    entries = [e for r in records for e, _ in ledger_entries(r.value)]  # a round's: bundled
    ordered = [e for e in entries if e.type == pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_ORDERED]
    assert {e.source_event_id for e in ordered} >= studio_ids
    paid = [e for e in entries if e.type == pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_PAID]
    assert sorted(e.source_event_id for e in paid) == sorted([*studio_ids, large.award_id])
    assert all(e.changed_by.startswith("wallet tx-") for e in paid)  # PAID on the ledger
    letters = await read_topic(kafka_bootstrap, settings.dead_letter_topic)
    reasons = sorted(DeadLetter.FromString(r.value).detail for r in letters)
    assert len(reasons) == 2, reasons  # each broken bundle refused whole, with its reason
    assert "another-group" in reasons[0] + reasons[1]
    assert all(r.startswith("not ") for r in reasons), reasons


async def test_O9_a_studio_prize_voided_while_it_waits_its_turn_is_never_credited(
    kafka_bootstrap: str, unique: str
) -> None:
    """A studio round's credits wait their turn (``wallet_credits_per_second``): 300 prizes
    paced at 50 a second take six seconds. A supervisor voids the last two while they wait: the
    wallet is never asked to credit them, they stay VOIDED, and every other prize is PAID."""
    reference = ReferenceWallet(WalletFaults(latency_seconds=0.0))
    server = grpc.aio.server()
    reference.register(server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    base = await payout_settings(kafka_bootstrap, unique)
    settings: PayoutSettings = base.replace(
        wallet_target=f"127.0.0.1:{port}", wallet_credits_per_second=50
    )
    prizes = [studio_award(s) for s in range(1, 301)]
    voided = [p.award_id for p in prizes[-2:]]
    await publish_records(settings, bundle_awards(prizes))
    try:
        async with Running(settings) as running:
            service = running.service
            payer = asyncio.create_task(WalletPayer(service).run())
            try:
                await wait_until(lambda: 0 < len(reference.credits) < 100, within=30)
                for award_id in voided:
                    await service.void(award_id, "sara", "the player is barred")
                others = [p.award_id for p in prizes[:-2]]
                payouts = service.book.payouts

                def all_paid() -> bool:
                    return all(payouts[a].state is PayoutState.PAID for a in others)

                await wait_until(all_paid, within=60)
            finally:
                payer.cancel()
                await asyncio.gather(payer, return_exceptions=True)
            assert {payouts[a].state for a in voided} == {PayoutState.VOIDED}
    finally:
        await server.stop(None)
    assert not set(voided) & set(reference.credits)  # never credited
    assert len(reference.credits) == len(prizes) - 2


async def test_O9_a_studio_prize_being_credited_cannot_be_voided_and_ends_paid_once(
    kafka_bootstrap: str, unique: str
) -> None:
    """The wallet answers a credit in 1.5 s. A supervisor voids the prize while its credit is
    in flight: refused (the wallet may credit it: before, the void was written and the wallet
    credited a VOIDED prize). Once the wallet answered, the prize is PAID, credited once; a
    void then is refused as PAID."""
    reference = ReferenceWallet(WalletFaults(latency_seconds=1.5))
    server = grpc.aio.server()
    reference.register(server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    settings = (await payout_settings(kafka_bootstrap, unique)).replace(
        wallet_target=f"127.0.0.1:{port}"
    )
    prize = studio_award(7)
    await publish(settings, prize)
    try:
        async with Running(settings) as running:
            service = running.service
            payer = asyncio.create_task(WalletPayer(service).run())
            try:
                await wait_until(lambda: reference.calls == 1, within=30)
                assert not reference.credits  # the wallet has the call, not yet answered
                with pytest.raises(DomainError, match="being credited to its player's wallet"):
                    await service.void(prize.award_id, "sara", "dealer error")
                payouts = service.book.payouts
                await wait_until(lambda: payouts[prize.award_id].state is PayoutState.PAID, 30)
                with pytest.raises(DomainError, match="PAID: it cannot be voided"):
                    await service.void(prize.award_id, "sara", "dealer error")
            finally:
                payer.cancel()
                await asyncio.gather(payer, return_exceptions=True)
            assert not service.crediting
            assert not service.voiding
    finally:
        await server.stop(None)
    assert list(reference.credits) == [prize.award_id]
    assert reference.calls == 1


async def test_O9_jackpot_wallet_serves_the_reference_wallet_with_health_and_a_graceful_stop() -> (
    None
):
    """`jackpot wallet`'s composition (the demo's wallet): SERVING on its health, a credit
    answered once and its resend as a duplicate of the same transaction, stopped with exit 0."""
    settings = WalletSettings(grpc_address=f"127.0.0.1:{free_port()}", latency_seconds=0.0)
    stop = asyncio.Event()
    task = asyncio.create_task(serve("wallet", partial(compose_wallet, settings), stop))
    try:
        async with grpc.aio.insecure_channel(settings.grpc_address) as channel:
            health = health_pb2_grpc.HealthStub(channel)

            async def serving() -> bool:
                with contextlib.suppress(grpc.aio.AioRpcError):
                    answer = await health.Check(health_pb2.HealthCheckRequest(), timeout=1)
                    return answer.status == health_pb2.HealthCheckResponse.SERVING
                return False

            await eventually(serving, "the wallet serving", within=10)
            wallet = wallet_pb2_grpc.WalletServiceStub(channel)  # type: ignore[no-untyped-call]
            credit = wallet_pb2.CreditRequest(
                idempotency_key="g/S-1/R1/1/ROYAL_FLUSH", player="p1", amount=4_594
            )
            first = await wallet.Credit(credit, timeout=5)
            again = await wallet.Credit(credit, timeout=5)
            assert (first.duplicate, again.duplicate) == (False, True)
            assert again.transaction_id == first.transaction_id
    finally:
        stop.set()
    assert await asyncio.wait_for(task, 10) == 0


async def test_ListPayouts_pages_a_studio_sized_listing_in_payment_order(
    kafka_bootstrap: str, unique: str
) -> None:
    """A listing larger than one gRPC message (a studio round's prizes, O4) comes in pages: a
    page holds at most its size, the pages together every payout once in payment order (S5),
    and a token ListPayouts never gave is refused. A supervisor's listing (D3, O9) holds only
    the prizes awaiting approval, not the round's thousands on their way to wallets."""
    settings = await payout_settings(kafka_bootstrap, unique)
    prizes = [studio_award(seat, amount=1_010) for seat in range(1, 2_502)]
    large = [studio_award(seat, amount=2_000_000) for seat in range(3_000, 3_007)]  # threshold
    prizes += large
    await publish(settings, *prizes)
    async with (
        Running(settings) as running,
        grpc.aio.insecure_channel(settings.grpc_address) as channel,
    ):
        await wait_until(lambda: len(running.service.book.payouts) == len(prizes), within=60)
        stub = payout_pb2_grpc.PayoutServiceStub(channel)  # type: ignore[no-untyped-call]
        first = await stub.ListPayouts(payout_pb2.ListPayoutsRequest(page_size=1_000))
        assert len(first.payouts) == 1_000
        assert first.next_page_token
        listed = await all_payouts(stub)
        assert sorted(p.award_id for p in listed) == sorted(p.award_id for p in prizes)
        orders = [(p.order, p.award_id) for p in listed]
        assert orders == sorted(orders)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.ListPayouts(payout_pb2.ListPayoutsRequest(page_token="not-a-token"))
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        awaiting = await all_payouts(stub, awaiting_approval_only=True)
        assert [p.award_id for p in awaiting] == [a.award_id for a in large]
        assert {p.state for p in awaiting} == {payout_pb2.PAYOUT_STATE_AWAITING_APPROVAL}
        request = payout_pb2.ListPayoutsRequest(awaiting_approval_only=True, page_size=3)
        page = await stub.ListPayouts(request)
        request.page_token = page.next_page_token
        assert [p.award_id for p in page.payouts] == [a.award_id for a in large[:3]]
        assert [p.award_id for p in (await stub.ListPayouts(request)).payouts] == [
            a.award_id for a in large[3:6]
        ]
