"""How a pot group's levels show (L1, L4, M3): each level's figures for the meters, the signs, the
reports and the metrics, and the level each money transfer of an event belongs to.

A one-level group shows as it did before levels existed: its events name no level
(:func:`transfer_levels` is empty) and its updates carry no level values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from jackpot.domain.config import PotGroupConfig
from jackpot.domain.events import BetsCollected, Transfer
from jackpot.domain.group_state import Group
from jackpot.domain.money import floor_pesos


@dataclass(frozen=True, slots=True)
class LevelFigures:
    """One level as meters, signs, reports and metrics show it (L1, L4); money in minor units
    but ``sign_value``, whole pesos floored (M3)."""

    name: str
    label: str
    pot: str
    balance: int
    sign_value: int
    base: int
    reserves: int  # what its reserves hold together (S7, L3)
    share_ppm: int  # its pot's part of what the commission leaves (C3)
    ceiling: int | None  # its pot's ceiling (C5)


def level_figures(group: Group) -> tuple[LevelFigures, ...]:
    """Every level's figures, the main level first (L1, L4, M3); one for a one-level group."""
    shares = {pot.name: pot for pot in group.config.pots}
    return tuple(
        LevelFigures(
            name=level.name,
            label=level.label,
            pot=level.pot,
            balance=group.balances[level.pot],
            sign_value=floor_pesos(group.balances[level.pot]),
            base=level.base,
            reserves=sum(group.balances[pot] for pot in level.reserve_order),
            share_ppm=shares[level.pot].share_ppm,
            ceiling=shares[level.pot].ceiling,
        )
        for level in group.config.levels
    )


def level_sign_values(group: Group) -> dict[str, int]:
    """Level name -> what its sign shows: its pot floored to whole pesos (M3, L4)."""
    return {level.name: floor_pesos(group.balances[level.pot]) for level in group.config.levels}


def level_increments(config: PotGroupConfig, collected: BetsCollected) -> dict[str, int]:
    """Level name -> minor units one lock credited to the level's pot, overflow included
    (C5, L4); a pot of no level (a reserve, the mystery pot) is not counted."""
    pots = {level.pot: level.name for level in config.levels}
    increments = dict.fromkeys(pots.values(), 0)
    for pot, amount in collected.increments:
        if pot in pots:
            increments[pots[pot]] += amount
    return increments


def transfer_levels(config: PotGroupConfig, transfers: Sequence[Transfer]) -> tuple[str, ...]:
    """L4: the level of each transfer's pot (``""`` for none); empty in a one-level group,
    whose events are written as they were before levels existed."""
    if not config.has_levels:
        return ()
    levels = []
    for source, target, _ in transfers:
        pot = target if target.startswith("pot:") else source
        levels.append(
            config.level_of_pot(pot.removeprefix("pot:")) if pot.startswith("pot:") else ""
        )
    return tuple(levels)
