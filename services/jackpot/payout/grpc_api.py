"""``jackpot.v1.PayoutService``: dealer terminals (D3) and supervisors' approvals and voids.

Only the instance that owns the payouts serves them. Anywhere else every call is refused with
UNAVAILABLE and the owner's address in the trailing metadata ``jackpot-payout-owner``
(:mod:`jackpot.clients.payout` follows it), and a terminal's stream ends the same way the moment
its instance stops owning: a terminal never waits on an instance that cannot pay.
"""

from __future__ import annotations

import asyncio
import hmac
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import grpc

from jackpot.domain.access import Action, Principal, Role
from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.payout import OPEN, Payout
from jackpot.payout.codec import page_after, page_token, to_proto, wallet_round_to_proto
from jackpot.payout.codes import ApprovalCodes
from jackpot.payout.service import NotServedHere, PayoutService
from jackpot.platform.authz import Authorizer
from jackpot.platform.codec import timestamp_ns
from jackpot.platform.grpc_edge import Call, Unavailable, answer_for, answered
from jackpot.v1 import payout_pb2, payout_pb2_grpc

SERVICE_NAME = "jackpot.v1.PayoutService"
PAGE_SIZE = 1_000  # ListPayouts' page when the caller names none
MAX_PAGE_SIZE = 5_000  # about 1.5 MB of payouts: well inside one gRPC message


@dataclass
class _Session:
    """One dealer terminal's session: a change to show, refusals to show, where it moved."""

    changed: asyncio.Event = field(default_factory=asyncio.Event)
    refused: list[str] = field(default_factory=list)
    moved: list[Unavailable] = field(default_factory=list)


class PayoutServicer(payout_pb2_grpc.PayoutServiceServicer):
    """Supervisors approve and void, a table's terminal confirms its payments: each attempt is
    decided by :mod:`jackpot.domain.access` and written to the access log with its outcome."""

    service_name = SERVICE_NAME

    def __init__(self, service: PayoutService, authorizer: Authorizer) -> None:
        self._service = service
        self.authorizer = authorizer
        self._ending = asyncio.Event()
        self._codes = ApprovalCodes(service.settings.approval_code_seconds * 1_000_000_000)

    async def end_streams(self) -> None:
        """End every DealerTerminal stream with UNAVAILABLE (before a graceful stop: the
        terminals reconnect to another instance, and none holds the stop up for its grace)."""
        self._ending.set()

    def register(self, server: grpc.aio.Server) -> None:
        payout_pb2_grpc.add_PayoutServiceServicer_to_server(self, server)  # type: ignore[no-untyped-call]

    @answered
    async def ListPayouts(
        self, request: payout_pb2.ListPayoutsRequest, call: Call
    ) -> payout_pb2.ListPayoutsResponse:
        await call.read("ListPayouts")
        self._service.require_serving()
        size = min(request.page_size or PAGE_SIZE, MAX_PAGE_SIZE)
        after = page_after(request.page_token)
        listing = self._service.book.listing(
            request.pending_only, after, size + 1, request.awaiting_approval_only
        )
        page, more = listing[:size], len(listing) > size
        return payout_pb2.ListPayoutsResponse(
            payouts=[to_proto(p) for p in page],
            next_page_token=page_token(page[-1]) if more else "",
        )

    @answered
    async def ApprovePayout(
        self, request: payout_pb2.ApprovePayoutRequest, call: Call
    ) -> payout_pb2.ApprovePayoutResponse:
        payout = await self._decided(call, Action.APPROVE_PAYOUT, request, self._service.approve)
        return payout_pb2.ApprovePayoutResponse(payout=to_proto(payout))

    @answered
    async def VoidPayout(
        self, request: payout_pb2.VoidPayoutRequest, call: Call
    ) -> payout_pb2.VoidPayoutResponse:
        payout = await self._decided(call, Action.VOID_PAYOUT, request, self._service.void)
        return payout_pb2.VoidPayoutResponse(payout=to_proto(payout))

    async def _decided(
        self,
        call: Call,
        action: Action,
        request: payout_pb2.ApprovePayoutRequest | payout_pb2.VoidPayoutRequest,
        decide: Callable[[str, str, str], Awaitable[Payout]],
    ) -> Payout:
        """A supervisor's approval or void (``decide``), as the supervisor the caller is."""
        who = await call.require(
            action, target=request.award_id, detail=f"reason: {request.reason or '-'}"
        )
        payout = await decide(
            request.award_id, self._named(who, request.supervisor), request.reason
        )
        call.applied(f"{payout.amount} pesos")
        return payout

    @answered
    async def IssueApprovalCode(
        self, request: payout_pb2.IssueApprovalCodeRequest, call: Call
    ) -> payout_pb2.IssueApprovalCodeResponse:
        """A one-time code for one open payout, acting as the calling supervisor."""
        award_id = request.award_id
        who = await call.require(
            Action.ISSUE_APPROVAL_CODE, target=award_id, detail="one-time code asked"
        )
        self._service.require_serving()
        payout = self._service.book.payouts.get(award_id)
        if payout is None or payout.state not in OPEN:
            raise DomainError(Reason.INVALID_STATE, f"no open payout for award {award_id!r}")
        supervisor = self._named(who, "")
        if not supervisor:
            raise DomainError(
                Reason.NOT_AUTHENTICATED, "a code acts as a named supervisor: this caller has none"
            )
        code, expires_ns = self._codes.issue(award_id, supervisor, time.time_ns())
        seconds = self._service.settings.approval_code_seconds
        call.applied(f"code issued to {supervisor}, valid {seconds} s")
        return payout_pb2.IssueApprovalCodeResponse(
            award_id=award_id,
            code=code,
            supervisor=supervisor,
            expires_at=timestamp_ns(expires_ns),
        )

    @staticmethod
    def _named(principal: Principal, claimed: str) -> str:
        """The certificate's name when there is one; a plaintext caller's claim otherwise."""
        if principal.authenticated_by == "x509":
            return principal.name
        return claimed or principal.name

    @answered
    async def DealerTerminal(
        self, request_iterator: AsyncIterator[payout_pb2.DealerTerminalRequest], call: Call
    ) -> AsyncIterator[payout_pb2.DealerTerminalResponse]:
        requests = aiter(request_iterator)
        first = await anext(requests, None)
        if first is None or first.WhichOneof("message") != "hello":
            raise DomainError(Reason.NOT_AUTHENTICATED, "the first message must be a hello")
        hello = first.hello
        terminal = Principal(
            f"terminal:{hello.table_id}", frozenset({Role.TERMINAL}), hello.table_id, "credential"
        )
        if self.authorizer.settings.tls.enabled:
            terminal = await call.admit(
                Action.CONFIRM_PAYMENT,
                target=hello.table_id,
                table_id=hello.table_id,
                detail=f"dealer terminal connected, dealer {hello.dealer or '-'}",
            )
        credentials = self._service.settings.terminal_credentials
        if credentials is not None:
            expected = credentials.get(hello.table_id)
            if expected is None or not hmac.compare_digest(
                expected.encode(), hello.credential.encode()
            ):
                raise DomainError(
                    Reason.NOT_AUTHENTICATED, f"not a terminal of table {hello.table_id}"
                )
        self._service.require_serving()
        async for response in self._terminal_session(hello, terminal, requests):
            yield response

    async def _terminal_session(
        self,
        hello: payout_pb2.TerminalHello,
        terminal: Principal,
        requests: AsyncIterator[payout_pb2.DealerTerminalRequest],
    ) -> AsyncIterator[payout_pb2.DealerTerminalResponse]:
        """The table's open payouts after every change, its confirmations applied, until the
        terminal hangs up, this instance stops, or it no longer serves the payouts (then the
        stream ends UNAVAILABLE, naming the owner when it is known)."""
        session = _Session()

        def listener(table_id: str) -> None:
            if table_id == hello.table_id:
                session.changed.set()

        self._service.book.subscribe(listener)
        self._service.book.attend(hello.table_id)
        reader = asyncio.create_task(self._confirmations(hello, terminal, requests, session))
        ending = asyncio.create_task(self._ending.wait())
        try:
            while True:
                if not self._service.serving:
                    session.moved.append(NotServedHere(self._service.owner))
                if session.moved:
                    raise session.moved[-1]
                book = self._service.book
                open_payouts = book.open_for(hello.table_id)
                yield payout_pb2.DealerTerminalResponse(
                    open=[to_proto(p) for p in open_payouts],
                    wallet_rounds=[
                        wallet_round_to_proto(r) for r in book.wallet_rounds_of(hello.table_id)
                    ],
                    refused=session.refused.pop() if session.refused else "",
                )
                if not await self._next_change(session, reader, ending):
                    return
        finally:
            self._service.book.unsubscribe(listener)
            self._service.book.leave(hello.table_id)
            reader.cancel()
            ending.cancel()

    async def _confirmations(
        self,
        hello: payout_pb2.TerminalHello,
        terminal: Principal,
        requests: AsyncIterator[payout_pb2.DealerTerminalRequest],
        session: _Session,
    ) -> None:
        """The terminal's confirmations, applied one at a time; a refusal is answered in the
        stream (the next screen), not by its end."""
        async for message in requests:
            kind = message.WhichOneof("message")
            if kind not in ("paid", "decision"):
                continue
            try:
                if kind == "paid":
                    await self._confirm(hello, terminal, message.paid.award_id)
                else:
                    await self._decide(hello, terminal, message.decision)
            except Unavailable as elsewhere:
                session.moved.append(elsewhere)
            except Exception as error:
                answer = answer_for(error)
                if answer is None:
                    raise
                session.refused.append(answer.detail)
            session.changed.set()

    async def _next_change(
        self, session: _Session, reader: asyncio.Task[None], ending: asyncio.Task[bool]
    ) -> bool:
        """Wait for the table's payouts to change, a confirmation, this instance to stop
        serving; False when the terminal hung up (its requests ended)."""
        session.changed.clear()
        waiter = asyncio.create_task(session.changed.wait())
        stepped_aside = asyncio.create_task(self._stepped_aside())
        done, _ = await asyncio.wait(
            {waiter, reader, ending, stepped_aside}, return_when=asyncio.FIRST_COMPLETED
        )
        waiter.cancel()
        stepped_aside.cancel()
        if ending in done:
            raise Unavailable("this payout instance is stopping; reconnect")
        return reader not in done

    async def _stepped_aside(self) -> None:
        """Returns when this instance stops serving the payouts (fenced, or its partitions
        moved to another instance)."""
        while self._service.serving:
            await self._service.serving_changed_wait()

    def _not_done(
        self, who: Principal, action: Action, award_id: str, error: Exception, where: str = ""
    ) -> None:
        """The audit outcome of a change in a terminal's stream that raised ``error`` (a
        refusal or a fault; anything else is a bug, and not an outcome)."""
        answer = answer_for(error)
        if answer is not None:
            detail = f"{where}: {answer.detail}" if where else answer.detail
            self.authorizer.outcome(who, action, answer.outcome, award_id, detail)

    async def _decide(
        self,
        hello: payout_pb2.TerminalHello,
        terminal: Principal,
        decision: payout_pb2.SupervisorDecision,
    ) -> None:
        """A supervisor's approval or void entered at the terminal with their one-time code:
        applied as that supervisor, never as the terminal; every attempt on the access log."""
        action = Action.APPROVE_PAYOUT if decision.approve else Action.VOID_PAYOUT
        award_id = decision.award_id
        payout = self._service.book.payouts.get(award_id)
        try:
            if payout is not None and payout.table_id != hello.table_id:
                raise DomainError(
                    Reason.TABLE_MISMATCH,
                    f"award {award_id} is at {payout.table_id}, not at {hello.table_id}",
                )
            supervisor = self._codes.redeem(award_id, decision.code, time.time_ns())
        except Exception as error:
            self._not_done(terminal, action, award_id, error, "one-time code")
            raise
        who = Principal(supervisor, frozenset({Role.SUPERVISOR}), "", "one-time-code")
        detail = f"at the terminal of table {hello.table_id} with a one-time code"
        try:
            if decision.approve:
                done = await self._service.approve(award_id, supervisor, decision.reason)
            else:
                done = await self._service.void(award_id, supervisor, decision.reason)
        except Exception as error:
            self._not_done(who, action, award_id, error, detail)
            raise
        self.authorizer.outcome(who, action, "applied", award_id, f"{done.amount} pesos, {detail}")

    async def _confirm(
        self, hello: payout_pb2.TerminalHello, terminal: Principal, award_id: str
    ) -> None:
        """One payment confirmed by a table's terminal, its outcome on the access log's chain."""
        try:
            payout = await self._service.paid(hello.table_id, award_id, hello.dealer)
        except Exception as error:
            self._not_done(terminal, Action.CONFIRM_PAYMENT, award_id, error)
            raise
        self.authorizer.outcome(
            terminal,
            Action.CONFIRM_PAYMENT,
            "applied",
            award_id,
            f"{payout.amount} pesos paid at table {hello.table_id} by dealer {hello.dealer or '-'}",
        )
