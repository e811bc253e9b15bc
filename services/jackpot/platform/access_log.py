"""The access log's Kafka edge: a writer that appends to its hash chain, and a streamed reader.

:class:`AccessLog` owns one chain (``chain`` = this service instance) and appends its entries in
order through one writer task with an idempotent producer (acks=all). ``record`` returns a future
the caller may await (the admin and payout APIs do, so an allowed change is on the log before it
is answered) or ignore (a gateway noting a fault while Kafka is away: the entry is written when
Kafka returns). The future resolves only once the broker acknowledged the entry; an entry it
refused is sent again, on a new producer (:meth:`AccessLog._drop_producer` says why), and nothing
after it is sent meanwhile.

Resuming without reading the history (issue 23). After every entry the writer puts its chain's
head (sequence, hash, the entry's offset) on the compacted heads topic (AUDIT_HEADS, named after
the audit topic by :func:`jackpot.topics.audit_heads_topic`), with the same producer. A head also
says up to which audit offset nothing later of the chain existed (``checked_offset``: moved on at
start and every ``refresh_seconds`` while idle) and whether the writer then stopped cleanly
(``closed``). On start the writer reads the heads topic whole (one record per chain, not per
entry), checks that its head's entry is on the audit topic where the head says, and, unless the
head is closed, reads the audit topic from ``checked_offset`` to its end, for an entry written just
before a crash (after the entry, before its head). A chain without a head is new. The first start
after the upgrade, when the heads topic lacks the mark that every chain has its head
(:data:`EVERY_CHAIN`), scans the audit topic once, streamed, keeping one head per chain, and
writes every chain's head, then the mark; so does a writer whose head is not on the log (a
recreated topic).

Reading (:func:`read_entries`) is streamed through :class:`jackpot.platform.kafka.TopicReader`:
nothing holds the topic. Pure chaining and verification live in :mod:`jackpot.domain.access_chain`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

import structlog
from aiokafka import AIOKafkaProducer
from aiokafka.structs import RecordMetadata
from google.protobuf.message import DecodeError

from jackpot.domain.access import Principal, Role
from jackpot.domain.access_chain import GENESIS, AccessEntry, ChainHead
from jackpot.platform.kafka import (
    KafkaConnection,
    TopicReader,
    ensure_topics,
    read_records,
    stop_client,
)
from jackpot.platform.manifest import verified_digest
from jackpot.topics import AUDIT, AUDIT_HEADS, audit_heads_topic
from jackpot.v1 import audit_pb2

log = structlog.get_logger("jackpot.audit")

MAX_QUEUED = 10_000  # entries waiting for Kafka; beyond this, new ones are dropped and counted
EVERY_CHAIN = "*"  # the heads topic's mark: every chain with an entry before it has its head
REFRESH_SECONDS = 300.0  # while idle, the head's checked offset follows the audit topic's end
PARTITION = 0  # the audit topic has one partition (jackpot.topics.AUDIT)


def to_record(entry: AccessEntry) -> audit_pb2.AuditRecord:
    return audit_pb2.AuditRecord(**{**asdict(entry), "roles": list(entry.roles)})


def from_record(record: audit_pb2.AuditRecord) -> AccessEntry:
    values = {name.name: getattr(record, name.name) for name in fields(AccessEntry)}
    return AccessEntry(**{**values, "roles": tuple(record.roles)})


def decode(value: bytes | None) -> AccessEntry | None:
    """An audit record's entry, or None when the bytes are not one (the verifier says so)."""
    try:
        return from_record(audit_pb2.AuditRecord.FromString(value or b""))
    except DecodeError:
        return None


async def read_entries(
    connection: KafkaConnection, topic: str
) -> AsyncIterator[tuple[int, AccessEntry | None]]:
    """Every record of the audit topic in order, as (offset, entry), streamed from its beginning
    to the end it had when the read began; None for a record that is not an entry."""
    async for record in read_records(connection, topic):
        yield record.offset, decode(record.value)


@dataclass(slots=True)
class Resumed:
    """How a writer found where its chain stands at start (logged; tests assert on it)."""

    how: str = ""  # "closed head", "head", "new chain", or "full scan" (upgrade, stray head)
    heads_records: int = 0  # records read from the heads topic
    audit_records: int = 0  # records read from the audit topic
    read_from: list[int] = field(default_factory=list)  # where each audit read began


class AccessLog:
    """Appends this instance's entries to its chain on the audit topic, its head on the heads
    topic (``heads_topic``, default :func:`jackpot.topics.audit_heads_topic` of ``topic``)."""

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        chain: str,
        client_options: Mapping[str, Any] | None = None,
        *,
        heads_topic: str | None = None,
        refresh_seconds: float = REFRESH_SECONDS,
    ) -> None:
        if chain == EVERY_CHAIN:
            raise ValueError(f"{EVERY_CHAIN!r} is the heads topic's mark, not a chain")
        self._connection = KafkaConnection(
            {"bootstrap_servers": bootstrap_servers, **dict(client_options or {})}
        )
        self._topic = topic
        self._heads_topic = heads_topic or audit_heads_topic(topic)
        self._refresh_seconds = refresh_seconds
        self.head = ChainHead(chain)
        self._entry_offset = -1  # audit offset of the head's entry (-1: no entry yet)
        self._checked = 0  # no later entry of this chain before this audit offset
        self._in_flight = False  # an entry was sent and its head is not yet written
        self._queue: asyncio.Queue[tuple[dict[str, Any], asyncio.Future[AccessEntry]]] = (
            asyncio.Queue(MAX_QUEUED)
        )
        self._producer: AIOKafkaProducer | None = None
        self._writer: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()  # the chain's head is known and the producer started
        self.resumed = Resumed()
        self.dropped = 0
        self.write_failures = 0  # sends the broker did not acknowledge (each sent again)

    @property
    def chain(self) -> str:
        return self.head.chain

    @property
    def writer(self) -> asyncio.Task[None]:
        """The task that appends the entries (a part its service's supervisor watches)."""
        if self._writer is None:
            raise RuntimeError("the access log was not started")
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
                    self._connection.bootstrap_servers,
                    [
                        replace(AUDIT, name=self._topic),
                        replace(AUDIT_HEADS, name=self._heads_topic),
                    ],
                    **self._connection.client_options,
                )
                if self._producer is None:
                    self._producer = await self._started_producer()
                self.resumed = Resumed()
                await self._find_head()
                break
            except asyncio.CancelledError:
                raise
            except Exception as error:
                log.warning("audit_resume_retry", chain=self.chain, error=repr(error))
                await self._drop_producer()  # a head it failed to write spoils it (_send)
                await asyncio.sleep(1.0)
        self.ready.set()
        log.info(
            "audit_chain_resumed",
            chain=self.chain,
            sequence=self.head.sequence,
            how=self.resumed.how,
            heads_records=self.resumed.heads_records,
            audit_records=self.resumed.audit_records,
            read_from=self.resumed.read_from,
        )

    async def _started_producer(self) -> AIOKafkaProducer:
        producer = self._connection.producer(client_id=f"audit-{self.chain}")
        try:
            await producer.start()
        except BaseException:
            await stop_client(producer)
            raise
        return producer

    async def _find_head(self) -> None:
        """Where this chain stands, from its head and the audit records after it; written back
        as the head (its checked offset: the audit topic's end now)."""
        own, marked = await self._read_heads()
        async with self._connection.reader(self._topic) as reader:
            _, ends = await reader.bounds([PARTITION])
            end = ends.get(PARTITION, 0)
            found = False
            if marked and own is not None:
                found = await self._continue_from(reader, own, end)
            elif marked:
                self.resumed.how = "new chain"
                found = True
            if not found:
                self.resumed.how = "full scan"
                await self._scan_and_write_heads(reader, end)
        await self._write_head(end)

    async def _read_heads(self) -> tuple[audit_pb2.AuditHead | None, bool]:
        """This chain's head (None: none) and whether the mark that every chain has one is there,
        from the whole heads topic (compacted: about one record per chain)."""
        own: audit_pb2.AuditHead | None = None
        marked = False
        async for record in read_records(self._connection, self._heads_topic):
            self.resumed.heads_records += 1
            name = (record.key or b"").decode(errors="replace")
            head = _decode_head(record.value)
            if name == EVERY_CHAIN and head is not None:
                marked = True
            elif name == self.chain:
                own = head if head is not None and head.chain == name else None
        return own, marked

    async def _continue_from(self, reader: TopicReader, own: audit_pb2.AuditHead, end: int) -> bool:
        """Continue from ``own`` and any entries after it (False: its entry is not on the log)."""
        if own.sequence > 0:
            at = [e async for _, e in self._entries(reader, own.offset, own.offset + 1)]
            entry = at[0] if at else None
            if not (
                entry is not None
                and entry.chain == self.chain
                and (entry.sequence, entry.entry_hash) == (own.sequence, own.entry_hash)
            ):
                log.warning(
                    "audit_head_not_on_log", chain=self.chain, offset=own.offset, topic=self._topic
                )
                return False
        self.head = ChainHead(self.chain, own.sequence, own.entry_hash or GENESIS)
        self._entry_offset = own.offset if own.sequence > 0 else -1
        self.resumed.how = "closed head" if own.closed else "head"
        if not own.closed:  # a crash may have come between an entry and its head
            async for offset, entry in self._entries(reader, own.checked_offset, end):
                if (
                    entry is not None
                    and entry.chain == self.chain
                    and entry.sequence > self.head.sequence
                ):
                    self.head = self.head.advanced(entry)
                    self._entry_offset = offset
        return True

    async def _scan_and_write_heads(self, reader: TopicReader, end: int) -> None:
        """The audit topic once, streamed, keeping every chain's last entry; then each chain's
        head and the mark (after the upgrade, every writer then resumes from its head)."""
        heads: dict[str, audit_pb2.AuditHead] = {}
        async for offset, entry in self._entries(reader, 0, end):
            if entry is not None and entry.sequence > heads.get(entry.chain, _NO_HEAD).sequence:
                heads[entry.chain] = audit_pb2.AuditHead(
                    chain=entry.chain,
                    sequence=entry.sequence,
                    entry_hash=entry.entry_hash,
                    offset=offset,
                    checked_offset=end,
                )
        mine = heads.get(self.chain, _NO_HEAD)
        self.head = ChainHead(self.chain, mine.sequence, mine.entry_hash or GENESIS)
        self._entry_offset = mine.offset if mine.sequence else -1
        assert self._producer is not None
        sent = [
            await self._producer.send(self._heads_topic, h.SerializeToString(), key=c.encode())
            for c, h in heads.items()
        ]
        await asyncio.gather(*sent)
        mark = audit_pb2.AuditHead(chain=EVERY_CHAIN, checked_offset=end)
        await self._producer.send_and_wait(
            self._heads_topic, mark.SerializeToString(), key=EVERY_CHAIN.encode()
        )
        log.info("audit_heads_written", chains=len(heads), audit_end=end, chain=self.chain)

    async def _entries(
        self, reader: TopicReader, start: int, end: int
    ) -> AsyncIterator[tuple[int, AccessEntry | None]]:
        """Audit records [start, end) of partition 0, counted in :attr:`resumed`."""
        if start < end:
            self.resumed.read_from.append(start)
        async for record in reader.records(start={PARTITION: start}, end={PARTITION: end}):
            self.resumed.audit_records += 1
            yield record.offset, decode(record.value)

    def _head_record(self, checked: int, closed: bool = False) -> bytes:
        return audit_pb2.AuditHead(
            chain=self.chain,
            sequence=self.head.sequence,
            entry_hash=self.head.last_hash,
            offset=max(self._entry_offset, 0),
            checked_offset=checked,
            closed=closed,
        ).SerializeToString()

    async def _write_head(self, checked: int, closed: bool = False) -> None:
        await self._send(self._heads_topic, self._head_record(checked, closed))
        self._checked = checked

    async def _send(self, topic: str, value: bytes) -> RecordMetadata:
        """``value`` on ``topic``, once the broker acknowledged it; until then it is sent again
        (nothing after it is sent meanwhile: the chain keeps its order)."""
        while True:
            try:
                if self._producer is None:
                    self._producer = await self._started_producer()
                return await self._producer.send_and_wait(topic, value, key=self.chain.encode())
            except asyncio.CancelledError:
                raise
            except Exception as error:
                self.write_failures += 1
                log.warning("audit_write_retry", chain=self.chain, topic=topic, error=repr(error))
                await self._drop_producer()
                await asyncio.sleep(1.0)

    async def _drop_producer(self) -> None:
        """After a failed send, the next goes on a new producer: aiokafka's producer has spent
        the failed batch's sequence numbers, and the broker refuses each later batch of the
        partition from it (OUT_OF_ORDER_SEQUENCE_NUMBER) for ever. A new producer may write
        again an entry the broker had taken after all (an expired batch): an exact copy, which
        the verifier counts as a redelivery."""
        producer, self._producer = self._producer, None
        if producer is not None:
            await stop_client(producer)

    async def _refresh(self) -> None:
        """While idle: the head's checked offset to the audit topic's end, so that a crash costs
        the next start only what was written since (not everything since the last entry)."""
        try:
            async with asyncio.timeout(10):
                async with self._connection.reader(self._topic) as reader:
                    _, ends = await reader.bounds([PARTITION])
                end = ends.get(PARTITION, 0)
                if end > self._checked:
                    await self._write_head(end)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the next refresh, or the next entry's head, will do
            log.warning("audit_head_refresh_failed", chain=self.chain, error=repr(error))

    async def stop(self, drain_seconds: float = 5.0) -> None:
        """Write what is queued (for up to ``drain_seconds``), then stop; the head is marked
        closed when no entry was left half-written (its head not yet on the heads topic)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + drain_seconds
        if self._writer is not None:
            if self.ready.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._queue.join(), drain_seconds)
            # Cancel until it is done: a cancellation that lands as one of the resume's reads
            # completes can be lost (Python 3.11's wait_for), and the writer would go on waiting.
            while not self._writer.done():
                self._writer.cancel()
                await asyncio.wait({self._writer}, timeout=0.5)
            if not self._writer.cancelled() and self._writer.exception() is not None:
                log.warning(
                    "audit_writer_failed", chain=self.chain, error=repr(self._writer.exception())
                )
            left = deadline - loop.time()
            if self.ready.is_set() and not self._in_flight and left > 0:
                try:
                    await asyncio.wait_for(self._write_head(self._checked, closed=True), left)
                except Exception as error:  # not closed: the next start reads a little more
                    log.warning("audit_head_not_closed", chain=self.chain, error=repr(error))
        if self._producer is not None:
            await self._producer.stop()

    def record(
        self,
        principal: Principal,
        action: str,
        outcome: str,
        target: str = "",
        detail: str = "",
    ) -> asyncio.Future[AccessEntry]:
        """Queue an entry; the future resolves once it is on the log (acks=all)."""
        future: asyncio.Future[AccessEntry] = asyncio.get_running_loop().create_future()
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
            future.set_exception(RuntimeError("the access log is not accepting entries"))
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
        while True:
            try:
                fields, future = await asyncio.wait_for(self._queue.get(), self._refresh_seconds)
            except TimeoutError:
                await self._refresh()
                continue
            try:
                await self._append(fields, future)
            finally:
                self._queue.task_done()

    async def _append(self, fields: dict[str, Any], future: asyncio.Future[AccessEntry]) -> None:
        """The entry, then its head: a crash between the two is what a restart reads past the
        head for."""
        try:
            head, entry = self.head.append(**fields)
            self._in_flight = True
            sent = await self._send(self._topic, to_record(entry).SerializeToString())
            self.head, self._entry_offset = head, sent.offset
            if not future.done():
                future.set_result(entry)
            await self._write_head(sent.offset + 1)
            self._in_flight = False
        except asyncio.CancelledError:
            if not future.done():
                future.cancel()
            raise
        except Exception as error:
            if not future.done():
                future.set_exception(error)


_NO_HEAD = audit_pb2.AuditHead()


def _decode_head(value: bytes | None) -> audit_pb2.AuditHead | None:
    if value is None:  # a tombstone
        return None
    try:
        return audit_pb2.AuditHead.FromString(value)
    except DecodeError:
        return None


def entries_of(records: Iterable[tuple[int, AccessEntry | None]]) -> list[tuple[int, AccessEntry]]:
    return [(offset, entry) for offset, entry in records if entry is not None]


def _retrieved(future: asyncio.Future[AccessEntry]) -> None:
    if not future.cancelled():
        future.exception()
