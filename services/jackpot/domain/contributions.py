"""Where a locked round's bets go, once each is checked against the group's limits (E1, M1):
the casino's commission, then each pot's exact share of the rest (C1-C5), a pot above its
ceiling passing the excess down its overflow chain (C5).

Amounts are exact minor units (:mod:`jackpot.domain.money`): a pot's share of one whole peso is
``(PPM - commission_ppm) * share_ppm`` minor units, so nothing is rounded and rule M2 holds to
the unit. With a mystery pot (X2) the bets are allocated one at a time, seat 1 first, to find the
bet whose contribution took the mystery pot across its hidden trigger. The engine's
``PotGroup.lock_round`` records the event; this module moves the money.
"""

from __future__ import annotations

from collections.abc import Mapping

from jackpot.domain.config import PotGroupConfig
from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.group_state import Allocation, Group, LinkedTable
from jackpot.domain.money import PPM, pesos

# (from pot, to pot, minor units) of each excess a ceiling passed on (C5).
Overflow = list[tuple[str, str, int]]


def allocation(config: PotGroupConfig) -> Allocation:
    """Per pot with a share: minor units credited per whole peso collected, exact (C3, C5)."""
    net = PPM - config.commission_ppm
    return tuple(
        (pot.name, net * pot.share_ppm, pot.ceiling, pot.overflow_to)
        for pot in config.pots
        if pot.share_ppm
    )


def contribute(
    group: Group,
    total: int,
    ordered: tuple[tuple[int, int], ...],
    overflow: Overflow,
) -> tuple[list[tuple[str, int]], int | None]:
    """Credit the pots with ``total`` whole pesos (C3, C5): the increments, and the seat whose
    bet took the mystery pot across its hidden trigger (X2), if one did."""
    mystery = group.config.mystery
    if mystery is None:
        return allocate(group, total, overflow), None
    assert group.mystery is not None  # a group with a mystery pot always has a trigger drawn
    trigger = pesos(group.mystery.trigger_pesos)
    credited: dict[str, int] = {}
    mystery_winner = None
    for seat, bet in ordered:
        for pot, amount in allocate(group, bet, overflow):
            credited[pot] = credited.get(pot, 0) + amount
        if mystery_winner is None and group.balances[mystery.pot] >= trigger:
            mystery_winner = seat
    return list(credited.items()), mystery_winner


def allocate(group: Group, pesos_collected: int, overflow: Overflow) -> list[tuple[str, int]]:
    """Credit each pot its exact share of ``pesos_collected`` after commission (C3, C5)."""
    increments: list[tuple[str, int]] = []
    balances = group.balances
    for pot, multiplier, ceiling, overflow_to in group.allocation:
        amount = pesos_collected * multiplier
        if ceiling is None or balances[pot] + amount <= ceiling:
            balances[pot] += amount
            increments.append((pot, amount))
        else:
            increments.extend(_credit(group, pot, amount, ceiling, overflow_to, overflow))
    return increments


def _credit(
    group: Group,
    pot: str,
    amount: int,
    ceiling: int | None,
    overflow_to: str | None,
    overflow: Overflow,
) -> list[tuple[str, int]]:
    """Credit a pot; above its ceiling the excess goes down the overflow chain (C5)."""
    credited: list[tuple[str, int]] = []
    while True:
        balance = group.balances[pot]
        if ceiling is None or overflow_to is None or balance + amount <= ceiling:
            group.balances[pot] = balance + amount
            credited.append((pot, amount))
            return credited
        kept = max(ceiling - balance, 0)
        if kept:
            group.balances[pot] = balance + kept
            credited.append((pot, kept))
        excess = amount - kept
        overflow.append((pot, overflow_to, excess))
        group.overflow += excess
        spec = next(p for p in group.config.pots if p.name == overflow_to)
        pot, amount, ceiling, overflow_to = overflow_to, excess, spec.ceiling, spec.overflow_to


def checked_total(config: PotGroupConfig, table: LinkedTable, bets: Mapping[int, int]) -> int:
    """The whole pesos bet; each bet whole credits within the group's limits (E1, M1, O6), on a
    seat of the table (O1 at a studio)."""
    seats = table.seats
    total = 0
    for seat, bet in bets.items():
        if not 1 <= seat <= seats:
            table.check_seat(seat)
        if type(bet) is not int:  # M1: whole pesos only, never a float
            raise DomainError(Reason.MALFORMED, f"seat {seat} bet {bet!r} is not whole pesos")
        if not config.min_bet <= bet <= config.max_bet or bet % config.credit_value:
            raise DomainError(
                Reason.BET_OUT_OF_LIMITS,
                f"seat {seat} bet {bet} is outside {config.min_bet}-{config.max_bet} or not "
                f"whole credits of {config.credit_value} (rule E1)",
            )
        total += bet
    return total
