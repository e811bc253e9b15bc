"""One trace of a round from its lock at the gateway to the sign that shows it (issue 18, item 4).

The real gateway, pot, payout and display services run in this process against the real broker,
with the OpenTelemetry SDK's in-memory exporter installed as the tracer provider; a device locks
a round and a sign controller watches the group over gRPC. The spans of the lock must form one
trace, hop by hop (gateway.accept → gateway.publish → pot.process → pot.apply, pot.transaction →
display.update → display.push), linked through the Kafka record headers, and the sign must be
handed the push span's context. The round's winning result is traced on into the payout's batch
that orders the prize. A unary call made inside a span carries its context in the gRPC metadata
to the server's span.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest
from loadtest.free_ports import free_port
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from jackpot.display.main import run_display
from jackpot.display.settings import DisplaySettings
from jackpot.domain.access import Role
from jackpot.domain.cards import Game
from jackpot.payout.main import run_payout
from jackpot.platform.service_settings import AccessSettings
from jackpot.platform.tls import TlsSettings, secure_channel
from jackpot.platform.tracing import from_traceparent
from jackpot.pot.settings import PotSettings
from jackpot.tools.demo_tables import POKER_CONFIG
from jackpot.v1 import (
    common_pb2,
    display_pb2,
    display_pb2_grpc,
    pot_pb2,
    pot_pb2_grpc,
    table_events_pb2,
)
from tests.integration.gateway_harness import (
    GROUP,
    Device,
    settings_for,
    start_gateway,
    wait_until,
)
from tests.integration.in_process import pot_in_process
from tests.integration.test_supervised_services import payout_settings  # the same topics

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
TABLE = "CAR-1"
ROYAL_FLUSH = ["AS", "KS", "QS", "JS", "TS"]
PARENTS = {  # each hop's span under the one before it
    "gateway.publish": "gateway.accept",
    "pot.process": "gateway.publish",
    "pot.apply": "pot.process",
    "pot.transaction": "pot.process",
    "display.update": "pot.transaction",
    "display.push": "display.update",
}
LOCK_TO_SIGN = [
    "gateway.accept",
    "gateway.publish",
    "pot.process",
    "pot.transaction",
    "display.update",
    "display.push",
]


@pytest.fixture(scope="module")
def exported() -> Iterator[InMemorySpanExporter]:
    """The SDK's in-memory exporter behind the process's tracer provider (one per process: the
    API allows a single provider, so later tests keep it, exporting nowhere)."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield exporter
    exporter.shutdown()


def pot_settings(bootstrap: str, unique: str, table_events: str, pot_updates: str) -> PotSettings:
    return PotSettings(
        bootstrap_servers=bootstrap,
        processor={
            "consumer_group": f"test-trace-{unique}",
            "transactional_id_prefix": f"test-trace-{unique}",
            "session_timeout_ms": 6_000,
            "heartbeat_ms": 1_000,
        },
        table_events_topic=table_events,
        pot_updates_topic=pot_updates,
        awards_topic=f"test.awards.{unique}",
        ledger_topic=f"test.ledger.{unique}",
        state_topic=f"test.trace.state.{unique}",
        dead_letter_topic=f"test.trace.dead-letter.{unique}",
        topic_partitions=1,
        metrics_port=0,
        grpc_address="127.0.0.1:0",
        log_json=False,
        access=AccessSettings(
            insecure_roles=frozenset({Role.OPERATOR}), audit_topic=f"test.trace.audit.{unique}"
        ),
    )


@contextlib.asynccontextmanager
async def floor(bootstrap: str, unique: str, spool: Path) -> AsyncIterator[tuple[str, str, str]]:
    """Pot, gateway and display in this process: (pot, gateway, display) gRPC addresses."""
    gateway_settings = settings_for(bootstrap, unique, spool)
    events_topic, updates_topic = (
        gateway_settings.table_events_topic,
        gateway_settings.pot_updates_topic,
    )
    pot = pot_in_process(pot_settings(bootstrap, unique, events_topic, updates_topic))
    await pot.start()
    display_settings = DisplaySettings(
        bootstrap_servers=bootstrap,
        grpc_address=f"127.0.0.1:{free_port()}",
        http_port=free_port(),
        metrics_port=0,
        pot_updates_topic=updates_topic,
        awards_topic=f"test.awards.{unique}",
        payouts_topic=f"test.payouts.{unique}",
    )
    stop = asyncio.Event()
    display = asyncio.create_task(run_display(display_settings, stop))
    payout = asyncio.create_task(run_payout(payout_settings(bootstrap, unique), stop))
    gateway = None
    try:
        gateway = await start_gateway(gateway_settings)
        yield f"127.0.0.1:{pot.grpc_port}", gateway.target, display_settings.grpc_address
    finally:
        stop.set()
        if gateway is not None:
            await gateway.stop()
        await asyncio.wait_for(display, 30)
        await asyncio.wait_for(payout, 30)
        await pot.stop()


async def open_group(pot_address: str) -> None:
    """The group and its table, created by a call made inside a span of the caller."""
    admin = pot_pb2.AdminContext(requested_by="ana", reason="tracing test")
    table = table_events_pb2.LinkTable(
        table_id=TABLE, game=common_pb2.GAME_CARIBBEAN, site="SCL",
        min_bet=1000, max_bet=5000, credit_value=1000,
    )  # fmt: skip
    async with secure_channel(pot_address, TlsSettings()) as channel:  # as every client's
        stub = pot_pb2_grpc.PotServiceStub(channel)  # type: ignore[no-untyped-call]
        config = json.dumps(POKER_CONFIG)
        with trace.get_tracer("test").start_as_current_span("operator.open-group"):
            await stub.CreatePotGroup(
                pot_pb2.CreatePotGroupRequest(pot_group_id=GROUP, config_json=config, admin=admin)
            )
        await stub.LinkTable(pot_pb2.LinkTableRequest(pot_group_id=GROUP, table=table, admin=admin))


async def watch_sign(address: str, states: list[display_pb2.SignState]) -> None:
    async with grpc.aio.insecure_channel(address) as channel:
        stub = display_pb2_grpc.SignServiceStub(channel)  # type: ignore[no-untyped-call]
        async for response in stub.WatchSigns(display_pb2.WatchSignsRequest(pot_group_ids=[GROUP])):
            states.append(response.sign)


def shown_trace(states: list[display_pb2.SignState]) -> common_pb2.LockTrace | None:
    """The lock of round R1 as a sign was sent it, with its trace context."""
    traces = (t for s in states for t in s.lock_traces if t.round_id == "R1" and t.traceparent)
    return next(traces, None)


def render(spans: dict[str, ReadableSpan]) -> str:
    """The trace as an indented tree: each span's start after the root and its duration (ms)."""
    root = spans["gateway.accept"]
    children: dict[int, list[ReadableSpan]] = {}
    for span in spans.values():
        if span.parent is not None:
            children.setdefault(span.parent.span_id, []).append(span)
    lines: list[str] = []

    def walk(span: ReadableSpan, depth: int) -> None:
        start = ((span.start_time or 0) - (root.start_time or 0)) / 1e6
        took = ((span.end_time or 0) - (span.start_time or 0)) / 1e6
        label = f"{'  ' * depth}{span.name}"
        lines.append(f"{label:<24} +{start:8.2f} ms  {took:8.2f} ms")
        for child in sorted(
            children.get(span.context.span_id, []), key=lambda c: c.start_time or 0
        ):
            walk(child, depth + 1)

    walk(root, 0)
    return "\n".join(lines) + "\n"


def award_trace(spans: list[ReadableSpan]) -> dict[str, ReadableSpan]:
    """The spans of the trace that began with the device's hand results."""
    for span in spans:
        attributes = span.attributes or {}
        if span.name == "gateway.accept" and attributes.get("jackpot.event") == "hand_results":
            return by_name(spans, span.context.trace_id)
    return {}


def by_name(spans: list[ReadableSpan], trace_id: int) -> dict[str, ReadableSpan]:
    return {s.name: s for s in spans if s.context is not None and s.context.trace_id == trace_id}


async def test_one_trace_follows_a_lock_from_the_gateway_to_the_sign(
    kafka_bootstrap: str, unique: str, tmp_path: Path, exported: InMemorySpanExporter
) -> None:
    states: list[display_pb2.SignState] = []
    async with floor(kafka_bootstrap, unique, tmp_path / "spool.sqlite") as (pot, gateway, sign):
        await open_group(pot)
        watcher = asyncio.create_task(watch_sign(sign, states))
        device = Device(gateway, TABLE, Game.CARIBBEAN)
        try:
            await wait_until(lambda: any(s.live for s in states), within=30)
            assert (await device.connect()).progressive_open
            assert (await device.open_round("R1")).accepted
            assert (await device.credits(1, 5)).accepted
            assert (await device.bet(1, 2)).accepted
            assert (await device.lock()).accepted
            await wait_until(lambda: shown_trace(states) is not None, within=30)
            assert (await device.results({1: ROYAL_FLUSH})).accepted
            await wait_until(
                lambda: "payout.process" in award_trace(list(exported.get_finished_spans())),
                within=30,
            )
        finally:
            await device.close()
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher

    shown = shown_trace(states)
    assert shown is not None
    context = from_traceparent(shown.traceparent)
    assert context is not None, shown.traceparent
    sign_parent = trace.get_current_span(context).get_span_context()
    await wait_until(
        lambda: "display.push" in by_name(list(exported.get_finished_spans()), sign_parent.trace_id)
    )
    spans = by_name(list(exported.get_finished_spans()), sign_parent.trace_id)
    assert set(PARENTS) | {"gateway.accept"} <= set(spans), sorted(spans)

    accept = spans["gateway.accept"]
    assert accept.parent is None  # the trace begins where the device's lock was accepted
    assert accept.attributes is not None
    assert accept.attributes["jackpot.table"] == TABLE
    assert accept.attributes["jackpot.round"] == "R1"
    assert accept.attributes["jackpot.event"] == "dealer_lock"
    for child, parent in PARENTS.items():
        assert spans[child].parent is not None, child
        assert spans[child].parent.span_id == spans[parent].context.span_id, (child, parent)
    # The sign was handed the push's own context: it can carry the trace on.
    assert sign_parent.span_id == spans["display.push"].context.span_id
    # Each hop begins after the one before it began (one clock: this process).
    starts = [spans[name].start_time or 0 for name in LOCK_TO_SIGN]
    assert starts == sorted(starts)

    # The result's award: the payout's processor continues that round's trace.
    awarded = award_trace(list(exported.get_finished_spans()))
    ordered = awarded["payout.process"]
    assert ordered.parent is not None
    assert ordered.parent.span_id == awarded["pot.transaction"].context.span_id
    assert awarded["payout.apply"].parent.span_id == ordered.context.span_id  # type: ignore[union-attr]
    assert awarded["payout.transaction"].parent.span_id == ordered.context.span_id  # type: ignore[union-attr]

    trace_file = REPO / "build" / "round-trace.txt"
    trace_file.parent.mkdir(exist_ok=True)
    trace_file.write_text(render(spans))

    # gRPC metadata: the pot's span of CreatePotGroup is a child of the caller's span.
    finished = list(exported.get_finished_spans())
    caller = next(s for s in finished if s.name == "operator.open-group")
    served = next(s for s in finished if s.name == "jackpot.v1.PotService/CreatePotGroup")
    assert served.parent is not None
    assert served.parent.span_id == caller.context.span_id
    assert served.context.trace_id == caller.context.trace_id
