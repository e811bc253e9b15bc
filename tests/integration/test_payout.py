"""The payout service against real Kafka (issue #6): one payout per award, the approval flow,
voids, dealer terminals, restarts without double payouts, and the ledger trail.

And on the one exactly-once processor (issue 13):

- the old window, reproduced: restoring the book *before* fencing (what ``PayoutService.start``
  did) lets a stalled instance commit a PAID behind the restore, so the new book shows a paid
  prize as open; with the processor the new owner fences first, the stalled instance's PAID is
  refused (its partition halts and leaves its book), and the restore that follows is the truth;
- a second instance stands by (one instance owns every partition, issue 19), refuses calls
  naming the owner, and takes over a stopped one's partitions, with their open payouts, in seconds;
- a paused owner (SIGSTOP, a second instance started, SIGCONT) steps aside when it resumes: its
  API reports NOT_SERVING, its terminal's stream ends naming the new owner, and the terminal's
  confirmation then pays once on the new owner;
- ``kill -9`` of the payout process at random points, then a restart: one payout per award,
  one ledger entry per award, nothing ordered twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from aiokafka import AIOKafkaConsumer
from grpc_health.v1 import health_pb2
from loadtest.free_ports import free_port

from jackpot.clients.payout import KEEPALIVE_OPTIONS, PayoutTargets, call_owner, owner_named
from jackpot.domain.access import Role
from jackpot.domain.errors import DomainError
from jackpot.domain.payout import PayoutState
from jackpot.payout.codec import from_proto
from jackpot.payout.grpc_api import SERVICE_NAME, PayoutServicer
from jackpot.payout.service import NotServedHere, PayoutService
from jackpot.payout.settings import PayoutSettings
from jackpot.platform.access_log import AccessLog
from jackpot.platform.authz import AccessSettings, Authorizer
from jackpot.platform.changelog import read_compacted
from jackpot.platform.grpc_server import GrpcServer
from jackpot.platform.kafka import ensure_topics, idempotent_producer, stop_client
from jackpot.platform.processor_errors import NotCommitted, ProcessorError
from jackpot.platform.tls import TlsSettings
from jackpot.tools.payouts import load, render
from jackpot.topics import TopicSpec
from jackpot.v1 import payout_pb2, payout_pb2_grpc, pot_pb2
from tests.integration.gateway_harness import read_topic, wait_health, wait_until
from tests.polling import eventually

pytestmark = pytest.mark.integration


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
    """A payout service with its gRPC API, entered once it owns every partition (or, as a
    ``standby``, once the group told it who does)."""

    def __init__(self, settings: PayoutSettings, standby: bool = False) -> None:
        self.settings = settings
        self.standby = standby
        self.service = PayoutService(settings)
        self.audit = AccessLog(
            settings.bootstrap_servers,
            settings.access.audit_topic,
            f"payout:{settings.grpc_address}",
        )
        servicer = PayoutServicer(self.service, Authorizer(settings.access, self.audit))
        self.server = GrpcServer(settings.grpc_address, [servicer.register], [SERVICE_NAME])
        self.service.advertise(settings.grpc_address)

    async def __aenter__(self) -> Running:
        self.task = asyncio.create_task(self.service.run())
        await self.audit.start()
        await self.server.start()
        service = self.service
        await wait_until(
            lambda: (
                bool(service.owner) and not service.serving
                if self.standby
                else owns_every_partition(service) and service.serving
            ),
            within=20,
        )
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.server.stop(0.5)
        await self.service.stop()
        await self.task
        await self.audit.stop()


def owns_every_partition(service: PayoutService, partitions: int = 2) -> bool:
    return service.processor.owned_partitions == list(range(partitions))


@pytest.fixture
async def settings(kafka_bootstrap: str, unique: str) -> PayoutSettings:
    return await payout_settings(kafka_bootstrap, unique)


async def payout_settings(kafka_bootstrap: str, unique: str) -> PayoutSettings:
    """Unique topics of two partitions (created), plaintext, every caller the supervisor."""
    settings = PayoutSettings(
        bootstrap_servers=kafka_bootstrap,
        grpc_address=f"127.0.0.1:{free_port()}",
        metrics_port=0,
        approval_threshold=1_000_000,
        processor={
            "consumer_group": f"payout-{unique}",
            "transactional_id_prefix": f"payout-{unique}",
        },
        awards_topic=f"test.awards.{unique}",
        payouts_topic=f"test.payouts.{unique}",
        ledger_topic=f"test.ledger.{unique}",
        dead_letter_topic=f"test.dead-letter.{unique}",
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
            TopicSpec(settings.dead_letter_topic, 1),
        ],
    )
    return settings


async def publish(settings: PayoutSettings, *awards: pot_pb2.Award) -> None:
    """Each award as a record of its own (as the pot writes a land round's few)."""
    await publish_records(settings, [(a.pot_group_id, a.SerializeToString()) for a in awards])


async def publish_records(settings: PayoutSettings, records: list[tuple[str, bytes]]) -> None:
    """(pot group, value) records onto the awards topic, keyed by the group."""
    producer = idempotent_producer(settings.bootstrap_servers)
    await producer.start()
    try:
        for group_id, value in records:
            await producer.send_and_wait(settings.awards_topic, value, key=group_id.encode())
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
        lines = render(await load(settings), pending_only=True)
        assert any(late.award_id in line and "ORDERED" in line for line in lines)
        assert lines[-1] == "1 unpaid of 4 payouts"

    # read to the end offsets (both instances stopped: everything is committed), then counted
    records = await read_topic(settings.bootstrap_servers, settings.payouts_topic)
    ordered = [
        payout_pb2.Payout.FromString(r.value)
        for r in records
        if len(payout_pb2.Payout.FromString(r.value).history) == 1
    ]
    created = sorted(p.award_id for p in ordered)
    assert created == sorted(a.award_id for a in (small, large, other_table, late))  # once each
    ledger = [
        pot_pb2.LedgerEntry.FromString(r.value)
        for r in await read_topic(settings.bootstrap_servers, settings.ledger_topic)
    ]
    trail = Counter((e.source_event_id, pot_pb2.LedgerEntryType.Name(e.type)) for e in ledger)
    kind = "LEDGER_ENTRY_TYPE_PAYOUT_"
    assert trail == Counter(  # every entry exactly once: a repeated PAID would be counted 2
        {
            (small.award_id, kind + "ORDERED"): 1,
            (small.award_id, kind + "PAID"): 1,
            (large.award_id, kind + "AWAITING_APPROVAL"): 1,
            (large.award_id, kind + "APPROVED"): 1,
            (large.award_id, kind + "PAID"): 1,
            (other_table.award_id, kind + "ORDERED"): 1,
            (other_table.award_id, kind + "VOIDED"): 1,
            (late.award_id, kind + "ORDERED"): 1,
        }
    )
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
    trail = await ledger_types(settings, 2)  # ORDERED and PAID, read to the end: nothing more
    assert trail.count((prize.award_id, "LEDGER_ENTRY_TYPE_PAYOUT_PAID")) == 1


async def test_a_dealer_call_cancelled_mid_transaction_is_written_whole_and_the_payout_goes_on(
    settings: PayoutSettings,
) -> None:
    """A dealer's "Pagado" whose caller goes away (a terminal that disconnects cancels its gRPC
    handler) between its transaction's begin and its commit. Before, the cancellation cut the
    transaction in half: it stayed open on the partition's producer, the partition's next
    transaction met ``IN_TRANSACTION -> IN_TRANSACTION`` and the payout stopped ("payout cannot
    continue"; the end of `make bench`'s load test, whose simulated dealers stop mid-call). Now
    the change runs to its end without its caller: paid once, and the next award is ordered."""
    first, second = award("R5", 3, "FLUSH", 50_000), award("R6", 4, "FLUSH", 60_000)
    await publish(settings, first)
    async with Running(settings) as running:
        service = running.service
        await wait_until(lambda: first.award_id in service.book.payouts)
        partition = service.book.partition_of[first.award_id]
        producer = service.processor._owned[partition].producer
        began, release = asyncio.Event(), asyncio.Event()
        send = producer.send

        async def held_send(*args: Any, **kwargs: Any) -> Any:  # the record in flight
            began.set()
            await release.wait()
            return await send(*args, **kwargs)

        producer.send = held_send  # type: ignore[method-assign]
        call = asyncio.create_task(service.paid("T1", first.award_id, "dealer-1"))
        await began.wait()
        call.cancel()  # the caller goes away mid-transaction
        with pytest.raises(asyncio.CancelledError):
            await call
        release.set()
        producer.send = send  # type: ignore[method-assign]
        await publish(settings, second)  # the partition's next transaction
        await wait_until(
            lambda: second.award_id in service.book.payouts or running.task.done(), within=20
        )
        assert not running.task.done(), f"the payout stopped: {running.task.exception()!r}"
        assert service.book.payouts[first.award_id].state == PayoutState.PAID
        with pytest.raises(DomainError, match="PAID"):  # paid once: a second press is refused
            await service.paid("T1", first.award_id, "dealer-1")
    trail = await ledger_types(settings, 3)  # two ORDERED, one PAID, read to the end
    assert trail.count((first.award_id, "LEDGER_ENTRY_TYPE_PAYOUT_PAID")) == 1


async def test_a_duplicated_paid_is_seen_by_the_ledger_read_that_expected_one(
    settings: PayoutSettings,
) -> None:
    """Issue 24 item 4, the judge refusing a broken input: a ledger with the award ORDERED and
    PAID twice. A read that stopped at the two records expected returned the first two; this
    one reads to the end offsets, so the caller's exact count refuses it."""
    prize = award("R3", 4, "FLUSH", 30_000)
    kinds = ("ORDERED", "PAID", "PAID")  # the last a duplicate
    producer = idempotent_producer(settings.bootstrap_servers)
    await producer.start()
    try:
        for n, kind in enumerate(kinds):
            entry = pot_pb2.LedgerEntry(
                entry_id=f"{prize.award_id}/{n}",
                source_event_id=prize.award_id,
                type=pot_pb2.LedgerEntryType.Value(f"LEDGER_ENTRY_TYPE_PAYOUT_{kind}"),
            )
            await producer.send_and_wait(
                settings.ledger_topic, entry.SerializeToString(), key=b"g", partition=0
            )
    finally:
        await producer.stop()
    assert len(await read_topic(settings.bootstrap_servers, settings.ledger_topic, 2)) == 3
    with pytest.raises(AssertionError, match="3 entries"):
        await ledger_types(settings, 2)
    trail = await ledger_types(settings)
    assert trail.count((prize.award_id, "LEDGER_ENTRY_TYPE_PAYOUT_PAID")) == 2


# ---------------------------------------------------- fencing, takeover, kill -9 (issue 13)

TAKEOVER_BOUND_SECONDS = 5.0
# Issue 19: a resumed zombie stops serving within a heartbeat or a fenced transaction.
STEP_ASIDE_BOUND_SECONDS = 5.0


async def restored_states(settings: PayoutSettings, partition: int) -> dict[str, PayoutState]:
    """What an instance restoring ``partition`` now reads: award id -> payout state."""
    consumer = AIOKafkaConsumer(
        **settings.kafka_options(), group_id=None, isolation_level="read_committed"
    )
    await consumer.start()
    try:
        latest = await read_compacted(consumer, settings.payouts_topic, [partition], 30)
    finally:
        await stop_client(consumer)
    payouts = [from_proto(payout_pb2.Payout.FromString(v)) for v in latest[partition].values()]
    return {p.award_id: p.state for p in payouts}


async def ledger_entries(
    settings: PayoutSettings, expected: int | None = None
) -> list[pot_pb2.LedgerEntry]:
    """Every ledger entry, read to the end offsets. With ``expected``: once that many were
    written, and exactly that many (one more, a duplicate, fails here)."""
    entries = [
        pot_pb2.LedgerEntry.FromString(r.value)
        for r in await read_topic(settings.bootstrap_servers, settings.ledger_topic, expected)
    ]
    trail = [(e.source_event_id, pot_pb2.LedgerEntryType.Name(e.type)) for e in entries]
    assert expected is None or len(entries) == expected, f"{len(entries)} entries: {trail}"
    return entries


async def ledger_types(
    settings: PayoutSettings, expected: int | None = None
) -> list[tuple[str, str]]:
    """(award id, entry type) of every ledger entry (``ledger_entries``)."""
    entries = await ledger_entries(settings, expected)
    return [(e.source_event_id, pot_pb2.LedgerEntryType.Name(e.type)) for e in entries]


async def test_restoring_before_fencing_lets_a_stalled_instance_pay_behind_the_book(
    settings: PayoutSettings,
) -> None:
    """The order the payout service had: restore, then start the transactional producer."""
    prize = award("R1", 2, "FLUSH", 50_000)
    await publish(settings, prize)
    async with Running(settings) as stalled:
        await wait_until(lambda: prize.award_id in stalled.service.book.payouts)
        partition = stalled.service.book.partition_of[prize.award_id]
        newcomer = PayoutService(settings.replace(processor={"instance_id": "newcomer"}))
        book_read_first = await restored_states(settings, partition)  # restore ...
        await stalled.service.paid("T1", prize.award_id, "dealer-ana")  # ... the zombie commits
        producer = await newcomer.processor.fencing_producer(partition)  # ... fenced too late
        await stop_client(producer)
    assert book_read_first[prize.award_id] is PayoutState.ORDERED  # the newcomer shows it open
    assert (await restored_states(settings, partition))[prize.award_id] is PayoutState.PAID


async def test_the_processor_fences_before_it_restores_so_a_stalled_instance_cannot_pay(
    settings: PayoutSettings,
) -> None:
    prize = award("R1", 2, "FLUSH", 50_000)
    await publish(settings, prize)
    async with Running(settings) as stalled:
        book = stalled.service.book
        await wait_until(lambda: prize.award_id in book.payouts)
        partition = book.partition_of[prize.award_id]
        newcomer = PayoutService(settings.replace(processor={"instance_id": "newcomer"}))
        producer = await newcomer.processor.fencing_producer(partition)  # fence first ...
        try:
            with pytest.raises(NotCommitted):
                await stalled.service.paid("T1", prize.award_id, "dealer-ana")
            # Fenced: it halted the partition and asked the group to decide again, which gives
            # the partition back only to its owner, fenced and restored anew (the halt itself:
            # tests/unit/test_exactly_once.py). Its book never shows the prize paid.
            payout = book.payouts.get(prize.award_id)
            assert payout is None or payout.state is PayoutState.ORDERED
            # ... then restore: what the newcomer reads is what happened.
            states = await restored_states(settings, partition)
            assert states[prize.award_id] is PayoutState.ORDERED
        finally:
            await stop_client(producer)
    async with Running(settings) as successor:
        await wait_until(lambda: prize.award_id in successor.service.book.payouts)
        paid = await successor.service.paid("T1", prize.award_id, "dealer-ana")
        assert paid.state is PayoutState.PAID
    trail = await ledger_types(settings, 2)
    assert trail.count((prize.award_id, "LEDGER_ENTRY_TYPE_PAYOUT_PAID")) == 1


async def test_a_second_instance_stands_by_names_the_owner_and_takes_over_at_its_stop(
    settings: PayoutSettings,
) -> None:
    prizes = [award(f"R{i}", 1, "FLUSH", 50_000, table=f"T{i}") for i in range(6)]
    for i, prize in enumerate(prizes):  # spread over both partitions: one pot group each
        prize.pot_group_id = f"g{i}"
    await publish(settings, *prizes)
    first = Running(settings)
    second_address = f"127.0.0.1:{free_port()}"
    second = Running(
        settings.replace(processor={"instance_id": "second"}, grpc_address=second_address),
        standby=True,
    )
    await first.__aenter__()
    first_running = True
    try:
        await wait_until(lambda: len(first.service.book.payouts) == len(prizes), within=20)
        async with second:
            # One owner (rule D3: a terminal finds all of its table's prizes on one instance);
            # the second's join made the group rebalance: the first takes everything back.
            await wait_until(
                lambda: owns_every_partition(first.service) and first.service.serving, within=20
            )
            assert second.service.processor.owned_partitions == []
            assert second.service.book.payouts == {}
            assert second.service.owner == settings.grpc_address
            with pytest.raises(NotServedHere) as refused:
                await second.service.paid(prizes[0].table_id, prizes[0].award_id, "dealer")
            assert refused.value.owner == settings.grpc_address
            # Over gRPC the standby refuses UNAVAILABLE naming the owner; a client follows it.
            async with grpc.aio.insecure_channel(second_address) as channel:
                stub = payout_pb2_grpc.PayoutServiceStub(channel)  # type: ignore[no-untyped-call]
                with pytest.raises(grpc.aio.AioRpcError) as standby_answer:
                    await stub.ListPayouts(payout_pb2.ListPayoutsRequest())
            assert standby_answer.value.code() == grpc.StatusCode.UNAVAILABLE
            assert owner_named(standby_answer.value) == settings.grpc_address
            targets = PayoutTargets(second_address)
            listing = await list_on_owner(targets)
            assert targets.current == settings.grpc_address
            assert {p.award_id for p in listing.payouts} == {p.award_id for p in prizes}
            stopped = time.monotonic()
            first_running = False
            await first.__aexit__()
            await wait_until(
                lambda: owns_every_partition(second.service) and second.service.serving, within=20
            )
            took = time.monotonic() - stopped
            assert set(second.service.book.payouts) == {p.award_id for p in prizes}
            for prize in prizes:
                paid = await second.service.paid(prize.table_id, prize.award_id, "dealer")
                assert paid.state is PayoutState.PAID
    finally:
        if first_running:
            await first.__aexit__()
    print(f"payout takeover after a graceful stop: {took:.2f} s (bound {TAKEOVER_BOUND_SECONDS} s)")
    assert took <= TAKEOVER_BOUND_SECONDS


async def test_a_paused_owner_steps_aside_when_it_resumes_and_its_terminal_pays_on_the_new_one(
    settings: PayoutSettings, tmp_path: Path
) -> None:
    """Issue 19's experiment: SIGSTOP the owner, start a second instance, SIGCONT the first."""
    prize = award("R1", 2, "FLUSH", 40_000, table="T7")
    await publish(settings, prize)
    first_address = settings.grpc_address
    second_address = f"127.0.0.1:{free_port()}"
    command = [sys.executable, "-m", "jackpot.cli", "payout"]
    log_path = tmp_path / "payout.log"
    serving = health_pb2.HealthCheckResponse.SERVING
    with log_path.open("ab") as log:
        first = await asyncio.create_subprocess_exec(
            *command, env=payout_environment(settings), stdout=log, stderr=log
        )
        second: asyncio.subprocess.Process | None = None
        try:
            await wait_health(first_address, serving, SERVICE_NAME, 30, lambda: tail(log_path))
            terminal = TerminalSession(first_address, prize.table_id)
            await terminal.start()
            await wait_until(lambda: prize.award_id in terminal.open_ids(), within=10)
            first.send_signal(signal.SIGSTOP)
            second = await asyncio.create_subprocess_exec(
                *command,
                env=payout_environment(settings.replace(grpc_address=second_address)),
                stdout=log,
                stderr=log,
            )
            # The frozen owner is evicted after its session timeout; the second takes over.
            await wait_health(second_address, serving, SERVICE_NAME, 30, lambda: tail(log_path))
            first.send_signal(signal.SIGCONT)
            resumed = time.monotonic()
            not_serving = health_pb2.HealthCheckResponse.NOT_SERVING
            await wait_health(first_address, not_serving, SERVICE_NAME, 10, lambda: tail(log_path))
            stepped_aside = time.monotonic() - resumed
            # Its terminal's stream ended UNAVAILABLE (its keepalive gave up on the frozen
            # process, or the resumed one ended it), never a healthy-looking silence.
            ended = await asyncio.wait_for(terminal.ended, 10)
            assert ended.code() == grpc.StatusCode.UNAVAILABLE
            # A terminal that comes back to the resumed instance is sent to the new owner.
            # (once it rejoined the group and heard who owns: until then it names no one)
            sent_away = await sent_to_owner(first_address, prize.table_id, within=10)
            assert owner_named(sent_away) == second_address
            # There its confirmation pays the prize, once.
            targets = PayoutTargets(f"{first_address},{second_address}")
            assert targets.moved(sent_away)
            assert targets.current == second_address
            again = await shown_on_owner(targets, prize.table_id, prize.award_id, within=20)
            await again.confirm(prize.award_id)
            await wait_until(lambda: prize.award_id not in again.open_ids(), within=10)
            await again.stop()
            listing = await list_on_owner(targets)
            [payout] = [p for p in listing.payouts if p.award_id == prize.award_id]
            paid = [t for t in payout.history if t.state == payout_pb2.PAYOUT_STATE_PAID]
            assert len(paid) == 1
            assert first.returncode is None  # it stood aside, alive, ready to take over again
        finally:
            for process in (first, second):
                if process is not None and process.returncode is None:
                    process.send_signal(signal.SIGCONT)
                    process.send_signal(signal.SIGTERM)
                    await asyncio.wait_for(process.wait(), 30)
    print(f"paused payout owner stepped aside {stepped_aside:.2f} s after it resumed")
    assert stepped_aside <= STEP_ASIDE_BOUND_SECONDS


async def test_two_terminals_on_two_instances_confirm_one_prize_in_a_handover_it_pays_once(
    settings: PayoutSettings, tmp_path: Path
) -> None:
    """Issue 24 item 5: one prize confirmed at once through two dealer terminals, each on its
    own payout instance, while the payouts move from one to the other. The old owner is frozen
    (SIGSTOP) with a terminal session still open on it (no keepalive: the session outlasts the
    freeze), a second instance takes over and its terminal is shown the prize; the frozen
    one's terminal confirms (into its socket), it is resumed (SIGCONT) and the new owner's
    terminal confirms the same prize at that moment. The zombie's confirmation is refused or
    sent away (the new owner fenced its transactional ids before restoring); the ledger, read
    to its end, holds exactly one PAID, by the new owner's dealer."""
    prize = award("R1", 3, "FLUSH", 45_000, table="T8")
    await publish(settings, prize)
    first_address, second_address = settings.grpc_address, f"127.0.0.1:{free_port()}"
    log_path = tmp_path / "payout.log"
    serving = health_pb2.HealthCheckResponse.SERVING
    with log_path.open("ab") as log:
        processes = [await spawn_payout(settings, log)]
        try:
            await wait_health(first_address, serving, SERVICE_NAME, 30, lambda: tail(log_path))
            zombie = TerminalSession(first_address, prize.table_id, "dealer-old", keepalive=False)
            await zombie.start()
            await wait_until(lambda: prize.award_id in zombie.open_ids(), within=10)
            processes[0].send_signal(signal.SIGSTOP)
            processes.append(await spawn_payout(settings.replace(grpc_address=second_address), log))
            await wait_health(second_address, serving, SERVICE_NAME, 30, lambda: tail(log_path))
            targets = PayoutTargets(second_address)
            newcomer = await shown_on_owner(
                targets, prize.table_id, prize.award_id, 20, "dealer-new"
            )
            asked = len(zombie.shown)
            await zombie.confirm(prize.award_id)  # waits in the frozen owner's socket
            processes[0].send_signal(signal.SIGCONT)
            newcomer = await paid_on_owner(newcomer, targets, prize.award_id, "dealer-new", 30)
            await eventually(
                lambda: zombie.ended.done() or any(r.refused for r in zombie.shown[asked:]),
                "the resumed old owner neither refused its terminal's confirmation nor ended it",
                15,
            )
            refusals = [r.refused for r in zombie.shown[asked:] if r.refused]
            print("the resumed old owner answered:", refusals or zombie.ended.result().code())
            for session in (zombie, newcomer):
                await session.stop()
        finally:
            await stop_payouts(processes)
    entries = await ledger_entries(settings, 2)  # ORDERED and one PAID, to the end: no more
    paid = [e for e in entries if e.type == pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_PAID]
    assert [(e.source_event_id, e.changed_by) for e in paid] == [(prize.award_id, "dealer-new")]


async def spawn_payout(settings: PayoutSettings, log: Any) -> asyncio.subprocess.Process:
    """`jackpot payout` as a process with these settings, its output to ``log``."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "jackpot.cli", "payout"),
        env=payout_environment(settings),
        stdout=log,
        stderr=log,
    )


async def stop_payouts(processes: list[asyncio.subprocess.Process]) -> None:
    """Resume (if paused) and stop each process still running."""
    for process in processes:
        if process.returncode is None:
            process.send_signal(signal.SIGCONT)
            process.send_signal(signal.SIGTERM)
            await asyncio.wait_for(process.wait(), 30)


async def paid_on_owner(
    session: TerminalSession, targets: PayoutTargets, award_id: str, dealer: str, within: float
) -> TerminalSession:
    """Confirm ``award_id`` on ``session`` until the owner answers it paid (it leaves the open
    list, nothing refused); a confirmation refused or a session ended by a rebalance (the
    resumed instance rejoining) is sent again on a new session at the owner, as a dealer
    would. The session it was paid on."""
    deadline = time.monotonic() + within
    while True:
        asked = len(session.shown)
        await session.confirm(award_id)

        def answered(s: TerminalSession = session, n: int = asked) -> bool:
            later = s.shown[n:]
            refused = any(r.refused for r in later)
            return s.ended.done() or refused or bool(later and award_id not in s.open_ids())

        await eventually(answered, f"no answer to the confirmation of {award_id}", 15)
        if not session.ended.done() and not any(r.refused for r in session.shown[asked:]):
            return session
        await session.stop()
        if session.ended.done():
            targets.moved(session.ended.result())
        remaining = max(0.0, deadline - time.monotonic())
        session = await screen_on_owner(targets, session.table_id, remaining, dealer)
        if award_id not in session.open_ids():
            return session  # the confirmation was paid before its session ended: not open now


async def screen_on_owner(
    targets: PayoutTargets, table_id: str, within: float, dealer: str = "d1"
) -> TerminalSession:
    """A terminal session at the owner that received its first screen (the table's open
    prizes), reconnecting as a dealer terminal does while a rebalance ends sessions."""
    deadline = time.monotonic() + within
    while True:
        session = TerminalSession(targets.current, table_id, dealer)
        await session.start()
        await eventually(
            lambda s=session: bool(s.shown) or s.ended.done(),
            f"no screen from {targets.current}",
            max(0.0, deadline - time.monotonic()),
        )
        if not session.ended.done():
            return session
        targets.moved(session.ended.result())
        await session.stop()


async def sent_to_owner(address: str, table_id: str, within: float) -> grpc.aio.AioRpcError:
    """Open terminal sessions at ``address`` until one is refused naming an owner; each refusal
    is UNAVAILABLE and shows the terminal nothing."""
    deadline = time.monotonic() + within
    while True:
        session = TerminalSession(address, table_id)
        await session.start()
        refused = await asyncio.wait_for(session.ended, within)
        assert refused.code() == grpc.StatusCode.UNAVAILABLE, refused.details()
        assert session.shown == []  # shown nothing it cannot pay
        if owner_named(refused) or time.monotonic() > deadline:
            return refused
        await asyncio.sleep(0.2)


async def shown_on_owner(
    targets: PayoutTargets, table_id: str, award_id: str, within: float, dealer: str = "d1"
) -> TerminalSession:
    """A terminal session that shows ``award_id``, reconnecting as a dealer terminal does (the
    resumed instance's rejoin makes the group rebalance: a session opened meanwhile ends)."""
    deadline = time.monotonic() + within
    while True:
        session = TerminalSession(targets.current, table_id, dealer)
        await session.start()
        await eventually(
            lambda s=session: award_id in s.open_ids() or s.ended.done(),
            f"{award_id} never shown on {targets.current}",
            max(0.0, deadline - time.monotonic()),
        )
        if not session.ended.done():
            return session
        targets.moved(session.ended.result())
        await session.stop()


def tail(log_path: Path) -> str:
    return log_path.read_text()[-4000:]


async def list_on_owner(targets: PayoutTargets) -> payout_pb2.ListPayoutsResponse:
    return await call_owner(
        targets, TlsSettings(), lambda stub: stub.ListPayouts(payout_pb2.ListPayoutsRequest())
    )


class TerminalSession:
    """A dealer terminal's DealerTerminal stream: what it was last shown, and how it ended."""

    def __init__(
        self, address: str, table_id: str, dealer: str = "d1", keepalive: bool = True
    ) -> None:
        self.address = address
        self.table_id = table_id
        self.dealer = dealer
        # without keepalive pings the session outlasts a frozen instance (a zombie's terminal)
        self.options = KEEPALIVE_OPTIONS if keepalive else []
        self.shown: list[payout_pb2.DealerTerminalResponse] = []
        self.outgoing: asyncio.Queue[payout_pb2.DealerTerminalRequest] = asyncio.Queue()
        self.ended: asyncio.Future[grpc.aio.AioRpcError] = (
            asyncio.get_running_loop().create_future()
        )
        self._task: asyncio.Task[None] | None = None

    def open_ids(self) -> set[str]:
        return {p.award_id for p in self.shown[-1].open} if self.shown else set()

    async def start(self) -> None:
        await self.outgoing.put(
            payout_pb2.DealerTerminalRequest(
                hello=payout_pb2.TerminalHello(table_id=self.table_id, dealer=self.dealer)
            )
        )
        self._task = asyncio.create_task(self._run())

    async def confirm(self, award_id: str) -> None:
        await self.outgoing.put(
            payout_pb2.DealerTerminalRequest(paid=payout_pb2.PaymentConfirmed(award_id=award_id))
        )

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        """The stream's call object and a writer task (not a request generator, which grpc
        cannot close while it waits on its queue)."""
        async with grpc.aio.insecure_channel(self.address, options=self.options) as channel:
            stub = payout_pb2_grpc.PayoutServiceStub(channel)  # type: ignore[no-untyped-call]
            call = stub.DealerTerminal()
            writing = asyncio.create_task(self._write(call))
            try:
                while (message := await call.read()) is not grpc.aio.EOF:
                    self.shown.append(message)
            except grpc.aio.AioRpcError as error:
                self.ended.set_result(error)
            finally:
                writing.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await writing

    async def _write(self, call: Any) -> None:
        while True:
            await call.write(await self.outgoing.get())


def payout_environment(settings: PayoutSettings) -> dict[str, str]:
    return {
        **os.environ,
        "KAFKA_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
        "JACKPOT_PAYOUT_GRPC": settings.grpc_address,
        "JACKPOT_PAYOUT_METRICS_PORT": "0",
        "JACKPOT_PAYOUT_CONSUMER_GROUP": settings.processor.consumer_group,
        "JACKPOT_PAYOUT_TRANSACTIONAL_ID_PREFIX": settings.processor.transactional_id_prefix,
        "JACKPOT_PAYOUT_AWARDS_TOPIC": settings.awards_topic,
        "JACKPOT_PAYOUT_PAYOUTS_TOPIC": settings.payouts_topic,
        "JACKPOT_PAYOUT_LEDGER_TOPIC": settings.ledger_topic,
        "JACKPOT_PAYOUT_MAX_BATCH_RECORDS": "8",
        "JACKPOT_AUDIT_TOPIC": settings.access.audit_topic,
        "JACKPOT_INSECURE_ROLES": "supervisor",
    }


async def payouts_created(settings: PayoutSettings) -> set[str]:
    """Award ids with a committed payout; empty while a killed instance's transaction is open
    (the last stable offset waits for the next owner to fence it)."""
    consumer = AIOKafkaConsumer(
        **settings.kafka_options(), group_id=None, isolation_level="read_committed"
    )
    await consumer.start()
    try:
        latest = await read_compacted(consumer, settings.payouts_topic, [0, 1], 5)
    except ProcessorError:
        return set()
    finally:
        await stop_client(consumer)
    return {key.decode() for records in latest.values() for key in records}


async def test_kill_9_of_the_payout_process_at_random_points_orders_each_award_once(
    settings: PayoutSettings, unique: str, tmp_path: Path
) -> None:
    prizes = [award(f"R{i}", i % 7, "FLUSH", 10_000 + i) for i in range(240)]
    for i, prize in enumerate(prizes):
        prize.pot_group_id = f"g{i % 4}"
    env = payout_environment(settings)
    rng = random.Random(unique)
    command = [sys.executable, "-m", "jackpot.cli", "payout"]
    log_path = tmp_path / "payout.log"  # what the processes said, kept for a failure
    with log_path.open("ab") as log:
        for chunk in range(4):  # each chunk of awards arrives while an instance is killed
            process = await asyncio.create_subprocess_exec(
                *command, env=env, stdout=log, stderr=log
            )
            await publish(settings, *prizes[chunk * 60 : (chunk + 1) * 60])
            await asyncio.sleep(rng.uniform(0.5, 3.0))  # the moment of the fault, not a wait
            assert process.returncode is None, log_path.read_text()[-3000:]
            process.send_signal(signal.SIGKILL)
            await process.wait()
        process = await asyncio.create_subprocess_exec(*command, env=env, stdout=log, stderr=log)
        try:

            async def every_award_ordered() -> bool:
                assert process.returncode is None, log_path.read_text()[-3000:]
                return len(await payouts_created(settings)) >= len(prizes)

            await eventually(every_award_ordered, "not every award ordered", 90, step=0.2)
        finally:
            process.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(process.wait(), 30) == 0
    # the last instance stopped: read to the end offsets, then count (a duplicate would show)
    records = await read_topic(settings.bootstrap_servers, settings.payouts_topic)
    ordered = [payout_pb2.Payout.FromString(r.value).award_id for r in records]
    assert sorted(ordered) == sorted(p.award_id for p in prizes)  # each award once, none twice
    trail = await ledger_types(settings, len(prizes))
    assert sorted(a for a, _ in trail) == sorted(p.award_id for p in prizes)
