"""Fan-out to many signs without letting one slow sign hold the others back.

Each connected sign is a :class:`Subscription`: the board only marks which of its groups changed
(a set, so memory per sign is bounded by its group count, whatever the update rate), and the
sign's own writer sends the *current* state of those groups. A change is pushed at once while
the sign's token bucket (``burst`` sends, refilled at ``max_rate`` a second) has a token; only
under load, once it is empty, are intermediate updates coalesced away and the sign sent the
latest state at most ``max_rate`` times a second. A sign that could not keep up simply receives
the latest state next (a resync), and a sign whose connection stays blocked past the write
timeout is dropped and resynchronises fully when it reconnects.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from jackpot.display import metrics
from jackpot.display.board import Board, Sign
from jackpot.v1 import common_pb2


class Subscription:
    def __init__(
        self, board: Board, groups: Iterable[str] | None, max_rate: float, burst: int = 2
    ) -> None:
        self._board = board
        self._groups = None if groups is None else frozenset(groups)
        self._interval = 1.0 / max_rate
        self._burst = max(1, burst)
        self._tokens: float = self._burst  # push credits of a token bucket (time, not money)
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
            self._take(loop.time())
            return self._board.view(None if self._groups is None else sorted(self._groups))
        while not self._dirty:
            self._wake.clear()
            await self._wake.wait()
        wait = self._refilled(loop.time())
        if wait > 0:  # under load: the bucket is empty, coalesce until the next token
            await asyncio.sleep(wait)
        self._take(loop.time())
        groups, self._dirty = sorted(self._dirty), set()
        return self._board.view(groups)

    def _refilled(self, now: float) -> float:
        """Refill the bucket up to ``now``; the seconds until a token is there (0: now)."""
        self._tokens = min(self._burst, self._tokens + (now - self._last_sent) / self._interval)
        self._last_sent = now
        return 0.0 if self._tokens >= 1 else (1 - self._tokens) * self._interval

    def _take(self, now: float) -> None:
        self._refilled(now)
        self._tokens = max(0.0, self._tokens - 1)
