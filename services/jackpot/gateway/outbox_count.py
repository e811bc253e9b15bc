"""The spool's outbox as counted in memory (:mod:`jackpot.gateway.spool`): which records are
committed and not yet acknowledged by the broker, and which acknowledged deletion is still owed to
the disk, shared by the event loop and the spool's writer thread. A ``COUNT(*)`` would walk the
whole outbox, which grows exactly when the broker is away and the watchdog asks most often."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections import deque
from collections.abc import Iterable


class OutboxCount:
    """The outbox as counted in memory, for the event loop and the writer thread: the ids
    committed and not acknowledged (as runs of consecutive ids), the last id committed, the
    last acknowledged and the last whose deletion is committed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: deque[list[int]] = deque()  # [first, last] of consecutive ids, in order
        self._depth = 0
        self._last = 0
        self._acknowledged = 0
        self._deleted = 0
        self._owed_since: float | None = None  # since when a deletion has been owed

    @classmethod
    def counted(cls, db: sqlite3.Connection) -> OutboxCount:
        """What ``db``'s outbox holds, counted once (AUTOINCREMENT ids from one writer: one
        run, unless an older spool had holes, then read id by id)."""
        outbox = cls()
        count, first, last = db.execute("SELECT COUNT(*), MIN(id), MAX(id) FROM outbox").fetchone()
        if count and count == last - first + 1:
            outbox._add_run(first, last)
        elif count:
            outbox._add(row[0] for row in db.execute("SELECT id FROM outbox ORDER BY id"))
        return outbox

    def _add(self, ids: Iterable[int]) -> None:
        for row_id in ids:
            self._add_run(row_id, row_id)

    def _add_run(self, first: int, last: int) -> None:
        """Ids ``first``..``last`` committed (those acknowledged already do not count)."""
        self._last = max(self._last, last)
        first = max(first, self._acknowledged + 1)
        if first > last:
            return
        if self._runs and self._runs[-1][1] + 1 == first:
            self._runs[-1][1] = last
        else:
            self._runs.append([first, last])
        self._depth += last - first + 1

    def committed(self, ids: list[int], deleted: list[int]) -> None:
        """A transaction committed: its records (``ids``) count, its deletions (through each of
        ``deleted``) are acknowledged and done."""
        with self._lock:
            self._add(ids)
            for through in deleted:
                self._acknowledge(through)
                self._deleted = max(self._deleted, min(through, self._last))
            if self._deleted >= self._acknowledged:
                self._owed_since = None
            elif deleted:  # acknowledged meanwhile: a whole idle time for a write to come
                self._owed_since = time.monotonic()

    def acknowledge(self, through: int) -> int | None:
        """Acknowledge through ``through`` (never past the last id committed): the new last
        acknowledged id, None if nothing new is."""
        with self._lock:
            return self._acknowledge(through)

    def _acknowledge(self, through: int) -> int | None:
        through = min(through, self._last)
        if through <= self._acknowledged:
            return None
        self._acknowledged = through
        while self._runs and self._runs[0][0] <= through:
            first, last = self._runs[0]
            if last <= through:
                self._runs.popleft()
                self._depth -= last - first + 1
            else:
                self._runs[0][0] = through + 1
                self._depth -= through - first + 1
        if self._owed_since is None and self._deleted < through:
            self._owed_since = time.monotonic()
        return through

    def owed(self) -> int | None:
        """The id through which an acknowledged deletion is not committed yet, if any."""
        with self._lock:
            return self._acknowledged if self._acknowledged > self._deleted else None

    def deadline(self, idle_seconds: float) -> float | None:
        """When the deletion owed must go alone (time.monotonic()), None if none is owed."""
        with self._lock:
            return None if self._owed_since is None else self._owed_since + idle_seconds

    def postpone(self) -> None:
        """The deletion failed: try again a whole idle time later, not in a busy loop."""
        with self._lock:
            if self._owed_since is not None:
                self._owed_since = time.monotonic()

    def unacknowledged(self) -> tuple[int, int]:
        """(last id acknowledged, last id committed): what ``pending`` may show lies between."""
        with self._lock:
            return self._acknowledged, self._last

    def depth(self) -> int:
        with self._lock:
            return self._depth
