"""The terminal's payout link leaves an instance that takes its session and never answers it.

A serving payout instance answers a terminal's hello at once with the open payouts. One that
does not (dying mid-shutdown, a half-open connection) must be left for the next address: before,
the link waited on it for good and the dealer's screen never showed the prize (rule D3; seen once
in tests/integration/test_terminal.py, D3). Two in-process PayoutService servers here: a silent
one first in the list, an answering one second.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from jackpot.terminal.links import PayoutLink
from jackpot.terminal.screen import Screen
from jackpot.terminal.settings import TerminalSettings
from jackpot.v1 import payout_pb2, payout_pb2_grpc
from tests.polling import eventually

pytestmark = pytest.mark.unit


class Silent(payout_pb2_grpc.PayoutServiceServicer):
    """Takes the session and never says a word."""

    async def DealerTerminal(
        self, request_iterator: Any, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[payout_pb2.DealerTerminalResponse]:
        await asyncio.Event().wait()
        yield payout_pb2.DealerTerminalResponse()


class Answering(payout_pb2_grpc.PayoutServiceServicer):
    """Answers the hello with one open payout, then keeps the session."""

    async def DealerTerminal(
        self, request_iterator: Any, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[payout_pb2.DealerTerminalResponse]:
        payout = payout_pb2.Payout(award_id="g/CAR-1/R1/3/FLUSH", table_id="CAR-1")
        yield payout_pb2.DealerTerminalResponse(open=[payout])
        await asyncio.Event().wait()


async def serving(servicer: payout_pb2_grpc.PayoutServiceServicer) -> tuple[grpc.aio.Server, int]:
    server = grpc.aio.server()
    payout_pb2_grpc.add_PayoutServiceServicer_to_server(servicer, server)  # type: ignore[no-untyped-call]
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, port


async def test_D3_a_silent_payout_instance_is_left_for_the_next_address() -> None:
    silent, silent_port = await serving(Silent())
    answering, answering_port = await serving(Answering())
    settings = TerminalSettings(
        table_id="CAR-1",
        payout_targets=f"127.0.0.1:{silent_port},127.0.0.1:{answering_port}",
        answer_seconds=0.5,
        reconnect_seconds=0.1,
    )
    screen = Screen("CAR-1", "ana")
    link = asyncio.create_task(PayoutLink(screen, settings).run())
    try:
        await eventually(
            lambda: screen.payout.up and screen.payout.target.endswith(f":{answering_port}"),
            "the terminal never left the silent instance for the answering one",
            within=10,
        )
        assert [p.award_id for p in screen.payouts] == ["g/CAR-1/R1/3/FLUSH"]
    finally:
        link.cancel()
        await asyncio.gather(link, return_exceptions=True)
        await silent.stop(None)
        await answering.stop(None)
