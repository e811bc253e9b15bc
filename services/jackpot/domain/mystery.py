"""Complementary (mystery) prize triggers: drawn secretly, committed, revealed (rules X1, X2).

When a trigger is drawn the system publishes only ``commitment = SHA-256(value || salt)`` where
``value`` is the trigger in whole pesos as ASCII decimal digits and ``salt`` is 16 random bytes.
After the hit both are revealed, and anyone can check them with :func:`verify_commitment`.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable

TriggerSource = Callable[[int, int], tuple[int, bytes]]


def secure_trigger(low: int, high: int) -> tuple[int, bytes]:
    """A trigger drawn uniformly in [low, high] pesos by the OS CSPRNG, and a fresh salt."""
    return low + secrets.randbelow(high - low + 1), secrets.token_bytes(16)


def commitment(value: int, salt: bytes) -> str:
    return hashlib.sha256(str(value).encode("ascii") + salt).hexdigest()


def verify_commitment(value: int, salt: bytes, published: str) -> bool:
    """True when a revealed trigger and salt match the commitment published before the hit."""
    return hmac.compare_digest(commitment(value, salt), published)
