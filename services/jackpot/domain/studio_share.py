"""What each bet of a studio round would be paid if the shared hand hit the top prize now: the
studio sign's figure (issue 39), exact to the peso and computed by the rules that would pay it.

Between a studio round's lock and its hand, every bet the round collected (forfeited ones
excepted, E3, O5) holds the same chance: if the dealer's hand is the paytable's best (a royal
flush at Caribbean Stud), every such bet wins that prize together (O2). A fixed prize pays each
its bet times the multiple (O3, S1); a percentage prize is its share of what the level's pot holds
now (S6), split equally with the odd pesos to the lowest seat (O4, S3), each share at most its
cap times the bet (S4). :func:`top_prize_shares` gives that in one pass over each round's
bets, from what the pot holds; ``tests/unit/test_studio_share.py`` checks it against the
resolution itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from jackpot.domain.group_state import Group, LockedRound
from jackpot.domain.hands import CATEGORIES
from jackpot.domain.money import percent_of_floored
from jackpot.domain.paytable import Paytable, Prize


@dataclass(frozen=True, slots=True)
class TopPrizeShare:
    """One studio round's bets and what each would be paid by the top prize now."""

    table_id: str
    round_id: str
    bets: int  # the round's bets that can win (O5: forfeited ones cannot)
    bet_total: int  # their bets, whole pesos
    prize: str  # the paytable's best hand (its prize's name)
    level: str  # the level that pays it (L2)
    multiple: int  # a fixed prize: each bet times this (O3); 0 for a percentage prize
    share: int  # a percentage prize: each bet's equal part, whole pesos (O4, S3)
    lowest_seat: int  # the seat that takes the odd pesos (S3)
    odd_pesos: int  # the remainder of the split, added to the lowest seat's part
    cap_multiple: int  # S4: each part at most this times its bet; 0 for none

    def amount_for(self, seat: int, bet: int) -> int:
        """What the bet on ``seat`` of ``bet`` pesos would be paid."""
        if self.multiple:
            return self.multiple * bet
        amount = self.share + (self.odd_pesos if seat == self.lowest_seat else 0)
        return min(amount, self.cap_multiple * bet) if self.cap_multiple else amount


def top_prize(paytable: Paytable) -> Prize | None:
    """The prize of the best hand the paytable pays (its evaluator's highest category)."""
    for category in reversed(CATEGORIES[paytable.evaluator]):
        if category in paytable.prizes:
            return paytable.prizes[category]
    return None


def top_prize_shares(group: Group) -> list[TopPrizeShare]:
    """Every studio table's locked round awaiting its hand, by table id, with what the top
    prize would pay each bet now; none for a group without studio tables."""
    prize = top_prize(group.config.paytable)
    if prize is None:
        return []
    shares = []
    for table_id in sorted(group.locked):
        table = group.tables.get(table_id)
        if table is not None and table.studio_seats:
            share = _share(group, table_id, group.locked[table_id], prize)
            if share is not None:
                shares.append(share)
    return shares


def _share(group: Group, table_id: str, locked: LockedRound, prize: Prize) -> TopPrizeShare | None:
    playing = [seat for seat in locked.bets if seat not in locked.forfeited]
    if not playing:
        return None
    level = group.config.level(prize.level)
    share, odd = 0, 0
    if not prize.is_fixed:
        pool = percent_of_floored(group.balances[level.pot], prize.percent_ppm)  # S6
        share, odd = divmod(pool, len(playing))  # S3, as money.split_equally
    return TopPrizeShare(
        table_id=table_id,
        round_id=locked.round_id,
        bets=len(playing),
        bet_total=sum(locked.bets[seat] for seat in playing),
        prize=prize.hand,
        level=level.name,
        multiple=prize.multiple,
        share=share,
        lowest_seat=min(playing),
        odd_pesos=odd,
        cap_multiple=prize.cap_multiple or 0,
    )
