"""Fan-out to many signs without letting one slow sign hold the others back.

Each connected sign is a :class:`Subscription`: the board only marks which of its groups changed
(a set, so memory per sign is bounded by its group count, whatever the update rate), and the
sign's own writer sends the *current* state of those groups at most ``max_rate`` times a second.
Intermediate updates are coalesced away; a sign that could not keep up simply receives the latest
state next (a resync), and a sign whose connection stays blocked past the write timeout is
dropped and resynchronises fully when it reconnects.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from jackpot.display import metrics
from jackpot.display.board import Board, Sign
from jackpot.v1 import common_pb2


class Subscription:
    def __init__(self, board: Board, groups: Iterable[str] | None, max_rate: float) -> None:
        self._board = board
        self._groups = None if groups is None else frozenset(groups)
        self._interval = 1.0 / max_rate
        self._dirty: set[str] = set()
        self._wake = asyncio.Event()
        self._last_sent = 0.0
        self._first = True
        self._traced: dict[str, int] = {}  # group -> number of the last lock trace sent

    def __enter__(self) -> Subscription:
        self._board.subscribe(self._changed)
        metrics.CONNECTED_SIGNS.inc()
        return self

    def __exit__(self, *_: object) -> None:
        self._board.unsubscribe(self._changed)
        metrics.CONNECTED_SIGNS.dec()

    def _changed(self, group: str) -> None:
        if self._groups is None or group in self._groups:
            if group in self._dirty:
                metrics.COALESCED.inc()
            self._dirty.add(group)
            self._wake.set()

    def new_traces(self, sign: Sign) -> tuple[common_pb2.LockTrace, ...]:
        """The lock traces of ``sign`` this subscriber has not been sent (latency budget)."""
        sent = self._traced.get(sign.pot_group_id)
        self._traced[sign.pot_group_id] = sign.traces_through
        return () if sent is None else sign.traces_after(sent)

    async def next(self) -> list[Sign]:
        """The signs to send now: everything first, then only what changed, rate-limited."""
        loop = asyncio.get_running_loop()
        if self._first:
            self._first = False
            self._last_sent = loop.time()
            return self._board.view(None if self._groups is None else sorted(self._groups))
        while not self._dirty:
            self._wake.clear()
            await self._wake.wait()
        wait = self._last_sent + self._interval - loop.time()
        if wait > 0:
            await asyncio.sleep(wait)
        groups, self._dirty = sorted(self._dirty), set()
        self._last_sent = loop.time()
        return self._board.view(groups)
