"""`jackpot audit` level by level (rules L1-L4, V1-V3): the books of each level, and the audit's
checks per level, against a ledger the real pot processor wrote (tests/levels_ledgers.py).

Every judge is proven by refusing a broken copy of a clean ledger; a one-level group's audit is
the one it was before levels existed."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from jackpot.domain.money import pesos
from jackpot.pot.ledger_audit import GroupAudit, audit_from_dict, audit_to_dict
from jackpot.tools.audit import render
from jackpot.v1 import pot_pb2
from tests.levels_ledgers import GROUP, LevelsFloor, levels_ledger, one_level_ledger

Ledger = list[pot_pb2.LedgerEntry]
PRIZE = pot_pb2.LEDGER_ENTRY_TYPE_PRIZE_AWARDED
RESEEDED = pot_pb2.LEDGER_ENTRY_TYPE_POT_RESEEDED
COLLECTED = pot_pb2.LEDGER_ENTRY_TYPE_BETS_COLLECTED


@pytest.fixture(scope="module")
def floor() -> LevelsFloor:
    return levels_ledger()


def audited(entries: Ledger, update: pot_pb2.PotUpdate | None) -> GroupAudit:
    audit = GroupAudit(GROUP)
    for entry in entries:
        audit.add(entry)
    audit.update = update
    audit.finish()
    return audit


def copied(ledger: Ledger) -> Ledger:
    return [pot_pb2.LedgerEntry.FromString(e.SerializeToString()) for e in ledger]


def test_L1_L4_a_levels_ledger_audits_level_by_level(floor: LevelsFloor) -> None:
    """Each level's books add up to the prizes the paytable gives it: the sf level paid the four
    of a kind and the straight flushes (550,350) and the royal's linked envy (4 x 2,000); the
    royal level the royal flush and the flush (552,725) and the straight flush's envy (4 x
    1,000); each holds its base at the end, its reserves emptied into the top-ups."""
    audit = audited(floor.ledger, floor.update)
    assert audit.problems == []
    books = audit.levels
    assert books is not None
    wins = audit.wins
    assert books.figure("sf", "prizes") == pesos(wins["FOUR_OF_A_KIND"] + wins["STRAIGHT_FLUSH"])
    assert books.figure("sf", "envy") == pesos(wins["ENVY_ROYAL_FLUSH"]) == pesos(8_000)
    assert books.figure("royal", "prizes") == pesos(wins["ROYAL_FLUSH"] + wins["FLUSH"])
    assert books.figure("royal", "envy") == pesos(wins["ENVY_STRAIGHT_FLUSH"]) == pesos(4_000)
    paid = sum(
        books.figure(level, kind) for level in ("royal", "sf") for kind in ("prizes", "envy")
    )
    assert paid == audit.accounts["awards"]
    for level in books.levels:
        assert books.held(level, audit.pots) == (
            pesos(500_000 if level.pot == "main" else 50_000),
            0,
        )
    table = render([audit])
    assert "level sf envy paid" in table
    assert "level royal refilled by the house" in table
    assert "hits/wins ENVY_ROYAL_FLUSH" in table


def test_L1_a_one_level_groups_audit_is_as_before() -> None:
    """The same floor without levels: no level books, no level row, the table it always was."""
    plain = one_level_ledger()
    audit = audited(plain.ledger, plain.update)
    assert audit.problems == []
    assert audit.levels is None
    assert "level " not in render([audit])
    assert "levels" in audit_to_dict(audit)
    assert audit_to_dict(audit)["levels"] is None


def test_L4_an_audit_saved_halfway_goes_on_to_the_same_level_books(floor: LevelsFloor) -> None:
    """``jackpot audit --state``: the level books saved and read back give the same figures."""
    whole = audited(floor.ledger, floor.update)
    half = len(floor.ledger) // 2
    first = GroupAudit(GROUP)
    for entry in floor.ledger[:half]:
        first.add(entry)
    resumed = audit_from_dict(json.loads(json.dumps(audit_to_dict(first))))
    for entry in floor.ledger[half:]:
        resumed.add(entry)
    resumed.update = floor.update
    resumed.finish()
    assert resumed.problems == []
    assert whole.levels is not None
    assert resumed.levels is not None
    assert resumed.levels.to_dict() == whole.levels.to_dict()


def _entry(ledger: Ledger, kind: int, prize: str = "") -> pot_pb2.LedgerEntry:
    return next(e for e in ledger if e.type == kind and (not prize or e.prize == prize))


def _retell(entry: pot_pb2.LedgerEntry, **changes: object) -> None:
    detail = json.loads(entry.detail_json)
    detail.update(changes)
    entry.detail_json = json.dumps(detail, sort_keys=True)


def _prize_from_another_levels_pot(ledger: Ledger) -> None:
    """L2: the sf level's four of a kind paid from the royal level's pot (main)."""
    entry = _entry(ledger, PRIZE, "FOUR_OF_A_KIND")
    assert entry.transfers[0].source == "pot:sf"
    entry.transfers[0].source = "pot:main"


def _prize_naming_the_wrong_level(ledger: Ledger) -> None:
    """L2, L4: a straight flush the entry says the royal level paid (its money from sf)."""
    entry = _entry(ledger, PRIZE, "STRAIGHT_FLUSH")
    _retell(entry, level="royal", transfer_levels=["royal"] * len(entry.transfers))


def _envy_from_the_wrong_level(ledger: Ledger) -> None:
    """V1, L2: the royal's envy bonus (the sf level's) named and paid as the royal level's."""
    entry = _entry(ledger, PRIZE, "ENVY_ROYAL_FLUSH")
    _retell(entry, level="royal", transfer_levels=["royal"] * len(entry.transfers))
    entry.transfers[0].source = "pot:main"


def _refilled_from_another_levels_reserve(ledger: Ledger) -> None:
    """L3: the sf level topped up from the royal level's reserve."""
    for entry in ledger:
        if entry.type == RESEEDED and entry.transfers[0].source == "pot:sf_reserve":
            entry.transfers[0].source = "pot:reserve1"
            return
    raise AssertionError("no top-up from sf_reserve")


def _collection_without_levels(ledger: Ledger) -> None:
    """L4: a collection whose transfers name no level."""
    entry = _entry(ledger, COLLECTED)
    detail = json.loads(entry.detail_json)
    del detail["transfer_levels"]
    entry.detail_json = json.dumps(detail, sort_keys=True)


def _collection_naming_the_wrong_level(ledger: Ledger) -> None:
    """L4: a collection's bets into the sf pot named as the royal level's."""
    entry = _entry(ledger, COLLECTED)
    tags = json.loads(entry.detail_json)["transfer_levels"]
    at = [t.target for t in entry.transfers].index("pot:sf")
    tags[at] = "royal"
    _retell(entry, transfer_levels=tags)


BROKEN: dict[str, tuple[Callable[[Ledger], None], str]] = {
    "L2 a level's prize from another level's pot": (
        _prize_from_another_levels_pot,
        "level sf's FOUR_OF_A_KIND took 51575 from pot:main, the pot of level royal",
    ),
    "L2 a prize naming the wrong level": (
        _prize_naming_the_wrong_level,
        "STRAIGHT_FLUSH is paid by level sf (the paytable), the entry says level royal",
    ),
    "V1 an envy bonus from the wrong level": (
        _envy_from_the_wrong_level,
        "ENVY_ROYAL_FLUSH is paid by level sf (the paytable), the entry says level royal",
    ),
    "L3 a level refilled from another level's reserve": (
        _refilled_from_another_levels_reserve,
        "the top-up of level sf took 175 from pot:reserve1, the reserve of level royal",
    ),
    "L4 a collection naming no level": (_collection_without_levels, "names 0 levels for"),
    "L4 a collection naming the wrong level": (
        _collection_naming_the_wrong_level,
        "-> pot:sf names level 'royal', not 'sf'",
    ),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_L2_L3_L4_V1_the_audit_refuses_a_levels_ledger_that_breaks_a_level(
    floor: LevelsFloor, name: str
) -> None:
    broken, finding = BROKEN[name]
    tampered = copied(floor.ledger)
    broken(tampered)
    audit = audited(tampered, floor.update)
    assert any(finding in problem for problem in audit.problems), audit.problems
    assert "MISMATCH" in render([audit])


def test_M2_a_level_whose_pot_moved_without_an_entry_of_its_own_is_a_finding(
    floor: LevelsFloor,
) -> None:
    """M2 per level: 100 pesos into the sf pot by an entry that moves no level's money (a table
    linked): only the level's own balance check names the level."""
    tampered = copied(floor.ledger)
    linked = _entry(tampered, pot_pb2.LEDGER_ENTRY_TYPE_TABLE_LINKED)
    linked.transfers.add(source="house", target="pot:sf").amount.CopyFrom(
        next(t.amount for t in _entry(tampered, COLLECTED).transfers if t.target == "pot:sf")
    )
    audit = audited(tampered, floor.update)
    assert any(p.startswith("M2 for level sf") for p in audit.problems), audit.problems
