"""The terminal's two links, each reconnecting by itself: the gateway's watch of the table, and
the payout service's DealerTerminal stream (on the owning instance, followed through
:class:`jackpot.clients.payout.PayoutTargets`, with keepalive pings so a frozen instance is left).

A confirmation is sent on the stream and answered by the service's next push: a refusal names
its reason (``DealerTerminalResponse.refused``); the prize gone from the open list means paid.
Confirmations go one at a time, so an answer always belongs to the confirmation waiting for it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import grpc
import structlog

from jackpot.clients.payout import PayoutTargets
from jackpot.platform.tls import secure_channel
from jackpot.terminal.screen import Answer, Screen
from jackpot.terminal.settings import TerminalSettings
from jackpot.v1 import device_pb2, device_pb2_grpc, payout_pb2, payout_pb2_grpc

log = structlog.get_logger("jackpot.terminal")


def _is_open(response: payout_pb2.DealerTerminalResponse, award_id: str) -> bool:
    return any(p.award_id == award_id for p in response.open)


def _why(error: grpc.aio.AioRpcError) -> str:
    return f"{error.code().name}: {error.details() or 'no detail'}"


async def follow_gateway(screen: Screen, settings: TerminalSettings) -> None:
    """The gateway's watch of this table, forever; the link's state on the screen."""
    target = settings.gateway_address
    request = device_pb2.WatchTableRequest(table_id=settings.table_id)
    while True:
        try:
            async with secure_channel(target, settings.access.tls) as channel:
                stub = device_pb2_grpc.TableDeviceServiceStub(channel)  # type: ignore[no-untyped-call]
                async for message in stub.WatchTable(request):
                    screen.table_view(message.view)
                    screen.link(screen.gateway, True, "watching the table", target)
                screen.link(screen.gateway, False, "the gateway ended the watch", target)
        except grpc.aio.AioRpcError as error:
            screen.link(screen.gateway, False, _why(error), target)
            log.warning("terminal_link_lost", link="gateway", error=_why(error))
        await asyncio.sleep(settings.reconnect_seconds)


class PayoutLink:
    """The DealerTerminal session of this table on the instance that owns the payouts."""

    def __init__(self, screen: Screen, settings: TerminalSettings) -> None:
        self.screen = screen
        self.settings = settings
        self.targets = PayoutTargets(settings.payout_targets)
        self._outgoing: asyncio.Queue[payout_pb2.DealerTerminalRequest] | None = None
        self._responses: asyncio.Queue[payout_pb2.DealerTerminalResponse | None] = asyncio.Queue()
        self._one_at_a_time = asyncio.Lock()

    async def run(self) -> None:
        """Connect, show the open payouts after every push, reconnect when the stream ends."""
        while True:
            target = self.targets.current
            try:
                await self._session(target)
                self._lost("the payout service ended the session", target)
                await asyncio.sleep(self.settings.reconnect_seconds)
            except grpc.aio.AioRpcError as error:
                self._lost(_why(error), target)
                log.warning("terminal_link_lost", link="payout", target=target, error=_why(error))
                # To the owner a refusing instance named at once; otherwise the next address.
                if not self.targets.moved(error):
                    await asyncio.sleep(self.settings.reconnect_seconds)
            except TimeoutError:  # an instance that took the session and never answered it
                self._lost("the payout service did not answer", target)
                log.warning("terminal_link_silent", link="payout", target=target)
                self.targets.moved()
                await asyncio.sleep(self.settings.reconnect_seconds)

    def _lost(self, detail: str, target: str) -> None:
        self._outgoing = None
        self._responses.put_nowait(None)  # a confirmation waiting for an answer hears the loss
        self.screen.link(self.screen.payout, False, detail, target)

    async def _session(self, target: str) -> None:
        outgoing: asyncio.Queue[payout_pb2.DealerTerminalRequest] = asyncio.Queue()
        hello = payout_pb2.TerminalHello(
            table_id=self.settings.table_id,
            credential=self.settings.credential,
            dealer=self.settings.dealer,
        )
        outgoing.put_nowait(payout_pb2.DealerTerminalRequest(hello=hello))

        async def writer(call: Any) -> None:
            while True:
                await call.write(await outgoing.get())

        # The call object and a writer task, not a request generator: grpc could not close a
        # generator parked on its queue, and the channel's close then never returned (a link
        # stuck for good after a refusal).
        async with secure_channel(target, self.settings.access.tls, self.targets.options()) as ch:
            stub = payout_pb2_grpc.PayoutServiceStub(ch)  # type: ignore[no-untyped-call]
            call = stub.DealerTerminal()
            writing = asyncio.create_task(writer(call))
            try:
                # A serving instance answers the hello at once with the open payouts; one that
                # does not (dying mid-shutdown, a half-open connection) is left for the next
                # address, as the floor simulator's dealers do; keepalive alone only leaves a
                # frozen one, and the link waited on it for good (a D3 test, once).
                response = await asyncio.wait_for(call.read(), self.settings.answer_seconds)
                while response is not grpc.aio.EOF:
                    if self._outgoing is not outgoing:
                        self._outgoing = outgoing
                        self.screen.link(self.screen.payout, True, "connected", target)
                    self.screen.open_payouts(list(response.open), list(response.wallet_rounds))
                    self._responses.put_nowait(response)
                    response = await call.read()
            finally:
                writing.cancel()
                # a write that failed because the call ended: read() already said why
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await writing

    async def confirm(self, award_id: str) -> Answer:
        """The dealer paid ``award_id``: the service's answer (paid, or its refusal's reason)."""
        async with self._one_at_a_time:
            refused = self.screen.payable(award_id)
            outgoing = self._outgoing
            if refused or outgoing is None:
                return self._answer(award_id, False, refused or "no link to the payout service")
            was_open = any(p.award_id == award_id for p in self.screen.payouts)
            while not self._responses.empty():  # older pushes answer nothing of this one
                self._responses.get_nowait()
            outgoing.put_nowait(
                payout_pb2.DealerTerminalRequest(
                    paid=payout_pb2.PaymentConfirmed(award_id=award_id)
                )
            )
            return await self._await_answer(
                award_id, lambda r: was_open and not _is_open(r, award_id), "paid"
            )

    async def decide(self, award_id: str, code: str, approve: bool, reason: str) -> Answer:
        """A supervisor's approval or void with their one-time code (applied as them)."""
        async with self._one_at_a_time:
            refused = self.screen.payable(award_id)
            outgoing = self._outgoing
            if refused or outgoing is None:
                return self._answer(award_id, False, refused or "no link to the payout service")
            while not self._responses.empty():
                self._responses.get_nowait()
            decision = payout_pb2.SupervisorDecision(
                award_id=award_id, code=code, approve=approve, reason=reason
            )
            outgoing.put_nowait(payout_pb2.DealerTerminalRequest(decision=decision))
            if approve:
                return await self._await_answer(
                    award_id,
                    lambda r: any(
                        p.award_id == award_id and p.state == payout_pb2.PAYOUT_STATE_APPROVED
                        for p in r.open
                    ),
                    "approved by the supervisor",
                )
            return await self._await_answer(
                award_id, lambda r: not _is_open(r, award_id), "voided by the supervisor"
            )

    async def _await_answer(
        self,
        award_id: str,
        done: Callable[[payout_pb2.DealerTerminalResponse], bool],
        success: str,
    ) -> Answer:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.answer_seconds
        while True:
            try:
                response = await asyncio.wait_for(
                    self._responses.get(), max(0.0, deadline - loop.time())
                )
            except TimeoutError:
                return self._answer(
                    award_id, False, "no answer from the payout service in time; see the list"
                )
            if response is None:
                return self._answer(
                    award_id,
                    False,
                    "the link to the payout service was lost before its answer; the list "
                    "shows whether it was paid",
                )
            if response.refused:
                return self._answer(award_id, False, f"refused: {response.refused}")
            if done(response):
                return self._answer(award_id, True, f"{success}: the payout service confirmed it")

    def _answer(self, award_id: str, ok: bool, message: str) -> Answer:
        answer = Answer(award_id, ok, message)
        self.screen.answer(answer)
        log.info("terminal_confirmation", award=award_id, ok=ok, answer=message)
        return answer
