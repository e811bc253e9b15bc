"""The floor's people on the payout side: a dealer at each table's terminal (the DealerTerminal
stream, or the reference terminal's screen) who presses "Pagado" for each payable prize, and the
supervisor who approves those awaiting approval (at the terminal with a one-time code, or through
the payout API). :class:`~jackpot.sim.floor.Floor` runs them beside its tables."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import grpc
import structlog

from jackpot.clients.payout import PayoutTargets, all_payouts, call_owner
from jackpot.platform.tls import TlsSettings, secure_channel
from jackpot.sim.floor_stats import FloorStats
from jackpot.v1 import payout_pb2, payout_pb2_grpc

log = structlog.get_logger("jackpot.sim.floor")
# How long a dealer terminal waits for a payout instance's first answer before trying another.
FIRST_ANSWER_SECONDS = 5.0
PAYABLE = (payout_pb2.PAYOUT_STATE_ORDERED, payout_pb2.PAYOUT_STATE_APPROVED)
CONFIRM_ATTEMPTS = 3  # how often a simulated dealer presses "paid" for one prize per session


@dataclass
class _DealerSession:
    """One dealer terminal stream. A dealer confirms again what a new session lists as still to
    pay (the confirmation sent before the service went away may never have arrived), and
    presses again after a refusal (a transaction that failed); a few times per session at most."""

    table_id: str
    stream: int  # the how-many-th session of this table's terminal
    confirmed: set[str] = field(default_factory=set)
    attempts: Counter[str] = field(default_factory=Counter)


@dataclass
class FloorStaff:
    """The dealers and the supervisor of one simulated floor."""

    payout_target: str  # host:port of the payout service, or several comma-separated
    terminal_urls: dict[str, str]  # tables whose dealer uses the reference terminal's screen
    supervisor_delay: float  # seconds before the supervisor approves
    tls: Callable[[str], TlsSettings]  # the certificate of a name (terminal-<table>, supervisor)
    stats: FloorStats
    wins: dict[str, float]  # award key (table/round/seat) -> result time, set by the tables
    stop: asyncio.Event

    async def terminal(self, table_id: str) -> None:
        """A dealer at a table's terminal (the DealerTerminal stream), through every restart of
        the payout service, until the floor stops."""
        seen: set[str] = set()
        views = self.stats.terminal_views.setdefault(table_id, [])
        stream = 0
        targets = PayoutTargets(self.payout_target)
        while not self.stop.is_set():
            stream += 1
            try:
                await self._terminal_session(_DealerSession(table_id, stream), targets, seen, views)
            except grpc.aio.AioRpcError as error:
                # To the owner the instance named at once; otherwise the next address, soon.
                if not targets.moved(error):
                    await asyncio.sleep(0.5)
            except TimeoutError:
                targets.moved()
                await asyncio.sleep(0.5)
            except Exception as error:  # a dealer never walks away: say what happened, go on
                self.stats.terminal_errors[type(error).__name__] += 1
                log.warning("terminal_session_failed", table=table_id, error=repr(error))
                targets.moved()
                await asyncio.sleep(0.5)

    async def _terminal_session(
        self,
        session: _DealerSession,
        targets: PayoutTargets,
        seen: set[str],
        views: list[tuple[float, int, frozenset[str]]],
    ) -> None:
        """One DealerTerminal stream, from the hello to its end."""
        table_id = session.table_id
        async with secure_channel(
            targets.current, self.tls(f"terminal-{table_id}"), targets.options()
        ) as channel:
            stub = payout_pb2_grpc.PayoutServiceStub(channel)  # type: ignore[no-untyped-call]
            # The call object, not a request generator: grpc could not close a generator
            # parked on its queue, and the channel's close then never returned (a
            # terminal stuck for good after a refusal, seen in make chaos).
            call = stub.DealerTerminal()
            await call.write(
                payout_pb2.DealerTerminalRequest(
                    hello=payout_pb2.TerminalHello(table_id=table_id, dealer="sim-dealer")
                )
            )
            # A serving instance answers at once; one that does not (a process dying
            # mid-shutdown, a half-open connection) is left for the next address.
            message = await asyncio.wait_for(call.read(), FIRST_ANSWER_SECONDS)
            while message is not grpc.aio.EOF:
                if message.refused:
                    log.info("terminal_refused", table=table_id, reason=message.refused)
                    session.confirmed.clear()
                now = time.monotonic()
                views.append((now, session.stream, frozenset(p.award_id for p in message.open)))
                for payout in message.open:
                    self._seen_on_terminal(payout, seen, now)
                    await self._confirm_on_terminal(session, call, payout)
                message = await call.read()

    def _seen_on_terminal(self, payout: payout_pb2.Payout, seen: set[str], now: float) -> None:
        """A prize the first time a terminal shows it: received, and how long it took."""
        if payout.award_id in seen:
            return
        seen.add(payout.award_id)
        self.stats.payouts_received += 1
        key = f"{payout.table_id}/{payout.round_id}/{payout.seat}"
        if key in self.wins:
            self.stats.latencies.add("result_to_terminal", now - self.wins.pop(key))

    async def _confirm_on_terminal(
        self, session: _DealerSession, call: Any, payout: payout_pb2.Payout
    ) -> None:
        """The dealer presses "Pagado" for a payable prize not confirmed in this session, a
        few times per session at most."""
        award_id = payout.award_id
        if (
            award_id in session.confirmed
            or session.attempts[award_id] >= CONFIRM_ATTEMPTS
            or payout.state not in PAYABLE
        ):
            return
        session.confirmed.add(award_id)
        session.attempts[award_id] += 1
        await call.write(
            payout_pb2.DealerTerminalRequest(paid=payout_pb2.PaymentConfirmed(award_id=award_id))
        )
        self.stats.payouts_paid += session.attempts[award_id] == 1

    async def screen_dealer(self, table_id: str, url: str) -> None:
        """A dealer at the reference terminal: reads the screen's state and presses "Paid" for
        each payable prize, as the page's button does (POST /api/paid)."""
        import aiohttp

        seen: set[str] = set()
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http:
            while not self.stop.is_set():
                with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                    async with http.get(url + "api/state") as answer:
                        screen = await answer.json()
                    for payout in screen["payouts"]:
                        if payout["award_id"] not in seen:
                            seen.add(payout["award_id"])
                            self.stats.payouts_received += 1
                        if payout["payable"]:
                            body = {"award_id": payout["award_id"]}
                            async with http.post(url + "api/paid", json=body) as paid:
                                if paid.status == 200:
                                    self.stats.payouts_paid += 1
                await asyncio.sleep(0.5)

    async def supervisor(self) -> None:
        """Approves every prize awaiting approval, ``supervisor_delay`` after it appears: at the
        table's reference terminal when it has one, else through the payout API."""

        async def approve(
            award_id: str, stub: payout_pb2_grpc.PayoutServiceStub
        ) -> payout_pb2.ApprovePayoutResponse:
            request = payout_pb2.ApprovePayoutRequest(
                award_id=award_id, supervisor="sim-supervisor"
            )
            return await stub.ApprovePayout(request)  # type: ignore[no-any-return]

        targets = PayoutTargets(self.payout_target)
        tls = self.tls("supervisor")
        while not self.stop.is_set():
            await asyncio.sleep(self.supervisor_delay)
            with contextlib.suppress(grpc.aio.AioRpcError):
                listing = await call_owner(
                    targets, tls, lambda stub: all_payouts(stub, awaiting_approval_only=True)
                )
                for payout in listing:
                    screen = self.terminal_urls.get(payout.table_id)
                    if screen is None or not await self._approve_at(screen, payout, targets):
                        await call_owner(targets, tls, partial(approve, payout.award_id))
                    self.stats.approvals += 1

    async def _approve_at(
        self, screen: str, payout: payout_pb2.Payout, targets: PayoutTargets
    ) -> bool:
        """The supervisor walks to the table: a one-time code with their own certificate,
        entered at the terminal (POST /api/decide, as its screen does). True when approved."""
        import aiohttp

        issued = await call_owner(
            targets,
            self.tls("supervisor"),
            lambda stub: stub.IssueApprovalCode(
                payout_pb2.IssueApprovalCodeRequest(award_id=payout.award_id)
            ),
        )
        body = {"award_id": payout.award_id, "code": issued.code, "decision": "approve"}
        with contextlib.suppress(aiohttp.ClientError, TimeoutError):
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http,
                http.post(screen + "api/decide", json=body) as answer,
            ):
                return answer.status == 200
        return False
