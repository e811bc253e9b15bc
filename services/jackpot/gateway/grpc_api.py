"""The device endpoint: ``jackpot.v1.TableDeviceService/Connect`` over gRPC, and ``WatchTable``.

Requests are taken as raw bytes (no deserializer) so that a malformed message is answered with a
``MALFORMED`` reply and a dead letter instead of breaking the stream. ``WatchTable`` is the dealer
terminal's read-only view of its table (:mod:`jackpot.gateway.watch`): under mutual TLS only the
terminal certificate bound to that table may watch it, every other caller is refused and audited;
on plaintext (no identities: the local demo) it is open, like every read there.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import grpc
import structlog

from jackpot.domain.access import Action
from jackpot.domain.errors import DomainError, Reason
from jackpot.gateway.service import Gateway, Session
from jackpot.gateway.watch import watch_table
from jackpot.platform.authz import Authorizer
from jackpot.platform.grpc_edge import Call, answered
from jackpot.platform.tls import peer_principal
from jackpot.v1 import device_pb2

SERVICE_NAME = "jackpot.v1.TableDeviceService"
log = structlog.get_logger("jackpot.gateway")


class TableDeviceServicer:
    service_name = SERVICE_NAME

    def __init__(self, gateway: Gateway, authorizer: Authorizer | None = None) -> None:
        self._gateway = gateway
        if authorizer is None and gateway.access_log is not None:
            authorizer = Authorizer(gateway.settings.access, gateway.access_log)
        self.authorizer = authorizer

    def register(self, server: grpc.aio.Server) -> None:
        handler = grpc.stream_stream_rpc_method_handler(
            self.connect,
            request_deserializer=None,
            response_serializer=device_pb2.ConnectResponse.SerializeToString,
        )
        watch = grpc.unary_stream_rpc_method_handler(
            self.watch_table,
            request_deserializer=device_pb2.WatchTableRequest.FromString,
            response_serializer=device_pb2.WatchTableResponse.SerializeToString,
        )
        server.add_generic_rpc_handlers(
            (
                grpc.method_handlers_generic_handler(
                    SERVICE_NAME, {"Connect": handler, "WatchTable": watch}
                ),
            )
        )

    @answered
    async def watch_table(
        self, request: device_pb2.WatchTableRequest, call: Call
    ) -> AsyncIterator[device_pb2.WatchTableResponse]:
        """One table's view for its terminal (rule D3); see the module docstring for who may."""
        table_id = request.table_id
        if self._gateway.settings.access.tls.enabled:
            await call.admit(
                Action.WATCH_TABLE,
                target=table_id,
                table_id=table_id,
                detail="dealer terminal watches its table",
            )
        if table_id not in self._gateway.tables and table_id not in self._gateway.studio.tables:
            raise DomainError(Reason.UNKNOWN_TABLE, f"table {table_id!r} is not on this gateway")
        async for view in watch_table(self._gateway, table_id):
            yield device_pb2.WatchTableResponse(view=view)

    @answered
    async def connect(self, requests: object, call: Call) -> None:
        context = call.context
        try:
            first = await asyncio.wait_for(
                context.read(), self._gateway.settings.hello_timeout_seconds
            )
        except TimeoutError:
            await call.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "no Hello in time")
        if first is grpc.aio.EOF:
            return
        peer = peer_principal(context)
        try:
            session, welcome = self._gateway.hello(first, peer)
        except DomainError as refused:
            self._gateway.refuse_hello(first, refused, peer)  # counted, dead-lettered, audited
            raise
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
