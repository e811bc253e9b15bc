"""A device endpoint that does no work: the yardstick of the simulator's own ceiling.

``jackpot.v1.TableDeviceService/Connect`` answering a Hello with a Welcome (progressive open,
the demo's limits) and every event at once with ``accepted`` (and each seat of a LockRound or a
SettleRound, so the simulator plays the whole round): no validation, no state, no spool,
no Kafka. It runs in processes of its own (``processes`` on one port: gRPC sets SO_REUSEPORT, so
the kernel spreads the connections), so whatever rate the simulator reaches against it is the
simulator's ceiling on this machine (a lower bound, should the null gateway itself saturate).

    python -m loadtest.null_gateway --port N   (prints "ready" once serving)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from types import TracebackType

import grpc

from jackpot.v1 import device_pb2
from loadtest.free_ports import free_port

SERVICE_NAME = "jackpot.v1.TableDeviceService"


def answer(raw: bytes) -> device_pb2.ConnectResponse:
    request = device_pb2.ConnectRequest.FromString(raw)
    if request.WhichOneof("message") == "hello":
        welcome = device_pb2.Welcome(
            table_id=request.hello.table_id,
            min_bet=1000,
            max_bet=5000,
            credit_value=1000,
            seats=7,
            progressive_open=True,
        )
        return device_pb2.ConnectResponse(welcome=welcome)
    event = request.event
    reply = device_pb2.EventReply(sequence=event.sequence, accepted=True)
    named = {  # the round form's seats, each accepted, as a real gateway answers them
        "lock_round": [bet.seat for bet in event.lock_round.bets],
        "settle_round": [forfeit.seat for forfeit in event.settle_round.forfeits],
    }.get(event.WhichOneof("payload") or "", [])
    reply.seats.extend(device_pb2.SeatReply(seat=seat, accepted=True) for seat in sorted(named))
    return device_pb2.ConnectResponse(reply=reply)


async def connect(
    requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext
) -> AsyncIterator[device_pb2.ConnectResponse]:
    async for raw in requests:
        yield answer(raw)


async def serve(port: int) -> None:
    server = grpc.aio.server()
    handler = grpc.stream_stream_rpc_method_handler(
        connect,
        request_deserializer=None,
        response_serializer=device_pb2.ConnectResponse.SerializeToString,
    )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(SERVICE_NAME, {"Connect": handler}),)
    )
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    print("ready", flush=True)
    await server.wait_for_termination()


class NullGateway:
    """``processes`` null-gateway processes on one port, for an ``async with``."""

    def __init__(self, processes: int = 2) -> None:
        self.processes = processes
        self.port = free_port()
        self.target = f"127.0.0.1:{self.port}"
        self._children: list[asyncio.subprocess.Process] = []

    async def __aenter__(self) -> NullGateway:
        for _ in range(self.processes):
            child = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "loadtest.null_gateway", "--port", str(self.port),
                stdout=asyncio.subprocess.PIPE,
            )  # fmt: skip
            self._children.append(child)
            assert child.stdout is not None
            line = await asyncio.wait_for(child.stdout.readline(), 60)
            if line.strip() != b"ready":
                await self.__aexit__(None, None, None)
                raise RuntimeError("the null gateway did not start")
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        for child in self._children:
            with contextlib.suppress(ProcessLookupError):
                child.kill()
            await child.wait()
        self._children = []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    asyncio.run(serve(parser.parse_args().port))


if __name__ == "__main__":
    main()
