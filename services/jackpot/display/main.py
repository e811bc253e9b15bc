"""`jackpot display`: the composition root of the display service (stateless; scale at will)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket

import structlog
from aiohttp import web

from jackpot.display.board import Board
from jackpot.display.feed import clock, follow
from jackpot.display.grpc_api import SERVICE_NAME, SignServicer
from jackpot.display.settings import DisplaySettings
from jackpot.display.web import build_app
from jackpot.platform.audit import AuditLog
from jackpot.platform.authz import Authorizer
from jackpot.platform.grpc_server import GrpcServer
from jackpot.platform.logging import configure_logging
from jackpot.platform.metrics import serve_metrics
from jackpot.platform.runtime import run_service

log = structlog.get_logger("jackpot.display")


async def run_display(settings: DisplaySettings, stop: asyncio.Event) -> None:
    board = Board(settings.stale_seconds, settings.winner_seconds)
    audit = AuditLog(
        settings.bootstrap_servers,
        settings.access.audit_topic,
        f"display:{socket.gethostname()}-{os.getpid()}",
        settings.kafka_security.client_options(),
    )
    signs = SignServicer(board, settings.max_rate, Authorizer(settings.access, audit))
    grpc_server = GrpcServer(
        settings.grpc_address,
        [signs.register],
        [SERVICE_NAME],
        settings.access.tls.server_credentials(),
        settings.access.health_address,
    )
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
    tasks = [asyncio.create_task(follow(board, settings)), asyncio.create_task(clock(board))]
    await site.start()
    await audit.start()
    await grpc_server.start()
    log.info(
        "display_started",
        http=f"http://{settings.http_host}:{settings.http_port}/",
        grpc=settings.grpc_address,
    )
    try:
        await stop.wait()
    finally:
        await grpc_server.stop(grace_seconds=1)
        await runner.cleanup()
        await audit.stop()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        log.info("display_stopped")


def main() -> int:
    settings = DisplaySettings.from_env()
    configure_logging()
    serve_metrics(settings.metrics_port, settings.metrics_host)

    return run_service(lambda stop: run_display(settings, stop))
