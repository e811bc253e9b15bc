"""The audit log's Kafka edge: a writer that appends to its hash chain, and a reader.

:class:`AuditLog` owns one chain (``chain`` = this service instance). On start it reads the audit
topic to find its chain's last entry, so a restarted writer continues the chain instead of forking
it; then :meth:`AuditLog.record` appends entries in order through one writer task with an
idempotent producer (acks=all). ``record`` returns a future the caller may await (the admin and
payout APIs do, so an allowed change is on the log before it is answered) or ignore (a gateway
noting a fault while Kafka is away: the entry is written when Kafka returns).

Pure chaining and verification live in :mod:`jackpot.domain.auditchain`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, fields, replace
from typing import Any

import structlog
from aiokafka import AIOKafkaProducer
from google.protobuf.message import DecodeError

from jackpot.domain.access import Principal, Role
from jackpot.domain.auditchain import AuditEntry, ChainHead
from jackpot.platform.kafka import KafkaConnection, ensure_topics, idempotent_producer, read_records
from jackpot.platform.manifest import verified_digest
from jackpot.topics import AUDIT
from jackpot.v1 import audit_pb2

log = structlog.get_logger("jackpot.audit")

MAX_QUEUED = 10_000  # entries waiting for Kafka; beyond this, new ones are dropped and counted


def to_record(entry: AuditEntry) -> audit_pb2.AuditRecord:
    return audit_pb2.AuditRecord(**{**asdict(entry), "roles": list(entry.roles)})


def from_record(record: audit_pb2.AuditRecord) -> AuditEntry:
    values = {name.name: getattr(record, name.name) for name in fields(AuditEntry)}
    return AuditEntry(**{**values, "roles": tuple(record.roles)})


def decode(value: bytes | None) -> AuditEntry | None:
    """An audit record's entry, or None when the bytes are not one (the verifier says so)."""
    try:
        return from_record(audit_pb2.AuditRecord.FromString(value or b""))
    except DecodeError:
        return None


async def read_entries(
    bootstrap_servers: str, topic: str, client_options: Mapping[str, Any]
) -> list[tuple[int, AuditEntry | None]]:
    """Every record of the audit topic in order, as (offset, entry); None if undecodable."""
    connection = KafkaConnection({"bootstrap_servers": bootstrap_servers, **client_options})
    records = [r async for r in read_records(connection, topic)]
    return [(record.offset, decode(record.value)) for record in records]


class AuditLog:
    """Appends this instance's entries to its chain on the audit topic."""

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        chain: str,
        client_options: Mapping[str, Any] | None = None,
    ) -> None:
        self._bootstrap = bootstrap_servers
        self._topic = topic
        self._options = dict(client_options or {})
        self.head = ChainHead(chain)
        self._queue: asyncio.Queue[tuple[dict[str, Any], asyncio.Future[AuditEntry]]] = (
            asyncio.Queue(MAX_QUEUED)
        )
        self._producer: AIOKafkaProducer | None = None
        self._writer: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()  # the chain's head is known and the producer started
        self.dropped = 0

    @property
    def chain(self) -> str:
        return self.head.chain

    @property
    def writer(self) -> asyncio.Task[None]:
        """The task that appends the entries (a part its service's supervisor watches)."""
        if self._writer is None:
            raise RuntimeError("the audit log was not started")
        return self._writer

    async def start(self) -> None:
        """Start the writer; it first finds where this chain stands (retrying while Kafka is
        away, so a gateway can start and note faults before the brokers answer)."""
        self._writer = asyncio.create_task(self._write_forever(), name=f"audit-{self.chain}")
        digest = verified_digest()
        if digest:  # R6: the software this instance verified at start heads what it records
            me = Principal(self.chain, frozenset({Role.SERVICE}))
            self.note(me, "software_verified", "allowed", "jackpot", f"sha256:{digest}")

    async def _resume(self) -> None:
        while True:
            try:
                # Every writer may be first: the log must exist before it can be appended to.
                await ensure_topics(
                    self._bootstrap, [replace(AUDIT, name=self._topic)], **self._options
                )
                records = await read_entries(self._bootstrap, self._topic, self._options)
                break
            except asyncio.CancelledError:
                raise
            except Exception as error:
                log.warning("audit_resume_retry", chain=self.chain, error=repr(error))
                await asyncio.sleep(1.0)
        for _, entry in records:
            if (
                entry is not None
                and entry.chain == self.chain
                and entry.sequence > self.head.sequence
            ):
                self.head = self.head.advanced(entry)
        self._producer = idempotent_producer(
            self._bootstrap, client_id=f"audit-{self.chain}", **self._options
        )
        await self._producer.start()
        self.ready.set()
        log.info("audit_chain_resumed", chain=self.chain, sequence=self.head.sequence)

    async def stop(self, drain_seconds: float = 5.0) -> None:
        """Write what is queued (for up to ``drain_seconds``), then stop."""
        if self._writer is not None:
            if self.ready.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._queue.join(), drain_seconds)
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._writer
        if self._producer is not None:
            await self._producer.stop()

    def record(
        self,
        principal: Principal,
        action: str,
        outcome: str,
        target: str = "",
        detail: str = "",
    ) -> asyncio.Future[AuditEntry]:
        """Queue an entry; the future resolves once it is on the log (acks=all)."""
        future: asyncio.Future[AuditEntry] = asyncio.get_running_loop().create_future()
        values = {
            "principal": principal.name,
            "roles": [role.value for role in principal.roles],
            "action": action,
            "outcome": outcome,
            "target": target,
            "detail": detail,
            "time_ns": time.time_ns(),
        }
        try:
            self._queue.put_nowait((values, future))
        except asyncio.QueueFull:
            self.dropped += 1
            log.error("audit_queue_full", chain=self.chain, action=action, target=target)
            future.set_exception(RuntimeError("the audit log is not accepting entries"))
        return future

    def note(
        self,
        principal: Principal,
        action: str,
        outcome: str,
        target: str = "",
        detail: str = "",
    ) -> None:
        """:meth:`record` without waiting: for refusals and faults (the writer logs failures)."""
        self.record(principal, action, outcome, target, detail).add_done_callback(_retrieved)

    async def _write_forever(self) -> None:
        await self._resume()
        assert self._producer is not None
        while True:
            fields, future = await self._queue.get()
            try:
                head, entry = self.head.append(**fields)
                record = to_record(entry).SerializeToString()
                while True:
                    try:
                        await self._producer.send_and_wait(
                            self._topic, record, key=self.chain.encode()
                        )
                        break
                    except asyncio.CancelledError:
                        raise
                    except Exception as error:  # Kafka away: keep the order, try again
                        log.warning("audit_write_retry", chain=self.chain, error=repr(error))
                        await asyncio.sleep(1.0)
                self.head = head
                if not future.done():
                    future.set_result(entry)
            except asyncio.CancelledError:
                if not future.done():
                    future.cancel()
                raise
            except Exception as error:
                if not future.done():
                    future.set_exception(error)
            finally:
                self._queue.task_done()


def entries_of(records: Iterable[tuple[int, AuditEntry | None]]) -> list[tuple[int, AuditEntry]]:
    return [(offset, entry) for offset, entry in records if entry is not None]


def _retrieved(future: asyncio.Future[AuditEntry]) -> None:
    if not future.cancelled():
        future.exception()
