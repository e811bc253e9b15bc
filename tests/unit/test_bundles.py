"""A studio round's thousands of prizes are written as a few bundles, and read back as every entry
(rule O4; issue 39 item 6; jackpot.platform.bundles).

The judge is the books: the audit of the bundled records equals the audit of the entries written
one each, figure for figure and hash for hash; a bundle changed in one peso, or holding an entry
of another group, is refused.
"""

from __future__ import annotations

import math

import pytest
from google.protobuf.message import DecodeError
from loadtest.rounds import CONFIG

from jackpot.platform.bundles import (
    BUNDLE,
    BUNDLE_BYTES,
    BUNDLE_FROM,
    BundleError,
    awards_of,
    bundle_awards,
    bundle_ledger,
    ledger_entries,
)
from jackpot.pot import commands
from jackpot.pot.batch_records import OutputTopics, batch_records
from jackpot.pot.group_runtime import Outputs
from jackpot.pot.ledger_audit import GroupAudit
from jackpot.pot.pot_book import InputRecord, PotBook
from jackpot.v1 import common_pb2, pot_pb2, table_events_pb2
from tests.book_pot import caribbean

pytestmark = pytest.mark.unit

GROUP, STUDIO = "bundled-group", "S-1"
TOPICS = OutputTopics("updates", "awards", "ledger", "dead", "state")
ROYAL = ["AH", "KH", "QH", "JH", "TH"]


def played(bets: int) -> tuple[list[Outputs], PotBook]:
    """A group with a studio table whose round of ``bets`` bets all share a royal flush: each
    table event's outputs."""
    book = PotBook(0, source="pot:test", checkpoint_entries=100)
    link = caribbean(STUDIO, site="studio", studio_seats=bets)
    players = {seat: f"p{seat}" for seat in range(1, bets + 1)}
    lock = commands.locked(dict.fromkeys(players, 1000), players)
    steps = [
        {"round_locked": lock},
        {"round_result": table_events_pb2.RoundResult(shared_hand=ROYAL)},
    ]
    events = [
        commands.create_group(GROUP, CONFIG),
        commands.link_table(GROUP, link),
        *(
            commands.table_event(GROUP, STUDIO, "R1", n, common_pb2.GAME_CARIBBEAN, **step)
            for n, step in enumerate(steps, 1)
        ),
    ]
    outputs = []
    for offset, event in enumerate(events):
        record = InputRecord(event.SerializeToString(), "t", 0, offset, GROUP.encode())
        outputs.append(book.batch([record]).outputs)
        book.commit(outputs[-1])
    return outputs, book


def written(outputs: list[Outputs], topic: str) -> list[bytes]:
    return [
        r.value for o in outputs for r in batch_records(o, TOPICS, 0).records if r.topic == topic
    ]


def audit(values: list[bytes]) -> GroupAudit:
    books = GroupAudit(GROUP)
    for value in values:
        for entry, raw in ledger_entries(value):
            books.add(entry, raw)
    return books


def test_O4_ten_thousand_winners_are_a_few_records_that_read_back_as_every_entry() -> None:
    outputs, _ = played(10_000)
    hit = outputs[-1]
    assert len(hit.awards) == 10_000
    raws = [hit.serialized.get(id(e)) or e.SerializeToString() for e in hit.ledger]
    ledger = written([hit], "ledger")
    awards = written([hit], "awards")
    assert len(ledger) <= math.ceil(sum(map(len, raws)) / BUNDLE_BYTES) + 5
    assert len(awards) <= math.ceil(sum(a.ByteSize() for a in hit.awards) / BUNDLE_BYTES) + 1
    assert max(map(len, ledger + awards)) < BUNDLE_BYTES + 64 * 1024  # one producer request
    assert [raw for value in ledger for _, raw in ledger_entries(value)] == raws
    assert [a for value in awards for a in awards_of(value)] == hit.awards
    bundles = [pot_pb2.LedgerEntry.FromString(v) for v in ledger]
    for bundle in (b for b in bundles if b.type == BUNDLE):  # a bundle names its last entry
        last = pot_pb2.LedgerEntry.FromString(bundle.bundled[-1])
        assert (bundle.ledger_sequence, bundle.pot_group_id) == (last.ledger_sequence, GROUP)


def test_M2_D4_the_books_of_the_bundles_are_the_books_of_the_entries_one_each() -> None:
    outputs, book = played(500)
    one_each = GroupAudit(GROUP)
    for output in outputs:
        for entry in output.ledger:
            one_each.add(entry, output.serialized.get(id(entry)) or entry.SerializeToString())
    bundled = audit(written(outputs, "ledger"))
    assert bundled.problems == one_each.problems == []
    assert bundled.figures() == one_each.figures()
    assert bundled.chain == one_each.chain == book.groups[GROUP].ledger_chain
    assert bundled.entries == one_each.entries
    assert bundled.hits["ROYAL_FLUSH"] == 500


def test_a_land_round_s_few_records_are_written_one_each_as_before() -> None:
    outputs, _ = played(7)
    for output in outputs:
        raws = [output.serialized.get(id(e)) or e.SerializeToString() for e in output.ledger]
        assert written([output], "ledger") == raws
        assert written([output], "awards") == [a.SerializeToString() for a in output.awards]


def test_a_bundle_changed_by_one_peso_breaks_the_chain() -> None:
    outputs, _ = played(200)
    ledger = written(outputs, "ledger")
    at = next(i for i, v in enumerate(ledger) if pot_pb2.LedgerEntry.FromString(v).type == BUNDLE)
    bundle = pot_pb2.LedgerEntry.FromString(ledger[at])
    inner = pot_pb2.LedgerEntry.FromString(bundle.bundled[7])
    inner.amount += 1
    bundle.bundled[7] = inner.SerializeToString()
    ledger[at] = bundle.SerializeToString()
    problems = audit(ledger).problems
    assert any("hash chain" in p for p in problems), problems


def test_a_bundle_that_is_not_its_group_s_entries_is_refused() -> None:
    outputs, _ = played(BUNDLE_FROM)
    entries = outputs[-1].ledger
    raws = [e.SerializeToString() for e in entries]
    ((_, value),) = [r for r in bundle_ledger(entries, raws) if len(r[1]) > 10_000]
    good = pot_pb2.LedgerEntry.FromString(value)
    stranger = pot_pb2.LedgerEntry(pot_group_id="another", entry_id="x:0")
    nested = pot_pb2.LedgerEntry(pot_group_id=GROUP, type=BUNDLE, bundled=[raws[0]])
    for element, why in (
        (stranger.SerializeToString(), "of group 'another'"),
        (nested.SerializeToString(), f"type {BUNDLE}"),
    ):
        bad = pot_pb2.LedgerEntry()
        bad.CopyFrom(good)
        bad.bundled.append(element)
        with pytest.raises(BundleError, match=why):
            ledger_entries(bad.SerializeToString())
    empty = pot_pb2.LedgerEntry(pot_group_id=GROUP, type=BUNDLE)
    with pytest.raises(BundleError, match="holds no entry"):
        ledger_entries(empty.SerializeToString())
    garbage = pot_pb2.LedgerEntry(pot_group_id=GROUP, type=BUNDLE, bundled=[b"\xff\xff"])
    with pytest.raises(DecodeError):
        ledger_entries(garbage.SerializeToString())


def test_an_awards_bundle_of_another_group_s_award_is_refused() -> None:
    outputs, _ = played(BUNDLE_FROM)
    ((_, value),) = bundle_awards(outputs[-1].awards)
    assert len(awards_of(value)) == BUNDLE_FROM
    bad = pot_pb2.Award.FromString(value)
    bad.bundled.append(pot_pb2.Award(award_id="x", pot_group_id="another").SerializeToString())
    with pytest.raises(BundleError, match="of group 'another'"):
        awards_of(bad.SerializeToString())


def test_a_run_larger_than_a_bundle_is_cut_into_bundles_in_order() -> None:
    entries = [
        pot_pb2.LedgerEntry(
            pot_group_id=GROUP, source_event_id="e", ledger_sequence=n, detail_json="x" * 10_000
        )
        for n in range(1, 201)
    ]
    raws = [e.SerializeToString() for e in entries]
    records = bundle_ledger(entries, raws)
    assert len(records) == math.ceil(sum(map(len, raws)) / BUNDLE_BYTES)
    assert [raw for _, value in records for _, raw in ledger_entries(value)] == raws
    assert all(group == GROUP for group, _ in records)
