"""One-time approval codes (the supervisor's jackpot lock at the table, rule D3): a code acts as
the supervisor it was issued to, for its award only, once, until it expires; wrong codes are
refused and too many void the award's codes."""

from __future__ import annotations

import pytest

from jackpot.domain.errors import DomainError
from jackpot.payout.codes import MAX_WRONG_PER_AWARD, ApprovalCodes

SECOND = 1_000_000_000


def test_a_code_acts_once_as_its_supervisor_for_its_award_only() -> None:
    codes = ApprovalCodes(ttl_ns=120 * SECOND)
    code, expires = codes.issue("a1", "ana", now_ns=0)
    assert (len(code), code.isdigit(), expires) == (8, True, 120 * SECOND)
    with pytest.raises(DomainError, match="wrong code for award a2"):
        codes.redeem("a2", code, now_ns=1)
    assert codes.redeem("a1", code, now_ns=1) == "ana"
    with pytest.raises(DomainError, match="already used"):
        codes.redeem("a1", code, now_ns=2)


def test_an_expired_code_is_refused() -> None:
    codes = ApprovalCodes(ttl_ns=120 * SECOND)
    code, expires = codes.issue("a1", "ana", now_ns=0)
    with pytest.raises(DomainError, match="expired"):
        codes.redeem("a1", code, now_ns=expires)


def test_too_many_wrong_codes_void_the_awards_codes() -> None:
    codes = ApprovalCodes(ttl_ns=120 * SECOND)
    code, _ = codes.issue("a1", "ana", now_ns=0)
    wrong = "0" * 8 if code != "0" * 8 else "1" * 8
    for _ in range(MAX_WRONG_PER_AWARD - 1):
        with pytest.raises(DomainError, match="wrong code"):
            codes.redeem("a1", wrong, now_ns=1)
    with pytest.raises(DomainError, match="its codes are void"):
        codes.redeem("a1", wrong, now_ns=1)
    with pytest.raises(DomainError, match="wrong code"):
        codes.redeem("a1", code, now_ns=1)  # the right code no longer works either
