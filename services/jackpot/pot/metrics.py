"""The pot service's Prometheus metrics (no per-player labels, ever).

One :class:`PotMetrics` per service instance, registered in the given registry: ``main`` uses the
default registry behind ``/metrics``; tests and benchmarks pass their own so several instances can
live in one process.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge

from jackpot.domain.level_figures import LevelFigures
from jackpot.domain.money import floor_pesos
from jackpot.platform.metrics import ProcessorMetrics
from jackpot.pot.pot_book import IgnoreReason


class PotMetrics:
    """Events applied, ignored and refused; balances; the exactly-once processor's transactions
    and lag."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        registry = registry if registry is not None else CollectorRegistry()
        self.registry = registry
        self.events_applied = Counter(
            "jackpot_events_applied_total",
            "Table events and admin commands applied to a pot group",
            registry=registry,
        )
        self.events_ignored = Counter(
            "jackpot_events_ignored_total",
            "Events ignored because they were applied before",
            ["reason"],
            registry=registry,
        )
        # Every reason at 0 from the start: "nothing ignored" is a series, not a missing metric
        # (the dashboard's rate() panel shows 0 instead of no data).
        for reason in IgnoreReason:
            self.events_ignored.labels(reason=reason.value)
        self.events_rejected = Counter(
            "jackpot_events_rejected_total",
            "Events refused and written to the dead-letter topic",
            ["reason"],
            registry=registry,
        )
        self.pot_balance = Gauge(
            "jackpot_pot_balance_pesos",
            "A pot's balance, floored to whole pesos; level names the level the pot is the pot or "
            "a reserve of (rule L4), empty in a one-level group and for a pot of no level",
            ["pot_group", "pot", "level"],
            registry=registry,
        )
        self.envy_awards = Counter(
            "jackpot_envy_awards_total",
            "Envy bonuses awarded (rules V1, V2), by the level that pays them",
            ["pot_group", "level"],
            registry=registry,
        )
        self._levels: dict[str, dict[str, str]] = {}  # pot group -> pot -> level, as exported
        self._level_metrics(registry)
        self._takeover_metrics(registry)
        # Transactions, aborts, ownership and lag: the exactly-once processor's own metrics.
        self.processor = ProcessorMetrics(registry)

    def _level_metrics(self, registry: CollectorRegistry) -> None:
        """Each level's sign and base (L4, L3): a sign below its base is what an alert watches."""
        self.level_sign_value = Gauge(
            "jackpot_level_sign_value_pesos",
            "What a level's sign shows: its pot floored to whole pesos (rules L4, M3); a "
            "one-level group's one level is its main pot, level main",
            ["pot_group", "level"],
            registry=registry,
        )
        self.level_base = Gauge(
            "jackpot_level_base_pesos",
            "A level's base, floored to whole pesos (rules C4, L3): a round that leaves the level "
            "below it tops it up (S8, L3); a one-level group's is its base, level main",
            ["pot_group", "level"],
            registry=registry,
        )
        self._level_names: dict[str, set[str]] = {}  # pot group -> level names exported

    def _takeover_metrics(self, registry: CollectorRegistry) -> None:
        """What the takeover check found (R14)."""
        self.groups_refused = Gauge(
            "jackpot_pot_groups_refused",
            "1 for a pot group whose restored state disagrees with the ledger (R14): its "
            "partition is halted and its tables stay closed until jackpot restore --from-ledger",
            ["pot_group"],
            registry=registry,
        )
        self.states_repaired = Counter(
            "jackpot_pot_states_repaired_total",
            "Pot group states found behind their ledger at a takeover and repaired from it (R14): "
            "a transaction committed without its state record; see docs/operations.md",
            ["pot_group"],
            registry=registry,
        )
        self.takeover_ledger_entries = Gauge(
            "jackpot_pot_takeover_ledger_entries",
            "Ledger entries the partition's last takeover check read (those since its groups' "
            "last checkpoints, not the ledger's history)",
            ["partition"],
            registry=registry,
        )

    def group_served(self, pot_group: str) -> None:
        """The takeover series of a group this pot serves exist from then on, at 0 until a
        takeover refuses or repairs it: an alert on them must be able to evaluate on a healthy
        floor (tests/integration/test_prometheus_floor.py), and a counter born at 0 is one
        whose first repair ``increase`` sees."""
        self.groups_refused.labels(pot_group=pot_group)
        self.states_repaired.labels(pot_group=pot_group)

    def record_outcomes(
        self, applied: int, ignored: Mapping[str, int], rejected: Mapping[str, int]
    ) -> None:
        if applied:
            self.events_applied.inc(applied)
        for reason, count in ignored.items():
            self.events_ignored.labels(reason=reason).inc(count)
        for reason, count in rejected.items():
            self.events_rejected.labels(reason=reason).inc(count)

    def set_balances(
        self, pot_group: str, balances: Mapping[str, int], levels: Mapping[str, str] | None = None
    ) -> None:
        """Balances in minor units; the gauge shows whole pesos (observation, not accounting).
        ``levels``: pot -> the level it serves (L4), from the configuration only, so the label's
        values are bounded by it; a pot whose level changed (C7) loses its old series."""
        levels = levels or {}
        exported = self._levels.setdefault(pot_group, {})
        for pot, minor in balances.items():
            level = levels.get(pot, "")
            if exported.get(pot, level) != level:
                with contextlib.suppress(KeyError):
                    self.pot_balance.remove(pot_group, pot, exported[pot])
            exported[pot] = level
            self.pot_balance.labels(pot_group=pot_group, pot=pot, level=level).set(
                floor_pesos(minor)
            )

    def set_levels(self, pot_group: str, figures: Iterable[LevelFigures]) -> None:
        """Each level's sign value and base (L4, L3), labelled by the level's name (a one-level
        group's one level is "main": these series are new, unlike the balances' empty level);
        a level the configuration no longer has (C7) loses its series."""
        exported = self._level_names.setdefault(pot_group, set())
        shown = set()
        for level in figures:
            shown.add(level.name)
            self.level_sign_value.labels(pot_group=pot_group, level=level.name).set(
                level.sign_value
            )
            self.level_base.labels(pot_group=pot_group, level=level.name).set(
                floor_pesos(level.base)
            )
        for gone in exported - shown:
            self._remove_level(pot_group, gone)
        self._level_names[pot_group] = shown

    def _remove_level(self, pot_group: str, level: str) -> None:
        for gauge in (self.level_sign_value, self.level_base):
            with contextlib.suppress(KeyError):
                gauge.remove(pot_group, level)

    def envy_awarded(self, pot_group: str, level: str) -> None:
        self.envy_awards.labels(pot_group=pot_group, level=level).inc()

    def forget_group(self, pot_group: str, pots: Iterable[str]) -> None:
        for level in self._level_names.pop(pot_group, set()):
            self._remove_level(pot_group, level)
        exported = self._levels.pop(pot_group, {})
        for pot in pots:
            with contextlib.suppress(KeyError):
                self.pot_balance.remove(pot_group, pot, exported.get(pot, ""))
