"""A pot group's books level by level, recomputed from its ledger (rules L1-L4, V1-V3; D4, M2).

Pure, no I/O. :class:`~jackpot.pot.ledger_audit.GroupAudit` keeps one :class:`LevelBooks` for a
group whose configuration states levels (a one-level group has none: its audit and report are
as they were before levels existed). The levels, their pots and reserves and the level that pays
each prize come from the configuration in force (the group's opening entry, each activation, a
checkpoint's state). Each entry's transfers are booked to the level that owns the pot they move,
as figures in picopesos:

- ``collected``: bets into the level's pot (after overflow, C5); ``collected_reserves``: bets
  into its reserves; ``opened``: the house's opening advance to its pot and reserves (C4);
- ``prizes`` and ``envy``: what its prizes and its envy bonuses (``ENVY_<hand>``, V1) paid, of
  which ``paid_from_reserves`` and ``paid_by_house`` came from its reserves and the house (S7);
- ``refilled_from_reserves`` and ``refilled_from_house``: its top-ups to its base (S8, L3);
- ``taken_by_other_levels``: what another level's prize or top-up took from its pot or reserves,
  which the rules never allow (L2, L3): each such transfer is also a finding.

The checks, each a finding in :attr:`LevelBooks.problems`: a prize names the level the paytable
says pays it (L2; an envy bonus, its ``envy.level`` or the prize's, V1); it is paid from that
level's pot, its reserves or the house only (L2, S7); a top-up fills its level's pot from that
level's reserves or the house only (L3); every money-moving entry names one level per transfer,
the level of the pot it moves (L4); and, at the end, each level's pot and its reserves hold
exactly what they held at the start plus what was booked in and less what was booked out (M2 per
level), and neither is negative.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from jackpot.domain.money import format_amount

ENVY_PREFIX = "ENVY_"  # V1: an envy prize's name is ENVY_<the hand that earned it>
FIGURES = (
    "collected",
    "collected_reserves",
    "opened",
    "prizes",
    "envy",
    "paid_from_reserves",
    "paid_by_house",
    "refilled_from_reserves",
    "refilled_from_house",
    "taken_by_other_levels",
)
OPENED, COLLECTED, AWARDED, RESEEDED, MYSTERY = (
    "PotGroupOpened",
    "BetsCollected",
    "PrizeAwarded",
    "PotReseeded",
    "MysteryAwarded",
)


@dataclass(frozen=True, slots=True)
class Level:
    """One level as the configuration states it (L1)."""

    name: str
    label: str
    pot: str
    reserves: tuple[str, ...]


def levels_of(config: Mapping[str, Any]) -> tuple[Level, ...]:
    """The levels a configuration (``PotGroupConfig.to_config``) states; () for one level."""
    raw = config.get("levels") or ()
    main_reserves = tuple(config.get("reserve_order", ()))
    levels = []
    for index, level in enumerate(raw):
        reserves = level.get("reserve_order")
        levels.append(
            Level(
                str(level["name"]),
                str(level.get("label") or level["name"]),
                "main" if index == 0 else str(level["pot"]),
                tuple(reserves) if reserves is not None else main_reserves if index == 0 else (),
            )
        )
    return tuple(levels)


def prize_levels(config: Mapping[str, Any], levels: tuple[Level, ...]) -> dict[str, str]:
    """Prize name -> the level the paytable says pays it (L2), envy bonuses included (V1)."""
    paytable = config.get("paytable")
    if not isinstance(paytable, Mapping) or not levels:
        return {}
    main = levels[0].name
    named: dict[str, str] = {}
    for prize in paytable.get("prizes", ()):
        level = str(prize.get("level") or main)
        named[str(prize["hand"])] = level
        envy = prize.get("envy")
        if isinstance(envy, Mapping):
            named[ENVY_PREFIX + str(prize["hand"])] = str(envy.get("level") or level)
    return named


def is_envy(prize: str) -> bool:
    return prize.startswith(ENVY_PREFIX)


@dataclass
class LevelBooks:
    """One group's books per level; :meth:`add` takes each money-moving entry in ledger order."""

    levels: tuple[Level, ...]
    paid_by: dict[str, str] = field(default_factory=dict)  # prize -> its level (L2, V1)
    flows: dict[str, Counter[str]] = field(default_factory=dict)  # level -> figure -> pico
    # What each level's pot and reserves held when these books began (a checkpoint, a change of
    # the levels), less what was booked until then: finish() compares them with the accounts.
    start: dict[str, tuple[int, int]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @classmethod
    def for_config(
        cls, config: Mapping[str, Any], pots: Mapping[str, int] | None = None
    ) -> LevelBooks | None:
        """The books of a group with that configuration, whose pots hold ``pots`` now; None for
        a one-level group."""
        levels = levels_of(config)
        if not levels:
            return None
        books = cls(levels, prize_levels(config, levels))
        books.rebase(pots or {})
        return books

    def reconfigure(self, config: Mapping[str, Any], pots: Mapping[str, int]) -> None:
        """A configuration activated (C7): its paytable, and its levels if they changed."""
        levels = levels_of(config)
        if levels and levels != self.levels:
            self.levels = levels
            self.rebase(pots)
        if levels:
            self.paid_by = prize_levels(config, self.levels)

    def rebase(self, pots: Mapping[str, int]) -> None:
        """Start the per-level balance check here: each level holds what ``pots`` say."""
        for level in self.levels:
            self.flows.setdefault(level.name, Counter())
            held = self.held(level, pots)
            net = self._net(level.name)
            self.start[level.name] = (held[0] - net[0], held[1] - net[1])

    # ----------------------------------------------------------------------------- lookups

    def level(self, name: str) -> Level | None:
        return next((level for level in self.levels if level.name == name), None)

    def owner(self, pot: str) -> tuple[Level | None, bool]:
        """The level that owns ``pot`` and whether it is its pot (else one of its reserves)."""
        for level in self.levels:
            if pot == level.pot:
                return level, True
            if pot in level.reserves:
                return level, False
        return None, False

    @staticmethod
    def held(level: Level, pots: Mapping[str, int]) -> tuple[int, int]:
        """What a level's pot and its reserves hold in ``pots`` (picopesos)."""
        return pots.get(level.pot, 0), sum(pots.get(pot, 0) for pot in level.reserves)

    def figure(self, level: str, name: str) -> int:
        return self.flows.get(level, Counter())[name]

    # ---------------------------------------------------------------------------- booking

    def add(
        self, entry_id: str, detail: Mapping[str, Any], transfers: Iterable[tuple[str, str, int]]
    ) -> None:
        """One money-moving entry: its domain event (``detail``) and its transfers."""
        moves = list(transfers)
        kind = str(detail.get("type", ""))
        named = str(detail.get("level", ""))
        self._check_tags(entry_id, kind, named, detail.get("transfer_levels", ()), moves)
        if kind == AWARDED:
            self._award(entry_id, named, str(detail.get("prize", "")), detail, moves)
        elif kind == RESEEDED:
            self._reseed(entry_id, named, moves)
        elif kind in (OPENED, COLLECTED):
            self._inflow(kind, moves)
        elif kind == MYSTERY:
            for source, _, amount in moves:
                self._foreign(entry_id, "the mystery prize", source, amount)

    def _inflow(self, kind: str, moves: list[tuple[str, str, int]]) -> None:
        for _, target, amount in moves:
            level, is_pot = self.owner(target.removeprefix("pot:"))
            if level is None or not target.startswith("pot:"):
                continue
            if kind == OPENED:
                self.flows[level.name]["opened"] += amount
            else:
                self.flows[level.name]["collected" if is_pot else "collected_reserves"] += amount

    def _award(
        self,
        entry_id: str,
        named: str,
        prize: str,
        detail: Mapping[str, Any],
        moves: list[tuple[str, str, int]],
    ) -> None:
        """L2, S7, V1: a prize from its level's pot, then its reserves, then the house."""
        level = self.level(named)
        if level is None:
            self.problems.append(f"L4: entry {entry_id} ({prize}) names no level of the group")
            return
        expected = self.paid_by.get(prize)
        if expected is not None and expected != named:
            self.problems.append(
                f"L2: entry {entry_id}: {prize} is paid by level {expected} (the paytable), "
                f"the entry says level {named}"
            )
        envy = is_envy(prize) or detail.get("envy_of") is not None
        flows = self.flows[level.name]
        for source, _, amount in moves:
            flows["envy" if envy else "prizes"] += amount
            if source == "house":
                flows["paid_by_house"] += amount
            elif source.removeprefix("pot:") in level.reserves:
                flows["paid_from_reserves"] += amount
            elif source != f"pot:{level.pot}":
                self._foreign(entry_id, f"level {named}'s {prize}", source, amount)

    def _reseed(self, entry_id: str, named: str, moves: list[tuple[str, str, int]]) -> None:
        """S8, L3: a level's pot topped up from its own reserves, then the house."""
        level = self.level(named) if named else self.levels[0]
        if level is None:
            self.problems.append(f"L4: top-up {entry_id} names no level of the group")
            return
        flows = self.flows[level.name]
        for source, target, amount in moves:
            if target != f"pot:{level.pot}":
                self.problems.append(
                    f"L3: top-up {entry_id} of level {level.name} fills {target}, not its pot "
                    f"pot:{level.pot}"
                )
            if source == "house":
                flows["refilled_from_house"] += amount
            elif source.removeprefix("pot:") in level.reserves:
                flows["refilled_from_reserves"] += amount
            else:
                self._foreign(entry_id, f"the top-up of level {level.name}", source, amount)

    def _foreign(self, entry_id: str, what: str, source: str, amount: int) -> None:
        """Money a level's payment took from a pot it does not own: a finding."""
        owner, is_pot = self.owner(source.removeprefix("pot:"))
        if owner is None:
            return  # a pot of no level (the mystery pot) pays no level's prize
        whose = f"the {'pot' if is_pot else 'reserve'} of level {owner.name}"
        self.problems.append(
            f"L2/L3: entry {entry_id}: {what} took {format_amount(amount)} from {source}, {whose}"
        )
        self.flows[owner.name]["taken_by_other_levels"] += amount

    def _check_tags(
        self,
        entry_id: str,
        kind: str,
        named: str,
        tags: Any,
        moves: list[tuple[str, str, int]],
    ) -> None:
        """L4: one level per transfer: an award's or a top-up's own level, else the level of
        the pot the transfer moves ("" for none)."""
        tags = list(tags or ())
        if len(tags) != len(moves):
            self.problems.append(
                f"L4: entry {entry_id} names {len(tags)} levels for {len(moves)} transfers"
            )
            return
        for tag, (source, target, _) in zip(tags, moves, strict=True):
            if kind in (AWARDED, RESEEDED):
                expected = named
            else:
                pot = target if target.startswith("pot:") else source
                owner = self.owner(pot.removeprefix("pot:"))[0] if pot.startswith("pot:") else None
                expected = "" if owner is None else owner.name
            if tag != expected:
                self.problems.append(
                    f"L4: entry {entry_id}: the transfer {source} -> {target} names level "
                    f"{tag!r}, not {expected!r}"
                )

    # ----------------------------------------------------------------------------- checks

    def _net(self, name: str) -> tuple[int, int]:
        """What was booked into a level's pot and into its reserves, less what left them."""
        f = self.flows.get(name, Counter())
        from_pot = f["prizes"] + f["envy"] - f["paid_from_reserves"] - f["paid_by_house"]
        into_pot = f["collected"] + f["refilled_from_reserves"] + f["refilled_from_house"]
        into_reserves = f["collected_reserves"]
        out_of_reserves = f["paid_from_reserves"] + f["refilled_from_reserves"]
        opened, taken = f["opened"], f["taken_by_other_levels"]
        # opening advances and what others took are booked to the pot and the reserves together
        return into_pot - from_pot, into_reserves - out_of_reserves + opened - taken

    def finish(self, pots: Mapping[str, int]) -> list[str]:
        """The end-of-ledger checks against the accounts' balances; the findings."""
        problems = []
        for level in self.levels:
            pot, reserves = self.held(level, pots)
            start = self.start.get(level.name, (0, 0))
            net = self._net(level.name)
            if pot + reserves != start[0] + start[1] + net[0] + net[1]:
                problems.append(
                    f"M2 for level {level.name}: its pot and reserves hold "
                    f"{format_amount(pot + reserves)}, but what it started with and what its "
                    f"entries moved come to {format_amount(sum(start) + sum(net))}"
                )
            if pot < 0 or reserves < 0:
                problems.append(
                    f"level {level.name} is negative: {format_amount(min(pot, reserves))}"
                )
        return problems

    # ------------------------------------------------------------------------- persistence

    def to_dict(self) -> dict[str, Any]:
        return {
            "levels": [[lv.name, lv.label, lv.pot, list(lv.reserves)] for lv in self.levels],
            "paid_by": dict(self.paid_by),
            "flows": {name: dict(flows) for name, flows in self.flows.items()},
            "start": {name: list(start) for name, start in self.start.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LevelBooks:
        return cls(
            tuple(Level(str(n), str(lb), str(p), tuple(r)) for n, lb, p, r in data["levels"]),
            {str(k): str(v) for k, v in data["paid_by"].items()},
            {str(k): Counter({f: int(v) for f, v in c.items()}) for k, c in data["flows"].items()},
            {str(k): (int(v[0]), int(v[1])) for k, v in data["start"].items()},
        )
