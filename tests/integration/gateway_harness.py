"""A gateway running in-process against real Kafka, a fake pot heartbeat, and a device client.

The "pot" here only publishes PotUpdate heartbeats (limits and sign value) the way the pot service
does; everything else is the real gateway over a real gRPC stream and a real broker.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from jackpot.domain.cards import Game
from jackpot.gateway.grpc_api import SERVICE_NAME, TableDeviceServicer
from jackpot.gateway.service import Gateway
from jackpot.gateway.settings import GatewaySettings, TableSettings, Topics
from jackpot.gateway.spool import Spool
from jackpot.platform.grpc_server import GrpcServer
from jackpot.platform.kafka import committed_consumer, ensure_topics, idempotent_producer
from jackpot.topics import TopicSpec
from jackpot.v1 import common_pb2, device_pb2, pot_pb2, table_events_pb2

GROUP = "scl-main"
CREDENTIAL = "device-secret-0123456789"
TABLES = {
    "CAR-1": Game.CARIBBEAN,
    "DRW-1": Game.DRAW,
    "GOP-1": Game.GO_POKER,
    "BJ-1": Game.BLACKJACK,
}


def settings_for(
    bootstrap: str, unique: str, spool: Path, heartbeat_timeout: float = 1.5
) -> GatewaySettings:
    return GatewaySettings(
        name=f"pit-{unique}",
        tables=tuple(TableSettings(t, g, GROUP, CREDENTIAL) for t, g in TABLES.items()),
        bootstrap_servers=bootstrap,
        grpc_address="127.0.0.1:0",
        spool_path=str(spool),
        heartbeat_timeout_seconds=heartbeat_timeout,
        topics=Topics(
            table_events=f"test.table-events.{unique}",
            pot_updates=f"test.pot-updates.{unique}",
            dead_letter=f"test.dead-letter.{unique}",
        ),
    )


async def create_topics(settings: GatewaySettings) -> None:
    t = settings.topics
    await ensure_topics(
        settings.bootstrap_servers,
        [TopicSpec(t.table_events, 3), TopicSpec(t.pot_updates, 1), TopicSpec(t.dead_letter, 1)],
    )


class PotHeartbeat:
    """Publishes a PotUpdate for GROUP every `interval` seconds while running."""

    def __init__(self, settings: GatewaySettings, interval: float = 0.2) -> None:
        self._settings = settings
        self._interval = interval
        self._task: asyncio.Task[None] | None = None
        self.sign_value = 1_000_000

    async def _beat(self) -> None:
        producer = idempotent_producer(self._settings.bootstrap_servers, request_timeout_ms=3000)
        try:
            await producer.start()
            sequence = 0
            while True:
                sequence += 1
                update = pot_pb2.PotUpdate(
                    pot_group_id=GROUP,
                    sign_value=self.sign_value,
                    min_bet=1000,
                    max_bet=5000,
                    credit_value=1000,
                    heartbeat=True,
                    update_sequence=sequence,
                )
                with contextlib.suppress(Exception):
                    await producer.send_and_wait(
                        self._settings.topics.pot_updates,
                        update.SerializeToString(),
                        key=GROUP.encode(),
                    )
                await asyncio.sleep(self._interval)
        finally:
            with contextlib.suppress(Exception):
                await producer.stop()

    def start(self) -> None:
        self._task = asyncio.create_task(self._beat())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None


@dataclass
class RunningGateway:
    settings: GatewaySettings
    gateway: Gateway
    server: GrpcServer
    spool: Spool

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.server.port}"

    async def stop(self) -> None:
        await self.server.stop(0.5)
        await self.gateway.stop()
        self.spool.close()


async def start_gateway(settings: GatewaySettings) -> RunningGateway:
    spool = Spool(settings.spool_path)
    gateway = Gateway(settings, spool)
    server = GrpcServer(
        settings.grpc_address, [TableDeviceServicer(gateway).register], [SERVICE_NAME]
    )
    await gateway.start()
    await server.start()
    return RunningGateway(settings, gateway, server, spool)


async def wait_until(predicate: Any, within: float = 10.0, step: float = 0.05) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"condition not met within {within} s")
        await asyncio.sleep(step)


@dataclass
class Device:
    """A table controller speaking the real device protocol over gRPC."""

    target: str
    table_id: str
    game: Game
    sequence: int = 0
    round_id: str = ""
    responses: asyncio.Queue[device_pb2.ConnectResponse] = field(default_factory=asyncio.Queue)
    commands: list[device_pb2.ConnectResponse] = field(default_factory=list)
    welcome: device_pb2.Welcome | None = None

    async def connect(self, credential: str = CREDENTIAL) -> device_pb2.Welcome:
        self._channel = grpc.aio.insecure_channel(self.target)
        self._outgoing: asyncio.Queue[bytes | None] = asyncio.Queue()
        call = self._channel.stream_stream(
            f"/{SERVICE_NAME}/Connect",
            request_serializer=None,
            response_deserializer=device_pb2.ConnectResponse.FromString,
        )

        async def requests() -> AsyncIterator[bytes]:
            while (item := await self._outgoing.get()) is not None:
                yield item

        self._call = call(requests())
        hello = device_pb2.ConnectRequest(
            hello=device_pb2.Hello(
                table_id=self.table_id,
                game=common_pb2.Game.Value(f"GAME_{self.game.name}"),  # type: ignore[arg-type]
                device_id=f"ctl-{self.table_id}",
                credential=credential,
            )
        )
        await self._outgoing.put(hello.SerializeToString())
        first = await self._call.read()
        assert first is not grpc.aio.EOF
        self.welcome = first.welcome
        self.sequence = self.welcome.last_sequence
        self._reader = asyncio.create_task(self._read())
        return self.welcome

    async def _read(self) -> None:
        with contextlib.suppress(grpc.aio.AioRpcError):
            while (message := await self._call.read()) is not grpc.aio.EOF:
                if message.WhichOneof("message") == "reply":
                    await self.responses.put(message)
                else:
                    self.commands.append(message)

    async def close(self) -> None:
        await self._outgoing.put(None)
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._reader
        await self._channel.close()

    async def send_raw(self, raw: bytes) -> device_pb2.EventReply:
        await self._outgoing.put(raw)
        message = await asyncio.wait_for(self.responses.get(), 10)
        return message.reply

    def event(
        self, sequence: int | None = None, table_id: str | None = None, **payload: Any
    ) -> device_pb2.DeviceEvent:
        """A DeviceEvent with the next sequence; `payload` is its oneof, like dealer_lock=..."""
        if sequence is None:
            self.sequence += 1
            sequence = self.sequence
        return device_pb2.DeviceEvent(
            sequence=sequence,
            event_id=f"{self.table_id}-{sequence}",
            table_id=table_id or self.table_id,
            round_id=self.round_id,
            **payload,
        )

    async def send_event(self, event: device_pb2.DeviceEvent) -> device_pb2.EventReply:
        return await self.send_raw(device_pb2.ConnectRequest(event=event).SerializeToString())

    async def send(self, **payload: Any) -> device_pb2.EventReply:
        return await self.send_event(self.event(**payload))

    async def open_round(self, round_id: str) -> device_pb2.EventReply:
        self.round_id = round_id
        return await self.send(round_opened=device_pb2.RoundOpened())

    async def credits(self, seat: int, credits: int) -> device_pb2.EventReply:
        return await self.send(credits_added=device_pb2.CreditsAdded(seat=seat, credits=credits))

    async def bet(self, seat: int, credits: int) -> device_pb2.EventReply:
        return await self.send(bet_placed=device_pb2.BetPlaced(seat=seat, credits=credits))

    async def lock(self) -> device_pb2.EventReply:
        return await self.send(dealer_lock=device_pb2.DealerLock())

    async def results(
        self, hands: dict[int, list[str]], community: list[str] | None = None
    ) -> device_pb2.EventReply:
        return await self.send(
            hand_results=device_pb2.HandResults(
                hands=[device_pb2.HandCards(seat=s, cards=c) for s, c in hands.items()],
                community_cards=community or [],
            )
        )


async def read_topic(bootstrap: str, topic: str, expected: int, quiet_ms: int = 3000) -> list[Any]:
    consumer = committed_consumer(bootstrap, topic, group_id=None)
    await consumer.start()
    records: list[Any] = []
    try:
        while len(records) < expected:
            batch = await consumer.getmany(timeout_ms=quiet_ms)
            if not batch:
                break
            for partition_records in batch.values():
                records.extend(partition_records)
    finally:
        await consumer.stop()
    return records


def table_events(records: list[Any]) -> list[table_events_pb2.TableEvent]:
    return [table_events_pb2.TableEvent.FromString(r.value) for r in records]
