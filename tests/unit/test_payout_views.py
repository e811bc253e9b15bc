"""The payout book's views (rules D3, O9, S5) against their definitions, through any sequence of
changes: each view is kept by the book as payouts change, so that a reader costs what it reads
(a supervisor's list, a land terminal's, the wallet payer's) and not a studio round's thousands
of prizes in flight. Here every view is recomputed from the payouts themselves after each change.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace

from prometheus_client import REGISTRY

from jackpot.domain.payout import (
    OPEN,
    PAYABLE,
    Payout,
    PayoutState,
    approve,
    order_payout,
    pay,
    pay_to_wallet,
    payment_order,
    void,
    wallet_rounds,
)
from jackpot.payout.payout_book import PayoutBook

TABLES = ("T1", "T2", "S-1", "S-2")  # land, land, studio, studio


def _ordered(rng: random.Random, number: int) -> Payout:
    table = rng.choice(TABLES)
    payout = order_payout(
        award_id=f"g/{table}/R{number % 7}/{number}/FLUSH",
        pot_group_id="g",
        table_id=table,
        round_id=f"R{number % 7}",
        seat=number % 50 + 1,
        prize="FLUSH",
        amount=rng.choice((5_000, 50_000, 2_000_000)),
        cards=("2H", "5H", "8H", "JH", "KH"),
        order=rng.randrange(10_000),
        approval_threshold=1_000_000,
        at_ns=number,
    )
    return replace(payout, player=f"p{number}") if table.startswith("S-") else payout


def _moved(rng: random.Random, payout: Payout, at_ns: int) -> Payout | None:
    """One of the moves its state allows (None when settled)."""
    if payout.state is PayoutState.AWAITING_APPROVAL:
        return rng.choice((approve(payout, "sara", at_ns), void(payout, "sara", "x", at_ns)))
    if payout.state in PAYABLE:
        paid = pay_to_wallet(payout, "w", at_ns) if payout.to_wallet else pay(payout, "ana", at_ns)
        return rng.choice((paid, void(payout, "sara", "x", at_ns)))
    return None


def _check(book: PayoutBook) -> None:
    """Every view as its definition gives it from the payouts the book holds."""
    payouts = list(book.payouts.values())
    in_order = sorted(payouts, key=payment_order)
    open_ones = [p for p in in_order if p.state in OPEN]
    awaiting = [p for p in in_order if p.state is PayoutState.AWAITING_APPROVAL]
    assert book.listing(pending_only=False) == in_order
    assert book.listing(pending_only=True) == open_ones
    assert book.listing(pending_only=True, awaiting_approval_only=True) == awaiting
    assert book.listing(pending_only=False, awaiting_approval_only=True) == awaiting
    for table in TABLES:
        at_terminal = [
            p
            for p in open_ones
            if p.table_id == table and (not p.to_wallet or p.state is PayoutState.AWAITING_APPROVAL)
        ]
        assert book.open_for(table) == at_terminal, table
        mine = [p for p in payouts if p.table_id == table and p.to_wallet]
        assert book.wallet_rounds_of(table) == wallet_rounds(mine)
    payable = {p.award_id for p in payouts if p.to_wallet and p.state in PAYABLE}
    assert {p.award_id for p in book.payable_to_wallets()} == payable
    owed = Counter(p.table_id for p in open_ones if not p.to_wallet)
    for table in TABLES:  # D3: with no terminal shown, a table's series counts what it owes
        book.attend(table)
        book.leave(table)
        series = REGISTRY.get_sample_value("jackpot_payout_unattended_awards", {"table": table})
        assert series == (owed[table] or None), table


def _pages(book: PayoutBook, size: int, pending: bool, awaiting: bool) -> list[Payout]:
    """The whole listing read page by page, as ListPayouts' clients read it."""
    read: list[Payout] = []
    while True:
        after = payment_order(read[-1]) if read else None
        page = book.listing(pending, after, size, awaiting_approval_only=awaiting)
        read += page
        if len(page) < size:
            return read


def test_D3_O9_S5_the_books_views_are_their_definitions_through_any_sequence_of_changes() -> None:
    """2,000 random changes (new payouts land and studio, approvals, payments, voids, replays of
    a payout at its state, drops past the keep time, a partition lost): after each, every
    listing, terminal list, wallet view and owed count is recomputed from scratch."""
    rng = random.Random(39)
    book = PayoutBook()
    number = 0
    for step in range(2_000):
        roll = rng.random()
        held = list(book.payouts.values())
        if roll < 0.4 or not held:
            batch = []
            for _ in range(rng.randint(1, 5)):
                number += 1
                batch.append(_ordered(rng, number))
            book.put_many(rng.randrange(2), batch)
        elif roll < 0.75:
            moved = (_moved(rng, p, step) for p in rng.sample(held, min(3, len(held))))
            book.put_many(0, [m for m in moved if m is not None])
        elif roll < 0.85:
            replayed = rng.choice(held)
            book.put(book.partition_of[replayed.award_id], replayed)
        elif roll < 0.97:
            book.drop([p.award_id for p in rng.sample(held, min(2, len(held)))])
        else:
            book.forget(rng.randrange(2))
        _check(book)
    assert number > 500


def test_S5_a_listing_read_page_by_page_is_the_listing_whole() -> None:
    """ListPayouts' pages (each the ``limit`` after the last one read) are the whole listing in
    payment order, for each of its filters; a page size of one too."""
    rng = random.Random(7)
    book = PayoutBook()
    book.put_many(0, [_ordered(rng, n) for n in range(1, 600)])
    for pending, awaiting in ((False, False), (True, False), (False, True)):
        whole = book.listing(pending, awaiting_approval_only=awaiting)
        assert whole, (pending, awaiting)
        for size in (1, 7, 1_000):
            assert _pages(book, size, pending, awaiting) == whole, (pending, awaiting, size)
