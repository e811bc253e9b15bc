"""Complementary (mystery) prize triggers: drawn secretly, committed, revealed (rules X1, X2).

When a trigger is drawn the system publishes only ``commitment = SHA-256(value || salt)`` where
``value`` is the trigger in whole pesos as ASCII decimal digits and ``salt`` is 16 random bytes.
After the hit both are revealed, and anyone can check them with :func:`verify_commitment`.
:func:`pay_mystery` pays the prize to the bet that crossed the trigger and draws the next one.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable

from jackpot.domain.events import Event, MysteryAwarded
from jackpot.domain.group_state import Group
from jackpot.domain.money import pesos

TriggerSource = Callable[[int, int], tuple[int, bytes]]


def secure_trigger(low: int, high: int) -> tuple[int, bytes]:
    """A trigger drawn uniformly in [low, high] pesos by the OS CSPRNG, and a fresh salt."""
    return low + secrets.randbelow(high - low + 1), secrets.token_bytes(16)


def commitment(value: int, salt: bytes) -> str:
    return hashlib.sha256(str(value).encode("ascii") + salt).hexdigest()


def verify_commitment(value: int, salt: bytes, published: str) -> bool:
    """True when a revealed trigger and salt match the commitment published before the hit."""
    return hmac.compare_digest(commitment(value, salt), published)


def pay_mystery(group: Group, table_id: str, round_id: str, winner: int) -> list[Event]:
    """Pay the mystery prize (the trigger value) to the seat whose bet crossed it (X2), then
    commit to the next trigger. At a studio table the prize names the seat's player: it is paid
    to that player's wallet as every studio prize (O9), never at a dealer's terminal."""
    spec = group.config.mystery
    state = group.mystery
    assert spec is not None
    assert state is not None
    trigger = pesos(state.trigger_pesos)
    group.balances[spec.pot] -= trigger
    group.awarded += trigger
    group.hits["MYSTERY"] = group.hits.get("MYSTERY", 0) + 1
    group.wins["MYSTERY"] = group.wins.get("MYSTERY", 0) + state.trigger_pesos
    award = MysteryAwarded(
        f"{group.group_id}/{table_id}/{round_id}/{winner}/MYSTERY",
        group.group_id,
        table_id,
        round_id,
        winner,
        state.trigger_pesos,
        state.trigger_pesos,
        state.salt.hex(),
        state.commitment,
        ((f"pot:{spec.pot}", "awards", trigger),),
        ("",) if group.config.has_levels else (),  # L4: the mystery pot is of no level
        group.locked[table_id].players.get(winner, ""),  # O9: a studio seat's, to its wallet
    )
    group.remember_award(award.to_dict())
    return [award, *group.draw_mystery()]
