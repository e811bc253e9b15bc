"""A table controller's side of the device protocol, for integrators, simulators and tests.

``DeviceClient`` opens the ``TableDeviceService/Connect`` stream, identifies the table, numbers
events, and waits for each event's reply. If the stream breaks, ``send`` reconnects and resends
the same event with the same sequence number: the gateway answers a resend it already applied as
a duplicate, so nothing is applied or published twice (at-least-once from the device, exactly
once at the gateway). Commands the gateway pushes (seat and progressive status, pot value) are
kept in ``commands`` and passed to ``on_command``.

Both forms of the protocol: seat by seat (``credits``, ``bet``, ``lock``, ``fold``, ``results``)
and the round form (``open_round``, ``lock_round`` with the bets, ``settle_round`` with the
forfeits and hands; docs/protocol.md).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import grpc

from jackpot.domain.cards import Game
from jackpot.platform.codec import forfeit_reason_to_proto, game_to_proto
from jackpot.platform.tls import TlsSettings, secure_channel
from jackpot.v1 import device_pb2

SERVICE_NAME = "jackpot.v1.TableDeviceService"
CommandHandler = Callable[[device_pb2.ConnectResponse], None]


class DeviceClient:
    def __init__(
        self,
        target: str,
        table_id: str,
        game: Game,
        credential: str,
        device_id: str = "",
        on_command: CommandHandler | None = None,
        reply_timeout: float = 10.0,
        tls: TlsSettings | None = None,
    ) -> None:
        """``tls``: the device's certificate (bound to ``table_id``) for a gateway with mTLS."""
        self.target = target
        self.tls = tls or TlsSettings()
        self.table_id = table_id
        self.game = game
        self.credential = credential
        self.device_id = device_id or f"ctl-{table_id}"
        self.on_command = on_command
        self.reply_timeout = reply_timeout
        self.sequence = 0
        self.round_id = ""
        self.welcome: device_pb2.Welcome | None = None
        self.commands: list[device_pb2.ConnectResponse] = []
        self.progressive_open = False
        self.reconnects = 0
        self._channel: grpc.aio.Channel | None = None
        self._replies: asyncio.Queue[device_pb2.ConnectResponse] = asyncio.Queue()
        self._outgoing: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._reader: asyncio.Task[None] | None = None
        self._broken = asyncio.Event()
        self._assigned: int | None = None  # the sequence number event() took last

    # --------------------------------------------------------------------------- session

    async def connect(self, credential: str | None = None) -> device_pb2.Welcome:
        """Open the stream and say Hello; raises grpc.aio.AioRpcError when refused."""
        await self._teardown()
        self._channel = secure_channel(self.target, self.tls)
        self._outgoing = asyncio.Queue()
        self._replies = asyncio.Queue()
        self._broken = asyncio.Event()
        call = self._channel.stream_stream(
            f"/{SERVICE_NAME}/Connect",
            request_serializer=None,
            response_deserializer=device_pb2.ConnectResponse.FromString,
        )
        outgoing = self._outgoing

        async def requests() -> AsyncIterator[bytes]:
            while (item := await outgoing.get()) is not None:
                yield item

        self._call = call(requests())
        hello = device_pb2.Hello(
            table_id=self.table_id,
            game=game_to_proto(self.game),
            device_id=self.device_id,
            credential=self.credential if credential is None else credential,
        )
        await outgoing.put(device_pb2.ConnectRequest(hello=hello).SerializeToString())
        first = await self._call.read()
        if first is grpc.aio.EOF:
            raise ConnectionError(f"gateway closed the stream of table {self.table_id}")
        self.welcome = first.welcome
        self.sequence = max(self.sequence, self.welcome.last_sequence)
        self.progressive_open = self.welcome.progressive_open
        if self.welcome.round_id:
            self.round_id = self.welcome.round_id
        self._reader = asyncio.create_task(self._read())
        return self.welcome

    async def _read(self) -> None:
        try:
            while (message := await self._call.read()) is not grpc.aio.EOF:
                if message.WhichOneof("message") == "reply":
                    await self._replies.put(message)
                    continue
                if message.WhichOneof("message") == "progressive_status":
                    self.progressive_open = message.progressive_status.open
                self.commands.append(message)
                if self.on_command is not None:
                    self.on_command(message)
        except grpc.aio.AioRpcError:
            pass
        finally:
            self._broken.set()

    async def _teardown(self) -> None:
        if self._reader is not None:
            await self._outgoing.put(None)
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
            self._reader = None
        if self._channel is not None:
            await self._channel.close()
            self._channel = None

    async def close(self) -> None:
        await self._teardown()

    # ---------------------------------------------------------------------------- events

    def event(
        self, sequence: int | None = None, table_id: str | None = None, **payload: Any
    ) -> device_pb2.DeviceEvent:
        """The next DeviceEvent; ``payload`` is its oneof, for example ``dealer_lock=...``."""
        if sequence is None:
            self.sequence += 1
            sequence = self._assigned = self.sequence
        event = device_pb2.DeviceEvent(
            sequence=sequence,
            event_id=f"{self.table_id}-{sequence}",
            table_id=table_id or self.table_id,
            round_id=self.round_id,
            **payload,
        )
        event.occurred_at.GetCurrentTime()
        return event

    async def send_raw(self, raw: bytes) -> device_pb2.EventReply:
        await self._outgoing.put(raw)
        message = await asyncio.wait_for(self._replies.get(), self.reply_timeout)
        return message.reply

    async def send_event(
        self, event: device_pb2.DeviceEvent, retries: int = 5
    ) -> device_pb2.EventReply:
        """Send and wait for the reply; on a broken stream reconnect and resend the same event."""
        raw = device_pb2.ConnectRequest(event=event).SerializeToString()
        for attempt in range(retries + 1):
            try:
                if self._broken.is_set():
                    raise ConnectionError("stream broken")
                reply = await self.send_raw(raw)
                if not reply.accepted and event.sequence == self._assigned == self.sequence:
                    self.sequence -= 1  # a refused event does not use up its sequence number
                    self._assigned = None
                return reply
            except (ConnectionError, TimeoutError, grpc.aio.AioRpcError):
                if attempt == retries:
                    raise
                await asyncio.sleep(min(0.2 * 2**attempt, 2.0))
                with contextlib.suppress(ConnectionError, grpc.aio.AioRpcError):
                    await self.connect()
                    self.reconnects += 1
        raise AssertionError("unreachable")

    async def send(self, **payload: Any) -> device_pb2.EventReply:
        return await self.send_event(self.event(**payload))

    # ------------------------------------------------------------------- the table's flow

    async def open_round(self, round_id: str) -> device_pb2.EventReply:
        self.round_id = round_id
        return await self.send(round_opened=device_pb2.RoundOpened())

    async def credits(self, seat: int, credits: int) -> device_pb2.EventReply:
        return await self.send(credits_added=device_pb2.CreditsAdded(seat=seat, credits=credits))

    async def bet(self, seat: int, credits: int) -> device_pb2.EventReply:
        return await self.send(bet_placed=device_pb2.BetPlaced(seat=seat, credits=credits))

    async def lock(self) -> device_pb2.EventReply:
        return await self.send(dealer_lock=device_pb2.DealerLock())

    async def fold(self, seat: int) -> device_pb2.EventReply:
        return await self.send(folded=device_pb2.Folded(seat=seat))

    async def exchange(self, seat: int) -> device_pb2.EventReply:
        return await self.send(cards_exchanged=device_pb2.CardsExchanged(seat=seat))

    async def void(self, reason: str) -> device_pb2.EventReply:
        return self._ended(await self.send(round_void=device_pb2.RoundVoid(reason=reason)))

    async def lock_round(self, round_id: str, bets: Mapping[int, int]) -> device_pb2.EventReply:
        """The round form's lock: the round's bets, seat -> credits (opening ``round_id`` when
        no RoundOpened was sent). ``reply.seats`` answers seat by seat."""
        self.round_id = round_id
        return await self.send(lock_round=lock_round_message(bets))

    async def settle_round(
        self,
        hands: Mapping[int, Sequence[str]],
        forfeits: Mapping[int, str] | None = None,
        community: Sequence[str] = (),
    ) -> device_pb2.EventReply:
        """The round form's end: forfeits (seat -> ``FOLD`` or ``CARD_EXCHANGE``, answered seat
        by seat in ``reply.seats``) and the final hands."""
        settle = device_pb2.SettleRound(
            forfeits=[
                device_pb2.SeatForfeit(seat=seat, reason=forfeit_reason_to_proto(why))
                for seat, why in sorted((forfeits or {}).items())
            ],
            hands=[device_pb2.HandCards(seat=s, cards=c) for s, c in sorted(hands.items())],
            community_cards=list(community),
        )
        return self._ended(await self.send(settle_round=settle))

    def _ended(self, reply: device_pb2.EventReply) -> device_pb2.EventReply:
        """A round the gateway settled or voided is over: events between rounds (a chip
        exchange) name no round."""
        if reply.accepted:
            self.round_id = ""
        return reply

    async def results(
        self, hands: dict[int, list[str]], community: list[str] | None = None
    ) -> device_pb2.EventReply:
        return self._ended(
            await self.send(
                hand_results=device_pb2.HandResults(
                    hands=[device_pb2.HandCards(seat=s, cards=c) for s, c in hands.items()],
                    community_cards=community or [],
                )
            )
        )


def lock_round_message(bets: Mapping[int, int]) -> device_pb2.LockRound:
    """A LockRound of ``bets`` (seat -> credits), in seat order."""
    return device_pb2.LockRound(
        bets=[device_pb2.SeatWager(seat=s, credits=c) for s, c in sorted(bets.items())]
    )
