"""stop_client: a loop that rebuilds its Kafka client must survive the old client's stop().

aiokafka's consumer ``stop()`` can raise the CancelledError of one of its own internal tasks
after a broker restart; left alone that ended the gateway's pot watcher for good, and tables
stayed closed with the pot beating (seen in the broker-outage test, 2 runs in 3).
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from jackpot.platform.kafka import stop_client

pytestmark = pytest.mark.unit


class LeakyClient:
    def __init__(self, error: BaseException) -> None:
        self.error = error
        self.stopped = 0

    async def stop(self) -> None:
        self.stopped += 1
        raise self.error


async def test_an_internal_cancellation_does_not_end_the_caller() -> None:
    client = LeakyClient(asyncio.CancelledError())
    await stop_client(client)  # type: ignore[arg-type]
    await stop_client(LeakyClient(RuntimeError("broken")))  # type: ignore[arg-type]
    assert client.stopped == 1


async def test_a_cancellation_of_the_caller_still_goes_through() -> None:
    started = asyncio.Event()

    class SlowClient:
        async def stop(self) -> None:
            started.set()
            await asyncio.sleep(10)

    task = asyncio.create_task(stop_client(SlowClient()))  # type: ignore[arg-type]
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


class SwallowingFetcherClient:
    """aiokafka 0.14's shape (issue #983): stop() cancels its fetch task and awaits it, and the
    fetch task, cancelled while it handles an unassignment, swallows that one cancellation."""

    def __init__(self) -> None:
        self.closed = False
        self.fetching = asyncio.Event()
        self.fetch_task = asyncio.create_task(self._fetch_routine())

    async def _fetch_routine(self) -> None:
        self.fetching.set()
        with contextlib.suppress(asyncio.CancelledError):  # the swallowed cancellation
            await asyncio.Event().wait()  # awaiting a cancelled request
        await asyncio.Event().wait()  # and on to wait for the next assignment, for ever

    async def stop(self) -> None:
        self.fetch_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.fetch_task
        self.closed = True  # connections closed: the rest of stop()


async def test_a_stop_that_would_hang_is_cut_short_and_still_cleans_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("jackpot.platform.kafka.CLIENT_STOP_SECONDS", 0.2)
    client = SwallowingFetcherClient()
    await client.fetching.wait()
    stopping = asyncio.create_task(stop_client(client))  # type: ignore[arg-type]
    done, _ = await asyncio.wait({stopping}, timeout=5)
    if not done:  # the hang this guards against: end it, then fail
        stopping.cancel()
        client.fetch_task.cancel()
    assert done == {stopping}
    assert client.fetch_task.cancelled()
    assert client.closed
