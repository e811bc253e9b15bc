"""stop_client: a loop that rebuilds its Kafka client must survive the old client's stop().

aiokafka's consumer ``stop()`` can raise the CancelledError of one of its own internal tasks
after a broker restart; left alone that ended the gateway's pot watcher for good, and tables
stayed closed with the pot beating (seen in the broker-outage test, 2 runs in 3).
"""

from __future__ import annotations

import asyncio

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
