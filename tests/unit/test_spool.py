"""The gateway's spool: a table's resend memory kept as rows, and spools of the older layout."""

from __future__ import annotations

import json
from pathlib import Path

from jackpot.gateway.spool import Spool, SpoolWrite


def state(last: int, seen: list[list[object]] | None = None) -> dict[str, object]:
    out: dict[str, object] = {"table_id": "T1", "last_sequence": last}
    if seen is not None:
        out["seen"] = seen
    return out


def test_the_seen_rows_are_the_window_ending_at_the_last_sequence(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool.sqlite")
    try:
        for sequence in range(1, 11):
            spool.commit_many(
                [SpoolWrite("T1", state(sequence), seen=(sequence, f"f{sequence}"), seen_window=4)]
            )
        assert spool.table_states()["T1"]["seen"] == [[n, f"f{n}"] for n in range(7, 11)]
        # a table that starts over (a new life at sequence 1) keeps nothing of the old one
        spool.commit_many([SpoolWrite("T1", state(1), seen=(1, "new"), seen_window=4)])
        assert spool.table_states()["T1"]["seen"] == [[1, "new"]]
    finally:
        spool.close()


def test_a_spool_with_the_window_inside_each_state_is_moved_to_rows(tmp_path: Path) -> None:
    path = tmp_path / "spool.sqlite"
    spool = Spool(path)
    old = state(3, [[2, "b"], [3, "c"]])
    spool._db.execute(  # what the previous version wrote: the whole window in the state
        "INSERT INTO tables (table_id, state) VALUES (?, ?)", ("T1", json.dumps(old))
    )
    spool.close()
    reopened = Spool(path)
    try:
        assert reopened.table_states() == {"T1": old}
        (stored,) = reopened._db.execute("SELECT state FROM tables").fetchone()
        assert "seen" not in json.loads(stored)
    finally:
        reopened.close()
