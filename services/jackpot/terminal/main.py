"""`jackpot terminal --table ID`: the composition root of the reference dealer terminal (D3)."""

from __future__ import annotations

import asyncio
import os
from functools import partial

import structlog
from aiohttp import web

from jackpot.platform.runtime import Supervisor, serve, service_main
from jackpot.platform.settings import load
from jackpot.terminal.links import PayoutLink, follow_gateway
from jackpot.terminal.screen import Screen
from jackpot.terminal.settings import TerminalSettings
from jackpot.terminal.web import build_app

log = structlog.get_logger("jackpot.terminal")


async def compose_terminal(
    settings: TerminalSettings, supervisor: Supervisor, bound: asyncio.Future[str] | None = None
) -> None:
    """The two links and the screen's web page under ``supervisor``; ``bound`` hears the page's
    URL once it is listening (with port 0, the port taken)."""
    screen = Screen(settings.table_id, settings.dealer)
    payout = PayoutLink(screen, settings)
    runner = web.AppRunner(build_app(screen, payout), shutdown_timeout=1)
    await runner.setup()
    site = web.TCPSite(runner, settings.http_host, settings.http_port)
    supervisor.on_stop("web", runner.cleanup)
    supervisor.spawn("terminal-gateway-link", follow_gateway(screen, settings))
    supervisor.spawn("terminal-payout-link", payout.run())
    await site.start()
    port = runner.addresses[0][1]
    url = f"http://{settings.http_host}:{port}/"
    if bound is not None:
        bound.set_result(url)
    log.info(
        "terminal_started",
        table=settings.table_id,
        url=url,
        gateway=settings.gateway_address,
        payout=settings.payout_targets,
        tls=settings.access.tls.enabled,
    )


async def run_terminal(
    settings: TerminalSettings, stop: asyncio.Event, bound: asyncio.Future[str] | None = None
) -> int:
    """The terminal in this event loop until ``stop`` (0) or a part fails (1)."""
    return await serve("terminal", partial(compose_terminal, settings, bound=bound), stop)


def main(table_id: str | None = None) -> int:
    """``--table`` over JACKPOT_TERMINAL_TABLE; a bad setting is one line and exit 2."""
    environ = dict(os.environ)
    if table_id is not None:
        environ["JACKPOT_TERMINAL_TABLE"] = table_id
    settings = load(TerminalSettings, environ)
    return service_main(
        f"terminal:{settings.table_id}", settings, partial(compose_terminal, settings)
    )
