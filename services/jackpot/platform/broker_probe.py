"""Whether the Kafka cluster answers, asked only when nothing else said so lately.

An exactly-once service learns that its brokers are gone from a transaction that fails. One with
nothing to write (an idle payout: no award, no dealer call) learned it only at its next write, so
its readiness stayed SERVING through a whole outage and a dealer's call was the first thing to
fail (issue 36 item 4). The :class:`BrokerProbe` closes that gap: when nothing was heard from the
cluster for ``interval`` seconds (a committed transaction counts, :meth:`BrokerProbe.heard`), it
asks every broker it knows for metadata of no topic (a few bytes each) at once; the cluster
answers if one of them answers within ``deadline``. Every broker, not the least loaded one: a
SIGSTOPped broker holds a request until the client's request timeout, and one paused or dead
broker is not a cluster gone (its partitions move, and the transactions say so if they do not).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

import structlog
from aiokafka.client import AIOKafkaClient
from aiokafka.protocol.metadata import MetadataRequest

log = structlog.get_logger("jackpot.broker_probe")


class BrokerProbe:
    """Asks the cluster whether it answers when nothing was heard from it for ``interval``;
    tells ``on_change`` each time the answer changes (``answering`` starts True)."""

    def __init__(
        self,
        client: AIOKafkaClient,
        *,
        interval: float,
        deadline: float,
        on_change: Callable[[bool], None],
        name: str = "",
    ) -> None:
        self.client = client
        self.interval = interval
        self.deadline = deadline
        self.answering = True
        self._on_change = on_change
        self._heard_at = time.monotonic()
        self._task: asyncio.Task[None] | None = None
        self._log = log.bind(service=name)

    async def start(self) -> None:
        """Bootstrap the client (the brokers must answer now, as for any client) and probe."""
        await self.client.bootstrap()
        self._task = asyncio.create_task(self._run(), name="broker-probe")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self.client.close()

    def heard(self) -> None:
        """The cluster just answered (a transaction committed): no need to ask for a while."""
        self._heard_at = time.monotonic()
        self._set(True)

    async def ask(self) -> bool:
        """True if one broker answers a metadata request within the deadline."""
        nodes = [broker.nodeId for broker in self.client.cluster.brokers()]
        if not nodes:  # the client knows no broker yet: its bootstrap servers
            with contextlib.suppress(Exception):
                async with asyncio.timeout(self.deadline):
                    await self.client.fetch_all_metadata()
                    return True
            return False
        asks = [asyncio.ensure_future(self._metadata(node)) for node in nodes]
        try:
            for answered in asyncio.as_completed(asks, timeout=self.deadline):
                with contextlib.suppress(Exception):  # refused or timed out: the next answer
                    await answered
                    return True
            return False
        finally:
            for pending in asks:
                pending.cancel()
            await asyncio.gather(*asks, return_exceptions=True)

    async def _metadata(self, node: int) -> None:
        await self.client.send(node, MetadataRequest([]))

    async def _run(self) -> None:
        while True:
            quiet_for = time.monotonic() - self._heard_at
            if quiet_for < self.interval:
                await asyncio.sleep(self.interval - quiet_for)
                continue
            asked_at = time.monotonic()
            try:
                answered = await self.ask()
            except Exception as error:  # a bug here must not end the probing, nor pass unseen
                self._log.error("broker_probe_failed", error=repr(error), exc_info=error)
                answered = False
            if self._heard_at > asked_at:
                continue  # a transaction committed meanwhile: that is the newer answer
            if answered:
                self._heard_at = time.monotonic()
            self._set(answered)
            if not answered:
                # ask again after the interval, not at once (a stopped cluster refuses
                # connections in microseconds)
                await asyncio.sleep(self.interval)

    def _set(self, answering: bool) -> None:
        if answering == self.answering:
            return
        self.answering = answering
        if answering:
            self._log.warning("brokers_answer_again")
        else:
            self._log.warning(
                "brokers_silent",
                deadline_seconds=self.deadline,
                quiet_seconds=round(time.monotonic() - self._heard_at, 1),
            )
        self._on_change(answering)
