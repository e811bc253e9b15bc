"""The broker probe (platform/broker_probe.py): the cluster answers if one broker answers in
the deadline; one paused broker is not a cluster gone; it asks only after a quiet interval and
tells each change once. The real broker's side (a paused broker does not answer, a stopped one
refuses): tests/integration/test_processor_broker_outage.py."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from aiokafka.errors import KafkaConnectionError

from jackpot.platform.broker_probe import BrokerProbe
from tests.polling import eventually


@dataclass(frozen=True)
class Broker:
    nodeId: int  # aiokafka BrokerMetadata spelling


@dataclass
class Cluster:
    nodes: list[int]

    def brokers(self) -> set[Broker]:
        return {Broker(n) for n in self.nodes}


@dataclass
class FakeClient:
    """Each node answers, refuses (``down``) or never answers (``paused``)."""

    nodes: list[int]
    down: set[int] = field(default_factory=set)
    paused: set[int] = field(default_factory=set)
    asked: list[int] = field(default_factory=list)
    closed: bool = False

    @property
    def cluster(self) -> Cluster:
        return Cluster(self.nodes)

    async def bootstrap(self) -> None:
        pass

    async def close(self) -> None:
        self.closed = True

    async def send(self, node: int, request: Any) -> object:
        self.asked.append(node)
        if node in self.down:
            raise KafkaConnectionError(f"node {node} refused")
        if node in self.paused:
            await asyncio.Event().wait()
        return object()


def probe(client: FakeClient, **options: Any) -> BrokerProbe:
    options = {"interval": 3600.0, "deadline": 0.2, "on_change": lambda _: None, **options}
    return BrokerProbe(client, **options)  # type: ignore[arg-type]


async def test_one_broker_answering_is_the_cluster_answering() -> None:
    client = FakeClient([1, 2, 3], down={1}, paused={2})
    assert await probe(client).ask()
    assert sorted(client.asked) == [1, 2, 3]  # all asked at once, not one after another


async def test_no_broker_answering_in_the_deadline_is_the_cluster_silent() -> None:
    client = FakeClient([1, 2, 3], down={1}, paused={2, 3})
    loop = asyncio.get_running_loop()
    started = loop.time()
    assert not await probe(client, deadline=0.2).ask()
    assert loop.time() - started < 2.0  # the paused ones are cut at the deadline
    assert not await probe(FakeClient([1, 2], down={1, 2})).ask()


async def test_it_asks_only_when_quiet_and_tells_each_change_once() -> None:
    client = FakeClient([1])
    changes: list[bool] = []
    watched = probe(client, interval=0.05, on_change=changes.append)
    await watched.start()
    try:
        await eventually(lambda: client.asked, "never asked once quiet", within=5)
        client.down = {1}
        await eventually(lambda: changes == [False], "the silence was not told", within=5)
        assert not watched.answering
        asked = len(client.asked)
        await eventually(lambda: len(client.asked) > asked + 2, "stopped asking", within=5)
        assert changes == [False]  # told once, however often asked
        watched.heard()  # a transaction committed: the brokers answer
        assert watched.answering
        assert changes == [False, True]
        client.down = set()
        await eventually(lambda: len(client.asked) > asked + 5, "stopped asking", within=5)
        assert changes == [False, True]
    finally:
        await watched.stop()
    assert client.closed
