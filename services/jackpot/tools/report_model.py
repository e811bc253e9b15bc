"""What a period report holds: the period, each group's figures (its opening and closing books,
configurations, levels and awards) and whether they reconcile (rules D4, M2, C7; R1).
:mod:`jackpot.tools.report_figures` computes it from the ledger; :mod:`jackpot.tools.report`
writes it as CSV and :mod:`jackpot.tools.report_document` as the document to file."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from jackpot.domain.money import format_amount
from jackpot.pot.ledger_audit import GroupAudit
from jackpot.pot.level_books import LevelBooks
from jackpot.tools.report_rows import AwardRow, AwardSink, KeptAwards
from jackpot.tools.report_split import TableBooks, split_problems

DEFAULT_DAYS = 1
FROM_FIRST_ENTRY = "the ledger's first entry"


class ReportInputError(ValueError):
    """Input the report refuses (a period, a group): exit 2, nothing written."""


@dataclass(frozen=True, slots=True)
class Period:
    start_ns: int
    end_ns: int

    def describe(self) -> str:
        return f"{iso(self.start_ns)} to {iso(self.end_ns)}"


@dataclass(frozen=True, slots=True)
class LedgerRecord:
    partition: int
    offset: int
    value: bytes


def iso(ns: int) -> str:
    return datetime.fromtimestamp(ns // 10**9, UTC).isoformat().replace("+00:00", "Z")


def not_read(since_ns: int) -> str:
    """A field that only records before ``since_ns``, which the report did not read, state."""
    return f"not read (before {iso(since_ns)})"


def _instant(text: str, name: str) -> int:
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ReportInputError(
            f"{name} {text!r} is not a date or time (use ISO 8601: 2026-12-01 or "
            "2026-12-01T08:00:00Z; without a zone it is UTC)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp()) * 10**9 + moment.microsecond * 1000


def parse_period(start: str | None, end: str | None, now_ns: int) -> Period:
    """``--from``/``--to`` to a period; the default is the last day up to now."""
    end_ns = _instant(end, "--to") if end else now_ns
    start_ns = (
        _instant(start, "--from")
        if start
        else end_ns - int(timedelta(days=DEFAULT_DAYS).total_seconds()) * 10**9
    )
    if start_ns >= end_ns:
        raise ReportInputError(
            f"--from {iso(start_ns)} is not before --to {iso(end_ns)}: the period is empty"
        )
    return Period(start_ns, end_ns)


@dataclass
class ConfigVersion:
    version: int
    config: dict[str, Any]
    proposed_at: str
    proposed_by: str
    reason: str
    activated_at: str = ""
    proposed_ns: int = 0
    activated_ns: int | None = None


@dataclass(frozen=True, slots=True)
class LevelRow:
    """One level of a group with levels over the period (L1-L4, V1): picopesos."""

    name: str
    label: str
    pot: str
    opening: int  # its pot at --from
    collected: int  # bets into its pot (after overflow, C5)
    prizes: int  # what its prizes paid, from its pot, its reserves and the house (L2, S7)
    envy: int  # what its envy bonuses paid (V1), likewise
    refilled_from_reserves: int  # its top-ups to its base (L3, S8)
    refilled_from_house: int
    closing: int  # its pot at --to
    reserves_opening: int
    reserves_closing: int
    collected_to_reserves: int
    paid_from_reserves: int  # of its prizes and envy bonuses
    paid_by_house: int
    opened: int = 0  # the house's opening advance to its pot and reserves (C4), when in period


def level_rows(opening: GroupAudit, closing: GroupAudit) -> list[LevelRow]:
    """Each level's figures between two audits of a group ([] for a one-level group)."""
    books = closing.levels
    if books is None:
        return []
    before = opening.levels or LevelBooks(books.levels)

    def moved(level: str, figure: str) -> int:
        return books.figure(level, figure) - before.figure(level, figure)

    rows = []
    for level in books.levels:
        (pot_at_start, reserves_at_start) = books.held(level, opening.pots)
        (pot_at_end, reserves_at_end) = books.held(level, closing.pots)
        rows.append(
            LevelRow(
                level.name,
                level.label,
                level.pot,
                pot_at_start,
                moved(level.name, "collected"),
                moved(level.name, "prizes"),
                moved(level.name, "envy"),
                moved(level.name, "refilled_from_reserves"),
                moved(level.name, "refilled_from_house"),
                pot_at_end,
                reserves_at_start,
                reserves_at_end,
                moved(level.name, "collected_reserves"),
                moved(level.name, "paid_from_reserves"),
                moved(level.name, "paid_by_house"),
                moved(level.name, "opened"),
            )
        )
    return rows


@dataclass
class GroupReport:
    """One pot group over the period."""

    group_id: str
    opening: GroupAudit
    closing: GroupAudit
    received: Counter[str] = field(default_factory=Counter)  # pot -> picopesos from bets
    overflow: int = 0
    award_count: int = 0  # the period's awards (rows of the annex)
    annex: AwardSink = field(default_factory=KeptAwards)  # where their rows went
    last_awards: list[AwardRow] = field(default_factory=list)
    configs: list[ConfigVersion] = field(default_factory=list)
    # (ns, main picopesos): the opening value, then the value at its last move of each minute
    main_series: list[tuple[int, int]] = field(default_factory=list)
    collected_by_hour: Counter[int] = field(default_factory=Counter)  # hour start ns -> minor
    problems: list[str] = field(default_factory=list)
    opened_from: str = FROM_FIRST_ENTRY  # where the books begin
    opened_checkpoint: tuple[int, int] | None = None  # that checkpoint: (ledger sequence, ns)
    # Payments or voids of awards made before the records read (not matched to their award here;
    # `jackpot audit` matches every one).
    earlier_payments: int = 0
    earlier_paid: list[str] = field(default_factory=list)  # the award ids of those in it
    # The payout steps (entry type, who, when) of the period for awards of before it, by award:
    # what completes their rows in a longer period composed of this one (report_compose).
    steps_before: dict[str, list[tuple[int, str, str]]] = field(default_factory=dict)
    # The period's books at its land and at its studio tables (O1; jackpot.tools.report_split),
    # and the studio tables linked in it (at --from, or linked since).
    land: TableBooks = field(default_factory=TableBooks)
    studio: TableBooks = field(default_factory=TableBooks)
    studio_tables: set[str] = field(default_factory=set)
    # Each level's period figures when the period was composed of shorter ones (their books
    # begin at different checkpoints, so the two audits' levels do not say them); else None.
    level_rows: list[LevelRow] | None = None

    def delta(self, account: str) -> int:
        return self.closing.accounts[account] - self.opening.accounts[account]

    @property
    def awards(self) -> list[AwardRow]:
        """Every award of the period in award order, read back from :attr:`annex` (from disk
        when spooled): for tests and small reports; the document and the CSV never hold them."""
        return list(self.annex.rows())

    @property
    def collected(self) -> int:
        return self.closing.collected - self.opening.collected

    @property
    def house_advances(self) -> int:
        return self.closing.house_advances - self.opening.house_advances

    @property
    def commission(self) -> int:
        return self.delta("commission")

    @property
    def awarded(self) -> int:
        return self.delta("awards")

    @property
    def prizes(self) -> dict[str, tuple[int, int]]:
        """Prize -> (hits, whole pesos) in the period."""
        names = sorted(set(self.closing.hits) | set(self.opening.hits))
        return {
            name: (
                self.closing.hits[name] - self.opening.hits[name],
                self.closing.wins[name] - self.opening.wins[name],
            )
            for name in names
            if self.closing.hits[name] - self.opening.hits[name]
        }

    @property
    def levels(self) -> list[LevelRow]:
        """Each level's period figures, the main level first; [] for a one-level group."""
        if self.level_rows is not None:
            return self.level_rows
        return level_rows(self.opening, self.closing)

    def reconciliation(self) -> tuple[bool, str]:
        """Rule M2 over the period, exactly, as one line."""
        opening = sum(self.opening.pots.values())
        closing = sum(self.closing.pots.values())
        left = opening + self.collected + self.house_advances
        right = self.commission + self.awarded + closing
        sign = "==" if left == right else "!="
        line = (
            f"opening pots {format_amount(opening)} + collected {format_amount(self.collected)} "
            f"+ house advances {format_amount(self.house_advances)} {sign} commission "
            f"{format_amount(self.commission)} + awarded {format_amount(self.awarded)} + "
            f"closing pots {format_amount(closing)}"
        )
        return left == right, line

    @property
    def has_studio(self) -> bool:
        """Whether the period had a studio table (linked in it, or books of one)."""
        studio = self.studio
        return bool(self.studio_tables or studio.award_count or studio.collected)

    def split_problems(self) -> list[str]:
        """Where land + studio is not the period's total (collected, commission, awarded, the
        number of awards, each prize's hits and pesos): [] when the split adds up."""
        totals = [
            ("collected", self.collected, True),
            ("commission", self.commission, True),
            ("awarded", self.awarded, True),
            ("award_count", self.award_count, False),
        ]
        return split_problems(totals, self.land, self.studio, self.prizes)

    @property
    def findings(self) -> list[str]:
        """Every problem of the group's period: its books', and a split that does not add up."""
        return [*self.problems, *self.split_problems()]

    @property
    def reconciles(self) -> bool:
        return not self.findings and self.reconciliation()[0]


@dataclass
class Report:
    period: Period
    groups: list[GroupReport]
    unreadable: list[str] = field(default_factory=list)
    records_read: int = 0  # ledger records the report read (its cost)
    workers_rss_mb: float = 0.0  # the peak RSS of the processes that read them, summed
    kept_days: int = 0  # days read from the day books (jackpot.tools.report_days), not the ledger

    @property
    def reconciles(self) -> bool:
        return not self.unreadable and all(g.reconciles for g in self.groups)
