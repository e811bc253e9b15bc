"""R14, D4: a pot group's state rebuilt from its ledger alone, and a restored state that disagrees
with the ledger refused (``jackpot.pot.ledger_restore``), without Kafka.

The ledger comes from the real pot processor playing interleaved rounds of three tables on a
group with a reserve that overflows, a mystery pot and a configuration change that waits for a
reset; the rebuilt state must equal the processor's own, but for the hidden mystery trigger,
which the ledger never holds and a rebuild draws anew.
"""

from __future__ import annotations

import itertools
import json
import random

import pytest
from loadtest.rounds import CONFIG, SimulatedTable, interleaved_rounds, simulated_tables

from jackpot.domain.cards import Game
from jackpot.domain.engine import PotGroup
from jackpot.domain.errors import DomainError
from jackpot.pot import commands
from jackpot.pot.ledger_audit import GroupAudit
from jackpot.pot.ledger_restore import audit_entries, disagreement, rebuild
from jackpot.pot.pot_book import InputRecord, PotBook
from jackpot.v1 import pot_pb2, table_events_pb2

GROUP = "restore-group"
MYSTERY_CONFIG = {
    **CONFIG,
    "pots": [
        {"name": "main", "percent": "60"},
        {"name": "reserve1", "percent": "30", "ceiling": 2_000_000, "overflow_to": "main"},
        {"name": "mystery", "percent": "10"},
    ],
    "mystery": {"pot": "mystery", "min": 20_000, "max": 60_000},
}


def trigger(low: int, high: int) -> tuple[int, bytes]:
    return (low + high) // 2, b"\x01" * 16


class Floor:
    """The pot processor of one partition, fed batch by batch, with its whole ledger."""

    def __init__(self, checkpoint_entries: int = 10_000) -> None:
        clock = itertools.count(1_780_000_000 * 10**9, 10**9)
        self.book = PotBook(
            0,
            clock_ns=lambda: next(clock),
            trigger_source=trigger,
            checkpoint_entries=checkpoint_entries,
        )
        self.ledger: list[pot_pb2.LedgerEntry] = []
        self.events: list[table_events_pb2.TableEvent] = []
        self.offset = 0

    def play(self, events: list[table_events_pb2.TableEvent]) -> None:
        self.events += events
        for event in events:
            out = self.book.apply_batch(
                [InputRecord(event.SerializeToString(), "t", 0, self.offset, GROUP.encode())]
            )
            self.book.commit(out)
            self.offset += 1
            assert not out.dead_letters, out.dead_letters
            self.ledger += out.ledger


def played(
    rounds: int = 60, checkpoint_entries: int = 10_000, reserve_ceiling: int = 2_000_000
) -> tuple[Floor, list[SimulatedTable]]:
    rng = random.Random(14)
    tables = simulated_tables(GROUP, [Game.CARIBBEAN, Game.GO_POKER, Game.DRAW], rng)
    for table in tables:
        table.royal_rate = 0.05
    floor = Floor(checkpoint_entries)
    config = {**MYSTERY_CONFIG, "pots": [dict(p) for p in MYSTERY_CONFIG["pots"]]}
    config["pots"][1]["ceiling"] = reserve_ceiling
    v2 = {**config, "version": 2, "base": 600_000}
    floor.play(
        [
            commands.create_group(GROUP, config, requested_by="ana", reason="open"),
            *(t.link_command() for t in tables),
            *interleaved_rounds(tables, rounds // 2, rng),
            commands.propose_config(GROUP, v2, "ana", "approved 7"),
            *interleaved_rounds(tables, rounds // 2, rng),
        ]
    )
    return floor, tables


def without_trigger(snapshot: bytes) -> dict[str, object]:
    state = json.loads(snapshot)
    state.pop("mystery")
    return state


def test_R14_the_ledger_alone_rebuilds_the_state() -> None:
    """R14, D4: balances, counters, meters, tables, locked rounds and configuration versions come
    back exactly; play resumes on the rebuilt state and the whole ledger still audits (R2, M2)."""
    floor, tables = played()
    kinds = {e.type for e in floor.ledger}
    assert pot_pb2.LEDGER_ENTRY_TYPE_MYSTERY_AWARDED in kinds
    assert pot_pb2.LEDGER_ENTRY_TYPE_CONFIG_ACTIVATED in kinds
    runtime = floor.book.groups[GROUP]
    rebuilt = rebuild(
        GROUP, floor.ledger, partition=0, update_sequence=runtime.update_sequence, now_ns=1
    )
    assert rebuilt.group is not None
    assert without_trigger(rebuilt.group.snapshot()) == without_trigger(runtime.group.snapshot())
    assert rebuilt.state.ledger_sequence == runtime.ledger_sequence + 1  # the new commitment
    (commitment,) = rebuilt.ledger
    assert commitment.type == pot_pb2.LEDGER_ENTRY_TYPE_MYSTERY_COMMITTED
    assert rebuilt.group.mystery is not None
    assert json.loads(commitment.detail_json)["commitment"] == rebuilt.group.mystery.commitment

    resumed = Floor()
    resumed.offset = floor.offset
    resumed.book.restore([rebuilt.state.SerializeToString()], floor.offset)
    resumed.play(interleaved_rounds(tables, 20, random.Random(3)))
    audit = GroupAudit(GROUP)
    for entry in [*floor.ledger, *rebuilt.ledger, *resumed.ledger]:
        audit.add(entry)
    assert audit.problems == []
    assert audit.pots == resumed.book.groups[GROUP].group.balances
    assert not disagreement(
        GROUP,
        resumed.book.groups[GROUP].group,
        resumed.book.groups[GROUP].ledger_sequence,
        audit_entries(GROUP, [*floor.ledger, *rebuilt.ledger, *resumed.ledger]),
    )


def test_R14_a_state_that_disagrees_with_the_ledger_is_refused() -> None:
    """R14: a state whose balance, counter or position differs from the ledger, or no state for a
    group the ledger has, is named; the state the processor wrote agrees."""
    floor, _ = played(20)
    runtime = floor.book.groups[GROUP]
    books = audit_entries(GROUP, floor.ledger)
    assert disagreement(GROUP, runtime.group, runtime.ledger_sequence, books) == ""
    tampered = PotGroup.from_snapshot(runtime.group.snapshot(), trigger)
    tampered.balances["main"] += 10**12
    tampered.house_advance += 10**12  # still conserves (M2), but the ledger never said so
    why = disagreement(GROUP, tampered, runtime.ledger_sequence, books)
    assert "disagrees with the ledger" in why
    assert "pot main" in why
    assert "house advances" in why
    assert "is at ledger entry 3, the ledger at" in disagreement(GROUP, runtime.group, 3, books)
    assert "no stored state for restore-group" in disagreement(GROUP, None, 0, books)
    assert disagreement("another-group", None, 0, audit_entries("another-group", [])) == ""


def test_a_ledger_without_its_opening_configuration_cannot_rebuild() -> None:
    floor, _ = played(4)
    with pytest.raises(DomainError, match="does not begin with its opening"):
        rebuild(GROUP, floor.ledger[1:], partition=0, update_sequence=0, now_ns=1)


@pytest.mark.parametrize("checkpoint_entries", [10_000, 30])
def test_a_table_event_replayed_with_a_new_id_after_a_restore_is_refused_by_its_sequence(
    checkpoint_entries: int,
) -> None:
    """Issue 24 item 9, R14: the rebuilt state knows every table's last sequence (each entry
    carries its event's, each checkpoint those before it), so a replay that a new event id
    disguises is ignored as a duplicate sequence, not applied a second time."""
    floor, _ = played(40, checkpoint_entries=checkpoint_entries)
    runtime = floor.book.groups[GROUP]
    rebuilt = rebuild(GROUP, floor.ledger, partition=0, update_sequence=1, now_ns=1)
    assert dict(rebuilt.state.table_sequences) == runtime.table_sequences
    resumed = Floor()
    resumed.book.restore([rebuilt.state.SerializeToString()], floor.offset)
    replay = table_events_pb2.TableEvent()
    replay.CopyFrom(next(e for e in reversed(floor.events) if e.HasField("round_locked")))
    replay.event_id = "replayed-with-a-new-id"
    out = resumed.book.apply_batch(
        [InputRecord(replay.SerializeToString(), "t", 0, floor.offset, GROUP.encode())]
    )
    assert out.ledger == []
    assert out.ignored == {"DUPLICATE_SEQUENCE": 1}
