"""The web signs: a page per pot group and a floor overview, live over server-sent events.

Routes: ``/`` (floor overview), ``/sign/{group}`` (one sign), ``/studio/{group}/{table}`` (a
studio table's overlay: the pot, its locked round's bets and each bet's share of the top prize,
rules O2-O5), ``/sign.js`` (what the sign pages share), ``/events?group=G`` (SSE stream of
sign states; repeat ``group`` or leave it out for all), ``/api/signs`` (JSON), ``/healthz``.

The pages speak Spanish (issue 29); the prizes' names, shown by both, are given to them here.
"""

from __future__ import annotations

import asyncio
import json
from importlib import resources

from aiohttp import web

from jackpot.display import metrics
from jackpot.display.board import Board
from jackpot.display.fanout import Subscription
from jackpot.domain.hands import PRIZE_NAMES as HAND_NAMES

BOARD_KEY = web.AppKey("board", Board)
RATE_KEY = web.AppKey("max_rate", float)
TIMEOUT_KEY = web.AppKey("write_timeout", float)
# The prizes as the signs show them (capitals; the page calls an envy bonus, V1,
# "BONO ENVIDIA <hand>").
PRIZE_NAMES = {hand: spanish.upper() for hand, (spanish, _) in HAND_NAMES.items()}


def _page(name: str) -> str:
    page = resources.files("jackpot.display").joinpath("static", name).read_text("utf-8")
    return page.replace("{{PRIZES}}", json.dumps(PRIZE_NAMES, ensure_ascii=False))


async def floor(request: web.Request) -> web.Response:
    return web.Response(text=_page("floor.html"), content_type="text/html")


async def sign(request: web.Request) -> web.Response:
    group = request.match_info["group"]
    page = _page("sign.html").replace("{{GROUP}}", json.dumps(group))
    return web.Response(text=page, content_type="text/html")


async def studio(request: web.Request) -> web.Response:
    page = _page("studio.html").replace("{{GROUP}}", json.dumps(request.match_info["group"]))
    page = page.replace("{{TABLE}}", json.dumps(request.match_info["table"]))
    return web.Response(text=page, content_type="text/html")


async def sign_script(request: web.Request) -> web.Response:
    """What every sign page shares (the number format, the closed reasons, the stream)."""
    script = resources.files("jackpot.display").joinpath("static", "sign.js").read_text("utf-8")
    return web.Response(text=script, content_type="text/javascript")


async def signs(request: web.Request) -> web.Response:
    board = request.app[BOARD_KEY]
    return web.json_response([s.to_json() for s in board.view()])


async def healthz(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def events(request: web.Request) -> web.StreamResponse:
    board = request.app[BOARD_KEY]
    groups = request.query.getall("group", []) or None
    response = web.StreamResponse(
        headers={
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",
        }
    )
    await response.prepare(request)
    timeout = request.app[TIMEOUT_KEY]
    with Subscription(board, groups, request.app[RATE_KEY]) as subscription:
        try:
            while True:
                for state in await subscription.next():
                    data = json.dumps(state.to_json(), separators=(",", ":"))
                    await asyncio.wait_for(response.write(f"data: {data}\n\n".encode()), timeout)
                    metrics.UPDATES_SENT.labels("web").inc()
        except TimeoutError:
            metrics.RESYNCS.inc()  # too slow: drop it; the browser reconnects with full state
        except ConnectionResetError:
            pass  # the sign went away
    return response


def build_app(board: Board, max_rate: float, write_timeout: float) -> web.Application:
    app = web.Application()
    app[BOARD_KEY] = board
    app[RATE_KEY] = max_rate
    app[TIMEOUT_KEY] = write_timeout
    app.router.add_get("/", floor)
    app.router.add_get("/sign/{group}", sign)
    app.router.add_get("/studio/{group}/{table}", studio)
    app.router.add_get("/sign.js", sign_script)
    app.router.add_get("/events", events)
    app.router.add_get("/api/signs", signs)
    app.router.add_get("/healthz", healthz)
    return app
