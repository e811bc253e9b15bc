"""Rule D3 on the floor (issue 19): a table's unpaid prizes that no connected dealer terminal
shows are counted per table, for the alert JackpotPrizeUnattended."""

from __future__ import annotations

import time

import pytest
from prometheus_client import REGISTRY

from jackpot.domain.payout import Payout, order_payout, pay
from jackpot.payout.payout_book import PayoutBook


def unattended(table_id: str) -> float | None:
    return REGISTRY.get_sample_value("jackpot_payout_unattended_awards", {"table": table_id})


def prize(table_id: str, award: str, at_ns: int = 1) -> Payout:
    return order_payout(
        award_id=award,
        pot_group_id="g",
        table_id=table_id,
        round_id="R1",
        seat=1,
        prize="FLUSH",
        amount=50_000,
        cards=(),
        order=1,
        approval_threshold=1_000_000,
        at_ns=at_ns,
    )


def test_a_tables_prizes_count_as_unattended_until_its_terminal_connects_and_again_after() -> None:
    book = PayoutBook()
    book.put(0, prize("T1", "a1"))
    book.put(0, prize("T1", "a2"))
    book.put(1, prize("T2", "b1"))
    assert unattended("T1") == 2
    assert unattended("T2") == 1
    book.attend("T1")
    assert unattended("T1") == 0  # its dealer sees them
    assert unattended("T2") == 1
    book.attend("T1")
    book.leave("T1")
    assert unattended("T1") == 0  # one of its two terminals is still connected
    book.leave("T1")
    assert unattended("T1") == 2
    book.forget(0)  # the partition moved away: not this instance's to pay
    assert unattended("T1") is None  # no prize and no terminal: no series
    assert unattended("T2") == 1


def test_the_oldest_pending_age_is_read_at_the_scrape(monkeypatch: pytest.MonkeyPatch) -> None:
    """The oldest open payout's age is what it is when scraped: it grows while nothing changes
    (it was set at each change, and stood still between them); a paid prize leaves it."""
    book = PayoutBook()
    ordered_at = time.time_ns() - 90 * 10**9
    old = prize("T1", "a1", at_ns=ordered_at)
    book.put(0, old)
    monkeypatch.setattr(time, "time_ns", lambda: ordered_at + 120 * 10**9)
    assert REGISTRY.get_sample_value("jackpot_payout_oldest_pending_seconds") == 120
    monkeypatch.undo()
    assert REGISTRY.get_sample_value("jackpot_payout_pending_awards") == 1
    book.put(0, pay(old, "dealer", time.time_ns()))
    assert REGISTRY.get_sample_value("jackpot_payout_oldest_pending_seconds") == 0
    assert REGISTRY.get_sample_value("jackpot_payout_pending_awards") == 0
    assert unattended("T1") is None
