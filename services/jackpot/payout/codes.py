"""One-time approval codes: how a supervisor acts as themselves at a table's shared terminal.

A supervisor, authenticated by their own certificate, is issued a code for one award. The code is
short-lived, single use and bound to that award and that supervisor; only its SHA-256 is kept,
in the memory of the payout instance that owns the payouts (a takeover invalidates outstanding
codes: the supervisor asks again). Too many wrong codes for one award invalidate its codes.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from jackpot.domain.errors import DomainError, Reason

CODE_DIGITS = 8
MAX_WRONG_PER_AWARD = 5


@dataclass(slots=True)
class _Issued:
    digest: bytes
    supervisor: str
    expires_ns: int
    used: bool = False


def _digest(award_id: str, code: str) -> bytes:
    return hashlib.sha256(f"{award_id}\0{code}".encode()).digest()


class ApprovalCodes:
    """Issued codes by award; :meth:`redeem` names the supervisor a valid code acts as."""

    def __init__(self, ttl_ns: int) -> None:
        self.ttl_ns = ttl_ns
        self._issued: dict[str, list[_Issued]] = {}
        self._wrong: dict[str, int] = {}

    def issue(self, award_id: str, supervisor: str, now_ns: int) -> tuple[str, int]:
        """A new code for ``award_id`` acting as ``supervisor``, and when it expires."""
        code = f"{secrets.randbelow(10**CODE_DIGITS):0{CODE_DIGITS}d}"
        expires = now_ns + self.ttl_ns
        self._issued.setdefault(award_id, []).append(
            _Issued(_digest(award_id, code), supervisor, expires)
        )
        self._wrong.pop(award_id, None)
        return code, expires

    def redeem(self, award_id: str, code: str, now_ns: int) -> str:
        """The supervisor of a valid, unused, unexpired code for ``award_id`` (it is used up);
        a refusal naming why otherwise."""
        digest = _digest(award_id, code.strip())
        for issued in self._issued.get(award_id, []):
            if hmac.compare_digest(issued.digest, digest):
                if issued.used:
                    raise DomainError(Reason.NOT_AUTHENTICATED, "this code was already used")
                if now_ns >= issued.expires_ns:
                    raise DomainError(Reason.NOT_AUTHENTICATED, "this code has expired")
                issued.used = True
                return issued.supervisor
        wrong = self._wrong.get(award_id, 0) + 1
        self._wrong[award_id] = wrong
        if wrong >= MAX_WRONG_PER_AWARD:
            self._issued.pop(award_id, None)
            raise DomainError(
                Reason.NOT_AUTHENTICATED,
                f"wrong code for award {award_id}; {wrong} wrong codes: its codes are void, "
                "the supervisor must ask for a new one",
            )
        raise DomainError(Reason.NOT_AUTHENTICATED, f"wrong code for award {award_id}")
