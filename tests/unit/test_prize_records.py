"""A prize's ledger entry and award built from prototypes (jackpot.pot.prize_records) are byte for
byte those of the generic path (``Event.to_dict``, ``canonical_json``, ``records.award_from_dict``)
that wrote every ledger before it: a studio round's thousands of winners (O4), land prizes, envy
bonuses (V1), levels (L4), non-ASCII players (O1) and values the engine does not make."""

from __future__ import annotations

import itertools
from types import SimpleNamespace
from typing import Any

import pytest
from loadtest.rounds import CONFIG, CREDIT_VALUE, MAX_BET, MIN_BET

from jackpot.domain.canonical import canonical_json
from jackpot.domain.events import PrizeAwarded
from jackpot.platform import codec
from jackpot.platform.bundles import awards_of, ledger_entries
from jackpot.pot import commands
from jackpot.pot.group_runtime import EventContext, Outputs
from jackpot.pot.ledger_audit import GENESIS, chain_next
from jackpot.pot.ledger_writer import LedgerWriter, _Stamp
from jackpot.pot.pot_book import InputRecord, PotBook
from jackpot.pot.prize_records import DetailTemplate, PrizeRecords, prize_detail_json
from jackpot.topics import AWARDS, LEDGER
from jackpot.v1 import common_pb2, pot_pb2, table_events_pb2

pytestmark = pytest.mark.unit

ROYAL = ("AH", "KH", "QH", "JH", "TH")
OCCURRED = codec.timestamp_ns(1_780_000_000_123_456_789)
RECORDED = codec.timestamp_ns(1_780_000_000_223_456_789)
CONTEXT = EventContext("evt-1", "S1", "R1", OCCURRED, (3, (4, 5)), 17)


def prize(number: int, **changes: Any) -> PrizeAwarded:
    """Seat ``number``'s share of a royal flush at the studio table S1, but for ``changes``."""
    seat = number
    fields: dict[str, Any] = {
        "award_id": f"G/S1/R1/{seat}/ROYAL_FLUSH",
        "group_id": "G",
        "table_id": "S1",
        "round_id": "R1",
        "seat": seat,
        "prize": "ROYAL_FLUSH",
        "bet_pesos": 1000,
        "amount_pesos": 825,
        "cards": ROYAL,
        "transfers": (("pot:main", "awards", 825 * 10**8),),
        "player": f"p{seat}",
    }
    return PrizeAwarded(**{**fields, **changes})


PRIZES = [
    prize(1),
    prize(2, amount_pesos=826, transfers=(("pot:main", "awards", 826 * 10**8),)),
    prize(3, player=""),
    prize(4, player="jugadora Peña €"),
    prize(5, player='comillas " y \\ barra'),
    prize(
        6,
        level="royal",
        transfer_levels=("royal", "royal"),
        transfers=(("pot:main", "awards", 700 * 10**8), ("pot:reserve1", "awards", 125 * 10**8)),
    ),
    prize(7, prize="ENVY_ROYAL_FLUSH", envy_of=("T01", "R-royal", 1), award_id="G/x/ENVY"),
    prize(8, transfers=(("pot:main", "awards", 5 * 10**7), ("house", "awards", 10**4))),
    prize(9, cards=("2C", "7D"), table_id="Mesa Ñ", round_id="R\u00e9"),
    prize(10, player="\U0001f600 fuera del plano básico"),
    prize(11, envy_of=()),
    prize(12, award_id="G/S1/R1/12/ROYAL_FLUSH", level="", transfer_levels=()),
]


def generic(event: PrizeAwarded, index: int, sequence: int) -> tuple[bytes, bytes]:
    """The entry and award the generic path writes for ``event``."""
    runtime = SimpleNamespace(group=SimpleNamespace(group_id="G"), ledger_sequence=sequence)
    outputs = Outputs()
    stamp = _Stamp(CONTEXT, RECORDED, 3, [4, 5])
    entry = LedgerWriter(lambda: 0, 10)._entry(runtime, event, index, stamp, {}, outputs)  # type: ignore[arg-type]
    return entry.SerializeToString(), outputs.awards[0].SerializeToString()


def test_prototypes_write_the_bytes_of_the_generic_path() -> None:
    prizes = PrizeRecords("G", CONTEXT.event_id, OCCURRED, RECORDED, 17)
    sequence = itertools.count(40)
    for index, event in enumerate(PRIZES * 2):  # the second time from the prototypes made
        assert PrizeRecords.handles(event)
        number = next(sequence)
        entry, award = prizes.records(event, index, number, 3, [4, 5])
        assert (entry.SerializeToString(), award.SerializeToString()) == generic(
            event, index, number
        )


@pytest.mark.parametrize("event", PRIZES)
def test_the_detail_is_canonical_json(event: PrizeAwarded) -> None:
    detail = event.to_dict()
    del detail["transfers"]
    assert prize_detail_json(event) == canonical_json(detail)


def test_values_the_engine_does_not_make_are_left_to_canonical_json() -> None:
    assert DetailTemplate.of(prize(1, amount_pesos=True)) is None
    assert DetailTemplate.of(prize(1, cards=("AH", 3))) is None  # type: ignore[arg-type]
    odd = prize(1, seat=True)
    template = DetailTemplate.of(odd)
    assert template is not None
    detail = odd.to_dict()
    del detail["transfers"]
    assert template.json(odd) == canonical_json(detail) == prize_detail_json(odd)
    assert not PrizeRecords.handles(prize(1, cards=list(ROYAL)))  # type: ignore[arg-type]


def test_a_split_shares_one_prototype_and_one_template() -> None:
    prizes = PrizeRecords("G", CONTEXT.event_id, OCCURRED, RECORDED, 17)
    for seat in range(1, 101):
        prizes.records(prize(seat), seat, seat, 3, [])
    assert len(prizes._alike) == 1
    entry, _ = prizes.records(prize(7), 0, 1, 3, [])
    assert entry.type == pot_pb2.LEDGER_ENTRY_TYPE_PRIZE_AWARDED


def test_a_split_writes_the_bytes_its_chain_holds() -> None:
    """A studio round of 300 bets shares a royal flush (O4): the transaction's ledger records are
    the entries' own bytes, serialized once for the chain (in bundles, jackpot.platform.bundles),
    and the chain over them is the group's; its award records hold the awards' bytes."""
    book = PotBook(0, source="pot:test", clock_ns=itertools.count(10**18, 1000).__next__)
    events = [
        commands.create_group("G", {**CONFIG, "base": 100_000}),
        commands.link_table(
            "G",
            table_events_pb2.LinkTable(
                table_id="S1",
                game=common_pb2.GAME_CARIBBEAN,
                site="studio",
                studio_seats=300,
                min_bet=MIN_BET,
                max_bet=MAX_BET,
                credit_value=CREDIT_VALUE,
            ),
        ),
    ]
    lock = commands.locked(dict.fromkeys(range(1, 301), MIN_BET))
    royal = table_events_pb2.RoundResult(shared_hand=["AH", "KH", "QH", "JH", "TH"])
    events += [
        commands.table_event("G", "S1", "R1", 1, common_pb2.GAME_CARIBBEAN, round_locked=lock),
        commands.table_event("G", "S1", "R1", 2, common_pb2.GAME_CARIBBEAN, round_result=royal),
    ]
    chain = GENESIS
    for offset, event in enumerate(events):
        batch = book.batch([InputRecord(event.SerializeToString(), "t", 0, offset, b"G")])
        book.commit(batch.outputs)
        records = [r.value for r in batch.records if r.topic == LEDGER.name]
        ledger = [raw for value in records for _, raw in ledger_entries(value or b"")]
        assert ledger == [e.SerializeToString() for e in batch.outputs.ledger]
        records = [r.value for r in batch.records if r.topic == AWARDS.name]
        awards = [a for value in records for a in awards_of(value or b"")]
        assert awards == batch.outputs.awards
        for value in ledger:
            chain = chain_next(chain, value)
    assert len(awards) == 300
    assert len(records) == 1  # one bundle
    assert chain == book.groups["G"].ledger_chain
