"""The figures of `jackpot report`, computed from ledger records alone (rules D4, M2, C7; R1).

Pure: it is given the ledger's records (partition, offset, bytes) in offset order and a period,
and does no I/O, so tests feed it entries. Each group's ledger is cut at the period's edges by
``recorded_at`` (the first entry recorded at or after ``--from`` opens the period, the first at or
after ``--to`` ends it); the opening and closing books are :class:`~jackpot.tools.audit.GroupAudit`
replays of the entries before each cut, exactly as `jackpot audit` replays the whole ledger, so
the report's figures and the audit's agree by construction. The period's figures are the
differences, and its reconciliation line is rule M2 for the period::

    opening pots + collected + house advances == commission + awarded + closing pots

A record that cannot be read is named by partition and offset, and the report then does not
claim to reconcile.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from google.protobuf.message import DecodeError

from jackpot.domain.money import MINOR_PER_PESO, format_amount
from jackpot.pot.ledger_audit import AWARD_TYPES, GroupAudit
from jackpot.pot.records import minor_units
from jackpot.v1 import pot_pb2

LAST_AWARDS = 25  # R1: the last 25 hits
HOUR_NS = 3600 * 10**9
DEFAULT_DAYS = 1


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
class AwardRow:
    award_id: str
    table_id: str
    seat: int
    round_id: str
    prize: str
    amount: int  # whole pesos
    occurred_at: str
    recorded_at: str
    cards: str = ""  # the winning hand
    approved_by: str = ""
    paid_by: str = ""
    paid_at: str = ""
    in_period: bool = False


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


@dataclass
class GroupReport:
    """One pot group over the period."""

    group_id: str
    opening: GroupAudit
    closing: GroupAudit
    received: Counter[str] = field(default_factory=Counter)  # pot -> picopesos from bets
    overflow: int = 0
    awards: list[AwardRow] = field(default_factory=list)
    last_awards: list[AwardRow] = field(default_factory=list)
    configs: list[ConfigVersion] = field(default_factory=list)
    main_series: list[tuple[int, int]] = field(default_factory=list)  # (ns, main picopesos)
    collected_by_hour: Counter[int] = field(default_factory=Counter)  # hour start ns -> minor
    problems: list[str] = field(default_factory=list)

    def delta(self, account: str) -> int:
        return self.closing.accounts[account] - self.opening.accounts[account]

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
    def reconciles(self) -> bool:
        return not self.problems and self.reconciliation()[0]


@dataclass
class Report:
    period: Period
    groups: list[GroupReport]
    unreadable: list[str] = field(default_factory=list)

    @property
    def reconciles(self) -> bool:
        return not self.unreadable and all(g.reconciles for g in self.groups)


def _stamp(timestamp: Any) -> int:
    return int(timestamp.seconds) * 10**9 + int(timestamp.nanos)


def decode(records: Iterable[LedgerRecord]) -> tuple[list[pot_pb2.LedgerEntry], list[str]]:
    """Entries in offset order, and a sentence for each record that cannot be read."""
    entries: list[pot_pb2.LedgerEntry] = []
    unreadable: list[str] = []
    for record in records:
        try:
            entry = pot_pb2.LedgerEntry.FromString(record.value)
        except DecodeError as error:
            unreadable.append(
                f"ledger partition {record.partition} offset {record.offset} cannot be read "
                f"({error}); the books cannot be reconciled past it"
            )
            continue
        entries.append(entry)
    return entries, unreadable


def compute(
    records: Iterable[LedgerRecord], period: Period, only_groups: Sequence[str] = ()
) -> Report:
    """The report of ``period`` for every group in the ledger (or only the named ones)."""
    entries, unreadable = decode(records)
    by_group: dict[str, list[pot_pb2.LedgerEntry]] = {}
    for entry in entries:
        by_group.setdefault(entry.pot_group_id, []).append(entry)
    unknown = sorted(set(only_groups) - set(by_group))
    if unknown:
        known = ", ".join(sorted(by_group)) or "none"
        raise ReportInputError(
            f"no pot group {', '.join(unknown)} in the ledger (groups there: {known})"
        )
    chosen = sorted(only_groups or by_group)
    return Report(period, [_group(g, by_group[g], period) for g in chosen], unreadable)


def _group(group_id: str, entries: list[pot_pb2.LedgerEntry], period: Period) -> GroupReport:
    report = GroupReport(group_id, GroupAudit(group_id), GroupAudit(group_id))
    configs: dict[int, ConfigVersion] = {}
    awards: dict[str, AwardRow] = {}
    in_force_at_start = 0
    for entry in entries:
        recorded = _stamp(entry.recorded_at)
        if recorded >= period.end_ns:
            break
        if recorded < period.start_ns:
            report.opening.add(entry)
            in_force_at_start = entry.config_version or in_force_at_start
        else:
            _in_period(report, entry, recorded)
        report.closing.add(entry)
        _note_config(configs, entry)
        _note_award(awards, entry, recorded >= period.start_ns)
    report.problems = list(report.closing.problems)
    report.configs = [
        c
        for version, c in sorted(configs.items())
        if version == in_force_at_start
        or (c.activated_ns or 0) >= period.start_ns
        or c.proposed_ns >= period.start_ns
    ]
    every = list(awards.values())
    report.awards = [a for a in every if a.in_period]
    report.last_awards = every[-LAST_AWARDS:]
    return report


def _in_period(report: GroupReport, entry: pot_pb2.LedgerEntry, recorded: int) -> None:
    before = report.closing.accounts["pot:main"]
    for transfer in entry.transfers:
        if transfer.source == "bets" and transfer.target.startswith("pot:"):
            amount = _minor(transfer)
            report.received[transfer.target.removeprefix("pot:")] += amount
    if entry.type == pot_pb2.LEDGER_ENTRY_TYPE_BETS_COLLECTED:
        report.collected_by_hour[recorded - recorded % HOUR_NS] += entry.amount * MINOR_PER_PESO
        detail = json.loads(entry.detail_json or "{}")
        report.overflow += sum(int(amount) for _, _, amount in detail.get("overflow", ()))
    if not report.main_series:
        report.main_series.append((recorded, before))
    moved = any("pot:main" in (t.source, t.target) for t in entry.transfers)
    if moved:
        after = before
        for transfer in entry.transfers:
            amount = _minor(transfer)
            after += amount if transfer.target == "pot:main" else 0
            after -= amount if transfer.source == "pot:main" else 0
        report.main_series.append((recorded, after))


def _minor(transfer: pot_pb2.Transfer) -> int:
    """A transfer's picopesos; an unreadable amount counts 0 here (GroupAudit reports it)."""
    try:
        return minor_units(transfer.amount)
    except ValueError:
        return 0


def _note_config(configs: dict[int, ConfigVersion], entry: pot_pb2.LedgerEntry) -> None:
    """Configuration versions with when and by whom (rule C7)."""
    if entry.type not in (
        pot_pb2.LEDGER_ENTRY_TYPE_POT_GROUP_OPENED,
        pot_pb2.LEDGER_ENTRY_TYPE_CONFIG_PROPOSED,
        pot_pb2.LEDGER_ENTRY_TYPE_CONFIG_ACTIVATED,
    ):
        return
    detail = json.loads(entry.detail_json or "{}")
    at = iso(_stamp(entry.recorded_at))
    recorded = _stamp(entry.recorded_at)
    if entry.type == pot_pb2.LEDGER_ENTRY_TYPE_CONFIG_ACTIVATED:
        version = int(detail.get("version", 0))
        if version in configs:
            configs[version].activated_at = at
            configs[version].activated_ns = recorded
        return
    version = int(detail.get("version", detail.get("config_version", 0)))
    opened = entry.type == pot_pb2.LEDGER_ENTRY_TYPE_POT_GROUP_OPENED
    configs[version] = ConfigVersion(
        version,
        dict(detail.get("config", {})),
        at,
        entry.changed_by,
        entry.reason,
        at if opened else "",
        recorded,
        recorded if opened else None,
    )


def _note_award(awards: dict[str, AwardRow], entry: pot_pb2.LedgerEntry, in_period: bool) -> None:
    """Awards, and who approved and paid each (the payout service's ledger entries)."""
    if entry.type in AWARD_TYPES:
        detail = json.loads(entry.detail_json or "{}")
        award_id = str(detail.get("award_id", ""))
        awards[award_id] = AwardRow(
            award_id,
            entry.table_id,
            entry.seat,
            entry.round_id,
            entry.prize,
            entry.amount,
            iso(_stamp(entry.occurred_at)),
            iso(_stamp(entry.recorded_at)),
            cards=" ".join(str(card) for card in detail.get("cards", ())),
            in_period=in_period,
        )
        return
    row = awards.get(entry.source_event_id)
    if row is None:
        return
    if entry.type == pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_APPROVED:
        row.approved_by = entry.changed_by
    elif entry.type == pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_PAID:
        row.paid_by = entry.changed_by
        row.paid_at = iso(_stamp(entry.recorded_at))
