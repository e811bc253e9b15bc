"""The dealer's screen as a local web page, and the small API the page (and the demo's simulated
dealers) use.

Routes: ``/`` (the screen), ``/api/state`` (JSON), ``/events`` (server-sent events: the state
after every change), ``POST /api/paid`` ``{"award_id": ...}`` (the dealer paid it: the payout
service's answer, 200 when paid, 409 with the reason when refused or impossible, 400 for a
malformed request), ``POST /api/decide`` ``{"award_id", "code", "decision": "approve"|"void",
"reason"}`` (a supervisor's one-time code, applied as that supervisor), ``/healthz``.

Every answer is an :class:`~jackpot.terminal.screen.Answer`: ``message`` in the log's English,
``text`` what the screen shows of it, in Spanish (the page shows a 400 of its own request too).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from aiohttp import web

from jackpot.terminal.links import PayoutLink
from jackpot.terminal.screen import Answer, Screen

SCREEN_KEY = web.AppKey("screen", Screen)
PAYOUT_KEY = web.AppKey("payout", PayoutLink)
MAX_BODY_BYTES = 4096


def _page() -> str:
    return (
        resources.files("jackpot.terminal").joinpath("static", "terminal.html").read_text("utf-8")
    )


async def page(request: web.Request) -> web.Response:
    return web.Response(text=_page(), content_type="text/html")


async def state(request: web.Request) -> web.Response:
    return web.json_response(request.app[SCREEN_KEY].to_json())


async def healthz(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def events(request: web.Request) -> web.StreamResponse:
    screen = request.app[SCREEN_KEY]
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
    )
    await response.prepare(request)
    version = -1
    try:
        while True:
            if screen.version == version:
                await screen.wait_changed(version)
            version = screen.version
            data = json.dumps(screen.to_json(), separators=(",", ":"))
            await response.write(f"data: {data}\n\n".encode())
    except ConnectionResetError:
        pass  # the page went away
    return response


def _bad(message: str) -> web.HTTPBadRequest:
    """A 400 whose body is an answer like any other (``ok`` false, the reason)."""
    body = json.dumps(Answer("", False, message).to_json())
    return web.HTTPBadRequest(text=body, content_type="application/json")


async def _body(request: web.Request) -> dict[str, Any]:
    """The JSON object of a POST, or a 400 naming what is wrong."""
    if (request.content_length or 0) > MAX_BODY_BYTES:
        raise _bad(f"the request is larger than {MAX_BODY_BYTES} bytes")
    try:
        body = await request.json()
    except ValueError:
        raise _bad("the request is not JSON") from None
    if not isinstance(body, dict):
        raise _bad("the request must be a JSON object")
    return body


def _text(body: dict[str, Any], key: str) -> str:
    value = body.get(key, "")
    if not isinstance(value, str) or not value.strip():
        raise _bad(f"{key!r} must be a non-empty string")
    return value.strip()


async def paid(request: web.Request) -> web.Response:
    """The dealer's "Paid" button: confirmed over the DealerTerminal stream."""
    award_id = _text(await _body(request), "award_id")
    answer = await request.app[PAYOUT_KEY].confirm(award_id)
    return web.json_response(answer.to_json(), status=200 if answer.ok else 409)


async def decide(request: web.Request) -> web.Response:
    """The supervisor's sign-in at the terminal: their one-time code with approve, or void and
    a reason; applied by the payout service as that supervisor."""
    body = await _body(request)
    award_id, code = _text(body, "award_id"), _text(body, "code")
    decision = body.get("decision")
    if decision not in ("approve", "void"):
        raise _bad('\'decision\' must be "approve" or "void"')
    reason = body.get("reason", "")
    if not isinstance(reason, str) or (decision == "void" and not reason.strip()):
        raise _bad("a void needs a 'reason'")
    answer = await request.app[PAYOUT_KEY].decide(
        award_id, code, decision == "approve", reason.strip()
    )
    return web.json_response(answer.to_json(), status=200 if answer.ok else 409)


def build_app(screen: Screen, payout: PayoutLink) -> web.Application:
    app = web.Application(client_max_size=MAX_BODY_BYTES)
    app[SCREEN_KEY] = screen
    app[PAYOUT_KEY] = payout
    app.router.add_get("/", page)
    app.router.add_get("/api/state", state)
    app.router.add_get("/events", events)
    app.router.add_post("/api/paid", paid)
    app.router.add_post("/api/decide", decide)
    app.router.add_get("/healthz", healthz)
    return app
