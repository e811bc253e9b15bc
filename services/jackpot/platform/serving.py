"""Whether a service can do its job right now, and its health service told each time it changes.

A service whose work needs the brokers (the pot's and the payout's transactions) is not fit to
serve while they are gone, yet must not exit for it: waiting cures it (issue 36). Its readiness
(the gRPC health of its named service) follows a :class:`ServingFlag`; its liveness (the
server's overall health) stays SERVING, so Kubernetes stops sending it calls but does not restart
it, and the flag turns back once the brokers return.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable


class ServingFlag:
    """One boolean, and a way to wait for its next change (each change wakes every waiter)."""

    def __init__(self, serving: bool = False) -> None:
        self.serving = serving
        self._flipped = asyncio.Event()  # set (and replaced) each time ``serving`` changes

    def set(self, serving: bool) -> bool:
        """Whether it changed."""
        if serving == self.serving:
            return False
        self.serving = serving
        flipped, self._flipped = self._flipped, asyncio.Event()
        flipped.set()
        return True

    async def changed(self) -> None:
        """Returns the next time the flag changes."""
        await self._flipped.wait()

    async def report(self, report: Callable[[bool], Awaitable[None]]) -> None:
        """Tell ``report`` (the health service) the flag now and at each change; runs until
        cancelled (a supervised part of the service)."""
        while True:
            flipped = self._flipped  # taken first: a change while reporting is not missed
            await report(self.serving)
            await flipped.wait()
