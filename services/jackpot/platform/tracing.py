"""Traces of a round across the services (OpenTelemetry), off unless an OTLP endpoint is set.

A device event is followed from the gateway to the signs, one span per hop:

  ``gateway.accept``   the gateway judged the event and made it durable in its spool;
  ``gateway.publish``  the spooled record went to Kafka (from the spool write to the broker's ack);
  ``pot.process``      the pot's batch holding it: ``pot.apply`` (the rules) and
                       ``pot.transaction`` (outputs, state and offsets in one Kafka transaction);
  ``payout.process``   the payout's batch ordering the awards it produced (its own transaction);
  ``display.update``   the display read the pot update; ``display.push`` sent it to a sign.

The context travels in W3C trace-context form (``traceparent``): in the headers of every Kafka
record (the gateway keeps it beside the record in its spool, so a restart keeps it too), in the
metadata of every unary gRPC call (:class:`ClientTracing`, :class:`ServerTracing`), and on the sign
streams in ``LockTrace.traceparent``, since one long-lived stream carries many rounds and its
metadata cannot name each of them. A batch of many events (the pot's, the payout's) is a child of
its first traced record and links to the others, as OpenTelemetry's messaging conventions do for
batches.

Export is OTLP over gRPC to ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (or
``OTEL_EXPORTER_OTLP_ENDPOINT``), with the SDK's standard variables for sampling
(``OTEL_TRACES_SAMPLER``, ``OTEL_TRACES_SAMPLER_ARG``). With no endpoint no tracer provider is
installed: every span below is the API's no-op, no header or column is written, and a channel
made meanwhile has no :class:`ClientTracing`, nor a server :class:`ServerTracing` (they would
carry nothing, at a cost per call).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import grpc
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

    from jackpot.platform.service_settings import TracingSettings

TRACER = trace.get_tracer("jackpot")
TRACEPARENT = "traceparent"
UNTRACED_SERVICES = ("/grpc.health.v1.Health/", "/grpc.reflection.")  # probes: no traces

Headers = Sequence[tuple[str, bytes]]
_provider: TracerProvider | None = None


def configure_tracing(service: str, settings: TracingSettings, instance: str) -> bool:
    """Install the OTLP exporter for ``service`` when an endpoint is configured; True if so."""
    global _provider
    if not settings.endpoint:
        return False
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create(
        {"service.name": f"jackpot-{service}", "service.instance.id": instance}
    )
    _provider = TracerProvider(resource=resource)
    _provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=settings.endpoint))  # http:// plaintext
    )
    trace.set_tracer_provider(_provider)
    return True


def tracing_on() -> bool:
    """A tracer provider is installed (configured here, or by a test): spans may be recorded."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def shutdown_tracing() -> None:
    """Export what is still buffered (at a service's stop)."""
    if _provider is not None:
        _provider.shutdown()


# ------------------------------------------------------------------------ contexts


def traceparent(span: Span | None = None) -> str:
    """The W3C ``traceparent`` of ``span`` (or the current span); "" when it is not sampled."""
    if not (span or trace.get_current_span()).get_span_context().is_valid:
        return ""  # tracing off: the gateway asks once per device event, so answer at once
    carrier: dict[str, str] = {}
    current = trace.set_span_in_context(span) if span is not None else None
    propagate.inject(carrier, context=current)
    return carrier.get(TRACEPARENT, "")


def from_traceparent(value: str) -> otel_context.Context | None:
    """The context a ``traceparent`` names; None for "" or a malformed value."""
    if not value:
        return None
    found = propagate.extract({TRACEPARENT: value})
    return found if trace.get_current_span(found).get_span_context().is_valid else None


def kafka_headers(value: str | None = None) -> list[tuple[str, bytes]]:
    """Record headers carrying ``value`` (default: the current span's traceparent)."""
    value = traceparent() if value is None else value
    return [(TRACEPARENT, value.encode())] if value else []


def headers_of(span: Span | None) -> list[tuple[str, bytes]] | None:
    """Record headers carrying ``span``'s context; None for no span (nothing to carry)."""
    return (kafka_headers(traceparent(span)) or None) if span is not None else None


def from_headers(headers: Headers | None) -> otel_context.Context | None:
    """The trace context a Kafka record's headers carry, if any."""
    for name, value in headers or ():
        if name == TRACEPARENT:
            with contextlib.suppress(UnicodeDecodeError):
                return from_traceparent(value.decode())
    return None


def links_and_parent(
    contexts: Iterable[otel_context.Context | None],
) -> tuple[otel_context.Context | None, list[Link]]:
    """A batch's parent (its first traced record) and a link to every other one."""
    traced = [c for c in contexts if c is not None]
    if not traced:
        return None, []
    links = [Link(trace.get_current_span(c).get_span_context()) for c in traced[1:]]
    return traced[0], links


@contextlib.contextmanager
def batch_span(name: str, headers: Iterable[Headers | None], **attributes: Any) -> Iterator[Span]:
    """A span for a batch of consumed records: child of the first traced one, linked to the rest
    (no span at all, only the no-op, when none of them is traced)."""
    parent, links = links_and_parent(from_headers(h) for h in headers)
    if parent is None:
        yield trace.INVALID_SPAN
        return
    with TRACER.start_as_current_span(
        name, context=parent, kind=SpanKind.CONSUMER, links=links, attributes=attributes
    ) as span:
        yield span


def start_span_under(
    name: str, parent: str, start_ns: int | None = None, kind: SpanKind = SpanKind.PRODUCER
) -> Span | None:
    """A span (to be ended by the caller) under the context ``parent`` names, begun at
    ``start_ns`` (Unix ns, default now); None when ``parent`` is "" (the work was not traced)."""
    context = from_traceparent(parent)
    if context is None:
        return None
    return TRACER.start_span(name, context=context, kind=kind, start_time=start_ns)


@contextlib.contextmanager
def child_span(name: str, **attributes: Any) -> Iterator[Span]:
    """A span under the current one, only when there is one being recorded: work that also runs
    untraced (a heartbeat's transaction) starts no trace of its own."""
    if not trace.get_current_span().is_recording():
        yield trace.INVALID_SPAN
        return
    with TRACER.start_as_current_span(name, attributes=attributes) as span:
        yield span


def failed(error: BaseException) -> None:
    """The current span's work failed (a transaction aborted): recorded with the error."""
    span = trace.get_current_span()
    if span.is_recording():
        span.record_exception(error)
        span.set_status(Status(StatusCode.ERROR, type(error).__name__))


# ------------------------------------------------------------------------ gRPC metadata


class ClientTracing(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """Puts the caller's trace context in the metadata of every unary call."""

    async def intercept_unary_unary(
        self,
        continuation: Callable[[grpc.aio.ClientCallDetails, Any], Awaitable[Any]],
        details: grpc.aio.ClientCallDetails,
        request: Any,
    ) -> Any:
        value = traceparent()
        if value:
            metadata = [*(details.metadata or ()), (TRACEPARENT, value)]
            details = grpc.aio.ClientCallDetails(
                details.method,
                details.timeout,
                metadata,
                details.credentials,
                details.wait_for_ready,
            )
        return await continuation(details, request)


class ServerTracing(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """A SERVER span per unary call, child of the context the caller's metadata carries."""

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(details)
        method = details.method
        if handler is None or handler.unary_unary is None or method.startswith(UNTRACED_SERVICES):
            return handler
        metadata = {k: v for k, v in details.invocation_metadata or () if isinstance(v, str)}
        parent = from_traceparent(metadata.get(TRACEPARENT, ""))
        inner = handler.unary_unary

        async def traced(request: Any, context: grpc.aio.ServicerContext) -> Any:
            with TRACER.start_as_current_span(
                method.lstrip("/"),
                context=parent,
                kind=SpanKind.SERVER,
                attributes={"rpc.system": "grpc", "rpc.method": method},
            ):
                return await inner(request, context)

        return grpc.unary_unary_rpc_method_handler(
            traced,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
