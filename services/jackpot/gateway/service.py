"""The gateway's service layer: device messages in, spooled table events out, fail-closed.

``Gateway.handle_event`` validates one device event (size, decoding, table binding, the game's
adapter, the table's round state machine), stores the table's new state and the resulting Kafka
records in the spool in one SQLite transaction, and only then answers the device. Served over
gRPC (``handle_event_durably``) the write is a group commit: the writes of every table waiting
meanwhile share one transaction and one fsync on the spool's writer thread, and the event loop
serves the other tables while the disk works. Three tasks run
beside it: the publisher drains the spool to Kafka in order; the pot watcher reads pot updates
(limits, sign value, heartbeats); the watchdog closes progressive betting on a table whose pot
group has been silent, or whose events wait unpublished, for longer than the heartbeat timeout
(rule D5), and reopens it when healthy.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import structlog
from aiokafka import ConsumerRecord
from google.protobuf.message import DecodeError
from opentelemetry import trace
from opentelemetry.trace import SpanKind

from jackpot.domain.access import ANONYMOUS, Action, Principal, Role
from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.table import (
    REMEMBERED_OUTCOMES,
    UNKNOWN_LIMITS,
    Limits,
    Table,
    limits_in_force,
)
from jackpot.domain.table_messages import (
    Outcome,
)
from jackpot.gateway import device_messages, event_records, metrics
from jackpot.gateway.adapters import ADAPTERS
from jackpot.gateway.hello import authenticated_hello
from jackpot.gateway.publisher import SpoolPublisher
from jackpot.gateway.settings import GatewaySettings
from jackpot.gateway.spool import Spool, SpoolWrite
from jackpot.gateway.studio_desk import StudioDesk
from jackpot.platform.access_log import AccessLog
from jackpot.platform.kafka import KafkaConnection, follow_latest
from jackpot.platform.tracing import TRACER, traceparent
from jackpot.v1 import device_pb2, pot_pb2

log = structlog.get_logger("jackpot.gateway")

ACCEPT_SPAN = "gateway.accept"  # a device event judged and made durable (jackpot.platform.tracing)


@dataclass(slots=True)
class PotView:
    """What the gateway caches of a pot group from its pot updates."""

    limits: Limits
    sign_value: int
    seen_at: float  # time.monotonic() of the last update or heartbeat
    # L4: (name, label, sign value) of every level, the main first; () for a one-level group.
    # Shown on the dealer terminal (WatchTable), never used to judge a bet.
    levels: tuple[tuple[str, str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class _Decision:
    """What one device message comes to: the replies, and what must be durable before them."""

    table_id: str
    responses: list[device_pb2.ConnectResponse]
    write: SpoolWrite | None = None
    # the table's state (without its remembered fingerprints) to go back to if the write fails,
    # and the accept to take back from those fingerprints
    before: dict[str, object] | None = None
    outcome: Outcome | None = None


@dataclass(slots=True)
class Session:
    """A connected table controller: commands are queued here and written by one writer."""

    table_id: str
    outbox: asyncio.Queue[device_pb2.ConnectResponse | None] = field(
        default_factory=lambda: asyncio.Queue(maxsize=1000)
    )

    def push(self, message: device_pb2.ConnectResponse | None) -> None:
        with contextlib.suppress(asyncio.QueueFull):  # a stuck controller resyncs on reconnect
            self.outbox.put_nowait(message)


class Gateway:
    def __init__(
        self,
        settings: GatewaySettings,
        spool: Spool,
        clock: Callable[[], float] = time.monotonic,
        access_log: AccessLog | None = None,
    ) -> None:
        self.settings = settings
        self.spool = spool
        self.access_log = access_log
        self._identity = Principal(f"gateway:{settings.name}", frozenset({Role.SERVICE}))
        self._faulted: set[str] = set()  # tables whose closing was audited as a fault
        self._clock = clock
        self._source = f"gateway:{settings.name}"
        saved = spool.table_states()
        self.tables: dict[str, Table] = {}
        for table in settings.tables:
            if table.table_id in saved:
                restored = Table.from_state(saved[table.table_id])
                restored.progressive_open = False  # until the pot group is heard from again
                self.tables[table.table_id] = restored
            else:
                self.tables[table.table_id] = Table(
                    table.table_id, table.game, UNKNOWN_LIMITS, progressive_open=False
                )
        self.pots: dict[str, PotView] = {}
        self._groups = settings.pot_groups
        self.closed_reason: dict[str, str] = {t.table_id: "starting" for t in settings.tables}
        self.sessions: dict[str, Session] = {}
        self._published = asyncio.Event()
        self._spooled = asyncio.Event()
        self.studio = StudioDesk(settings, spool, self._spooled)  # the studio tables (O1)
        self._stopping = asyncio.Event()
        self._publisher = SpoolPublisher(
            spool, settings, self._spooled, self._published, self._stopping
        )
        self._tasks: list[asyncio.Task[None]] = []
        self._table_locks: dict[str, asyncio.Lock] = {}
        self.publish_healthy = True

    # ----------------------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        # group commit from now on: the loop never waits for the disk
        self.spool.start_writer(gather_seconds=self.settings.spool_gather_ms / 1000)
        self._refresh_all()
        self._tasks = [
            asyncio.create_task(self._publisher.run(), name="gateway-publisher"),
            asyncio.create_task(self._pot_watcher(), name="gateway-pot-watcher"),
            asyncio.create_task(self._watchdog(), name="gateway-watchdog"),
        ]

    @property
    def tasks(self) -> list[asyncio.Task[None]]:
        """The publisher, the pot watcher and the watchdog: parts its supervisor watches."""
        return list(self._tasks)

    async def stop(self, flush_seconds: float = 5.0) -> None:
        """Close sessions; let the publisher finish its batch and flush the spool, then stop.

        A batch the broker may have acknowledged is never cut off half way when it can be
        avoided: the records would be sent again at the next start (same event ids).
        """
        for session in self.sessions.values():
            session.push(None)
        self._stopping.set()
        self._spooled.set()
        if not self._tasks:
            return
        publisher, *others = self._tasks
        for task in others:
            task.cancel()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(publisher), flush_seconds)
        publisher.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    async def drained(self, within_seconds: float = 10.0) -> bool:
        """Wait until the spool is empty (everything acknowledged by the broker)."""
        deadline = self._clock() + within_seconds
        while self.spool.depth():
            if self._clock() > deadline:
                return False
            self._published.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._published.wait(), 0.2)
        return True

    # ------------------------------------------------------------------------------ sessions

    def hello(
        self, raw: bytes, peer: Principal | None = None
    ) -> tuple[Session, device_pb2.ConnectResponse]:
        """Authenticate a controller's first message; the session replaces any older one.

        With mTLS, ``peer`` is the client certificate's principal: it must be a device bound to
        the table the Hello names (a stolen credential alone does not open another table).
        A refused Hello raises :class:`DomainError`; pass it to :meth:`refuse_hello`.
        """
        hello = authenticated_hello(raw, self.settings, peer)
        old = self.sessions.get(hello.table_id)
        if old is not None:
            old.push(None)
        session = Session(hello.table_id)
        self.sessions[hello.table_id] = session
        metrics.CONNECTED.set(len(self.sessions))
        table = self.tables[hello.table_id]
        log.info("device_connected", table=hello.table_id, device=hello.device_id)
        return session, device_messages.welcome(table)

    def disconnected(self, session: Session) -> None:
        if self.sessions.get(session.table_id) is session:
            del self.sessions[session.table_id]
        metrics.CONNECTED.set(len(self.sessions))

    def refuse_hello(self, raw: bytes, refused: DomainError, peer: Principal | None = None) -> None:
        metrics.REJECTS.labels(refused.reason.value).inc()
        if refused.reason is Reason.NOT_AUTHENTICATED and self.access_log is not None:
            self.access_log.note(
                peer or ANONYMOUS, Action.CONNECT_DEVICE.value, "refused", "", refused.detail
            )
        self._spool_dead_letter(raw, refused.reason, refused.detail, "")
        log.warning("device_refused", reason=refused.reason.value, detail=refused.detail)

    # -------------------------------------------------------------------------------- events

    def handle_event(self, table_id: str, raw: bytes) -> list[device_pb2.ConnectResponse]:
        """Apply one device message of an authenticated session, its spool write on this thread
        (a gateway never started: tests, tools); never raises for bad input."""
        with TRACER.start_as_current_span(ACCEPT_SPAN, kind=SpanKind.SERVER):
            decision = self._decide(table_id, raw)
            self._make_durable_inline(decision)
        return decision.responses

    async def handle_event_durably(
        self, table_id: str, raw: bytes
    ) -> list[device_pb2.ConnectResponse]:
        """Apply one device message; the replies once its spool write is durable (group commit
        with the other tables' writes, off the event loop). One message per table at a time."""
        async with self._table_lock(table_id):
            with TRACER.start_as_current_span(ACCEPT_SPAN, kind=SpanKind.SERVER):
                decision = self._decide(table_id, raw)
                if decision.write is not None:
                    try:
                        await self.spool.write(decision.write)
                    except Exception:
                        self._undo(decision)
                        raise
                    if decision.write.records:  # the publisher wakes for records only
                        self._spooled.set()
            return decision.responses

    def _table_lock(self, table_id: str) -> asyncio.Lock:
        lock = self._table_locks.get(table_id)
        if lock is None:
            lock = self._table_locks[table_id] = asyncio.Lock()
        return lock

    def _make_durable_inline(self, decision: _Decision) -> None:
        if decision.write is None:
            return
        try:
            self.spool.commit_many([decision.write])
        except Exception:
            self._undo(decision)
            raise
        if decision.write.records:
            self._spooled.set()

    def _undo(self, decision: _Decision) -> None:
        """The write failed: the table goes back to the state the spool still holds."""
        if decision.before is not None and decision.outcome is not None:
            table = self.tables[decision.table_id]
            before = {**decision.before, "seen": table.seen_before(decision.outcome)}
            self.tables[decision.table_id] = _restored(before, table)
            log.exception("spool_write_failed", table=decision.table_id)

    def _decide(self, table_id: str, raw: bytes) -> _Decision:
        """Judge one device message against its table (in memory) and say what to store."""
        sequence = 0
        try:
            event = device_messages.read_event(raw, self.settings.max_event_bytes)
            sequence = event.sequence
            return self._judge(table_id, event)
        except DomainError as error:
            metrics.REJECTS.labels(error.reason.value).inc()
            log.info(
                "device_event_refused",
                table=table_id,
                sequence=sequence,
                reason=error.reason.value,
                detail=error.detail,
            )
            letter = self._dead_letter_write(raw, error.reason, error.detail, table_id)
            return _Decision(table_id, [device_messages.reply(sequence, error=error)], letter)

    def _judge(self, table_id: str, event: device_pb2.DeviceEvent) -> _Decision:
        """A well-formed event against its table: a duplicate's reply, or the write it causes."""
        sequence = event.sequence
        kind = event.WhichOneof("payload") or "none"
        metrics.DEVICE_EVENTS.labels(kind).inc()
        accepting = trace.get_current_span()
        if accepting.is_recording():  # no attribute dict per event while tracing is off
            accepting.set_attributes(
                {
                    "jackpot.table": table_id,
                    "jackpot.round": event.round_id,
                    "jackpot.event": kind,
                    "jackpot.sequence": sequence,
                }
            )
        if event.table_id != table_id:
            raise DomainError(
                Reason.TABLE_MISMATCH,
                f"event for table {event.table_id!r} on the session of table {table_id}",
            )
        table = self.tables[table_id]
        device_input = ADAPTERS[table.game].to_input(event)
        is_new = sequence > table.last_sequence  # a resend is judged by its sequence alone
        opens = kind == "round_opened" or (kind == "lock_round" and not table.round_id)
        if is_new and not opens and event.round_id and event.round_id != table.round_id:
            raise DomainError(
                Reason.INVALID_STATE,
                f"event for round {event.round_id!r}; the table's round is "
                f"{table.round_id or 'none'}",
            )
        before = table.to_state(with_seen=False)
        fingerprint = device_messages.fingerprint(event)
        outcome = table.accept(sequence, device_input, fingerprint)
        if outcome.duplicate:
            metrics.DUPLICATES.inc()
            reply = device_messages.reply(sequence, duplicate=True, seats=outcome.seat_answers)
            return _Decision(table_id, [reply])
        records = [
            event_records.fact_record(self.settings, self._source, table, fact, event)
            for fact in outcome.facts
        ]
        write = SpoolWrite(
            table_id,
            table.to_state(with_seen=False),  # the spool stores the fingerprints a row each
            [r for r in records if r is not None],
            seen=(sequence, fingerprint),
            seen_window=REMEMBERED_OUTCOMES,
            trace_context=traceparent(),
        )
        responses = [
            device_messages.reply(sequence, seats=outcome.seat_answers),
            *device_messages.commands(outcome.facts),
        ]
        return _Decision(table_id, responses, write, before, outcome)

    def _dead_letter_write(
        self, raw: bytes, reason: Reason, detail: str, table_id: str
    ) -> SpoolWrite:
        letter = event_records.dead_letter_record(
            self.settings, self._source, raw, reason, detail, table_id
        )
        return SpoolWrite(records=[letter])

    def _spool_dead_letter(self, raw: bytes, reason: Reason, detail: str, table_id: str) -> None:
        self.spool.submit(self._dead_letter_write(raw, reason, detail, table_id))
        self._spooled.set()

    # ---------------------------------------------------------------- fail closed (rule D5)

    def _refresh_all(self) -> None:
        now = self._clock()
        closed = 0
        for configured in self.settings.tables:
            reason = self._closed_reason(configured.pot_group_id, now)
            table = self.tables[configured.table_id]
            pot = self.pots.get(configured.pot_group_id)
            group = pot.limits if pot is not None else None
            table.limits = limits_in_force(table.limits, group, not table.round_id)
            is_open = not reason
            if is_open != table.progressive_open or reason != self.closed_reason.get(
                table.table_id
            ):
                table.progressive_open = is_open
                self.closed_reason[table.table_id] = reason
                log.warning(
                    "progressive_opened" if is_open else "progressive_closed",
                    table=table.table_id,
                    pot_group=configured.pot_group_id,
                    reason=reason or None,
                )
                self._audit_transition(table.table_id, is_open, reason)
                session = self.sessions.get(table.table_id)
                if session is not None:
                    session.push(
                        device_pb2.ConnectResponse(
                            progressive_status=device_pb2.ProgressiveStatus(
                                open=is_open, reason=reason
                            )
                        )
                    )
            closed += 0 if is_open else 1
        limits = {group: pot.limits for group, pot in self.pots.items()}
        closed += self.studio.refresh(lambda group: self._closed_reason(group, now), limits.get)
        metrics.TABLES_CLOSED.set(closed)

    def _audit_transition(self, table_id: str, is_open: bool, reason: str) -> None:
        """A table that was open closing is a fault on the access log; its reopening closes it.
        (Tables start closed until their pot group is heard from: that is not a fault.)"""
        if self.access_log is None:
            return
        if not is_open and table_id not in self._faulted and not reason.startswith("no update"):
            self._faulted.add(table_id)
            self.access_log.note(self._identity, "progressive_closed", "fault", table_id, reason)
        elif is_open and table_id in self._faulted:
            self._faulted.discard(table_id)
            self.access_log.note(
                self._identity, "progressive_opened", "recovered", table_id, "reopened"
            )

    def _closed_reason(self, pot_group_id: str, now: float) -> str:
        """Why the progressive of a table of ``pot_group_id`` is closed; "" when it is open (as
        ``closed_reason`` stores it, so that an unchanged open table compares equal)."""
        timeout = self.settings.heartbeat_timeout_seconds
        pot = self.pots.get(pot_group_id)
        if pot is None:
            return f"no update from pot group {pot_group_id} yet"
        if now - pot.seen_at > timeout:
            return f"pot group {pot_group_id} silent for over {timeout:g} s"
        if not self.publish_healthy:
            return "events cannot be delivered to Kafka"
        return ""

    async def _watchdog(self) -> None:
        while True:
            await asyncio.sleep(min(0.25, self.settings.heartbeat_timeout_seconds / 4))
            depth = self.spool.depth()
            metrics.SPOOL_DEPTH.set(depth)
            self.publish_healthy = (
                self.spool.oldest_age_seconds() <= self.settings.heartbeat_timeout_seconds
            )
            self._refresh_all()

    def apply_pot_update(self, update: pot_pb2.PotUpdate) -> None:
        """Adopt a pot update of one of this gateway's groups; anything else is ignored.

        An update with impossible limits is not adopted, and does not count as a sign of life:
        the group's tables fail closed rather than take bets against nonsense (rules E1, D5).
        """
        if update.pot_group_id not in self._groups:
            return
        limits = Limits(update.min_bet, update.max_bet, update.credit_value)
        levels = tuple((level.name, level.label, level.sign_value) for level in update.levels)
        if not _sane(limits) or update.sign_value < 0 or any(v < 0 for _, _, v in levels):
            metrics.REJECTS.labels("INVALID_POT_UPDATE").inc()
            log.warning("pot_update_refused", pot_group=update.pot_group_id, limits=limits)
            return
        previous = self.pots.get(update.pot_group_id)
        self.pots[update.pot_group_id] = PotView(limits, update.sign_value, self._clock(), levels)
        if previous is None or previous.sign_value != update.sign_value:
            value = device_pb2.ConnectResponse(
                pot_value=device_pb2.PotValue(
                    pot_group_id=update.pot_group_id, sign_value=update.sign_value
                )
            )
            for configured in self.settings.tables:
                session = self.sessions.get(configured.table_id)
                if configured.pot_group_id == update.pot_group_id and session is not None:
                    session.push(value)
        if previous is None or previous.limits != limits:
            self._refresh_all()

    async def _pot_watcher(self) -> None:
        """Follow the pot updates topic from its end; no consumer group, nothing committed."""

        def on_record(record: ConsumerRecord[bytes, bytes]) -> None:
            try:
                self.apply_pot_update(pot_pb2.PotUpdate.FromString(record.value or b""))
            except DecodeError:
                log.warning("pot_update_malformed", offset=record.offset)

        await follow_latest(
            KafkaConnection.of(self.settings),
            [self.settings.pot_updates_topic],
            on_record,
            # Every pot group beats twice a second: silence this long means a stuck client too.
            idle_restart_seconds=2 * self.settings.heartbeat_timeout_seconds,
            request_timeout_ms=self.settings.kafka_request_timeout_ms,
        )


def _sane(limits: Limits) -> bool:
    return (
        0 < limits.credit_value <= limits.min_bet <= limits.max_bet
        and limits.min_bet % limits.credit_value == 0
        and limits.max_bet % limits.credit_value == 0
    )


def _restored(state: dict[str, object], table: Table) -> Table:
    restored = Table.from_state(state)
    restored.progressive_open = table.progressive_open
    return restored
