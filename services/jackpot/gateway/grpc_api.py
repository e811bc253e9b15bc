"""The device endpoint: ``jackpot.v1.TableDeviceService/Connect`` over gRPC.

Requests are taken as raw bytes (no deserializer) so that a malformed message is answered with a
``MALFORMED`` reply and a dead letter instead of breaking the stream.
"""

from __future__ import annotations

import asyncio
import contextlib

import grpc
import structlog

from jackpot.domain.errors import DomainError, Reason
from jackpot.gateway.service import Gateway, Session
from jackpot.platform.tls import peer_principal
from jackpot.v1 import device_pb2

SERVICE_NAME = "jackpot.v1.TableDeviceService"
log = structlog.get_logger("jackpot.gateway")

_STATUS = {
    Reason.UNKNOWN_TABLE: grpc.StatusCode.NOT_FOUND,
    Reason.UNKNOWN_GAME: grpc.StatusCode.FAILED_PRECONDITION,
    Reason.NOT_AUTHENTICATED: grpc.StatusCode.UNAUTHENTICATED,
    Reason.MALFORMED: grpc.StatusCode.INVALID_ARGUMENT,
}


class TableDeviceServicer:
    def __init__(self, gateway: Gateway) -> None:
        self._gateway = gateway

    def register(self, server: grpc.aio.Server) -> None:
        handler = grpc.stream_stream_rpc_method_handler(
            self.connect,
            request_deserializer=None,
            response_serializer=device_pb2.ConnectResponse.SerializeToString,
        )
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(SERVICE_NAME, {"Connect": handler}),)
        )

    async def connect(self, requests: object, context: grpc.aio.ServicerContext) -> None:
        try:
            first = await asyncio.wait_for(
                context.read(), self._gateway.settings.hello_timeout_seconds
            )
        except TimeoutError:
            await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "no Hello in time")
            return
        if first is grpc.aio.EOF:
            return
        peer = peer_principal(context)
        try:
            session, welcome = self._gateway.hello(first, peer)
        except DomainError as refused:
            self._gateway.refuse_hello(first, refused, peer)
            await context.abort(
                _STATUS.get(refused.reason, grpc.StatusCode.PERMISSION_DENIED),
                f"{refused.reason.value}: {refused.detail}",
            )
            return
        session.push(welcome)
        writer = asyncio.create_task(self._write(session, context))
        try:
            while not writer.done():
                raw = await context.read()
                if raw is grpc.aio.EOF:
                    break
                for response in await self._gateway.handle_event_durably(session.table_id, raw):
                    session.push(response)
        finally:
            self._gateway.disconnected(session)
            session.push(None)
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await writer

    @staticmethod
    async def _write(session: Session, context: grpc.aio.ServicerContext) -> None:
        while True:
            message = await session.outbox.get()
            if message is None:
                return
            await context.write(message)
