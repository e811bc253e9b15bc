"""The studio table the gateway keeps for the operator's platform (jackpot.domain.studio_table):
bets in chunks each answered on its own, resends recognised, the lock, folds, the shared hand
and the void (rules O1, O2, O5, E1, C1, D5)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.studio_table import (
    CHUNKS_REMEMBERED,
    MAX_CHUNK_BETS,
    BetAnswer,
    RoundEntry,
    StudioBet,
    StudioChange,
    StudioTable,
)
from jackpot.domain.table import Limits, Phase
from jackpot.domain.table_messages import (
    RoundLockedFact,
    RoundResultFact,
    RoundVoidedFact,
    SeatForfeitedFact,
)

ROYAL = ("AH", "KH", "QH", "JH", "TH")
T = TypeVar("T")


def studio(seats: int = 10_000) -> StudioTable:
    table = StudioTable("S1", seats, Limits(min_bet=1000, max_bet=5000, credit_value=1000))
    table.open_round("R1")
    return table


def bets(*seats: int, pesos: int = 1000) -> list[StudioBet]:
    return [StudioBet(f"b{seat}", seat, pesos, f"p{seat}") for seat in seats]


def refused(reason: Reason, call: Callable[..., object], *args: object) -> str:
    with pytest.raises(DomainError) as error:
        call(*args)
    assert error.value.reason == reason, error.value.detail
    return error.value.detail


def test_O1_E1_each_bet_of_a_chunk_is_answered_on_its_own() -> None:
    table = studio(seats=10_000)
    chunk = [
        StudioBet("a", 1, 1000, "ana"),
        StudioBet("b", 10_000, 5000, "bea"),
        StudioBet("c", 10_001, 1000, "cai"),  # O1: not a seat of this table
        StudioBet("d", 7, 1500, "dan"),  # E1: not whole credits
        StudioBet("e", 8, 6000, "eva"),  # E1: above the maximum
        StudioBet("f", 1, 1000, "fer"),  # the seat bet already (one player, one bet, a round)
        StudioBet("g", 9, 1000),  # O1: no player to pay
    ]
    answers, resent = table.place_bets("R1", "chunk-1", chunk)
    assert not resent
    assert [(a.bet_id, a.reason) for a in answers] == [
        ("a", None),
        ("b", None),
        ("c", Reason.SEAT_OUT_OF_RANGE),
        ("d", Reason.BET_OUT_OF_LIMITS),
        ("e", Reason.BET_OUT_OF_LIMITS),
        ("f", Reason.INVALID_STATE),
        ("g", Reason.MALFORMED),
    ]
    assert "already bet this round (a)" in answers[5].detail
    assert sorted(table.bets) == [1, 10_000]


def test_a_chunk_sent_again_gets_the_same_answers_and_changes_nothing() -> None:
    table = studio()
    first, _ = table.place_bets("R1", "c1", bets(1, 2, 20_000))
    state = table.to_state()
    again, resent = table.place_bets("R1", "c1", bets(1, 2, 20_000))
    assert resent
    assert again == first
    assert table.to_state() == state
    # the same chunk id with other bets is not a resend: refused whole
    detail = refused(Reason.SEQUENCE_REPLAYED, table.place_bets, "R1", "c1", bets(3))
    assert "sent before with other bets" in detail
    # answered the same after the lock too (the platform may not have heard the answer)
    table.lock("R1")
    assert table.place_bets("R1", "c1", bets(1, 2, 20_000)) == (first, True)


def test_C1_the_lock_collects_the_accepted_bets_and_a_bet_after_it_is_refused() -> None:
    table = studio()
    table.place_bets("R1", "c1", bets(3, 1, 2))
    assert table.lock("R1") == [
        RoundLockedFact("R1", ((1, 1000), (2, 1000), (3, 1000)), ((1, "p1"), (2, "p2"), (3, "p3")))
    ]
    assert table.lock("R1") == []  # a resend of the lock: nothing twice
    refused(Reason.BET_AFTER_LOCK, table.place_bets, "R1", "c2", bets(4))
    refused(Reason.INVALID_STATE, table.lock, "R2")


def test_a_chunk_too_large_or_empty_or_for_another_round_is_refused_whole() -> None:
    table = studio(seats=100_000)
    too_many = bets(*range(1, MAX_CHUNK_BETS + 2))
    refused(Reason.TOO_LARGE, table.place_bets, "R1", "big", too_many)
    refused(Reason.MALFORMED, table.place_bets, "R1", "empty", [])
    refused(Reason.MALFORMED, table.place_bets, "R1", "", bets(1))
    refused(Reason.INVALID_STATE, table.place_bets, "R9", "c1", bets(1))
    assert table.bets == {}


def test_D5_no_bet_while_the_progressive_is_closed() -> None:
    table = studio()
    table.progressive_open = False
    (answer,), _ = table.place_bets("R1", "c1", bets(1))
    assert answer.reason == Reason.PROGRESSIVE_CLOSED


def test_O5_E3_folds_after_the_lock_each_seat_answered() -> None:
    table = studio()
    table.place_bets("R1", "c1", bets(1, 2))
    refused(Reason.ROUND_NOT_LOCKED, table.fold, "R1", [1])
    table.lock("R1")
    facts, answers = table.fold("R1", [2, 5, 2])
    assert facts == [SeatForfeitedFact("R1", 2, "FOLD")]  # once, though named twice
    assert [(a.seat, a.reason) for a in answers] == [(2, None), (5, Reason.NO_BET), (2, None)]


def test_O2_the_shared_hand_settles_the_round_and_a_wrong_one_changes_nothing() -> None:
    table = studio()
    table.place_bets("R1", "c1", bets(1, 2))
    refused(Reason.ROUND_NOT_LOCKED, table.deal, "R1", ROYAL)
    table.lock("R1")
    state = table.to_state()
    refused(Reason.DUPLICATE_CARD, table.deal, "R1", ("AH", "KH", "QH", "JH", "AH"))
    refused(Reason.WRONG_CARD_COUNT, table.deal, "R1", ROYAL[:4])
    refused(Reason.INVALID_CARD, table.deal, "R1", ("AH", "KH", "QH", "JH", "1H"))
    refused(Reason.INVALID_STATE, table.deal, "R2", ROYAL)
    assert table.to_state() == state
    assert table.deal("R1", ROYAL) == [RoundResultFact("R1", (), (), ROYAL)]
    assert table.deal("R1", ROYAL) == []  # a resend: settled once
    refused(Reason.ROUND_NOT_LOCKED, table.deal, "R1", ("AS", "KS", "QS", "JS", "TS"))
    assert (table.phase, table.last_round_id, table.bets) == (Phase.IDLE, "R1", {})
    refused(Reason.INVALID_STATE, table.open_round, "R1")  # a settled round never opens again
    assert table.open_round("R2")
    assert not table.open_round("R2")  # a resend of the open


def test_C1_a_round_voids_before_its_lock_only() -> None:
    table = studio()
    table.place_bets("R1", "c1", bets(1, 2))
    assert table.void("R1", "stream lost") == [
        RoundVoidedFact("R1", "stream lost", ((1, 1000), (2, 1000)))
    ]
    assert table.void("R1", "stream lost") == []  # a resend
    table.open_round("R2")
    table.place_bets("R2", "c1", bets(1))
    table.lock("R2")
    assert "cannot be voided" in refused(Reason.INVALID_STATE, table.void, "R2", "late")


def test_the_state_survives_a_restart_exactly() -> None:
    """The spool keeps the table's state as JSON; what comes back answers resends the same."""
    table = studio()
    answers, _ = table.place_bets("R1", "c1", [*bets(1, 2), StudioBet("x", 0, 1000, "px")])
    table.lock("R1")
    table.fold("R1", [2])
    restored = StudioTable.from_state(json.loads(json.dumps(table.to_state())))
    assert restored == table
    assert restored.place_bets("R1", "c1", [*bets(1, 2), StudioBet("x", 0, 1000, "px")]) == (
        answers,
        True,
    )
    assert answers[2] == BetAnswer("x", 0, Reason.SEAT_OUT_OF_RANGE, answers[2].detail)


# ------------------------------------------------------------------- saved as head and entries


def changed(table: StudioTable, command: Callable[..., object], *args: object) -> StudioChange:
    """What ``command`` changed (it must change something)."""
    mark = table.mark()
    command(*args)
    change = table.change_since(mark)
    assert change is not None
    return change


def unchanged(table: StudioTable, command: Callable[..., object], *args: object) -> bool:
    mark = table.mark()
    command(*args)
    return table.change_since(mark) is None


class Spooled:
    """A studio table and what a spool holds of it, kept by its changes as JSON: its head and
    its open round's entries (a round's entries gone when it ends)."""

    def __init__(self, seats: int) -> None:
        self.table = StudioTable("S1", seats, Limits(1000, 5000, 1000))
        self.head: dict[str, Any] = {}
        self.entries: dict[tuple[str, int], dict[str, Any]] = {}
        self.run(self.table.open_round, "R1")

    def run(self, command: Callable[..., T], *args: object) -> T:
        mark = self.table.mark()
        result = command(*args)
        change = self.table.change_since(mark)
        if change is not None:
            self.head = json.loads(json.dumps(change.head))
            for number, entry in change.entries:
                row = json.loads(json.dumps(entry.to_row()))
                self.entries[change.round_id, number] = row
            self.entries = {k: v for k, v in self.entries.items() if k[0] != change.ended}
        return result

    def restored(self) -> StudioTable:
        round_id = self.head["round_id"]
        rows = sorted((n, row) for (r, n), row in self.entries.items() if r == round_id)
        return StudioTable.restored(self.head, rows)


def same_whole(restored: StudioTable, table: StudioTable) -> None:
    """Equal, and equal as whole states (the order of bets and remembered chunks included)."""
    assert restored == table
    assert restored.to_state() == table.to_state()


def same(restored: StudioTable, table: StudioTable) -> None:
    """The same table, counting the same entries."""
    same_whole(restored, table)
    assert restored.entries == table.entries


def test_each_command_saves_only_what_it_adds() -> None:
    table = StudioTable("S1", 10_000, Limits(1000, 5000, 1000))
    opened = changed(table, table.open_round, "R1")
    assert (opened.round_id, opened.entries, opened.ended) == ("R1", (), "")
    chunk = [*bets(1, 2), StudioBet("x", 0, 1000, "px")]
    placed = changed(table, table.place_bets, "R1", "c1", chunk)
    assert placed.head == {**opened.head, "entries": 1}  # the head holds no bet
    ((number, entry),) = placed.entries
    assert (number, entry.chunk_id, entry.accepted) == (1, "c1", tuple(bets(1, 2)))
    assert entry.answers == table.chunks["c1"][1]
    assert [n for n, _ in changed(table, table.place_bets, "R1", "c2", bets(3)).entries] == [2]
    assert unchanged(table, table.place_bets, "R1", "c1", chunk)  # a resend writes nothing
    locked = changed(table, table.lock, "R1")
    assert (locked.head["phase"], locked.entries) == ("locked", ())
    folded = changed(table, table.fold, "R1", [2, 5, 2, 3])
    assert folded.entries == ((3, RoundEntry(folded=(2, 3))),)
    assert unchanged(table, table.fold, "R1", [2])  # folded already: nothing new
    dealt = changed(table, table.deal, "R1", ROYAL)
    assert (dealt.entries, dealt.ended, dealt.head["entries"]) == ((), "R1", 0)


def test_a_round_restored_from_its_head_and_entries_is_the_table_that_never_restarted() -> None:
    """More chunks than the table remembers (the oldest forgotten, then its id sent again),
    refusals, folds: replayed from the entries, the same table, answering the same."""
    spooled = Spooled(seats=200_000)
    table = spooled.table
    sent = {f"c{n}": bets(*range(n * 10 + 1, n * 10 + 11), 0) for n in range(CHUNKS_REMEMBERED + 6)}
    for chunk_id, chunk in sent.items():  # ten bets and one refused (seat 0) each
        spooled.run(table.place_bets, "R1", chunk_id, chunk)
    spooled.run(table.place_bets, "R1", "c0", bets(1, 5_000))  # forgotten: judged anew
    same(spooled.restored(), table)
    restored, last = spooled.restored(), f"c{CHUNKS_REMEMBERED + 5}"
    again = restored.place_bets("R1", last, sent[last])
    assert again == (table.chunks[last][1], True)
    refused(Reason.SEQUENCE_REPLAYED, restored.place_bets, "R1", last, bets(9_999))
    spooled.run(table.lock, "R1")
    spooled.run(table.fold, "R1", [3, 4, 100_000])
    same(spooled.restored(), table)
    spooled.run(table.deal, "R1", ROYAL)
    assert spooled.entries == {}  # the round ended: its entries went with it
    same(spooled.restored(), table)


def test_a_change_the_spool_could_not_keep_is_rewound_exactly() -> None:
    table = studio(seats=100_000)
    for n in range(CHUNKS_REMEMBERED):
        table.place_bets("R1", f"c{n}", bets(n + 1))
    commands: list[Callable[[], object]] = [
        lambda: table.place_bets("R1", "new", bets(1, 500, 501)),  # the oldest chunk forgotten
        lambda: table.void("R1", "stream lost"),
        lambda: table.lock("R1"),
    ]
    for command in commands:
        before, entries = table.to_state(), table.entries
        mark = table.mark()
        command()
        assert table.to_state() != before
        table.rewind(mark)
        assert (table.to_state(), table.entries) == (before, entries)
    table.lock("R1")
    for command in [lambda: table.fold("R1", [1, 2]), lambda: table.deal("R1", ROYAL)]:
        before = table.to_state()
        mark = table.mark()
        command()
        table.rewind(mark)
        assert table.to_state() == before
    assert table.place_bets("R1", "c0", bets(1)) == ((BetAnswer("b1", 1),), True)


def test_a_whole_state_is_saved_as_a_head_and_entries_of_the_same_table() -> None:
    """An older spool's whole state: its bets in one entry, each remembered chunk's answers in
    one, and the table that comes back answers the same and takes further chunks."""
    table = studio()
    chunk = [*bets(1, 2), StudioBet("x", 0, 1000, "px")]
    first, _ = table.place_bets("R1", "c1", chunk)
    table.place_bets("R1", "c2", bets(3, 2))
    table.lock("R1")
    table.fold("R1", [3])
    change = StudioTable.from_state(json.loads(json.dumps(table.to_state()))).saved()
    assert [n for n, _ in change.entries] == [1, 2, 3]
    assert change.head["entries"] == 3
    rows = [(n, json.loads(json.dumps(entry.to_row()))) for n, entry in change.entries]
    restored = StudioTable.restored(json.loads(json.dumps(change.head)), rows)
    same_whole(restored, table)
    assert restored.place_bets("R1", "c1", chunk) == (first, True)


def test_entries_that_are_not_the_ones_the_head_counts_are_refused() -> None:
    spooled = Spooled(seats=10_000)
    for n in range(3):
        spooled.run(spooled.table.place_bets, "R1", f"c{n}", bets(n + 1))
    head, rows = spooled.head, sorted((n, row) for (_, n), row in spooled.entries.items())
    assert StudioTable.restored(head, rows) == spooled.table
    for wrong in (rows[:2], rows[1:], [rows[0], rows[2], rows[1]]):
        with pytest.raises(ValueError, match="not the 3 its head counts"):
            StudioTable.restored(head, wrong)
