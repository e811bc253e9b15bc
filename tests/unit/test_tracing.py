"""Tracing (jackpot.platform.tracing, issue 18 item 4): off without an endpoint, exported over
real OTLP/gRPC with one, and the context's carriers refuse what is not a trace context.

The whole lock-to-sign trace across the services is tests/integration/test_round_trace.py.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from jackpot.gateway.spool import Spool, SpoolWrite
from jackpot.platform.service_settings import TracingSettings
from jackpot.platform.settings import SettingsError, load
from jackpot.platform.tracing import (
    configure_tracing,
    from_headers,
    from_traceparent,
    kafka_headers,
    traceparent,
)
from jackpot.pot.settings import PotSettings

SAMPLED = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


class Collector(trace_service_pb2_grpc.TraceServiceServicer):  # type: ignore[misc]
    """An OTLP trace receiver: what an OpenTelemetry Collector's otlp receiver does."""

    def __init__(self) -> None:
        self.requests: list[trace_service_pb2.ExportTraceServiceRequest] = []
        self.received = threading.Event()

    def Export(
        self, request: trace_service_pb2.ExportTraceServiceRequest, context: object
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        self.requests.append(request)
        self.received.set()
        return trace_service_pb2.ExportTraceServiceResponse()


@pytest.fixture
def collector() -> Iterator[tuple[Collector, int]]:
    receiver = Collector()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(receiver, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield receiver, port
    server.stop(0)


def test_without_an_endpoint_tracing_is_off_and_nothing_is_carried() -> None:
    assert configure_tracing("pot", TracingSettings(), "test") is False
    assert traceparent() == ""
    assert kafka_headers() == []


def test_a_service_exports_its_spans_over_otlp_when_an_endpoint_is_set(
    collector: tuple[Collector, int],
) -> None:
    receiver, port = collector
    # In a process of its own: a tracer provider is installed once per process.
    script = textwrap.dedent(
        """
        from jackpot.platform.settings import load
        from jackpot.platform.tracing import TRACER, configure_tracing, shutdown_tracing
        from jackpot.pot.settings import PotSettings

        settings = load(PotSettings)
        assert configure_tracing("pot", settings.tracing, "pot-0")
        with TRACER.start_as_current_span("pot.process"):
            pass
        shutdown_tracing()
        """
    )
    environment = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}"}
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={**environment, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert receiver.received.wait(10)
    (resource_spans,) = [r for request in receiver.requests for r in request.resource_spans]
    attributes = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
    assert attributes["service.name"] == "jackpot-pot"
    assert attributes["service.instance.id"] == "pot-0"
    names = [s.name for scope in resource_spans.scope_spans for s in scope.spans]
    assert names == ["pot.process"]


def test_a_bad_endpoint_stops_the_service_with_one_line_naming_it() -> None:
    with pytest.raises(SettingsError) as error:
        load(PotSettings, {"OTEL_EXPORTER_OTLP_ENDPOINT": "collector-4317"})
    assert "\n" not in str(error.value)
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" in str(error.value)
    assert "'collector-4317'" in str(error.value)


def test_the_traces_endpoint_wins_over_the_general_one() -> None:
    settings = load(
        PotSettings,
        {
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://traces:4317",
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://all:4317",
        },
    )
    assert settings.tracing == TracingSettings(endpoint="http://traces:4317")


@pytest.mark.parametrize(
    "headers",
    [
        None,
        [],
        [("traceparent", b"not a trace context")],
        [("traceparent", b"\xff\xfe")],
        [("traceparent", b"00-00000000000000000000000000000000-00f067aa0ba902b7-01")],
        [("other", SAMPLED.encode())],
    ],
)
def test_a_record_without_a_valid_trace_context_starts_nothing(
    headers: list[tuple[str, bytes]] | None,
) -> None:
    assert from_headers(headers) is None


def test_a_valid_trace_context_is_read_from_headers_and_from_a_sign_trace() -> None:
    assert from_headers([("traceparent", SAMPLED.encode())]) is not None
    assert from_traceparent(SAMPLED) is not None
    assert from_traceparent("") is None


def test_a_spool_from_before_traces_gets_the_column_and_keeps_its_records(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as old:
        old.execute(
            "CREATE TABLE outbox (id INTEGER PRIMARY KEY AUTOINCREMENT, topic TEXT NOT NULL,"
            " key BLOB NOT NULL, value BLOB NOT NULL, created_ns INTEGER)"
        )
        old.execute(
            "INSERT INTO outbox (topic, key, value, created_ns) VALUES ('t', x'6b', x'76', 1)"
        )
    spool = Spool(path)
    try:
        spool.commit_many([SpoolWrite(records=[("t", b"k", b"w")], trace_context=SAMPLED)])
        pending = spool.pending()
    finally:
        spool.close()
    assert [(r.value, r.trace_context) for r in pending] == [(b"v", ""), (b"w", SAMPLED)]


def test_untraced_work_starts_no_trace_and_a_failed_transaction_is_marked() -> None:
    """A heartbeat's transaction (no span around it) records nothing; a transaction that fails
    inside a traced batch is an error span with the exception (in a process of its own)."""
    script = textwrap.dedent(
        """
        import json
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from jackpot.platform.tracing import batch_span, child_span, failed

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        with child_span("pot.transaction"):  # a heartbeat: nothing around it
            pass
        with batch_span("pot.process", [None, []]):  # records without a trace context
            pass
        traced = [[("traceparent", b"@SAMPLED@")]]
        with batch_span("pot.process", traced), child_span("pot.transaction"):
            failed(TimeoutError("commit timed out"))
        print(json.dumps([
            [s.name, s.status.status_code.name, [e.name for e in s.events]]
            for s in exporter.get_finished_spans()
        ]))
        """
    ).replace("@SAMPLED@", SAMPLED)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [
        ["pot.transaction", "ERROR", ["exception"]],
        ["pot.process", "UNSET", []],
    ]


def test_a_channel_carries_the_trace_context_only_with_a_tracer_provider() -> None:
    """No tracer provider: a channel has no ClientTracing and a server no ServerTracing (they
    would carry nothing, at a cost per call); once one is installed, a channel or a server made
    then has it (in a process of its own: one provider per process)."""
    script = textwrap.dedent(
        """
        import asyncio, json
        import grpc
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from jackpot.platform.grpc_server import GrpcServer
        from jackpot.platform.tls import TlsSettings, secure_channel
        from jackpot.platform.tracing import ClientTracing, ServerTracing

        made = []  # the interceptors each grpc.aio.server was given
        aio_server = grpc.aio.server
        def server(**kwargs):
            made.append(kwargs.get("interceptors") or [])
            return aio_server(**kwargs)
        grpc.aio.server = server

        async def traced() -> list[bool]:
            GrpcServer("127.0.0.1:0", [], [])
            async with secure_channel("127.0.0.1:1", TlsSettings()) as channel:
                interceptors = channel._unary_unary_interceptors or []
                return [
                    any(isinstance(i, ClientTracing) for i in interceptors),
                    any(isinstance(i, ServerTracing) for i in made[-1]),
                ]

        before = asyncio.run(traced())
        trace.set_tracer_provider(TracerProvider())
        print(json.dumps([before, asyncio.run(traced())]))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [[False, False], [True, True]]
