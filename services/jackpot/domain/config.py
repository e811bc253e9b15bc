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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
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
    }
)


def load_config(data: Mapping[str, Any]) -> PotGroupConfig:
    """Validate configuration data; a DomainError(INVALID_CONFIG) names the first problem.

    The fields are checked in this order: unknown fields, version, commission, pots (C3, C5),
    mystery (X1), reserve order (S7), paytable (P4), bet limits (E1), base (C4).
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
    reserve_order = _load_reserve_order(data, pots, mystery)
    paytable = _load_paytable(data.get("paytable", "scj-poker"))
    min_bet, max_bet, credit_value = _load_bet_limits(data)
    return PotGroupConfig(
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
                raise _invalid(f"pot {current.name} overflows to unknown pot {current.overflow_to}")
            if current.overflow_to in seen:
                raise _invalid(
                    f"pot {pot.name}: overflow chain loops back to {current.overflow_to}"
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


def _load_reserve_order(
    data: Mapping[str, Any], pots: tuple[PotSpec, ...], mystery: MysterySpec | None
) -> tuple[str, ...]:
    """The reserves that fund a shortfall (S7) and a top-up (S8); default: as listed."""
    names = [p.name for p in pots]
    reserve_default = [n for n in names if n != MAIN and (mystery is None or n != mystery.pot)]
    reserve_order = data.get("reserve_order", reserve_default)
    if not isinstance(reserve_order, list) or any(
        not isinstance(n, str) or n not in names for n in reserve_order
    ):
        raise _invalid(f"reserve_order must list pots of the group, got {reserve_order!r}")
    if MAIN in reserve_order or len(set(reserve_order)) != len(reserve_order):
        raise _invalid("reserve_order lists each reserve at most once and never 'main'")
    return tuple(reserve_order)


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
