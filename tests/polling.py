"""One way for a test to wait: poll a condition until it holds, within a deadline.

A test never sleeps a fixed time before an assertion (on a busy two-core machine any fixed time
is either too short or wasted); it calls :func:`eventually`, which returns as soon as the check
holds and fails naming what never happened.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

Check = Callable[[], Any | Awaitable[Any]]


async def eventually(
    check: Check, what: str = "condition not met", within: float = 10.0, step: float = 0.05
) -> Any:
    """``check()`` (a plain or an async function) until it returns something truthy: that
    value. AssertionError naming ``what`` (and the last value) after ``within`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        last = check()
        if inspect.isawaitable(last):
            last = await last
        if last:
            return last
        if loop.time() > deadline:
            shown = "" if last is None or last is False else f" (last: {last!r})"
            raise AssertionError(f"{what} within {within} s{shown}")
        await asyncio.sleep(step)
