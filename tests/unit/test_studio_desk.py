"""A studio table kept in the gateway's spool (jackpot.gateway.studio_desk on a real SQLite
spool): each command writes what it adds (a chunk's bets and answers as a row of their own, the
table's small head), a gateway restarted between any two chunks comes back as the table that
never restarted and answers the same, the round's rows go when it ends, a spool of the older
gateway (the whole round in the table's row) still restores, and a write that fails leaves the
table as the spool holds it (rules O1, O5, C1)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.studio_table import StudioBet, StudioTable
from jackpot.domain.table import Limits
from jackpot.gateway.settings import GatewaySettings, StudioTableSettings
from jackpot.gateway.spool import Spool, SpoolWrite
from jackpot.gateway.studio_desk import StudioDesk

pytestmark = pytest.mark.unit

TABLE = "S1"
LIMITS = Limits(min_bet=1000, max_bet=5000, credit_value=1000)
ROYAL = ["AH", "KH", "QH", "JH", "TH"]
CHUNK = 2_000
# What the gateway before the round's rows kept of a studio table (its StudioTable.to_state, as
# that code wrote it): round R1 open with two chunks, one bet of each refused, R0 voided.
OLDER_STATE: dict[str, Any] = {
    "table_id": "S1", "seats": 20000, "limits": [1000, 5000, 1000], "progressive_open": True,
    "phase": "betting", "round_id": "R1", "last_round_id": "R0",
    "bets": [["b1", 1, 1000, "p1"], ["b2", 2, 2000, "p2"], ["b3", 3, 1000, "p3"]],
    "folded": [],
    "chunks": [
        ["c1", "ae79b6064112a3a334ab695a837228d701ce84af19234dcdd188336306bff0d8",
         [["b1", 1, None, ""], ["b2", 2, None, ""],
          ["x", 0, "SEAT_OUT_OF_RANGE", "seat 0 is outside seats 1-20000 (O1)"]]],
        ["c2", "1d0849dea39e324116513799863455b02b7a3a1b6624cd58c8f213429853daaf",
         [["b3", 3, None, ""], ["y", 1, "INVALID_STATE", "seat 1 already bet this round (b1)"]]],
    ],
    "settled_by": ["void", "stream lost"], "published": 1,
}  # fmt: skip
OLDER_C1 = [
    StudioBet("b1", 1, 1000, "p1"),
    StudioBet("b2", 2, 2000, "p2"),
    StudioBet("x", 0, 1000, "px"),
]


def settings(path: Path) -> GatewaySettings:
    studio = StudioTableSettings(table_id=TABLE, pot_group_id="g1", seats=20_000, studio="s")
    return GatewaySettings(name="pit", studio_tables=(studio,), spool_path=str(path))


@pytest.fixture
def open_desk() -> Iterator[Callable[[Path], StudioDesk]]:
    """A desk on the spool at a path, its table open (the pot group heard); every spool closed
    at the end."""
    spools: list[Spool] = []

    def opened(path: Path) -> StudioDesk:
        spools.append(Spool(path))
        desk = StudioDesk(settings(path), spools[-1], asyncio.Event())
        desk.refresh(lambda _: "", lambda _: LIMITS)
        return desk

    yield opened
    for spool in spools:
        spool.close()


def restarted(desk: StudioDesk, open_desk: Callable[[Path], StudioDesk]) -> StudioDesk:
    """The gateway stopped (its spool closed) and started again on the same spool."""
    desk.spool.close()
    return open_desk(Path(desk.settings.spool_path))


def chunk(number: int) -> list[StudioBet]:
    """The ``number``-th chunk of 2,000 bets (from 1); two refused: a seat that bet already (of
    the previous chunk, or of this one) and seat 0 (not a seat)."""
    first = (number - 1) * (CHUNK - 2) + 1
    seats = [*range(first, first + CHUNK - 2), max(first - 1, 1), 0]
    return [StudioBet(f"b{s}-{number}", s, 1000 * (1 + s % 5), f"p{s}") for s in seats]


def same(restored: StudioTable, table: StudioTable) -> None:
    """The same table: equal, as whole states (the order of its bets and chunks), and counting
    the same entries."""
    assert restored == table
    assert restored.to_state() == table.to_state()
    assert restored.entries == table.entries


def on_disk(desk: StudioDesk) -> tuple[dict[str, Any], list[tuple[str, int]]]:
    """The table's row and its round entries' keys, as the file holds them."""
    db = desk.spool._db
    (state,) = db.execute("SELECT state FROM tables WHERE table_id = ?", (TABLE,)).fetchone()
    keys = db.execute("SELECT round_id, number FROM round_entries ORDER BY 1, 2").fetchall()
    return json.loads(state), keys


class Writes:
    """Every write a desk hands its spool."""

    def __init__(self, desk: StudioDesk, monkeypatch: pytest.MonkeyPatch) -> None:
        self.writes: list[SpoolWrite] = []
        write = desk.spool.write

        async def recording(change: SpoolWrite) -> None:
            self.writes.append(change)
            await write(change)

        monkeypatch.setattr(desk.spool, "write", recording)


async def test_each_chunk_writes_its_own_row_and_a_restart_between_any_two_changes_nothing(
    tmp_path: Path, open_desk: Callable[[Path], StudioDesk], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two gateways get the same commands; one is restarted after every chunk. Its table comes
    back the table that never restarted, and answers the same: a resend as before, the same
    chunk id with other bets refused."""
    steady = open_desk(tmp_path / "steady.sqlite")
    desk = open_desk(tmp_path / "restarted.sqlite")
    writes = Writes(desk, monkeypatch).writes
    assert await desk.open_round(TABLE, "R1") == await steady.open_round(TABLE, "R1")
    answered = {}
    for number in range(1, 6):
        answered[number] = await desk.place_bets(TABLE, "R1", f"c{number}", chunk(number))
        assert answered[number] == await steady.place_bets(TABLE, "R1", f"c{number}", chunk(number))
        write = writes[-1]  # the chunk's row: its accepted bets and its answers, nothing before
        ((entry_number, entry),) = write.entries
        assert (write.round_id, entry_number, entry["chunk_id"]) == ("R1", number, f"c{number}")
        assert len(entry["accepted"]) == CHUNK - 2
        assert len(entry["answers"]) == CHUNK
        assert write.state is not None
        assert "bets" not in write.state
        desk = restarted(desk, open_desk)
        writes = Writes(desk, monkeypatch).writes
        same(desk.tables[TABLE], steady.tables[TABLE])
    assert on_disk(desk)[1] == [("R1", n) for n in range(1, 6)]
    assert await desk.place_bets(TABLE, "R1", "c3", chunk(3)) == (answered[3][0], True)
    with pytest.raises(DomainError) as replayed:
        await desk.place_bets(TABLE, "R1", "c3", chunk(6))
    assert replayed.value.reason == Reason.SEQUENCE_REPLAYED
    assert await desk.lock(TABLE, "R1") == await steady.lock(TABLE, "R1")
    assert await desk.fold(TABLE, "R1", [5, 7]) == await steady.fold(TABLE, "R1", [5, 7])
    desk = restarted(desk, open_desk)
    same(desk.tables[TABLE], steady.tables[TABLE])
    assert await desk.deal(TABLE, "R1", ROYAL) == await steady.deal(TABLE, "R1", ROYAL)
    assert on_disk(desk)[1] == []  # the round ended: its rows went with its result
    desk = restarted(desk, open_desk)
    same(desk.tables[TABLE], steady.tables[TABLE])
    assert await desk.deal(TABLE, "R1", ROYAL)  # a resend of the deal, known after a restart


async def test_a_command_is_one_transaction_of_its_rows_its_head_and_its_records(
    tmp_path: Path, open_desk: Callable[[Path], StudioDesk], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One write each (the spool commits a write in one transaction): the open, a chunk's row,
    the lock's record, a fold's row and its record, the deal's record with its round's rows
    gone; the table's head in every one, counting what it published."""
    desk = open_desk(tmp_path / "spool.sqlite")
    writes = Writes(desk, monkeypatch).writes
    await desk.open_round(TABLE, "R1")
    await desk.place_bets(TABLE, "R1", "c1", chunk(1))
    await desk.lock(TABLE, "R1")
    await desk.fold(TABLE, "R1", [3])
    await desk.deal(TABLE, "R1", ROYAL)
    shapes = [(len(w.entries), len(w.records), w.ended_round) for w in writes]
    assert shapes == [(0, 0, ""), (1, 0, ""), (0, 1, ""), (1, 1, ""), (0, 1, "R1")]
    assert [(w.state or {}).get("published") for w in writes] == [0, 0, 1, 2, 3]


async def test_a_spool_of_the_older_gateway_restores_and_is_rewritten_as_rows(
    tmp_path: Path, open_desk: Callable[[Path], StudioDesk]
) -> None:
    """The older gateway kept the whole round in the table's row: it comes back as that table,
    answers the same, and the file now holds the table's head and the round's entries."""
    path = tmp_path / "spool.sqlite"
    older = Spool(path)
    older._db.execute(
        "INSERT INTO tables (table_id, state) VALUES (?, ?)", (TABLE, json.dumps(OLDER_STATE))
    )
    older.close()
    desk = open_desk(path)
    expected = StudioTable.from_state(OLDER_STATE)
    expected.progressive_open, expected.limits = True, LIMITS
    assert desk.tables[TABLE] == expected
    assert desk.tables[TABLE].to_state() == expected.to_state()
    head, keys = on_disk(desk)
    assert "bets" not in head
    assert keys == [("R1", 1), ("R1", 2), ("R1", 3)]  # the bets, then each chunk's answers
    answers, resent = await desk.place_bets(TABLE, "R1", "c1", OLDER_C1)
    assert resent
    assert [(a.bet_id, a.reason) for a in answers] == [
        ("b1", None),
        ("b2", None),
        ("x", Reason.SEAT_OUT_OF_RANGE),
    ]
    assert (await desk.place_bets(TABLE, "R1", "c3", [StudioBet("b4", 4, 1000, "p4")]))[1] is False
    desk = restarted(desk, open_desk)
    assert on_disk(desk)[1][-1] == ("R1", 4)
    assert await desk.lock(TABLE, "R1") == (4, 5000, False)


async def test_a_write_that_fails_leaves_the_table_as_the_spool_holds_it(
    tmp_path: Path, open_desk: Callable[[Path], StudioDesk], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The platform hears the error and sends the chunk again: accepted then, and a restart
    finds the table that never failed."""
    desk = open_desk(tmp_path / "spool.sqlite")
    await desk.open_round(TABLE, "R1")
    await desk.place_bets(TABLE, "R1", "c1", chunk(1))
    before = desk.tables[TABLE].to_state()
    write = desk.spool.write

    async def failing(change: SpoolWrite) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(desk.spool, "write", failing)
    with pytest.raises(OSError, match="disk full"):
        await desk.place_bets(TABLE, "R1", "c2", chunk(2))
    assert desk.tables[TABLE].to_state() == before
    monkeypatch.setattr(desk.spool, "write", write)
    answers, resent = await desk.place_bets(TABLE, "R1", "c2", chunk(2))
    assert not resent
    assert sum(a.reason is None for a in answers) == CHUNK - 2
    table = desk.tables[TABLE]
    same(restarted(desk, open_desk).tables[TABLE], table)


async def test_E1_D5_a_round_opened_before_the_group_is_heard_takes_its_limits(
    tmp_path: Path,
) -> None:
    """A gateway just started: the platform opens a round while the table is closed and its
    limits unknown; its bets are refused as closed (D5). Once the pot group is heard the round
    takes the group's limits (E1: no bet of it was judged by others) and a bet within them is
    accepted, not refused as out of limits 0-0 to the round's end."""
    spool = Spool(tmp_path / "spool.sqlite")
    try:
        desk = StudioDesk(settings(tmp_path / "spool.sqlite"), spool, asyncio.Event())
        await desk.open_round(TABLE, "R1")
        closed, _ = await desk.place_bets(TABLE, "R1", "c1", [StudioBet("b1", 1, 1000, "p1")])
        assert [a.reason for a in closed] == [Reason.PROGRESSIVE_CLOSED]
        desk.refresh(lambda _: "", lambda _: LIMITS)
        answers, _ = await desk.place_bets(TABLE, "R1", "c2", [StudioBet("b2", 2, 2000, "p2")])
        assert [a.reason for a in answers] == [None]
        assert desk.tables[TABLE].limits == LIMITS
    finally:
        spool.close()
