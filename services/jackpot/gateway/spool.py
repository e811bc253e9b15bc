"""The gateway's durable spool: SQLite in WAL mode, written before a device is acknowledged.

One SQLite transaction per accepted device event stores the table's new state and the records
to publish (table events, dead letters) in an outbox. The publisher sends the outbox to Kafka in
order and acknowledges what the broker acknowledged. If the process dies after the broker
acknowledged but before the deletion is on disk, those records are sent again on restart; they
keep their event ids, and the pot service ignores an event id it has applied, so nothing is
applied twice.

Group commit: once :meth:`Spool.start_writer` has run, writes go to one writer thread with its
own connection. What costs a device message is the fsync, so the writer shares one among as many
writes as it can: after taking a write it keeps gathering those that arrive within a short
window (``gather_seconds``, a millisecond: the event loop hands writes over one by one, and most
would otherwise each open a transaction of their own), then commits them in one transaction.
Each caller's :meth:`Spool.write` returns only once that transaction is durable: a device still
hears "accepted" only after its event is on disk, but the tables of a pit share the fsync and
the event loop never waits for the disk. Reads stay on the loop's connection (WAL: readers never
wait for the writer).

The broker's acknowledgements cost no fsync of their own while devices write: an acknowledged
record leaves :meth:`Spool.depth` and :meth:`Spool.pending` at once (in memory), and its
deletion rides in the next group's transaction, or goes alone after ``ack_idle_seconds`` without
writes, and always at :meth:`Spool.close`. Losing a deletion loses nothing: the record is sent
again (same event id). The depth is counted in memory for the same reason: a ``COUNT(*)`` walks
the whole outbox, which grows exactly when the broker is away and the watchdog asks most often
(:mod:`jackpot.gateway.outbox_count`).

A table's resend memory is a row per remembered event. Its sequences follow each other, so the
window stays exact by deleting the one row that leaves it; rows of a table's older life (later
sequences than its state's, after a table started over) are removed once, when the spool
opens, and never shown by :meth:`Spool.table_states` meanwhile.

A studio table's open round is a row per entry too (a chunk's bets and answers, a fold: what one
command added), keyed by table, round and the entry's number in the round, beside the table's
small state: a command writes what it adds, never the round again, and the round's rows are
deleted in the transaction that ends it (:class:`SpoolWrite` ``entries``, ``ended_round``;
read back with :meth:`Spool.round_entries`).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
import queue
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from jackpot.domain.table import REMEMBERED_OUTCOMES
from jackpot.gateway import metrics
from jackpot.gateway.outbox_count import OutboxCount

log = structlog.get_logger("jackpot.gateway.spool")
MAX_GROUP_WRITES = 1000  # writes in one transaction at most (a bound on the fsync's batch)
GATHER_SECONDS = 0.001  # how long the writer waits for more writes to share an fsync
MAX_GATHER_SECONDS = 0.1  # a device waits this long at most for company on the disk
ACK_IDLE_SECONDS = 0.5  # an acknowledged deletion waits this long at most for a write to ride


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
    # a studio table's open round: the entries the change adds to it (number, JSON values), and
    # a round of the table that ended ("" none), whose entries all go
    round_id: str = ""
    entries: tuple[tuple[int, dict[str, Any]], ...] = ()
    ended_round: str = ""


@dataclass(frozen=True, slots=True)
class _Waiting:
    write: SpoolWrite
    future: asyncio.Future[None]
    loop: asyncio.AbstractEventLoop


class _Signal(enum.Enum):
    STOP = "stop"  # finish what is queued, then the thread ends
    WAKE = "wake"  # an acknowledgement came: its deletion has a deadline now
    IDLE = "idle"  # (never queued) the deadline passed without a write to ride with


class Spool:
    def __init__(
        self,
        path: str | Path,
        *,
        gather_seconds: float = GATHER_SECONDS,
        ack_idle_seconds: float = ACK_IDLE_SECONDS,
        seen_window: int = REMEMBERED_OUTCOMES,
    ) -> None:
        """Open (or create) the spool at ``path``. ``gather_seconds``: the writer's window
        (:meth:`start_writer`); ``ack_idle_seconds``: how long an acknowledged deletion waits
        for a write; ``seen_window``: the remembered events a table keeps (rows beyond it, and
        of an older life, are removed here)."""
        _check_gather(gather_seconds)
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._path = str(path)
        self._gather_seconds = gather_seconds
        self._ack_idle_seconds = ack_idle_seconds
        self._seen_window = seen_window
        self._writer: _GroupWriter | None = None
        self._db = _connect(self._path)
        self._create_tables()
        self._move_seen_out_of_states()
        self._add_trace_context_column()
        self._forget_other_lives()
        self._outbox = OutboxCount.counted(self._db)

    def _create_tables(self) -> None:
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
        # A studio table's open round, an entry a row (a chunk of bets is some 100 KB: a rowid
        # table, the key an index beside it).
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS round_entries (table_id TEXT NOT NULL,"
            " round_id TEXT NOT NULL, number INTEGER NOT NULL, entry TEXT NOT NULL,"
            " PRIMARY KEY (table_id, round_id, number))"
        )

    def _add_trace_context_column(self) -> None:
        """Spools written before traces existed get the column (empty for their records)."""
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(outbox)")}
        if "trace_context" not in columns:
            self._db.execute("ALTER TABLE outbox ADD COLUMN trace_context TEXT NOT NULL DEFAULT ''")

    def start_writer(self, gather_seconds: float | None = None) -> None:
        """Send every further :meth:`write` to the group-commit writer thread (idempotent);
        ``gather_seconds`` overrides the constructor's window (0: only what already waits)."""
        if self._writer is None:
            gather = self._gather_seconds if gather_seconds is None else gather_seconds
            _check_gather(gather)
            self._writer = _GroupWriter(self._path, self._outbox, gather, self._ack_idle_seconds)

    def close(self) -> None:
        """Finish the writes already queued and the deletions owed, stop the writer thread,
        close the connection."""
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

    def acknowledge(self, through_id: int) -> None:
        """The broker acknowledged every outbox record with id <= ``through_id``: they leave
        :meth:`depth` and :meth:`pending` now. With the writer started their deletion goes in
        the next group's transaction (alone after ``ack_idle_seconds`` without writes, and at
        :meth:`close`); without it, it is committed here. Never beyond the last id committed."""
        if self._writer is None:
            self.delete_through(through_id)
        elif self._outbox.acknowledge(through_id) is not None:
            self._writer.wake()

    def commit_many(self, changes: list[SpoolWrite]) -> None:
        """Apply ``changes`` in one transaction (one fsync), in order."""
        ids = _commit(self._db, changes)
        self._outbox.committed(ids, _deletions(changes))

    def table_states(self) -> dict[str, dict[str, Any]]:
        """Every table's state as ``Table.to_state`` made it (its ``seen`` from its rows: those
        of its current life, within the window)."""
        states = {
            table_id: json.loads(state)
            for table_id, state in self._db.execute("SELECT table_id, state FROM tables")
        }
        for state in states.values():
            state["seen"] = []
        rows = self._db.execute("SELECT table_id, sequence, fingerprint FROM seen ORDER BY 1, 2")
        for table_id, sequence, fingerprint in rows:
            state = states.get(table_id)
            if state is not None and self._in_window(state, sequence):
                state["seen"].append([sequence, fingerprint])
        return states

    def round_entries(self, table_id: str, round_id: str) -> list[tuple[int, dict[str, Any]]]:
        """The entries of a studio table's open round, (number, JSON values) in order."""
        rows = self._db.execute(
            "SELECT number, entry FROM round_entries WHERE table_id = ? AND round_id = ?"
            " ORDER BY number",
            (table_id, round_id),
        )
        return [(number, json.loads(entry)) for number, entry in rows]

    def _in_window(self, state: dict[str, Any], sequence: int) -> bool:
        last = state.get("last_sequence")
        return last is None or last - self._seen_window < sequence <= last

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

    def _forget_other_lives(self) -> None:
        """Remove the rows no table remembers: of an older life (a later sequence than the
        state's), older than the window, or of a table without a state. Once, here: each event
        deletes only the one row leaving its window."""
        lasts = [
            (table_id, json.loads(state).get("last_sequence"))
            for table_id, state in self._db.execute("SELECT table_id, state FROM tables")
        ]
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute("DELETE FROM seen WHERE table_id NOT IN (SELECT table_id FROM tables)")
            self._db.executemany(
                "DELETE FROM seen WHERE table_id = ? AND (sequence > ? OR sequence <= ?)",
                [(t, last, last - self._seen_window) for t, last in lasts if last is not None],
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
        """The oldest records of the outbox not acknowledged, after ``after_id`` too (the
        acknowledged ones may still be on disk, their deletion queued)."""
        acknowledged, last = self._outbox.unacknowledged()
        rows = self._db.execute(
            "SELECT id, topic, key, value, created_ns, trace_context FROM outbox"
            " WHERE id > ? AND id <= ? ORDER BY id LIMIT ?",
            (max(after_id, acknowledged), last, limit),
        ).fetchall()
        return [OutboxRecord(*row) for row in rows]

    def delete_through(self, last_id: int) -> None:
        """Delete the outbox through ``last_id`` now, on this thread (acknowledging it)."""
        self.commit_many([SpoolWrite(delete_through=last_id)])

    def depth(self) -> int:
        """Records committed and not yet acknowledged (counted in memory, no query)."""
        return self._outbox.depth()

    def oldest_age_seconds(self) -> float:
        """How long the oldest record not acknowledged has waited (0 for none)."""
        acknowledged, last = self._outbox.unacknowledged()
        row = self._db.execute(
            "SELECT created_ns FROM outbox WHERE id > ? AND id <= ? ORDER BY id LIMIT 1",
            (acknowledged, last),
        ).fetchone()
        return 0.0 if row is None or row[0] is None else (time.time_ns() - row[0]) / 1e9


def _check_gather(seconds: float) -> None:
    if not 0 <= seconds <= MAX_GATHER_SECONDS:
        raise ValueError(f"gather_seconds {seconds} is not within 0..{MAX_GATHER_SECONDS}")


def _connect(path: str) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")  # durable before the device hears "accepted"
    return db


def _json(state: dict[str, Any]) -> str:
    return json.dumps(state, separators=(",", ":"))


def _commit(
    db: sqlite3.Connection, changes: list[SpoolWrite], delete_through: int | None = None
) -> list[int]:
    """``changes`` in one transaction (COMMIT is the one fsync of the WAL), and the deletion of
    the outbox through ``delete_through`` with them; the outbox ids the records got."""
    now = time.time_ns()
    ids: list[int] = []
    with db:
        db.execute("BEGIN IMMEDIATE")
        for change in changes:
            _store_table(db, change)
            ids.extend(_insert_records(db, change, now))
            if change.delete_through is not None:
                db.execute("DELETE FROM outbox WHERE id <= ?", (change.delete_through,))
        if delete_through is not None:
            db.execute("DELETE FROM outbox WHERE id <= ?", (delete_through,))
    return ids


def _store_table(db: sqlite3.Connection, change: SpoolWrite) -> None:
    """A table's new state and the event it remembers; the one event leaving its window goes
    (the sequences of a table follow each other: the window stays exact)."""
    if change.table_id is None:
        return
    if change.state is not None:
        state = {k: v for k, v in change.state.items() if k != "seen"}
        db.execute(
            "INSERT INTO tables (table_id, state) VALUES (?, ?) "
            "ON CONFLICT(table_id) DO UPDATE SET state = excluded.state",
            (change.table_id, _json(state)),
        )
    if change.seen is not None:
        sequence, fingerprint = change.seen
        db.execute(
            "INSERT OR REPLACE INTO seen (table_id, sequence, fingerprint) VALUES (?,?,?)",
            (change.table_id, sequence, fingerprint),
        )
        if (forgotten := sequence - change.seen_window) > 0:  # by its primary key
            db.execute(
                "DELETE FROM seen WHERE table_id = ? AND sequence = ?", (change.table_id, forgotten)
            )
    _store_round(db, change.table_id, change)


def _store_round(db: sqlite3.Connection, table_id: str, change: SpoolWrite) -> None:
    """The entries a studio table's change adds to its open round; a round that ended, gone."""
    db.executemany(
        "INSERT INTO round_entries (table_id, round_id, number, entry) VALUES (?, ?, ?, ?)",
        [(table_id, change.round_id, n, _json(entry)) for n, entry in change.entries],
    )
    if change.ended_round:
        db.execute(
            "DELETE FROM round_entries WHERE table_id = ? AND round_id = ?",
            (table_id, change.ended_round),
        )


def _insert_records(db: sqlite3.Connection, change: SpoolWrite, now: int) -> list[int]:
    insert = (
        "INSERT INTO outbox (topic, key, value, created_ns, trace_context) VALUES (?, ?, ?, ?, ?)"
    )
    ids = []
    for topic, key, value in change.records:  # one by one: executemany tells no row ids
        row_id = db.execute(insert, (topic, key, value, now, change.trace_context)).lastrowid
        assert row_id is not None
        ids.append(row_id)
    return ids


def _deletions(changes: list[SpoolWrite], through: int | None = None) -> list[int]:
    """What a transaction of ``changes`` (and ``through``, a deletion owed) deleted through."""
    deleted = [c.delete_through for c in changes if c.delete_through is not None]
    return deleted if through is None else [*deleted, through]


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
    """One thread, one connection: the writes gathered within the window are one transaction,
    with the deletion the broker's acknowledgements owe."""

    def __init__(
        self, path: str, outbox: OutboxCount, gather_seconds: float, idle_seconds: float
    ) -> None:
        self._queue: queue.SimpleQueue[_Waiting | _Signal] = queue.SimpleQueue()
        self._outbox = outbox
        self._gather_seconds = gather_seconds
        self._idle_seconds = idle_seconds
        self._db = _connect(path)
        self._thread = threading.Thread(target=self._run, name="spool-writer", daemon=True)
        self._thread.start()

    def put(self, waiting: _Waiting) -> None:
        self._queue.put(waiting)

    def wake(self) -> None:
        """A deletion is owed: the writer, idle, must not sleep past its deadline."""
        self._queue.put(_Signal.WAKE)

    def stop(self) -> None:
        self._queue.put(_Signal.STOP)
        self._thread.join()
        self._db.close()

    def _run(self) -> None:
        stopping = False
        while not stopping:
            first = self._next()
            if first is _Signal.STOP:
                break
            if first is _Signal.IDLE:
                self._commit([])  # the acknowledged deletion, alone: no write came
                continue
            assert isinstance(first, _Waiting)
            group, stopping = self._gather(first)
            self._commit(group)
        if self._outbox.owed() is not None:  # at close, whatever is still owed
            self._commit([])

    def _next(self) -> _Waiting | _Signal:
        """The next write, STOP, or IDLE once a deletion owed has waited its idle time."""
        while True:
            deadline = self._outbox.deadline(self._idle_seconds)
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                item = self._queue.get(timeout=timeout)
            except queue.Empty:
                return _Signal.IDLE
            if item is not _Signal.WAKE:
                return item

    def _gather(self, first: _Waiting) -> tuple[list[_Waiting], bool]:
        """``first`` and the writes arriving within the window (up to MAX_GROUP_WRITES); and
        whether STOP came (the group is the last)."""
        group = [first]
        deadline = time.monotonic() + self._gather_seconds
        while len(group) < MAX_GROUP_WRITES:
            try:  # a timeout of 0 still takes what already waits
                item = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if item is _Signal.STOP:
                return group, True
            if isinstance(item, _Waiting):
                group.append(item)
        return group, False

    def _commit(self, group: list[_Waiting]) -> None:
        error: BaseException | None = None
        changes = [w.write for w in group]
        through = self._outbox.owed()
        if not changes and through is None:
            return
        try:
            ids = _commit(self._db, changes, through)
        except Exception as failed:  # every caller of the group hears it; none was accepted
            error = failed
            self._outbox.postpone()
            if not group:
                log.warning("spool_delete_failed", error=repr(failed))
        else:
            self._outbox.committed(ids, _deletions(changes, through))
        if group:
            metrics.SPOOL_GROUP_WRITES.observe(len(group))
        metrics.SPOOL_TRANSACTIONS.labels("writes" if group else "deletion").inc()
        for waiting in group:
            with contextlib.suppress(RuntimeError):  # its loop is closed: nobody to tell
                waiting.loop.call_soon_threadsafe(_settle, waiting.future, error)
