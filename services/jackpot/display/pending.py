"""The jackpot lock on the signs (rule D2): each group's prizes awaiting a supervisor's approval,
shown pending next to the live amount until approved, paid or voided.

A land table's prizes are listed one by one, in payment order (S5). A studio table's are counted
by round (O4, O9), as its banner counts its winners: one round can hold thousands of prizes at or
above the studio approval threshold, and a sign that listed them would be pushed every one of them
with each pot update (a studio round's 7,718 prizes awaiting approval made the display take 0.17
cores and the land floor's lock-to-sign p99 2.8 times longer; issue 39). A payout record costs a
lookup, a binary search in the group's list, or a count: never a pass over what is pending.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class PendingPrize:
    """A prize of the group locked until a supervisor approves it."""

    award_id: str
    table_id: str
    seat: int
    prize: str
    amount: int
    order: int = 0  # payment order (rule S5), for sorting only
    round_id: str = ""
    studio: bool = False  # a studio table's prize, paid to a wallet (O9): counted, not listed

    def to_json(self) -> dict[str, Any]:
        return prize_json(self)


def prize_json(prize: Any) -> dict[str, Any]:
    """A seat's prize as the web signs read it (a pending prize, an envy bonus)."""
    return {
        name: getattr(prize, name) for name in ("award_id", "table_id", "seat", "prize", "amount")
    }


@dataclass(frozen=True, slots=True)
class PendingRound:
    """A studio round's prizes awaiting approval, counted (D2, O4, O9)."""

    table_id: str
    round_id: str
    prizes: int
    total: int  # whole pesos

    def to_json(self) -> dict[str, Any]:
        return {
            "table_id": self.table_id,
            "round_id": self.round_id,
            "prizes": self.prizes,
            "total": self.total,
        }


def _listed_key(prize: PendingPrize) -> tuple[int, str]:
    return (prize.order, prize.award_id)


class PendingLock:
    """Every group's pending prizes: the land ones listed, the studio ones counted by round.
    Each change answers the groups whose signs it changed."""

    def __init__(self) -> None:
        self._lists: dict[str, tuple[PendingPrize, ...]] = {}  # group -> its listed prizes
        self._rounds: dict[str, dict[tuple[str, str], tuple[int, int]]] = {}  # group -> counts
        self._shown_in: dict[str, tuple[str, PendingPrize]] = {}  # award -> (group, prize)

    def listed(self, group: str) -> tuple[PendingPrize, ...]:
        """The group's land prizes awaiting approval, in payment order (S5)."""
        return self._lists.get(group, ())

    def counted(self, group: str) -> tuple[PendingRound, ...]:
        """The group's studio rounds with prizes awaiting approval, by table, then round."""
        rounds = self._rounds.get(group, {})
        return tuple(PendingRound(t, r, *rounds[t, r]) for t, r in sorted(rounds))

    def payout(self, group: str, prize: PendingPrize, awaiting_approval: bool) -> set[str]:
        """A payout's latest state: pending while it awaits approval, else not."""
        if awaiting_approval and self._shown_in.get(prize.award_id) == (group, prize):
            return set()  # a record read again
        changed = self.settled(prize.award_id)
        if awaiting_approval:
            self._show(group, prize)
            changed.add(group)
        return changed

    def settled(self, award_id: str) -> set[str]:
        """The award is pending nowhere (approved, paid, voided, or its tombstone)."""
        if award_id not in self._shown_in:
            return set()
        group, prize = self._shown_in.pop(award_id)
        if prize.studio:
            rounds = self._rounds[group]
            prizes, total = rounds.pop((prize.table_id, prize.round_id))
            if prizes > 1:
                rounds[prize.table_id, prize.round_id] = (prizes - 1, total - prize.amount)
            elif not rounds:
                del self._rounds[group]
        else:
            shown = self._lists[group]
            at = bisect.bisect_left(shown, _listed_key(prize), key=_listed_key)
            self._lists[group] = (*shown[:at], *shown[at + 1 :])
            if not self._lists[group]:
                del self._lists[group]
        return {group}

    def replace(self, pending: Mapping[str, Sequence[PendingPrize]]) -> set[str]:
        """Every group's pending prizes at once, as a restore read them; answers every group
        that had or has one."""
        changed = set(self._lists) | set(self._rounds) | set(pending)
        for held in (self._lists, self._rounds, self._shown_in):
            held.clear()
        for group, prizes in pending.items():
            for prize in prizes:
                self._show(group, prize)
        return changed

    def _show(self, group: str, prize: PendingPrize) -> None:
        """Listed in payment order (a land prize), or counted into its round (a studio one)."""
        self._shown_in[prize.award_id] = (group, prize)
        if prize.studio:
            rounds = self._rounds.setdefault(group, {})
            prizes, total = rounds.get((prize.table_id, prize.round_id), (0, 0))
            rounds[prize.table_id, prize.round_id] = (prizes + 1, total + prize.amount)
            return
        shown = self._lists.get(group, ())
        at = bisect.bisect_left(shown, _listed_key(prize), key=_listed_key)
        self._lists[group] = (*shown[:at], prize, *shown[at:])
