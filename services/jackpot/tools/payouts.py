"""`jackpot payouts`: what is unpaid and for how long (from the open-payouts topic: what is open,
and what was settled within the payout service's keep time, never the whole history, which the
payouts topic and the ledger keep for `jackpot report` and `jackpot audit`), and a supervisor's
approvals and voids (through the payout service's gRPC API, with the caller's certificate).

    jackpot payouts [--pending]
    jackpot payouts --approve AWARD_ID --reason "cards checked on camera"
    jackpot payouts --void AWARD_ID --reason "dealer error, round voided"
    jackpot payouts --code AWARD_ID     # a one-time code to approve or void at the table

``--approve``/``--void`` call ``JACKPOT_PAYOUT_GRPC`` (default 127.0.0.1:50053; several
comma-separated addresses are tried in turn, and a standby's refusal names the owner to go to)
with the client certificate of ``JACKPOT_TLS_CERT``/``_KEY``/``_CA`` (a ``supervisor``
certificate from ``jackpot pki``); without TLS only a payout service started with
``JACKPOT_INSECURE_ROLES=supervisor`` accepts them.
"""

from __future__ import annotations

import asyncio
import getpass
import time

import grpc

from jackpot.clients.payout import PayoutTargets, call_owner
from jackpot.domain.payout import OPEN
from jackpot.payout.codec import from_proto
from jackpot.payout.payout_book import PayoutBook
from jackpot.payout.settings import PayoutSettings
from jackpot.platform import settings as platform_settings
from jackpot.platform.changelog import read_compacted
from jackpot.platform.kafka import KafkaConnection, stop_client, topic_partitions
from jackpot.topics import OPEN_PAYOUTS_MARK_KEY, is_bookkeeping_key
from jackpot.v1 import payout_pb2, payout_pb2_grpc

LOAD_SECONDS = 60.0


async def load(settings: PayoutSettings) -> PayoutBook:
    """The open payouts (and those settled within the keep time) at their latest state, from
    the open-payouts topic; from the whole payouts topic only while the open one is incomplete
    (a partition without its mark: the payout service has not started on it yet)."""
    payouts, open_payouts = settings.payouts_topic, settings.open_payouts_topic
    counts = await topic_partitions(settings.kafka_options(), [payouts, open_payouts])
    if payouts not in counts:
        raise SystemExit(f"the payouts topic {payouts} does not exist")
    latest = await _latest(settings, open_payouts, counts.get(open_payouts, 0))
    if not latest or not all(OPEN_PAYOUTS_MARK_KEY in records for records in latest.values()):
        latest = await _latest(settings, payouts, counts[payouts])
    book = PayoutBook()
    for partition, records in latest.items():
        book.put_many(
            partition,
            (
                from_proto(payout_pb2.Payout.FromString(value))
                for key, value in records.items()
                if key != OPEN_PAYOUTS_MARK_KEY and not is_bookkeeping_key(key)
            ),
        )
    return book


async def _latest(
    settings: PayoutSettings, topic: str, partitions: int
) -> dict[int, dict[bytes, bytes]]:
    if not partitions:
        return {}
    consumer = KafkaConnection.of(settings).consumer()
    await consumer.start()
    try:
        return await read_compacted(consumer, topic, list(range(partitions)), LOAD_SECONDS)
    finally:
        await stop_client(consumer)


def render(book: PayoutBook, pending_only: bool, now_ns: int | None = None) -> list[str]:
    now_ns = time.time_ns() if now_ns is None else now_ns
    lines = [
        f"{'award':54} {'table':12} {'seat':>4} {'prize':16} {'amount':>12} {'state':18} {'age':>8}"
    ]
    for payout in book.listing(pending_only):
        age = (now_ns - payout.ordered_at_ns) / 1e9 if payout.state in OPEN else 0
        lines.append(
            f"{payout.award_id:54} {payout.table_id:12} {payout.seat:>4} {payout.prize:16} "
            f"{payout.amount:>12,} {payout.state.value:18} {age:>7.0f}s"
        )
    open_count = sum(1 for p in book.payouts.values() if p.state in OPEN)
    lines.append(f"{open_count} unpaid of {len(book.payouts)} payouts")
    return lines


async def decide(settings: PayoutSettings, action: str, award_id: str, reason: str) -> str:
    """Approve or void one payout on the instance that owns it; its new state, or the refusal."""
    targets = PayoutTargets(settings.grpc_address.replace("0.0.0.0", "127.0.0.1"))
    supervisor = getpass.getuser()

    async def ask(stub: payout_pb2_grpc.PayoutServiceStub) -> payout_pb2.Payout:
        if action == "approve":
            approved = await stub.ApprovePayout(
                payout_pb2.ApprovePayoutRequest(
                    award_id=award_id, reason=reason, supervisor=supervisor
                ),
                timeout=15,
            )
            return approved.payout  # type: ignore[no-any-return]
        voided = await stub.VoidPayout(
            payout_pb2.VoidPayoutRequest(award_id=award_id, reason=reason, supervisor=supervisor),
            timeout=15,
        )
        return voided.payout  # type: ignore[no-any-return]

    try:
        payout = await call_owner(targets, settings.access.tls, ask)
    except grpc.aio.AioRpcError as error:
        raise SystemExit(f"refused ({error.code().name}): {error.details()}") from None
    return f"{award_id}: {payout_pb2.PayoutState.Name(payout.state)}"


async def issue_code(settings: PayoutSettings, award_id: str) -> str:
    """A one-time code for ``award_id`` acting as the caller (their supervisor certificate),
    to enter at the table's terminal."""
    targets = PayoutTargets(settings.grpc_address.replace("0.0.0.0", "127.0.0.1"))

    async def ask(stub: payout_pb2_grpc.PayoutServiceStub) -> payout_pb2.IssueApprovalCodeResponse:
        request = payout_pb2.IssueApprovalCodeRequest(award_id=award_id)
        return await stub.IssueApprovalCode(request, timeout=15)  # type: ignore[no-any-return]

    try:
        issued = await call_owner(targets, settings.access.tls, ask)
    except grpc.aio.AioRpcError as error:
        raise SystemExit(f"refused ({error.code().name}): {error.details()}") from None
    seconds = max(0, (issued.expires_at.ToNanoseconds() - time.time_ns()) // 1_000_000_000)
    return (
        f"one-time code for {award_id}: {issued.code} (as {issued.supervisor}, single use, "
        f"valid {seconds} s): enter it at the table's terminal with Aprobar, or Anular and a reason"
    )


def run(
    pending_only: bool, approve: str = "", void: str = "", reason: str = "", code: str = ""
) -> int:
    settings = platform_settings.load(PayoutSettings)
    if code:
        print(asyncio.run(issue_code(settings, code)))
        return 0
    if approve or void:
        if not reason:
            raise SystemExit("--reason is required to approve or void a payout")
        action, award_id = ("approve", approve) if approve else ("void", void)
        print(asyncio.run(decide(settings, action, award_id, reason)))
        return 0
    book = asyncio.run(load(settings))
    print("\n".join(render(book, pending_only)))
    return 0
