"""The payout lifecycle (jackpot.domain.payout; rules D3, S5): states, who and when, finality."""

from __future__ import annotations

from dataclasses import replace

import pytest

from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.payout import (
    Payout,
    PayoutState,
    Transition,
    WalletRound,
    approve,
    order_payout,
    pay,
    pay_at_table,
    pay_to_wallet,
    void,
)
from jackpot.payout.codec import from_proto, ledger_entry, to_proto
from jackpot.payout.payout_book import PayoutBook
from jackpot.v1 import pot_pb2


def ordered(amount: int, threshold: int = 1_000_000):  # type: ignore[no-untyped-def]
    return order_payout(
        award_id="g/T1/R1/2/FLUSH",
        pot_group_id="g",
        table_id="T1",
        round_id="R1",
        seat=2,
        prize="FLUSH",
        amount=amount,
        cards=("2H", "5H", "8H", "JH", "KH"),
        order=7,
        approval_threshold=threshold,
        at_ns=1_000,
    )


def test_small_prizes_are_ordered_and_large_ones_wait_for_a_supervisor() -> None:
    assert ordered(999_999).state is PayoutState.ORDERED
    assert ordered(1_000_000).state is PayoutState.AWAITING_APPROVAL


def test_approval_then_payment_records_who_and_when() -> None:
    payout = approve(ordered(2_000_000), "sup-luis", 2_000, "checked the cards")
    payout = pay(payout, "dealer-ana", 3_000)
    assert [(t.state, t.by, t.at_ns) for t in payout.history] == [
        (PayoutState.AWAITING_APPROVAL, "payout-service", 1_000),
        (PayoutState.APPROVED, "sup-luis", 2_000),
        (PayoutState.PAID, "dealer-ana", 3_000),
    ]
    assert payout.history[1].reason == "checked the cards"


def test_a_locked_payout_cannot_be_paid_and_nothing_is_paid_twice() -> None:
    with pytest.raises(DomainError) as locked:
        pay(ordered(2_000_000), "dealer", 2)
    assert locked.value.reason is Reason.INVALID_STATE
    paid = pay(ordered(10), "dealer", 2)
    with pytest.raises(DomainError):
        pay(paid, "dealer", 3)
    with pytest.raises(DomainError):
        void(paid, "sup", "too late", 3)


def test_void_needs_a_supervisor_and_a_reason_and_is_final() -> None:
    with pytest.raises(DomainError):
        void(ordered(10), "sup", "", 2)
    with pytest.raises(DomainError):
        approve(ordered(2_000_000), "", 2)
    voided = void(ordered(2_000_000), "sup", "misread hand", 2)
    assert voided.state is PayoutState.VOIDED
    with pytest.raises(DomainError):
        approve(voided, "sup", 3)


def test_protobuf_round_trip_and_ledger_entry() -> None:
    payout = approve(ordered(2_000_000), "sup-luis", 2_000)
    assert from_proto(to_proto(payout)) == payout
    entry = ledger_entry(payout)
    assert entry.type == pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_APPROVED
    assert (entry.changed_by, entry.ledger_sequence, len(entry.transfers)) == ("sup-luis", 0, 0)
    assert entry.entry_id == "payout:g/T1/R1/2/FLUSH:1"


def test_D3_the_dealer_terminal_lists_its_tables_prizes_to_pay_in_order() -> None:
    """D3, S5: a table's terminal is shown that table's prizes still to pay (seat, prize, amount,
    cards), in payment order; paid prizes and other tables' prizes are not on it."""

    def award(table: str, seat: int, prize: str, amount: int, order: int) -> Payout:
        return order_payout(
            award_id=f"g/{table}/R1/{seat}/{prize}",
            pot_group_id="g",
            table_id=table,
            round_id="R1",
            seat=seat,
            prize=prize,
            amount=amount,
            cards=("2H", "5H", "8H", "JH", "KH"),
            order=order,
            approval_threshold=1_000_000,
            at_ns=1_000,
        )

    book = PayoutBook()
    royal = award("T1", 1, "ROYAL_FLUSH", 2_000_000, order=2)
    flush = award("T1", 4, "FLUSH", 50_000, order=1)
    full = award("T1", 2, "FULL_HOUSE", 100_000, order=0)
    for payout in (royal, flush, full, award("T2", 1, "FLUSH", 50_000, order=3)):
        book.put(0, payout)
    book.put(0, pay(full, "dealer-ana", 2_000))
    shown = book.open_for("T1")
    assert [(p.seat, p.prize, p.amount, p.state) for p in shown] == [
        (4, "FLUSH", 50_000, PayoutState.ORDERED),
        (1, "ROYAL_FLUSH", 2_000_000, PayoutState.AWAITING_APPROVAL),
    ]
    assert shown[0].cards == ("2H", "5H", "8H", "JH", "KH")


def test_O9_a_studio_prize_is_paid_by_its_wallet_and_a_land_prize_at_its_table() -> None:
    """Who may confirm a payment: the dealer terminal of the prize's own table, and never for a
    studio prize; the player's wallet, only for a studio prize. It survives the payout record."""
    studio = replace(ordered(10), player="p7", table_id="S-1")
    assert studio.to_wallet
    assert from_proto(to_proto(studio)) == studio
    with pytest.raises(DomainError, match="paid to the player's wallet"):
        pay_at_table(studio, "S-1", "dealer", 2)
    paid = pay_to_wallet(studio, "wallet tx-9", 2)
    assert (paid.state, paid.history[-1].by) == (PayoutState.PAID, "wallet tx-9")
    land = ordered(10)
    with pytest.raises(DomainError, match="paid at its table, not a wallet"):
        pay_to_wallet(land, "wallet tx-1", 2)
    with pytest.raises(DomainError) as elsewhere:
        pay_at_table(land, "T2", "dealer", 2)
    assert elsewhere.value.reason is Reason.TABLE_MISMATCH
    assert pay_at_table(land, "T1", "dealer", 2).state is PayoutState.PAID


def test_O9_a_studio_tables_terminal_gets_its_winners_counted_and_only_the_prizes_to_approve() -> (
    None
):
    """A studio round's prizes reach its terminal counted by round (winners, total, paid by the
    wallets, waiting for approval, voided), never one by one; only a prize awaiting a supervisor
    is listed, for the supervisor to decide. A land table's list is as it was."""

    def studio(seat: int, amount: int, order: int, round_id: str = "R1") -> Payout:
        return replace(
            ordered(amount),
            award_id=f"S/{round_id}/{seat}",
            seat=seat,
            table_id="S-1",
            round_id=round_id,
            player=f"p{seat}",
            order=order,
            prize="ROYAL_FLUSH",
        )

    waiting = replace(
        studio(1, 4_594, 0), history=(Transition(PayoutState.AWAITING_APPROVAL, "s", 1),)
    )
    paid = [pay_to_wallet(studio(seat, 4_347, seat), f"wallet tx-{seat}", 2) for seat in (2, 3, 4)]
    later = studio(9, 500, 10, round_id="R2")
    voided = void(studio(8, 4_347, 8), "sara", "player barred", 3)
    book = PayoutBook()
    for payout in (waiting, *paid, studio(5, 4_347, 5), voided, later, ordered(50_000)):
        book.put(0, payout)
    assert [p.award_id for p in book.open_for("S-1")] == [waiting.award_id]
    assert book.wallet_rounds_of("S-1") == [
        WalletRound("R1", "ROYAL_FLUSH", 6, 4_594 + 5 * 4_347, 3, 3 * 4_347, 1, 1, 0),
        WalletRound("R2", "ROYAL_FLUSH", 1, 500, 0, 0, 0, 0, 10),
    ]
    assert book.wallet_rounds_of(ordered(1).table_id) == []  # a land table: none
    book.drop([later.award_id])
    assert [r.round_id for r in book.wallet_rounds_of("S-1")] == ["R1"]
    book.forget(0)  # the partition moved: none of its prizes counted here
    assert book.wallet_rounds_of("S-1") == []


def test_O9_D3_a_studio_prize_is_pending_but_never_unattended_and_a_paid_one_leaves_the_count() -> (
    None
):
    """D3's unattended count is of prizes a terminal must pay: a studio prize is paid to its
    player's wallet (O9), so it is pending until then but never unattended; a prize paid leaves
    both counts (the book reads only what is open)."""
    from prometheus_client import REGISTRY

    def sample(name: str, table: str | None = None) -> float | None:
        return REGISTRY.get_sample_value(name, {"table": table} if table else {})

    studio = replace(ordered(4_347), award_id="S/R1/1", table_id="S-1", player="p1")
    land = ordered(50_000)
    book = PayoutBook()
    book.put_many(0, [studio, land])
    assert sample("jackpot_payout_pending_awards") == 2
    assert sample("jackpot_payout_unattended_awards", land.table_id) == 1
    assert sample("jackpot_payout_unattended_awards", "S-1") is None
    book.put(0, pay_to_wallet(studio, "wallet tx-1", 2))
    book.put(0, pay(land, "dealer", 2))
    assert sample("jackpot_payout_pending_awards") == 0
    assert book.listing(pending_only=True) == []
    assert len(book.listing(pending_only=False)) == 2  # kept, settled, for the keep time
