"""The payout service against real Kafka (issue #6): one payout per award, the approval flow,
voids, dealer terminals, restarts without double payouts, and the ledger trail."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator

import grpc
import pytest

from jackpot.domain.access import Role
from jackpot.domain.errors import DomainError
from jackpot.domain.payout import PayoutState
from jackpot.payout.grpc_api import SERVICE_NAME, PayoutServicer
from jackpot.payout.service import PayoutService
from jackpot.payout.settings import PayoutSettings
from jackpot.platform.audit import AuditLog
from jackpot.platform.authz import AccessSettings, Authorizer
from jackpot.platform.grpc_server import GrpcServer
from jackpot.platform.kafka import ensure_topics, idempotent_producer
from jackpot.tools.payouts import load, render
from jackpot.topics import TopicSpec
from jackpot.v1 import payout_pb2, payout_pb2_grpc, pot_pb2
from tests.integration.gateway_harness import read_topic, wait_until

pytestmark = pytest.mark.integration


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def award(round_id: str, seat: int, prize: str, amount: int, table: str = "T1") -> pot_pb2.Award:
    return pot_pb2.Award(
        award_id=f"g/{table}/{round_id}/{seat}/{prize}",
        pot_group_id="g",
        table_id=table,
        round_id=round_id,
        seat=seat,
        prize=prize,
        bet=1000,
        amount=amount,
        cards=["AS", "KS", "QS", "JS", "TS"],
    )


class Running:
    def __init__(self, settings: PayoutSettings) -> None:
        self.settings = settings
        self.service = PayoutService(settings)
        self.audit = AuditLog(
            settings.bootstrap_servers,
            settings.access.audit_topic,
            f"payout:{settings.grpc_address}",
        )
        servicer = PayoutServicer(self.service, Authorizer(settings.access, self.audit))
        self.server = GrpcServer(settings.grpc_address, [servicer.register], [SERVICE_NAME])

    async def __aenter__(self) -> Running:
        await self.service.start()
        await self.audit.start()
        await self.server.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.server.stop(0.5)
        await self.service.stop()
        await self.audit.stop()


@pytest.fixture
async def settings(kafka_bootstrap: str, unique: str) -> PayoutSettings:
    settings = PayoutSettings(
        bootstrap_servers=kafka_bootstrap,
        grpc_address=f"127.0.0.1:{free_port()}",
        metrics_port=0,
        approval_threshold=1_000_000,
        consumer_group=f"payout-{unique}",
        transactional_id=f"payout-{unique}",
        awards_topic=f"test.awards.{unique}",
        payouts_topic=f"test.payouts.{unique}",
        ledger_topic=f"test.ledger.{unique}",
        # Plaintext in tests: every caller is the local supervisor (jackpot.platform.authz).
        access=AccessSettings(
            insecure_roles=frozenset({Role.SUPERVISOR}), audit_topic=f"test.audit.{unique}"
        ),
    )
    await ensure_topics(
        kafka_bootstrap,
        [
            TopicSpec(settings.awards_topic, 2),
            TopicSpec(settings.payouts_topic, 2, {"cleanup.policy": "compact,delete"}),
            TopicSpec(settings.ledger_topic, 2),
        ],
    )
    return settings


async def publish(settings: PayoutSettings, *awards: pot_pb2.Award) -> None:
    producer = idempotent_producer(settings.bootstrap_servers)
    await producer.start()
    try:
        for item in awards:
            await producer.send_and_wait(
                settings.awards_topic, item.SerializeToString(), key=item.pot_group_id.encode()
            )
    finally:
        await producer.stop()


async def test_approval_flow_terminal_payment_and_no_double_payout_after_restart(
    settings: PayoutSettings,
) -> None:
    small = award("R1", 2, "FULL_HOUSE", 100_000)
    large = award("R1", 5, "ROYAL_FLUSH", 2_000_000)
    other_table = award("R1", 1, "FLUSH", 50_000, table="T2")
    await publish(settings, small, large, other_table)

    async with Running(settings) as running:
        book = running.service.book
        await wait_until(lambda: len(book.payouts) == 3)
        assert book.payouts[small.award_id].state is PayoutState.ORDERED
        assert book.payouts[large.award_id].state is PayoutState.AWAITING_APPROVAL

        async with grpc.aio.insecure_channel(settings.grpc_address) as channel:
            stub = payout_pb2_grpc.PayoutServiceStub(channel)
            outgoing: asyncio.Queue[payout_pb2.DealerTerminalRequest | None] = asyncio.Queue()

            async def requests() -> AsyncIterator[payout_pb2.DealerTerminalRequest]:
                while (item := await outgoing.get()) is not None:
                    yield item

            terminal = stub.DealerTerminal(requests())
            await outgoing.put(
                payout_pb2.DealerTerminalRequest(
                    hello=payout_pb2.TerminalHello(table_id="T1", dealer="dealer-ana")
                )
            )
            first = await terminal.read()
            assert [p.award_id for p in first.open] == [small.award_id, large.award_id]
            assert [p.state for p in first.open] == [
                payout_pb2.PAYOUT_STATE_ORDERED,
                payout_pb2.PAYOUT_STATE_AWAITING_APPROVAL,
            ]

            # the large prize is locked until a supervisor approves it
            await outgoing.put(
                payout_pb2.DealerTerminalRequest(
                    paid=payout_pb2.PaymentConfirmed(award_id=large.award_id)
                )
            )
            refused = await terminal.read()
            assert "AWAITING_APPROVAL" in refused.refused
            approved = await stub.ApprovePayout(
                payout_pb2.ApprovePayoutRequest(award_id=large.award_id, supervisor="sup-luis")
            )
            assert approved.payout.state == payout_pb2.PAYOUT_STATE_APPROVED
            assert approved.payout.history[-1].by == "sup-luis"
            update = await terminal.read()
            assert update.open[1].state == payout_pb2.PAYOUT_STATE_APPROVED

            for item in (small, large):
                await outgoing.put(
                    payout_pb2.DealerTerminalRequest(
                        paid=payout_pb2.PaymentConfirmed(award_id=item.award_id)
                    )
                )
            await wait_until(
                lambda: all(
                    book.payouts[a.award_id].state is PayoutState.PAID for a in (small, large)
                )
            )
            assert book.payouts[small.award_id].history[-1].by == "dealer-ana"
            with pytest.raises(grpc.aio.AioRpcError) as paid_twice:
                await stub.VoidPayout(
                    payout_pb2.VoidPayoutRequest(
                        award_id=small.award_id, supervisor="sup-luis", reason="late"
                    )
                )
            assert paid_twice.value.code() == grpc.StatusCode.FAILED_PRECONDITION
            voided = await stub.VoidPayout(
                payout_pb2.VoidPayoutRequest(
                    award_id=other_table.award_id, supervisor="sup-luis", reason="misread hand"
                )
            )
            assert voided.payout.state == payout_pb2.PAYOUT_STATE_VOIDED
            await outgoing.put(None)
            with contextlib.suppress(grpc.aio.AioRpcError):
                await terminal.read()

    # the same awards again (a redelivery) plus a new one, to a fresh instance
    late = award("R2", 3, "FOUR_OF_A_KIND", 500_000)
    await publish(settings, small, large, late)
    async with Running(settings) as running:
        book = running.service.book
        await wait_until(lambda: late.award_id in book.payouts)
        assert book.payouts[small.award_id].state is PayoutState.PAID
        assert book.payouts[other_table.award_id].state is PayoutState.VOIDED
        assert len(book.payouts) == 4
        service = await load(settings)
        lines = render(service, pending_only=True)
        assert any(late.award_id in line and "ORDERED" in line for line in lines)
        assert lines[-1] == "1 unpaid of 4 payouts"

    records = await read_topic(settings.bootstrap_servers, settings.payouts_topic, 20)
    ordered = [
        payout_pb2.Payout.FromString(r.value)
        for r in records
        if len(payout_pb2.Payout.FromString(r.value).history) == 1
    ]
    created = sorted(p.award_id for p in ordered)
    assert created == sorted(a.award_id for a in (small, large, other_table, late))  # once each
    ledger = [
        pot_pb2.LedgerEntry.FromString(r.value)
        for r in await read_topic(settings.bootstrap_servers, settings.ledger_topic, 20)
    ]
    trail = [(e.source_event_id, pot_pb2.LedgerEntryType.Name(e.type)) for e in ledger]
    assert trail.count((large.award_id, "LEDGER_ENTRY_TYPE_PAYOUT_AWAITING_APPROVAL")) == 1
    assert (large.award_id, "LEDGER_ENTRY_TYPE_PAYOUT_APPROVED") in trail
    assert (large.award_id, "LEDGER_ENTRY_TYPE_PAYOUT_PAID") in trail
    assert (other_table.award_id, "LEDGER_ENTRY_TYPE_PAYOUT_VOIDED") in trail
    voided_entry = next(e for e in ledger if e.type == pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_VOIDED)
    assert (voided_entry.changed_by, voided_entry.reason) == ("sup-luis", "misread hand")


async def test_two_confirmations_of_one_payment_pay_it_once(settings: PayoutSettings) -> None:
    prize = award("R9", 1, "FLUSH", 50_000)
    await publish(settings, prize)
    async with Running(settings) as running:
        service = running.service
        await wait_until(lambda: prize.award_id in service.book.payouts)
        outcomes = await asyncio.gather(
            service.paid("T1", prize.award_id, "dealer-1"),
            service.paid("T1", prize.award_id, "dealer-2"),
            return_exceptions=True,
        )
    assert sum(1 for o in outcomes if not isinstance(o, BaseException)) == 1
    assert sum(1 for o in outcomes if isinstance(o, DomainError)) == 1
    ledger = [
        pot_pb2.LedgerEntry.FromString(r.value)
        for r in await read_topic(settings.bootstrap_servers, settings.ledger_topic, 3)
    ]
    paid = [e for e in ledger if e.type == pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_PAID]
    assert len(paid) == 1
