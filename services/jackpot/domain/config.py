"""A pot group's configuration (rules C2-C5, C7, E1, P4, X1): loaded from data and validated.

Shape (JSON/dict; percentages are decimal strings or integers, money is whole pesos)::

    {"version": 1, "commission_percent": "10", "base": 500000,
     "pots": [{"name": "main", "percent": "70"},
              {"name": "reserve1", "percent": "30", "ceiling": 5000000, "overflow_to": "main"}],
     "reserve_order": ["reserve1"],           # optional: who funds S7/S8 (default: listed)
     "paytable": "scj-poker",                 # a built-in name, or a paytable object
     "min_bet": 1000, "max_bet": 5000, "credit_value": 1000,
     "mystery": {"pot": "mystery", "min": 50000, "max": 100000}}   # optional (X2)

The main pot is the one named ``main``. Shares sum to exactly 100 % (C3). A ceiling's excess
overflows to a named pot of the group (C5); chains must end at a pot without a ceiling.

Levels (rule L1, an operator option beside the SCJ rules): an optional ``"levels"`` list makes
the group pay from several pots, each a level with its own name, sign label, pot, base and
reserves::

    "levels": [{"name": "royal", "label": "Royal Flush", "pot": "main", "base": 500000,
                "reserve_order": ["reserve1"]},
               {"name": "sf", "label": "Straight Flush", "pot": "sf", "base": 50000,
                "reserve_order": ["sf_reserve"]}]

The first level is the main level: its pot is ``main``, and its base and reserve order are the
group's ``base`` and ``reserve_order`` (stated in either place; stated in both, they must agree).
Every other level's pot is a pot of ``pots`` (so its percentage, ceiling and overflow are that
pot's, C3, C5); a level's reserves are pots that belong to no other level. Paytable entries name
the level that pays them (``"level"``, by default the main level) and an optional envy bonus
(``"envy": {"amount", "level"?, "linked"?}``, rules V1, V2). A configuration without ``levels``
has one level, the main pot, and is exactly the configuration it was before levels existed.

No money nowhere (rule C3): every pot must be one a prize or a reseed takes money from, a level's
pot that some prize or envy bonus pays, the mystery pot, or a reserve of such a level that can
draw on it (a base above 0, or a fixed prize or bonus). Refused, each in one line naming the pot
or the field: a pot of no level that is no reserve (with a share or not, overflowing or not), a
level no prize pays, a reserve of a level that never draws on it, a level without a pot or on a
missing pot, two levels on one pot, a reserve listed twice or naming a level's or the mystery's
pot, one reserve for two levels, an overflow chain that loops (C5), and a prize or envy bonus
naming a missing level (L2, V1). A configuration read back from a ledger or a snapshot
(``recorded``) skips the C3 check, so that history written before it still replays.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.money import (
    PPM,
    MoneyError,
    format_percent,
    parse_percent,
    pesos,
)
from jackpot.domain.paytable import Paytable, builtin_paytable, load_paytable

MAIN = "main"


@dataclass(frozen=True, slots=True)
class PotSpec:
    name: str
    share_ppm: int
    ceiling: int | None = None  # minor units
    overflow_to: str | None = None


@dataclass(frozen=True, slots=True)
class LevelSpec:
    """One level of a pot group (L1): the pot it pays from, its base and its reserves (L3)."""

    name: str
    label: str  # what its sign calls it
    pot: str
    base: int  # minor units, whole pesos
    reserve_order: tuple[str, ...]  # S7, S8 for this level

    def to_config(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "label": self.label,
            "pot": self.pot,
            "base": self.base // pesos(1),
            "reserve_order": list(self.reserve_order),
        }


@dataclass(frozen=True, slots=True)
class MysterySpec:
    """A complementary prize (X1, X2) paid from ``pot`` when it crosses a hidden trigger."""

    pot: str
    min_pesos: int
    max_pesos: int


@dataclass(frozen=True, slots=True)
class PotGroupConfig:
    version: int
    commission_ppm: int
    pots: tuple[PotSpec, ...]
    reserve_order: tuple[str, ...]
    base: int  # minor units
    paytable: Paytable
    min_bet: int  # whole pesos
    max_bet: int
    credit_value: int
    mystery: MysterySpec | None = None
    # L1: the main level's name and label (its pot, base and reserves are the fields above) and
    # the other levels; the defaults are the one level every group had before levels existed.
    main_level_name: str = MAIN
    main_level_label: str = ""
    other_levels: tuple[LevelSpec, ...] = ()

    @property
    def levels(self) -> tuple[LevelSpec, ...]:
        """Every level, the main level first (L1)."""
        label = self.main_level_label or self.main_level_name
        main = LevelSpec(self.main_level_name, label, MAIN, self.base, self.reserve_order)
        return (main, *self.other_levels)

    @property
    def has_levels(self) -> bool:
        """Whether the configuration states levels (L1); a one-level group's does not (L4)."""
        return bool(self.other_levels or self.main_level_label) or self.main_level_name != MAIN

    def level(self, name: str | None) -> LevelSpec:
        """The level of that name; None is the main level (L2)."""
        for spec in self.levels:
            if name is None or spec.name == name:
                return spec
        raise _invalid(f"no level named {name!r}")

    def level_of_pot(self, pot: str) -> str:
        """The level a pot belongs to, as its pot or one of its reserves; "" for none (L4)."""
        for spec in self.levels:
            if pot == spec.pot or pot in spec.reserve_order:
                return spec.name
        return ""

    def to_config(self) -> dict[str, Any]:
        pots: list[dict[str, Any]] = []
        for pot in self.pots:
            entry: dict[str, Any] = {"name": pot.name, "percent": format_percent(pot.share_ppm)}
            if pot.ceiling is not None:
                entry["ceiling"] = pot.ceiling // pesos(1)
                entry["overflow_to"] = pot.overflow_to
            pots.append(entry)
        out: dict[str, Any] = {
            "version": self.version,
            "commission_percent": format_percent(self.commission_ppm),
            "base": self.base // pesos(1),
            "pots": pots,
            "reserve_order": list(self.reserve_order),
            "paytable": self.paytable.to_config(),
            "min_bet": self.min_bet,
            "max_bet": self.max_bet,
            "credit_value": self.credit_value,
        }
        if self.mystery is not None:
            out["mystery"] = {
                "pot": self.mystery.pot,
                "min": self.mystery.min_pesos,
                "max": self.mystery.max_pesos,
            }
        if self.has_levels:
            out["levels"] = [level.to_config() for level in self.levels]
        return out

    def same_limits(self, other: PotGroupConfig) -> bool:
        return (self.min_bet, self.max_bet, self.credit_value) == (
            other.min_bet,
            other.max_bet,
            other.credit_value,
        )


def _invalid(detail: str) -> DomainError:
    return DomainError(Reason.INVALID_CONFIG, detail)


MAX_PESOS = 10**15  # far above any pot; keeps every amount inside int64 at the boundaries
MAX_VERSION = 2**32 - 1


def _whole(value: object, what: str, minimum: int = 0, maximum: int = MAX_PESOS) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise _invalid(f"{what} must be a whole number from {minimum} to {maximum}, got {value!r}")
    return value


def _name(value: object, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise _invalid(f"{what} must be a non-empty name, got {value!r}")
    return value


def _percent(value: object, what: str) -> int:
    try:
        return parse_percent(value)  # type: ignore[arg-type]
    except MoneyError as error:
        raise _invalid(f"{what}: {error}") from None


KNOWN_FIELDS = frozenset(
    {
        "version",
        "commission_percent",
        "base",
        "pots",
        "reserve_order",
        "paytable",
        "min_bet",
        "max_bet",
        "credit_value",
        "mystery",
        "levels",
    }
)


def load_config(data: Mapping[str, Any], *, recorded: bool = False) -> PotGroupConfig:
    """Validate configuration data; a DomainError(INVALID_CONFIG) names the first problem.

    The fields are checked in this order: unknown fields, version, commission, pots (C3, C5),
    mystery (X1), reserve order (S7), paytable (P4), bet limits (E1), base (C4), levels and the
    levels the paytable names (L1, L2, V1), and last that every pot is one a prize or a reseed
    takes money from (C3, L1-L3, X2: :func:`check_every_pot_is_read`).

    ``recorded`` is for a configuration read back from a ledger or a snapshot: it was accepted
    when it was written, and the record must replay as it happened even if a later version of
    these checks would refuse it, so the last check is left out.
    """
    unknown = set(data) - KNOWN_FIELDS
    if unknown:
        raise _invalid(f"unknown configuration fields {sorted(unknown)}")
    version = _whole(data.get("version", 1), "version", 1, MAX_VERSION)
    commission = _percent(data.get("commission_percent", 0), "commission_percent")
    if commission == PPM:
        raise _invalid("commission_percent of 100 leaves nothing for the pots")
    pots = _load_pots(data.get("pots", [{"name": MAIN, "percent": 100}]))
    mystery = _load_mystery(data.get("mystery"), pots)
    reserve_order = _listed_reserve_order(data, pots, mystery)
    paytable = _load_paytable(data.get("paytable", "scj-poker"))
    min_bet, max_bet, credit_value = _load_bet_limits(data)
    config = PotGroupConfig(
        version=version,
        commission_ppm=commission,
        pots=pots,
        reserve_order=reserve_order,
        base=pesos(_whole(data.get("base", 0), "base")),
        paytable=paytable,
        min_bet=min_bet,
        max_bet=max_bet,
        credit_value=credit_value,
        mystery=mystery,
    )
    if "levels" not in data:
        config = replace(config, reserve_order=_checked_reserve_order(data, pots, mystery))
        _check_paytable_levels(config)
    else:
        config = load_levels(config, data)
    if not recorded:
        check_every_pot_is_read(config)
    return config


def _load_pots(raw_pots: object) -> tuple[PotSpec, ...]:
    """The pots: unique names, one named main, shares summing to 100 % (C3), sound chains (C5)."""
    if not isinstance(raw_pots, list) or not raw_pots:
        raise _invalid("'pots' must be a non-empty list")
    pots = tuple(_load_pot(raw) for raw in raw_pots)
    names = [p.name for p in pots]
    if len(set(names)) != len(names):
        raise _invalid(f"pot names must be unique, got {names}")
    if MAIN not in names:
        raise _invalid("a pot group needs a pot named 'main' (rule C3)")
    total = sum(p.share_ppm for p in pots)
    if total != PPM:
        shares = " + ".join(f"{p.name} {format_percent(p.share_ppm)}" for p in pots)
        raise _invalid(f"pot percentages must sum to exactly 100, got {shares} (rule C3)")
    _check_overflow_chains(pots)
    return pots


def _load_pot(raw: object) -> PotSpec:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str) or not raw["name"]:
        raise _invalid(f"each pot needs a name, got {raw!r}")
    name = raw["name"]
    ceiling = raw.get("ceiling")
    overflow_to = raw.get("overflow_to")
    if overflow_to is not None:
        overflow_to = _name(overflow_to, f"pot {name} overflow_to")
    if (ceiling is None) != (overflow_to is None):
        raise _invalid(f"pot {name}: 'ceiling' and 'overflow_to' go together (rule C5)")
    return PotSpec(
        name=name,
        share_ppm=_percent(raw.get("percent", 0), f"pot {name} percent"),
        ceiling=None if ceiling is None else pesos(_whole(ceiling, f"pot {name} ceiling")),
        overflow_to=overflow_to,
    )


def _check_overflow_chains(pots: tuple[PotSpec, ...]) -> None:
    """Every overflow chain names pots of the group and ends without looping (C5)."""
    by_name = {p.name: p for p in pots}
    for pot in pots:
        seen = {pot.name}
        current = pot
        while current.overflow_to is not None:
            if current.overflow_to not in by_name:
                raise _invalid(
                    f"pot {current.name} overflows to unknown pot {current.overflow_to} (rule C5)"
                )
            if current.overflow_to in seen:
                raise _invalid(
                    f"pot {pot.name}: overflow chain loops back to {current.overflow_to} (rule C5)"
                )
            seen.add(current.overflow_to)
            current = by_name[current.overflow_to]


def _load_mystery(raw: object, pots: tuple[PotSpec, ...]) -> MysterySpec | None:
    """The optional mystery prize (X1, X2): its own pot of the group and a trigger range."""
    if raw is None:
        return None
    if (
        not isinstance(raw, Mapping)
        or not isinstance(raw.get("pot"), str)
        or raw["pot"] not in {p.name for p in pots}
    ):
        raise _invalid(f"mystery needs 'pot' naming a pot of the group, got {raw!r}")
    if raw["pot"] == MAIN:
        raise _invalid("the mystery prize needs its own pot, not 'main'")
    low = _whole(raw.get("min"), "mystery.min", 1)
    high = _whole(raw.get("max"), "mystery.max", 1)
    if low > high:
        raise _invalid(f"mystery.min {low} is above mystery.max {high}")
    return MysterySpec(raw["pot"], low, high)


def _listed_reserve_order(
    data: Mapping[str, Any], pots: tuple[PotSpec, ...], mystery: MysterySpec | None
) -> tuple[str, ...]:
    """``reserve_order`` as stated, each a pot of the group, checked for shape only."""
    names = [p.name for p in pots]
    reserve_order = data.get("reserve_order", [])
    if not isinstance(reserve_order, list) or any(
        not isinstance(n, str) or n not in names for n in reserve_order
    ):
        raise _invalid(f"reserve_order must list pots of the group, got {reserve_order!r}")
    if MAIN in reserve_order or len(set(reserve_order)) != len(reserve_order):
        raise _invalid("reserve_order lists each reserve at most once and never 'main'")
    if mystery is not None and mystery.pot in reserve_order:
        raise _invalid(
            f"reserve_order names {mystery.pot!r}, the mystery prize's pot: it pays the mystery "
            "prize, not shortfalls (rules L1, X2)"
        )
    return tuple(reserve_order)


def _checked_reserve_order(
    data: Mapping[str, Any], pots: tuple[PotSpec, ...], mystery: MysterySpec | None
) -> tuple[str, ...]:
    """The reserves that fund a shortfall (S7) and a top-up (S8); default: as listed."""
    if "reserve_order" in data:
        return _listed_reserve_order(data, pots, mystery)
    return tuple(
        p.name for p in pots if p.name != MAIN and (mystery is None or p.name != mystery.pot)
    )


def _load_paytable(raw: object) -> Paytable:
    """A built-in paytable by name, or a paytable object (P4)."""
    if isinstance(raw, str):
        return builtin_paytable(raw)
    if isinstance(raw, Mapping):
        return load_paytable(raw)
    raise _invalid(f"paytable must be a built-in name or an object, got {raw!r}")


def _load_bet_limits(data: Mapping[str, Any]) -> tuple[int, int, int]:
    """(min_bet, max_bet, credit_value), whole pesos: limits of whole credits (E1)."""
    credit_value = _whole(data.get("credit_value", 1), "credit_value", 1)
    min_bet = _whole(data.get("min_bet", credit_value), "min_bet", 1)
    max_bet = _whole(data.get("max_bet", min_bet), "max_bet", 1)
    if min_bet > max_bet:
        raise _invalid(f"min_bet {min_bet} is above max_bet {max_bet}")
    if min_bet % credit_value or max_bet % credit_value:
        raise _invalid(f"bet limits {min_bet}-{max_bet} must be whole credits of {credit_value}")
    return min_bet, max_bet, credit_value


LEVEL_FIELDS = frozenset({"name", "label", "pot", "base", "reserve_order"})


def load_levels(config: PotGroupConfig, data: Mapping[str, Any]) -> PotGroupConfig:
    """L1: the ``levels`` of ``data`` on a configuration whose other fields are loaded."""
    raw = data["levels"]
    if not isinstance(raw, list) or not raw:
        raise _invalid(f"'levels' must be a non-empty list of levels, got {raw!r}")
    entries = [_level_entry(index, entry, config) for index, entry in enumerate(raw)]
    names = [entry["name"] for entry in entries]
    if len(set(names)) != len(names):
        raise _invalid(f"level names must be unique, got {names} (rule L1)")
    pots = [entry["pot"] for entry in entries]
    if pots[0] != MAIN:
        raise _invalid(f"levels[0] is the main level: its pot must be 'main', got {pots[0]!r}")
    if len(set(pots)) != len(pots):
        raise _invalid(f"each level needs a pot of its own, got {pots} (rule L1)")
    main = entries[0]
    base = _agreed(main.get("base"), data.get("base"), "base")
    stated_order = main.get("reserve_order")
    if "reserve_order" in data:
        stated_order = _agreed(stated_order, config.reserve_order, "reserve_order")
    others = [
        LevelSpec(e["name"], e["label"], e["pot"], pesos(e.get("base", 0)), e["reserve_order"])
        for e in entries[1:]
    ]
    claimed = {pot for level in others for pot in (level.pot, *level.reserve_order)}
    default_order = tuple(
        p.name
        for p in config.pots
        if p.name != MAIN and p.name not in claimed and p.name not in _mystery_pot(config)
    )
    leveled = replace(
        config,
        base=pesos(base) if base is not None else config.base,
        reserve_order=default_order if stated_order is None else tuple(stated_order),
        main_level_name=main["name"],
        main_level_label=main.get("label", ""),
        other_levels=tuple(others),
    )
    _check_level_reserves(leveled)
    _check_paytable_levels(leveled)
    return leveled


def _mystery_pot(config: PotGroupConfig) -> tuple[str, ...]:
    return () if config.mystery is None else (config.mystery.pot,)


def _agreed(in_level: Any, in_group: Any, what: str) -> Any:
    """The main level's base or reserve order, stated in the level, in the group, or both."""
    if in_level is not None and in_group is not None and in_level != in_group:
        raise _invalid(
            f"levels[0].{what} {in_level!r} is not the group's {what} {in_group!r}: the main "
            "level's are the group's (rule L1)"
        )
    return in_level if in_level is not None else in_group


def _level_entry(index: int, raw: object, config: PotGroupConfig) -> dict[str, Any]:
    """One level's fields, checked for shape: a name, a label, a pot, a base, reserves."""
    where = f"levels[{index}]"
    if not isinstance(raw, Mapping):
        raise _invalid(f"{where} must be an object, got {raw!r}")
    unknown = set(raw) - LEVEL_FIELDS
    if unknown:
        raise _invalid(f"{where} has unknown fields {sorted(unknown)}")
    entry: dict[str, Any] = {"name": _name(raw.get("name"), f"{where}.name")}
    if "label" in raw:
        entry["label"] = _name(raw["label"], f"{where}.label")
    elif index:
        entry["label"] = entry["name"]
    entry["pot"] = (
        MAIN if index == 0 and "pot" not in raw else _name(raw.get("pot"), f"{where}.pot")
    )
    if entry["pot"] not in {p.name for p in config.pots}:
        raise _invalid(f"{where}.pot {entry['pot']!r} is not a pot of the group (rule L1)")
    if entry["pot"] in _mystery_pot(config):
        raise _invalid(f"{where}.pot: the mystery prize's pot cannot be a level (rule L1)")
    if "base" in raw:
        entry["base"] = _whole(raw["base"], f"{where}.base")
    if "reserve_order" in raw:
        order = raw["reserve_order"]
        if not isinstance(order, list) or any(not isinstance(n, str) for n in order):
            raise _invalid(f"{where}.reserve_order must list pots of the group, got {order!r}")
        entry["reserve_order"] = tuple(order)
    elif index:
        entry["reserve_order"] = ()
    return entry


def _check_level_reserves(config: PotGroupConfig) -> None:
    """L3: a level's reserves are pots of the group, no level's pot, no other level's reserve."""
    pots = {p.name for p in config.pots}
    level_pots = {level.pot for level in config.levels}
    seen: set[str] = set()
    for index, level in enumerate(config.levels):
        where = f"levels[{index}].reserve_order"
        if len(set(level.reserve_order)) != len(level.reserve_order):
            raise _invalid(
                f"{where} lists a reserve twice, {list(level.reserve_order)}: a shortfall would "
                "come back to it (rules L1, S7)"
            )
        for reserve in level.reserve_order:
            if reserve not in pots:
                raise _invalid(f"{where} names {reserve!r}, which is not a pot of the group")
            if reserve in level_pots or reserve in _mystery_pot(config):
                raise _invalid(f"{where} names {reserve!r}, the pot of a level or of the mystery")
            if reserve in seen:
                raise _invalid(f"{where}: {reserve!r} is the reserve of two levels (rule L3)")
            seen.add(reserve)


def _check_paytable_levels(config: PotGroupConfig) -> None:
    """L2, V1: every level a prize or an envy bonus names is a level of the group."""
    names = {level.name for level in config.levels}
    for prize in config.paytable.prizes.values():
        named = {"level": prize.level}
        if prize.envy is not None:
            named["envy.level"] = prize.envy.level
        for what, level in named.items():
            if level is not None and level not in names:
                raise _invalid(
                    f"paytable: {prize.hand}.{what} {level!r} is not a level of the group "
                    f"(levels: {', '.join(sorted(names))})"
                )


def check_every_pot_is_read(config: PotGroupConfig) -> None:
    """C3, L1-L3, X2: refuse a pot that no prize and no reseed ever takes money from.

    A pot is read by a prize when it is the pot of a level that some prize or envy bonus pays
    (L2, V1) or the mystery prize's pot (X2); it is read by a shortfall or a reseed (S7, S8, L3)
    when it is a reserve of such a level that can draw on its reserves: one with a base above
    zero or a fixed prize or bonus (a percentage of the level's own pot is never short). An
    overflow (C5) moves only what goes above a ceiling, so the pot it leaves keeps its ceiling's
    worth and is no exception. Every pot is checked, not only those with a share: an opening
    balance (C4) or an older version (C7 never removes a pot) can put money in any of them.
    """
    paying = _paying_levels(config)
    read = set(_mystery_pot(config))
    unread: dict[str, str] = {}
    for level in config.levels:
        if level.name not in paying:
            why = f"of level {level.name!r}, which no prize or envy bonus pays (rules L1, L2)"
            unread.update(dict.fromkeys((level.pot, *level.reserve_order), why))
            continue
        read.add(level.pot)
        if paying[level.name] or level.base > 0:
            read.update(level.reserve_order)
        else:
            why = (
                f"of level {level.name!r}, which never draws on its reserves: its base is 0 and "
                "it pays only percentages of its own pot (rules L3, S7, S8)"
            )
            unread.update(dict.fromkeys(level.reserve_order, why))
    for pot in config.pots:
        if pot.name in read:
            continue
        role = "the pot" if any(pot.name == lv.pot for lv in config.levels) else "a reserve"
        detail = (
            f"{role} {unread[pot.name]}"
            if pot.name in unread
            else "no level's pot, no level's reserve and not the mystery prize's pot (rule C3)"
        )
        raise _invalid(
            f"pot {pot.name!r} is {detail}: no prize or reseed ever takes money from it, so its "
            "share and any balance would be paid to nobody"
        )


def _paying_levels(config: PotGroupConfig) -> dict[str, bool]:
    """Level name -> whether it can draw on its reserves by a fixed prize or bonus (S7), for
    every level some prize or envy bonus pays (L2, V1)."""
    paying: dict[str, bool] = {}
    for prize in config.paytable.prizes.values():
        name = prize.level or config.main_level_name
        paying[name] = paying.get(name, False) or prize.is_fixed
        if prize.envy is not None:
            paying[prize.envy.level or name] = True
    return paying
