"""How a locked round's winners are paid and the round settled (rules S1-S9, L, V), all amounts
exact. The engine's ``PotGroup.resolve_round`` validates the round and finds its winners
(:mod:`jackpot.domain.round_reading`); :func:`resolve` pays them and settles it.

Order of resolution within one round:

1. fixed prizes, smaller multiples first, then by seat; each is the winner's bet times the
   multiple, taken from the main pot; a shortfall comes from the reserves in configured order,
   then the house (S7);
2. percentage prizes, smaller percentages first, each computed on what the main pot holds then,
   floored to whole pesos (S6), split equally with the whole remainder to the lowest seat (S3),
   each share capped at its multiple of the bet, the excess staying in the pot (S4);
3. if the round was a reset (a prize of 100 % of the main pot was paid, or a prize left the main
   pot below its base), a pending configuration takes effect now (C7), and then the main pot is
   topped up to the (new) base from the reserves, then the house (S8).

Levels and envy (docs/rules.md, L and V: operator options beside the SCJ rules): a group may pay
from several levels, each a pot with its own base and reserves. Each prize is paid from its level
(L2): a fixed prize or a shortfall from that level's pot, then its reserves, then the house (S7);
a percentage on what that level's pot holds (S2, S6). Envy bonuses (V1-V3) are fixed prizes paid
after the multiples of the bet and before any percentage. After the prizes, every level that paid
one and is below its base is topped up from its own reserves, then the house (L3); only the main
level's reset activates a pending configuration (C7). A group with one level resolves exactly as
it did before levels existed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from jackpot.domain.config import MAIN, LevelSpec
from jackpot.domain.events import (
    EnvyHit,
    Event,
    PotReseeded,
    PrizeAwarded,
    RoundSettled,
    Transfer,
)
from jackpot.domain.group_state import REMEMBERED_AWARDS, SETTLED_ROUNDS_REMEMBERED, Group
from jackpot.domain.money import PPM, percent_of_floored, pesos, split_equally
from jackpot.domain.round_reading import Payee, ResolvingRound, envy_payees, seat_payee

Winners = Mapping[str, list[int]]  # prize -> its winning seats, lowest first


@dataclass(slots=True)
class RoundAwards:
    """What one round's resolution has paid so far; each prize step adds to it."""

    events: list[Event] = field(default_factory=list)  # PrizeAwarded, in the order paid
    award_ids: list[str] = field(default_factory=list)
    jackpot_hit: bool = False  # a prize of 100 % of the main pot was paid: a reset (C7, S8)
    levels_paid: set[str] = field(default_factory=set)  # L3: the levels that paid a prize
    named: bool = False  # L4: the group has levels, so its prizes name theirs
    # a level's name -> its pot and reserves as S7 takes from them, each with its account (the
    # configuration cannot change before the prizes are paid: C7 activates one at the settling)
    accounts: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    transfers: dict[tuple[Transfer, ...], tuple[Transfer, ...]] = field(default_factory=dict)

    def alike(self, transfers: tuple[Transfer, ...]) -> tuple[Transfer, ...]:
        """``transfers``, or the equal tuple an earlier prize of the round holds (the shares of a
        split are alike, O4: one tuple, not one per bet)."""
        return self.transfers.setdefault(transfers, transfers)

    def accounts_of(self, level: LevelSpec) -> tuple[tuple[str, str], ...]:
        """The level's pot, then its reserves in order, each with its account (``pot:<name>``)."""
        accounts = self.accounts.get(level.name)
        if accounts is None:
            pots = (level.pot, *level.reserve_order)
            accounts = self.accounts[level.name] = tuple((pot, f"pot:{pot}") for pot in pots)
        return accounts


def resolve(group: Group, resolving: ResolvingRound, winners: Winners) -> list[Event]:
    """Pay the fixed prizes (S1), the envy bonuses (V1-V3), the percentage prizes (S2-S4, S6),
    then settle (C7, S8, L3); the events, in that order. A studio round's bets are its seats: a
    fixed prize per winning bet (O3), a percentage prize split among them all (O4)."""
    awards = RoundAwards(named=group.config.has_levels)  # L4: a one-level group's events
    _pay_fixed_prizes(group, resolving, winners, awards)
    _pay_envy(group, resolving, winners, awards)
    _pay_percentage_prizes(group, resolving, winners, awards)
    return _settle(group, resolving, awards)


def _pay_fixed_prizes(
    group: Group, resolving: ResolvingRound, winners: Winners, awards: RoundAwards
) -> None:
    """S1: fixed prizes, smaller multiples first, then by seat: the bet times the multiple."""
    paytable = group.config.paytable
    bets = resolving.locked.bets
    for prize_name in paytable.fixed_order:
        seats = winners.get(prize_name)
        if not seats:
            continue
        prize = paytable.prizes[prize_name]
        level = group.config.level(prize.level)  # L2
        for seat in seats:
            amount = prize.multiple * bets[seat]
            _pay(group, awards, seat_payee(resolving, seat), prize_name, amount, level)


def _pay_envy(
    group: Group, resolving: ResolvingRound, winners: Winners, awards: RoundAwards
) -> None:
    """V1-V3: for each winner of a prize with an envy bonus (in the paytable's order, then
    from the lowest winning seat), every other eligible seat is paid the bonus, from seat 1
    of the winner's table, then (V2, when linked) of each other table in the order of its id.
    """
    paytable = group.config.paytable
    for prize_name in paytable.fixed_order + paytable.percent_order:
        prize = paytable.prizes[prize_name]
        envy = prize.envy
        if envy is None:
            continue
        level = group.config.level(envy.level or prize.level)
        for winner in winners.get(prize_name, ()):
            hit: EnvyHit = (resolving.table_id, resolving.round_id, winner)
            cards = seat_payee(resolving, winner).cards
            for paid in envy_payees(resolving, winner, cards, group.locked, linked=envy.linked):
                _pay(group, awards, paid, f"ENVY_{prize_name}", envy.amount_pesos, level, hit)


def _pay_percentage_prizes(
    group: Group, resolving: ResolvingRound, winners: Winners, awards: RoundAwards
) -> None:
    """S2: percentage prizes, smaller first, each on what the main pot holds then."""
    paytable = group.config.paytable
    bets = resolving.locked.bets
    for prize_name in paytable.percent_order:
        seats = winners.get(prize_name)
        if not seats:
            continue
        prize = paytable.prizes[prize_name]
        level = group.config.level(prize.level)  # L2: a percentage of its own level
        pool = percent_of_floored(group.balances[level.pot], prize.percent_ppm)  # S6
        shares = split_equally(pool, seats)  # S3
        for seat in seats:
            amount = shares[seat]
            if prize.cap_multiple is not None:  # S4: the excess stays in the level's pot
                amount = min(amount, prize.cap_multiple * bets[seat])
            _pay(group, awards, seat_payee(resolving, seat), prize_name, amount, level)
        if level.pot == MAIN:
            awards.jackpot_hit = awards.jackpot_hit or prize.percent_ppm == PPM


def _pay(
    group: Group,
    awards: RoundAwards,
    payee: Payee,
    prize: str,
    amount_pesos: int,
    level: LevelSpec,
    envy_of: EnvyHit | None = None,
) -> None:
    """Pay one prize from its level (taken as S7 says), count it in the group's totals and in
    ``awards``; an envy bonus (V1) names the hit it is paid for."""
    award_id = f"{group.group_id}/{payee.table_id}/{payee.round_id}/{payee.seat}/{prize}"
    if envy_of is not None:
        award_id += f"/{envy_of[0]}/{envy_of[1]}/{envy_of[2]}"
    amount = pesos(amount_pesos)
    transfers = awards.alike(_take(group, amount, awards.accounts_of(level)))
    group.awarded += amount
    group.hits[prize] = group.hits.get(prize, 0) + 1
    group.wins[prize] = group.wins.get(prize, 0) + amount_pesos
    named = awards.named  # L4: a one-level group's events are as they were
    award = PrizeAwarded(
        award_id,
        group.group_id,
        payee.table_id,
        payee.round_id,
        payee.seat,
        prize,
        payee.bet_pesos,
        amount_pesos,
        payee.cards,
        transfers,
        level.name if named else "",
        (level.name,) * len(transfers) if named else (),
        envy_of,
        payee.player,
    )
    awards.events.append(award)
    awards.award_ids.append(award_id)
    awards.levels_paid.add(level.name)


def _settle(group: Group, resolving: ResolvingRound, awards: RoundAwards) -> list[Event]:
    """Unlock the round; after a reset, the pending configuration (C7), then the base (S8)."""
    table_id, round_id = resolving.table_id, resolving.round_id
    del group.locked[table_id]
    recent = group.settled.setdefault(table_id, [])
    recent.append(round_id)
    del recent[:-SETTLED_ROUNDS_REMEMBERED]
    events = awards.events
    for paid in events[-REMEMBERED_AWARDS:]:  # what GetPotGroup shows: the last ones only
        group.remember_award(paid.to_dict())
    main_paid = group.config.main_level_name in awards.levels_paid
    below_base = main_paid and group.balances[MAIN] < group.config.base
    if awards.jackpot_hit or below_base:  # a reset of the main pot
        events.extend(group.activate_pending())
        if group.balances[MAIN] < group.config.base:  # S8
            events.append(_reseed(group, table_id, round_id, group.config.levels[0]))
    for level in group.config.other_levels:  # L3: each level that paid, back to its base
        if level.name in awards.levels_paid and group.balances[level.pot] < level.base:
            events.append(_reseed(group, table_id, round_id, level))
    events.append(
        RoundSettled(
            group.group_id, table_id, round_id, tuple(awards.award_ids), group.balances[MAIN]
        )
    )
    group.check_conservation()
    return events


def _take(group: Group, amount: int, accounts: tuple[tuple[str, str], ...]) -> tuple[Transfer, ...]:
    """Take a prize from its level's pot, then that level's reserves in order (``accounts``:
    :meth:`RoundAwards.accounts_of`), then the house (S7, per level: L2)."""
    transfers: list[Transfer] = []
    balances = group.balances
    for pot, account in accounts:
        if amount == 0:
            break
        taken = min(balances[pot], amount)
        if taken:
            balances[pot] -= taken
            amount -= taken
            transfers.append((account, "awards", taken))
    if amount:
        group.house_advance += amount
        transfers.append(("house", "awards", amount))
    return tuple(transfers)


def _reseed(group: Group, table_id: str, round_id: str, level: LevelSpec) -> PotReseeded:
    """Top a level's pot up to its base from its reserves in order, then the house (S8; L3
    for a level other than the main one)."""
    missing = level.base - group.balances[level.pot]
    transfers: list[Transfer] = []
    for pot in level.reserve_order:
        if missing == 0:
            break
        taken = min(group.balances[pot], missing)
        if taken:
            group.balances[pot] -= taken
            missing -= taken
            transfers.append((f"pot:{pot}", f"pot:{level.pot}", taken))
    if missing:
        group.house_advance += missing
        transfers.append(("house", f"pot:{level.pot}", missing))
    group.balances[level.pot] = level.base
    named = group.config.has_levels
    return PotReseeded(
        group.group_id,
        table_id,
        round_id,
        level.base,
        tuple(transfers),
        level.name if named else "",
        (level.name,) * len(transfers) if named else (),
    )
