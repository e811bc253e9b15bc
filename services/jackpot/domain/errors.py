"""Why the domain refuses an input: one machine-readable reason plus a sentence naming the culprit.

The reasons mirror ``jackpot.v1.RejectReason`` (``jackpot.platform.codec`` maps one to the other
by name), so a device, the dead-letter topic and a log line all say the same thing.

:class:`DomainError` is the one refusal type of the system: the domain, the gateway (a device's
Hello and events), the pot's book and the payout service all raise it, and every dead letter is
built from one (``jackpot.platform.deadletter``).
"""

from __future__ import annotations

from enum import Enum


class Reason(Enum):
    MALFORMED = "MALFORMED"
    UNKNOWN_TABLE = "UNKNOWN_TABLE"
    UNKNOWN_GAME = "UNKNOWN_GAME"
    SEAT_OUT_OF_RANGE = "SEAT_OUT_OF_RANGE"
    BET_OUT_OF_LIMITS = "BET_OUT_OF_LIMITS"
    INSUFFICIENT_CREDITS = "INSUFFICIENT_CREDITS"
    BET_AFTER_LOCK = "BET_AFTER_LOCK"
    SEAT_CLOSED = "SEAT_CLOSED"
    NO_BET = "NO_BET"
    ROUND_NOT_LOCKED = "ROUND_NOT_LOCKED"
    DUPLICATE_CARD = "DUPLICATE_CARD"
    WRONG_CARD_COUNT = "WRONG_CARD_COUNT"
    INVALID_CARD = "INVALID_CARD"
    SEQUENCE_REPLAYED = "SEQUENCE_REPLAYED"
    SEQUENCE_OUT_OF_ORDER = "SEQUENCE_OUT_OF_ORDER"
    TABLE_MISMATCH = "TABLE_MISMATCH"
    UNKNOWN_POT_GROUP = "UNKNOWN_POT_GROUP"
    INVALID_STATE = "INVALID_STATE"
    INVALID_CONFIG = "INVALID_CONFIG"
    NOT_AUTHENTICATED = "NOT_AUTHENTICATED"
    PROGRESSIVE_CLOSED = "PROGRESSIVE_CLOSED"
    TOO_LARGE = "TOO_LARGE"


class DomainError(ValueError):
    """An input the rules refuse. Nothing was changed when this is raised."""

    def __init__(self, reason: Reason, detail: str) -> None:
        super().__init__(f"{reason.value}: {detail}")
        self.reason = reason
        self.detail = detail


class ConservationError(AssertionError):
    """Rule M2 does not hold: a bug, never an input error. The operation must not be committed."""
