"""An asyncio gRPC server with the standard health and reflection services and a graceful stop.

Shape of grpc/grpc examples/python/helloworld/async_greeter_server_with_graceful_shutdown.py.

With mutual TLS the API port refuses callers without a client certificate, and so would refuse
Kubernetes' gRPC probes (the kubelet presents none). ``health_address`` opens a second, plaintext
port that serves only ``grpc.health.v1.Health`` from the same status: probes go there, the API
stays behind mTLS.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from jackpot.platform.tracing import ServerTracing, tracing_on

Registrar = Callable[[grpc.aio.Server], None]


class GrpcServer:
    """Owns one grpc.aio server: register servicers, start, mark serving, stop gracefully."""

    def __init__(
        self,
        address: str,
        registrars: Iterable[Registrar],
        service_names: Iterable[str],
        credentials: grpc.ServerCredentials | None = None,
        health_address: str = "",
    ) -> None:
        self._server = grpc.aio.server(
            # a span per call only while tracing is on: otherwise the interceptor wraps every
            # call's handler (a wallet credit's, a seat's bet) to carry nothing
            interceptors=[ServerTracing()] if tracing_on() else [],
            options=[
                ("grpc.max_receive_message_length", 1 << 20),
                ("grpc.keepalive_time_ms", 10_000),
                ("grpc.keepalive_timeout_ms", 5_000),
                ("grpc.http2.min_ping_interval_without_data_ms", 5_000),
                ("grpc.keepalive_permit_without_calls", 1),
                # Clients ping every few seconds to notice a frozen server (a dealer terminal
                # must leave a paused payout instance): never answer their pings with GOAWAY.
                ("grpc.http2.min_recv_ping_interval_without_data_ms", 1_000),
                ("grpc.http2.max_ping_strikes", 0),
            ],
        )
        for register in registrars:
            register(self._server)
        self.health = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self._server)
        self._names = list(service_names)
        reflection.enable_server_reflection(
            [*self._names, health.SERVICE_NAME, reflection.SERVICE_NAME], self._server
        )
        if credentials is None:
            self.port = self._server.add_insecure_port(address)
        else:
            self.port = self._server.add_secure_port(address, credentials)
        self._health_server: grpc.aio.Server | None = None
        self.health_port = 0
        if health_address:
            self._health_server = grpc.aio.server()
            health_pb2_grpc.add_HealthServicer_to_server(self.health, self._health_server)
            self.health_port = self._health_server.add_insecure_port(health_address)

    async def start(self) -> None:
        await self._server.start()
        if self._health_server is not None:
            await self._health_server.start()
        await self.set_serving(True)

    async def set_serving(self, serving: bool) -> None:
        status = (
            health_pb2.HealthCheckResponse.SERVING
            if serving
            else health_pb2.HealthCheckResponse.NOT_SERVING
        )
        for name in ["", *self._names]:
            await self.health.set(name, status)

    async def set_service_serving(self, name: str, serving: bool) -> None:
        """One API's status, the process's ("") unchanged: a standby is alive but serves nothing
        (liveness probes ask "", readiness and operators ask the API)."""
        await self.health.set(
            name,
            health_pb2.HealthCheckResponse.SERVING
            if serving
            else health_pb2.HealthCheckResponse.NOT_SERVING,
        )

    async def stop(self, grace_seconds: float = 5.0) -> None:
        """Refuse new calls, let calls in flight finish for up to ``grace_seconds``."""
        await self.set_serving(False)
        await self._server.stop(grace_seconds)
        if self._health_server is not None:
            await self._health_server.stop(0)

    async def wait_for_termination(self) -> None:
        await self._server.wait_for_termination()
