"""Paytables as data (rules P, P1, P4), loaded from configuration and validated.

A prize is either a fixed multiple of the winner's own bet (paid first, S1) or a percentage of the
main pot (paid after, on what remains, S2), optionally capped at a multiple of the bet per
winner's share (S4). The stake is never returned (P1): a prize is the amount paid.

Operator options beside the SCJ rules (docs/rules.md, L and V): a prize may name the ``level``
that pays it (rule L2; by default the main level), and an ``envy`` bonus paid to the other
eligible seats when it is won (rule V1). The level names are checked against the group's levels
by ``jackpot.domain.config.load_config``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jackpot.domain.cards import Game
from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.hands import CATEGORIES, Evaluator
from jackpot.domain.money import MoneyError, format_percent, parse_percent

EVALUATOR_GAMES: dict[Evaluator, frozenset[Game]] = {
    "poker": frozenset({Game.CARIBBEAN, Game.DRAW, Game.GO_POKER}),
    "blackjack": frozenset({Game.BLACKJACK}),
}


@dataclass(frozen=True, slots=True)
class Envy:
    """An envy bonus (V1): a fixed amount to every other eligible seat when the prize is won."""

    amount_pesos: int
    level: str | None = None  # the level that pays it; None: the prize's own level
    linked: bool = False  # V2: the eligible seats of every linked table, not only the winner's

    def to_config(self) -> dict[str, Any]:
        out: dict[str, Any] = {"amount": self.amount_pesos}
        if self.level is not None:
            out["level"] = self.level
        if self.linked:
            out["linked"] = True
        return out


@dataclass(frozen=True, slots=True)
class Prize:
    hand: str
    multiple: int = 0  # fixed prize: multiple x the winner's bet
    percent_ppm: int = 0  # percentage prize: share of its level's pot, parts per million
    cap_multiple: int | None = None  # percentage prize: each share at most cap x bet (S4)
    level: str | None = None  # L2: the level that pays it; None: the main level
    envy: Envy | None = None  # V1

    @property
    def is_fixed(self) -> bool:
        return self.multiple > 0

    def to_config(self) -> dict[str, Any]:
        out: dict[str, Any] = {"hand": self.hand}
        if self.is_fixed:
            out["multiple"] = self.multiple
        else:
            out["percent"] = format_percent(self.percent_ppm)
        if self.cap_multiple is not None:
            out["cap_multiple"] = self.cap_multiple
        if self.level is not None:
            out["level"] = self.level
        if self.envy is not None:
            out["envy"] = self.envy.to_config()
        return out


@dataclass(frozen=True, slots=True)
class Paytable:
    name: str
    evaluator: Evaluator
    prizes: Mapping[str, Prize]
    # Resolution order (S1, S2): fixed prizes by multiple ascending, then percentages ascending.
    fixed_order: tuple[str, ...]
    percent_order: tuple[str, ...]

    @property
    def games(self) -> frozenset[Game]:
        return EVALUATOR_GAMES[self.evaluator]

    def order_of(self, hand: str) -> int:
        order = self.fixed_order + self.percent_order
        return order.index(hand)

    def to_config(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "evaluator": self.evaluator,
            "prizes": [self.prizes[h].to_config() for h in self.fixed_order + self.percent_order],
        }


def _invalid(detail: str) -> DomainError:
    return DomainError(Reason.INVALID_CONFIG, f"paytable: {detail}")


MAX_MULTIPLE = 1_000_000  # x bet; with bets bounded, every prize stays inside int64


def _positive_int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_MULTIPLE:
        raise _invalid(f"{what} must be an integer from 1 to {MAX_MULTIPLE}, got {value!r}")
    return value


def load_paytable(config: Mapping[str, Any]) -> Paytable:
    """Validate a paytable from configuration (see ``SCJ_POKER_CONFIG`` for the shape)."""
    name = config.get("name")
    if not isinstance(name, str) or not name:
        raise _invalid("a paytable needs a non-empty 'name'")
    evaluator = config.get("evaluator", "poker")
    if not isinstance(evaluator, str) or evaluator not in CATEGORIES:
        raise _invalid(f"{name}: unknown evaluator {evaluator!r} (known: poker, blackjack)")
    entries = config.get("prizes")
    if not isinstance(entries, list) or not entries:
        raise _invalid(f"{name}: 'prizes' must be a non-empty list")
    prizes: dict[str, Prize] = {}
    for entry in entries:
        prize = _load_prize(name, evaluator, entry)
        if prize.hand in prizes:
            raise _invalid(f"{name}: {prize.hand} is listed twice")
        prizes[prize.hand] = prize
    fixed = sorted((p for p in prizes.values() if p.is_fixed), key=lambda p: p.multiple)
    # S2; L2: ties between levels keep the listed order (they draw on different pots)
    percent = sorted((p for p in prizes.values() if not p.is_fixed), key=lambda p: p.percent_ppm)
    if len({(p.percent_ppm, p.level) for p in percent}) != len(percent):
        raise _invalid(
            f"{name}: two percentage prizes of one level with the same percent have no order"
        )
    return Paytable(
        name=name,
        evaluator="poker" if evaluator == "poker" else "blackjack",
        prizes=prizes,
        fixed_order=tuple(p.hand for p in fixed),
        percent_order=tuple(p.hand for p in percent),
    )


PRIZE_FIELDS = frozenset({"hand", "multiple", "percent", "cap_multiple", "level", "envy"})


def _load_prize(name: str, evaluator: str, entry: object) -> Prize:
    """One paytable entry: a fixed multiple or a percentage, its level (L2), its envy (V1)."""
    if not isinstance(entry, Mapping):
        raise _invalid(f"{name}: each prize must be an object, got {entry!r}")
    hand = entry.get("hand")
    if not isinstance(hand, str) or hand not in CATEGORIES[evaluator]:
        raise _invalid(f"{name}: {hand!r} is not a {evaluator} hand {CATEGORIES[evaluator]}")
    unknown = set(entry) - PRIZE_FIELDS
    if unknown:
        raise _invalid(f"{name}: {hand} has unknown fields {sorted(unknown)}")
    if ("multiple" in entry) == ("percent" in entry):
        raise _invalid(f"{name}: {hand} needs exactly one of 'multiple' or 'percent'")
    level = entry.get("level")
    if level is not None and (not isinstance(level, str) or not level):
        raise _invalid(f"{name}: {hand}.level must be a level's name, got {level!r}")
    envy = _load_envy(name, hand, entry.get("envy"))
    if "multiple" in entry:
        if "cap_multiple" in entry:
            raise _invalid(f"{name}: {hand}: a cap applies to percentage prizes only")
        multiple = _positive_int(entry["multiple"], f"{hand}.multiple")
        return Prize(hand, multiple=multiple, level=level, envy=envy)
    try:
        ppm = parse_percent(entry["percent"])
    except MoneyError as error:
        raise _invalid(f"{name}: {hand}: {error}") from None
    if ppm == 0:
        raise _invalid(f"{name}: {hand}: percent must be above 0")
    cap = entry.get("cap_multiple")
    return Prize(
        hand,
        percent_ppm=ppm,
        cap_multiple=None if cap is None else _positive_int(cap, f"{hand}.cap_multiple"),
        level=level,
        envy=envy,
    )


MAX_ENVY_PESOS = 10**12


def _load_envy(name: str, hand: str, raw: object) -> Envy | None:
    """V1, V2: ``{"amount": whole pesos, "level"?: a level's name, "linked"?: bool}``."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise _invalid(f"{name}: {hand}.envy must be an object, got {raw!r}")
    unknown = set(raw) - {"amount", "level", "linked"}
    if unknown:
        raise _invalid(f"{name}: {hand}.envy has unknown fields {sorted(unknown)}")
    amount = raw.get("amount")
    if isinstance(amount, bool) or not isinstance(amount, int) or not 0 < amount <= MAX_ENVY_PESOS:
        raise _invalid(
            f"{name}: {hand}.envy.amount must be whole pesos from 1 to {MAX_ENVY_PESOS}, "
            f"got {amount!r}"
        )
    level = raw.get("level")
    if level is not None and (not isinstance(level, str) or not level):
        raise _invalid(f"{name}: {hand}.envy.level must be a level's name, got {level!r}")
    linked = raw.get("linked", False)
    if not isinstance(linked, bool):
        raise _invalid(f"{name}: {hand}.envy.linked must be true or false, got {linked!r}")
    return Envy(amount, level, linked)


SCJ_POKER_CONFIG: dict[str, Any] = {
    "name": "scj-poker",
    "evaluator": "poker",
    "prizes": [
        {"hand": "FLUSH", "multiple": 50},
        {"hand": "FULL_HOUSE", "multiple": 100},
        {"hand": "FOUR_OF_A_KIND", "multiple": 500},
        {"hand": "STRAIGHT_FLUSH", "percent": "10", "cap_multiple": 5000},
        {"hand": "ROYAL_FLUSH", "percent": "100"},
    ],
}

BLACKJACK_ACES_CONFIG: dict[str, Any] = {
    "name": "bj-aces-sevens",
    "evaluator": "blackjack",
    "prizes": [
        {"hand": "TWO_ACES_SAME_SUIT", "multiple": 10},
        {"hand": "THREE_SEVENS", "multiple": 25},
        {"hand": "THREE_ACES", "multiple": 50},
        {"hand": "THREE_ACES_SAME_SUIT", "multiple": 200},
        {"hand": "THREE_SEVENS_SAME_SUIT", "multiple": 500},
        {"hand": "FOUR_ACES", "percent": "10", "cap_multiple": 5000},
        {"hand": "FOUR_ACES_SAME_SUIT", "percent": "100"},
    ],
}

BUILTIN_PAYTABLES: dict[str, Mapping[str, Any]] = {
    "scj-poker": SCJ_POKER_CONFIG,
    "bj-aces-sevens": BLACKJACK_ACES_CONFIG,
}


def builtin_paytable(name: str) -> Paytable:
    if name not in BUILTIN_PAYTABLES:
        raise _invalid(f"unknown paytable {name!r} (built in: {', '.join(BUILTIN_PAYTABLES)})")
    return load_paytable(BUILTIN_PAYTABLES[name])
