"""Waiting in the exactly-once processor without being cut short wrongly: a bounded wait that a
cancellation still ends, and work that a caller's cancellation does not end."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any, TypeVar

import structlog

log = structlog.get_logger("jackpot.exactly_once")

T = TypeVar("T")


async def wait_at_most(event: asyncio.Event, seconds: float) -> None:
    """Wait for ``event``, ``seconds`` at most. Not ``asyncio.wait_for``: on Python 3.11 it
    swallows a cancellation that arrives as the event is set, and a cancelled service ran on
    (tests/integration/test_pot_service.py, cancelled mid-stream, hung on half its runs)."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await event.wait()


async def run_to_end(work: Coroutine[Any, Any, T]) -> T:
    """``work``'s result; if the caller is cancelled meanwhile, ``work`` still runs to its end
    (its failure, if any, logged). A transaction cut between its begin and its commit stays
    open on the partition's producer, and the partition's next one fails (issue 36: the payout
    stopped when a dealer's terminal went away mid-call)."""
    task = asyncio.ensure_future(work)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        task.add_done_callback(_log_unread_failure)
        raise


def _log_unread_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and (error := task.exception()) is not None:
        log.warning("abandoned_change_failed", error=repr(error))
