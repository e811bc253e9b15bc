"""`jackpot audit` checks a ledger without Kafka: a clean ledger passes, tampering does not."""

from __future__ import annotations

import random
from typing import Any

from loadtest.rounds import CONFIG, interleaved_rounds, simulated_tables

from jackpot.domain.cards import Game
from jackpot.pot import commands
from jackpot.pot.ledger_audit import GroupAudit
from jackpot.pot.pot_book import InputRecord, PotBook
from jackpot.tools.audit import render
from jackpot.v1 import common_pb2, pot_pb2

GROUP = "audit-group"


def ledger_and_update(
    config: dict[str, Any] = CONFIG,
) -> tuple[list[pot_pb2.LedgerEntry], pot_pb2.PotUpdate]:
    rng = random.Random(5)
    tables = simulated_tables(GROUP, [Game.CARIBBEAN, Game.GO_POKER], rng)
    for table in tables:
        table.royal_rate = 0.03
    events = [
        commands.create_group(GROUP, config),
        *(t.link_command() for t in tables),
        *interleaved_rounds(tables, 50, rng),
    ]
    processor = PotBook(0)
    out = processor.apply_batch(
        InputRecord(e.SerializeToString(), "t", 0, i, GROUP.encode()) for i, e in enumerate(events)
    )
    assert not out.dead_letters
    return out.ledger, out.pot_updates[-1]


def audited(entries: list[pot_pb2.LedgerEntry], update: pot_pb2.PotUpdate | None) -> GroupAudit:
    group = GroupAudit(GROUP)
    for entry in entries:
        group.add(entry)
    group.update = update
    group.finish()
    return group


def payout(award: pot_pb2.LedgerEntry, index: int, kind: int) -> pot_pb2.LedgerEntry:
    award_id = award.entry_id  # any unique id will do; the audit keys payouts by award id
    return pot_pb2.LedgerEntry(
        entry_id=f"payout:{award_id}:{index}",
        pot_group_id=GROUP,
        type=kind,  # type: ignore[arg-type]
        amount=award.amount,
        source_event_id=award.detail_json.split('"award_id":"')[1].split('"')[0],
    )


def test_a_clean_ledger_passes_and_prints_meters() -> None:
    entries, update = ledger_and_update()
    group = audited(entries, update)
    assert group.problems == []
    assert group.collected > 0
    assert sum(group.hits.values()) > 0
    table = render([group])
    assert f"pot group {GROUP}: OK" in table
    assert "1 pot groups audited, 0 with mismatches" in table


def test_C2_a_group_without_commission_writes_no_empty_transfer_and_audits() -> None:
    """A commission of 0 % is a valid configuration (C2): its locks move nothing to the
    commission, and the ledger holds no transfer of nothing (the audit refuses one, and with it
    the takeover of the group's partition)."""
    entries, update = ledger_and_update({**CONFIG, "commission_percent": "0"})
    assert audited(entries, update).problems == []
    assert all(t.source != "bets" or t.target != "commission" for e in entries for t in e.transfers)


def test_a_repeated_entry_is_a_duplicate() -> None:
    entries, update = ledger_and_update()
    problems = audited([*entries[:10], entries[9], *entries[10:]], update).problems
    assert any("appears twice" in p for p in problems)
    assert any("a gap or a duplicate" in p for p in problems)


def test_a_missing_entry_is_a_gap_and_balances_differ() -> None:
    entries, update = ledger_and_update()
    collected = next(
        i for i, e in enumerate(entries) if e.type == pot_pb2.LEDGER_ENTRY_TYPE_BETS_COLLECTED
    )
    problems = audited(entries[:collected] + entries[collected + 1 :], update).problems
    assert any("a gap or a duplicate" in p for p in problems)
    assert any("balances differ from the latest pot update" in p for p in problems)


def test_a_collection_that_does_not_move_its_bets_is_caught() -> None:
    entries, update = ledger_and_update()
    tampered = [pot_pb2.LedgerEntry() for _ in entries]
    for copy, entry in zip(tampered, entries, strict=True):
        copy.CopyFrom(entry)
    victim = next(e for e in tampered if e.type == pot_pb2.LEDGER_ENTRY_TYPE_BETS_COLLECTED)
    victim.amount += 1000
    assert any("moved from bets" in p for p in audited(tampered, update).problems)


def test_without_a_pot_update_the_audit_fails() -> None:
    entries, _ = ledger_and_update()
    assert audited(entries, None).problems == ["no pot update found for the group"]


def test_payments_must_match_one_award_once() -> None:
    entries, update = ledger_and_update()
    award = next(e for e in entries if e.type == pot_pb2.LEDGER_ENTRY_TYPE_PRIZE_AWARDED)
    ordered = payout(award, 0, pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_ORDERED)
    paid = payout(award, 1, pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_PAID)
    assert audited([*entries, ordered, paid], update).problems == []

    paid_again = payout(award, 2, pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_PAID)
    problems = audited([*entries, ordered, paid, paid_again], update).problems
    assert any("paid twice" in p for p in problems)

    wrong = payout(award, 1, pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_PAID)
    wrong.amount += 1
    problems = audited([*entries, ordered, wrong], update).problems
    assert any("payment of" in p for p in problems)


def test_R2_a_pot_that_drops_without_an_award_is_caught() -> None:
    """R2: money moved out of a pot by anything but an award or a reseed is named, even when the
    books still balance (here one peso of the main pot moved to the commission at a collection);
    the clean ledger's awards and reseeds pass."""
    entries, update = ledger_and_update()
    assert audited(entries, update).problems == []
    collection = next(e for e in entries if e.type == pot_pb2.LEDGER_ENTRY_TYPE_BETS_COLLECTED)
    collection.transfers.add(
        source="pot:main",
        target="commission",
        amount=common_pb2.ExactAmount(numerator=1, denominator=1),
    )
    problems = audited(entries, None).problems
    assert any(
        p.startswith("R2: pot:main decreased by 1 in entry")
        and "LEDGER_ENTRY_TYPE_BETS_COLLECTED" in p
        for p in problems
    ), problems
