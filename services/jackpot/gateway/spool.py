"""The gateway's durable spool: SQLite in WAL mode, written before a device is acknowledged.

One SQLite transaction per accepted device event stores the table's new state and the records
to publish (table events, dead letters) in an outbox. The publisher sends the outbox to Kafka in
order and deletes what the broker acknowledged. If the process dies after the broker acknowledged
but before the delete, those records are sent again on restart; they keep their event ids, and the
pot service ignores an event id it has applied, so nothing is applied twice.

Group commit: once :meth:`Spool.start_writer` has run, writes go to one writer thread with its
own connection. The writes that wait while it is busy go in one transaction (one fsync) when it is
free, and each caller's :meth:`Spool.write` returns only once that transaction is durable: a
device still hears "accepted" only after its event is on disk, but the tables of a pit share the
fsync and the event loop never waits for the disk. Reads stay on the loop's connection (WAL:
readers never wait for the writer).
"""

from __future__ import annotations

import asyncio
import json
import queue
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from jackpot.gateway import metrics

log = structlog.get_logger("jackpot.gateway.spool")
MAX_GROUP_WRITES = 1000  # writes in one transaction at most (a bound on the fsync's batch)


@dataclass(frozen=True, slots=True)
class OutboxRecord:
    id: int
    topic: str
    key: bytes
    value: bytes
    created_ns: int
    trace_context: str = ""  # the accepting span's traceparent ("" untraced)


@dataclass(frozen=True, slots=True)
class SpoolWrite:
    """One caller's change: a table's new state, records for the outbox, and/or the deletion of
    the outbox through an id the broker acknowledged."""

    table_id: str | None = None
    state: dict[str, Any] | None = None
    records: list[tuple[str, bytes, bytes]] = field(default_factory=list)
    delete_through: int | None = None
    # the accepted event's (sequence, fingerprint), and how many of the table's to keep
    seen: tuple[int, str] | None = None
    seen_window: int = 0
    trace_context: str = ""  # the traceparent the records are published with ("" untraced)


@dataclass(frozen=True, slots=True)
class _Waiting:
    write: SpoolWrite
    future: asyncio.Future[None]
    loop: asyncio.AbstractEventLoop


class Spool:
    def __init__(self, path: str | Path) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._path = str(path)
        self._writer: _GroupWriter | None = None
        self._db = _connect(self._path)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS outbox (id INTEGER PRIMARY KEY AUTOINCREMENT,"
            " topic TEXT NOT NULL, key BLOB NOT NULL, value BLOB NOT NULL, created_ns INTEGER)"
        )
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS tables (table_id TEXT PRIMARY KEY, state TEXT NOT NULL)"
        )
        # A table's remembered fingerprints (its resend memory), a row each: written one at a
        # time rather than as the whole window inside every state (70 KB per event).
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS seen (table_id TEXT NOT NULL, sequence INTEGER NOT NULL,"
            " fingerprint TEXT NOT NULL, PRIMARY KEY (table_id, sequence)) WITHOUT ROWID"
        )
        self._move_seen_out_of_states()
        self._add_trace_context_column()

    def _add_trace_context_column(self) -> None:
        """Spools written before traces existed get the column (empty for their records)."""
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(outbox)")}
        if "trace_context" not in columns:
            self._db.execute("ALTER TABLE outbox ADD COLUMN trace_context TEXT NOT NULL DEFAULT ''")

    def start_writer(self) -> None:
        """Send every further :meth:`write` to the group-commit writer thread (idempotent)."""
        if self._writer is None:
            self._writer = _GroupWriter(self._path)

    def close(self) -> None:
        """Finish the writes already queued, stop the writer thread, close the connection."""
        if self._writer is not None:
            self._writer.stop()
            self._writer = None
        self._db.close()

    async def write(self, change: SpoolWrite) -> None:
        """Make ``change`` durable; returns once it is on disk (group commit when started)."""
        if self._writer is None:
            self.commit_many([change])
            return
        loop = asyncio.get_running_loop()
        waiting = _Waiting(change, loop.create_future(), loop)
        self._writer.put(waiting)
        await waiting.future

    def submit(self, change: SpoolWrite) -> None:
        """Queue ``change`` without waiting for it (nobody is told it is durable); inline when
        the writer is not started."""
        if self._writer is None:
            self.commit_many([change])
            return
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        future.add_done_callback(_log_failure)
        self._writer.put(_Waiting(change, future, loop))

    def commit_many(self, changes: list[SpoolWrite]) -> None:
        """Apply ``changes`` in one transaction (one fsync), in order."""
        _commit(self._db, changes)

    def table_states(self) -> dict[str, dict[str, Any]]:
        """Every table's state as ``Table.to_state`` made it (its ``seen`` from its rows)."""
        states = {
            table_id: json.loads(state)
            for table_id, state in self._db.execute("SELECT table_id, state FROM tables")
        }
        for state in states.values():
            state["seen"] = []
        rows = self._db.execute("SELECT table_id, sequence, fingerprint FROM seen ORDER BY 1, 2")
        for table_id, sequence, fingerprint in rows:
            if table_id in states:
                states[table_id]["seen"].append([sequence, fingerprint])
        return states

    def _move_seen_out_of_states(self) -> None:
        """A spool written before the ``seen`` rows kept the window in each state: move it."""
        rows = self._db.execute("SELECT table_id, state FROM tables").fetchall()
        old = [(table_id, json.loads(state)) for table_id, state in rows if '"seen"' in state]
        if not old:
            return
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            for table_id, state in old:
                self._db.executemany(
                    "INSERT OR REPLACE INTO seen (table_id, sequence, fingerprint) VALUES (?,?,?)",
                    [(table_id, seq, fingerprint) for seq, fingerprint in state.pop("seen")],
                )
                self._db.execute(
                    "UPDATE tables SET state = ? WHERE table_id = ?", (_json(state), table_id)
                )

    def commit(
        self,
        table_id: str | None,
        state: dict[str, Any] | None,
        records: list[tuple[str, bytes, bytes]],
    ) -> None:
        """Store a table's new state and its outgoing records atomically, on this thread."""
        self.commit_many([SpoolWrite(table_id, state, records)])

    def pending(self, limit: int = 500, after_id: int = 0) -> list[OutboxRecord]:
        """The oldest records of the outbox, after ``after_id`` (those already acknowledged but
        whose deletion is still queued)."""
        rows = self._db.execute(
            "SELECT id, topic, key, value, created_ns, trace_context FROM outbox"
            " WHERE id > ? ORDER BY id LIMIT ?",
            (after_id, limit),
        ).fetchall()
        return [OutboxRecord(*row) for row in rows]

    def delete_through(self, last_id: int) -> None:
        self.commit_many([SpoolWrite(delete_through=last_id)])

    def depth(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM outbox").fetchone()[0])

    def oldest_age_seconds(self) -> float:
        row = self._db.execute("SELECT MIN(created_ns) FROM outbox").fetchone()
        return 0.0 if row[0] is None else (time.time_ns() - row[0]) / 1e9


def _connect(path: str) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")  # durable before the device hears "accepted"
    return db


def _json(state: dict[str, Any]) -> str:
    return json.dumps(state, separators=(",", ":"))


def _commit(db: sqlite3.Connection, changes: list[SpoolWrite]) -> None:
    now = time.time_ns()
    with db:  # one transaction: COMMIT is the one fsync of the WAL
        db.execute("BEGIN IMMEDIATE")
        for change in changes:
            if change.table_id is not None and change.state is not None:
                state = {k: v for k, v in change.state.items() if k != "seen"}
                db.execute(
                    "INSERT INTO tables (table_id, state) VALUES (?, ?) "
                    "ON CONFLICT(table_id) DO UPDATE SET state = excluded.state",
                    (change.table_id, _json(state)),
                )
            if change.table_id is not None and change.seen is not None:
                sequence, fingerprint = change.seen
                db.execute(
                    "INSERT OR REPLACE INTO seen (table_id, sequence, fingerprint) VALUES (?,?,?)",
                    (change.table_id, sequence, fingerprint),
                )
                db.execute(  # the window ending at this sequence, nothing of an older life
                    "DELETE FROM seen WHERE table_id = ? AND (sequence <= ? OR sequence > ?)",
                    (change.table_id, sequence - change.seen_window, sequence),
                )
            if change.records:
                db.executemany(
                    "INSERT INTO outbox (topic, key, value, created_ns, trace_context)"
                    " VALUES (?, ?, ?, ?, ?)",
                    [(t, k, v, now, change.trace_context) for t, k, v in change.records],
                )
            if change.delete_through is not None:
                db.execute("DELETE FROM outbox WHERE id <= ?", (change.delete_through,))


def _log_failure(future: asyncio.Future[None]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.error("spool_write_failed", error=repr(future.exception()))


def _settle(future: asyncio.Future[None], error: BaseException | None) -> None:
    if future.cancelled():  # the caller went away; its write is durable (or failed) anyway
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)


class _GroupWriter:
    """One thread, one connection: whatever waits when it is free is one transaction."""

    def __init__(self, path: str) -> None:
        self._queue: queue.SimpleQueue[_Waiting | None] = queue.SimpleQueue()
        self._db = _connect(path)
        self._thread = threading.Thread(target=self._run, name="spool-writer", daemon=True)
        self._thread.start()

    def put(self, waiting: _Waiting) -> None:
        self._queue.put(waiting)

    def stop(self) -> None:
        self._queue.put(None)
        self._thread.join()
        self._db.close()

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            group = [first]
            stopping = False
            while len(group) < MAX_GROUP_WRITES:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stopping = True
                    break
                group.append(more)
            self._commit(group)
            if stopping:
                return

    def _commit(self, group: list[_Waiting]) -> None:
        error: BaseException | None = None
        metrics.SPOOL_GROUP_WRITES.observe(len(group))
        try:
            _commit(self._db, [w.write for w in group])
        except Exception as failed:  # every caller of the group hears it; none was accepted
            error = failed
        for waiting in group:
            waiting.loop.call_soon_threadsafe(_settle, waiting.future, error)
