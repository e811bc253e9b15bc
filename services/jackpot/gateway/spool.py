"""The gateway's durable spool: SQLite in WAL mode, written before a device is acknowledged.

One SQLite transaction per accepted device event stores the table's new state and the records
to publish (table events, dead letters) in an outbox. The publisher sends the outbox to Kafka in
order and deletes what the broker acknowledged. If the process dies after the broker acknowledged
but before the delete, those records are sent again on restart; they keep their event ids, and the
pot service ignores an event id it has applied, so nothing is applied twice.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class OutboxRecord:
    id: int
    topic: str
    key: bytes
    value: bytes
    created_ns: int


class Spool:
    def __init__(self, path: str | Path) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")  # durable before the device hears "accepted"
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS outbox (id INTEGER PRIMARY KEY AUTOINCREMENT,"
            " topic TEXT NOT NULL, key BLOB NOT NULL, value BLOB NOT NULL, created_ns INTEGER)"
        )
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS tables (table_id TEXT PRIMARY KEY, state TEXT NOT NULL)"
        )

    def close(self) -> None:
        self._db.close()

    def table_states(self) -> dict[str, dict[str, Any]]:
        rows = self._db.execute("SELECT table_id, state FROM tables").fetchall()
        return {table_id: json.loads(state) for table_id, state in rows}

    def commit(
        self,
        table_id: str | None,
        state: dict[str, Any] | None,
        records: list[tuple[str, bytes, bytes]],
    ) -> None:
        """Store a table's new state and its outgoing records atomically."""
        now = time.time_ns()
        with self._db:  # one transaction
            self._db.execute("BEGIN IMMEDIATE")
            if table_id is not None and state is not None:
                self._db.execute(
                    "INSERT INTO tables (table_id, state) VALUES (?, ?) "
                    "ON CONFLICT(table_id) DO UPDATE SET state = excluded.state",
                    (table_id, json.dumps(state, separators=(",", ":"))),
                )
            self._db.executemany(
                "INSERT INTO outbox (topic, key, value, created_ns) VALUES (?, ?, ?, ?)",
                [(topic, key, value, now) for topic, key, value in records],
            )

    def pending(self, limit: int = 500) -> list[OutboxRecord]:
        rows = self._db.execute(
            "SELECT id, topic, key, value, created_ns FROM outbox ORDER BY id LIMIT ?", (limit,)
        ).fetchall()
        return [OutboxRecord(*row) for row in rows]

    def delete_through(self, last_id: int) -> None:
        with self._db:
            self._db.execute("DELETE FROM outbox WHERE id <= ?", (last_id,))

    def depth(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM outbox").fetchone()[0])

    def oldest_age_seconds(self) -> float:
        row = self._db.execute("SELECT MIN(created_ns) FROM outbox").fetchone()
        return 0.0 if row[0] is None else (time.time_ns() - row[0]) / 1e9
