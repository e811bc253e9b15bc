"""Running a service until SIGTERM or SIGINT: the tail of every composition root."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable


async def until_signalled(run: Callable[[asyncio.Event], Awaitable[int | None]]) -> int:
    """Run ``run(stop)``; SIGTERM or SIGINT sets ``stop`` so it can shut down gracefully."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    return await run(stop) or 0


def run_service(run: Callable[[asyncio.Event], Awaitable[int | None]]) -> int:
    """The exit status of ``run`` driven by :func:`until_signalled` on a fresh event loop."""
    return asyncio.run(until_signalled(run))
