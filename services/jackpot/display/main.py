"""`jackpot display`: the composition root of the display service (stateless; scale at will)."""

from __future__ import annotations

import asyncio
import os
import socket
from functools import partial

import structlog
from aiohttp import web

from jackpot.display.board import Board
from jackpot.display.feed import clock, follow, follow_payouts
from jackpot.display.grpc_api import SignServicer
from jackpot.display.settings import DisplaySettings
from jackpot.display.web import build_app
from jackpot.platform.grpc_edge import access_logged_grpc_edge
from jackpot.platform.runtime import Supervisor, serve, service_main
from jackpot.platform.settings import load

log = structlog.get_logger("jackpot.display")


async def compose_display(settings: DisplaySettings, supervisor: Supervisor) -> None:
    """Build and start the display's parts under ``supervisor``: the feed, the clock, the web
    signs and the SignService."""
    board = Board(settings.stale_seconds, settings.winner_seconds)
    edge = await access_logged_grpc_edge(
        supervisor, settings, f"display:{socket.gethostname()}-{os.getpid()}"
    )
    server = edge.serve(SignServicer(board, settings.max_rate, edge.authorizer), grace_seconds=1)
    runner = web.AppRunner(
        build_app(board, settings.max_rate, settings.write_timeout_seconds), shutdown_timeout=1
    )
    await runner.setup()
    # Web signs are browsers: with TLS configured they get HTTPS (server-authenticated only).
    site = web.TCPSite(
        runner,
        settings.http_host,
        settings.http_port,
        ssl_context=settings.access.tls.server_context() if settings.web_tls else None,
    )
    supervisor.on_stop("web", runner.cleanup)
    supervisor.spawn("display-feed", follow(board, settings))
    supervisor.spawn("display-payouts", follow_payouts(board, settings))
    supervisor.spawn("display-clock", clock(board))
    await site.start()
    await server.start()
    log.info(
        "display_started",
        http=f"http://{settings.http_host}:{settings.http_port}/",
        grpc=settings.grpc_address,
    )


async def run_display(settings: DisplaySettings, stop: asyncio.Event) -> int:
    """The display service in this event loop until ``stop`` (0) or a part fails (1)."""
    return await serve("display", partial(compose_display, settings), stop)


def main() -> int:
    settings = load(DisplaySettings)
    return service_main("display", settings, partial(compose_display, settings))
