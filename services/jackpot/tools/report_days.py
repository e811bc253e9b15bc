"""The day books: each gaming day's report kept in a folder, so a month is composed of its days
instead of replaying its tens of millions of ledger entries (rules D4, R1).

`jackpot report --day-books DIR` (``JACKPOT_REPORT_DAY_BOOKS``) cuts its period at the casino's
midnights (:func:`days_of`). A whole day already in ``DIR`` is read from there; any other day
is read from the ledger, and kept there once it is over (its end and the report's seek margin
past, so no entry of it can still be written) and its books reconcile. The pieces are then
composed (:mod:`jackpot.tools.report_compose`, which refuses pieces that do not meet).

A day is two files in the folder's subfolder of the ledger topic, named by its period (and the
groups, when the report was of some):
``<from>--<to>.json`` (each group's opening and closing books, what the day counted, its last
awards, configurations and levels, as :func:`report_to_dict` writes them) and
``<from>--<to>.awards.jsonl`` (its award rows in award order). The JSON states the annex's
SHA-256, which is checked when the day is read back; the day's figures are checked where they
meet the days around them. The folder is the operator's record of its filed days: whoever
doubts it reads the period from the ledger alone (no ``--day-books``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import os
from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import datetime, time, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from jackpot.pot.ledger_audit import audit_from_dict, audit_to_dict
from jackpot.tools.report_annex import ROW_FIELDS
from jackpot.tools.report_model import (
    ConfigVersion,
    GroupReport,
    LevelRow,
    Period,
    Report,
    iso,
)
from jackpot.tools.report_rows import AwardRow, SinkFactory
from jackpot.tools.report_split import TableBooks

FORMAT = 1  # the day books' format: a day kept in another is read again from the ledger


class DayBooksError(RuntimeError):
    """A kept day that cannot be used (unreadable, or its annex is not the one it states)."""


def days_of(period: Period, time_zone: str) -> list[Period]:
    """``period`` cut at each midnight of ``time_zone`` within it: its days (the first and last
    may be parts of one)."""
    zone = ZoneInfo(time_zone)
    cuts = [period.start_ns]
    while (at := _next_midnight(cuts[-1], zone)) < period.end_ns:
        cuts.append(at)
    cuts.append(period.end_ns)
    return [Period(a, b) for a, b in itertools.pairwise(cuts)]


def is_whole_day(day: Period, time_zone: str) -> bool:
    """Whether ``day`` runs from one midnight of ``time_zone`` to the next."""
    zone = ZoneInfo(time_zone)
    start = _next_midnight(day.start_ns - 1, zone)
    return start == day.start_ns and _next_midnight(start, zone) == day.end_ns


def _next_midnight(ns: int, zone: ZoneInfo) -> int:
    """The first midnight of ``zone`` after ``ns`` (a day that begins in a daylight-saving gap
    begins at its first instant)."""
    date = datetime.fromtimestamp(ns // 10**9, zone).date() + timedelta(days=1)
    return int(datetime.combine(date, time(), tzinfo=zone).timestamp()) * 10**9


# ------------------------------------------------------------------------------ to and from


def report_to_dict(report: Report) -> dict[str, Any]:
    """A day's report as the day books keep it, but its award rows (:func:`DayBooks.keep`)."""
    return {
        "format": FORMAT,
        "period": [report.period.start_ns, report.period.end_ns],
        "records_read": report.records_read,
        "groups": [_group_to_dict(group) for group in report.groups],
    }


def _group_to_dict(group: GroupReport) -> dict[str, Any]:
    return {
        "group_id": group.group_id,
        "opening": audit_to_dict(group.opening),
        "closing": audit_to_dict(group.closing),
        "received": dict(group.received),
        "overflow": group.overflow,
        "award_count": group.award_count,
        "last_awards": [dataclasses.astuple(row) for row in group.last_awards],
        "configs": [dataclasses.asdict(config) for config in group.configs],
        "main_series": group.main_series,
        "collected_by_hour": sorted(group.collected_by_hour.items()),
        "problems": group.problems,
        "opened_from": group.opened_from,
        "opened_checkpoint": group.opened_checkpoint,
        "earlier_payments": group.earlier_payments,
        "earlier_paid": group.earlier_paid,
        "steps_before": group.steps_before,
        "land": _table_books_to_dict(group.land),
        "studio": _table_books_to_dict(group.studio),
        "studio_tables": sorted(group.studio_tables),
        "levels": [dataclasses.astuple(row) for row in group.levels],
    }


def report_from_dict(
    data: dict[str, Any], rows: dict[str, list[AwardRow]], sink: SinkFactory
) -> Report:
    """A kept day's report, its award rows (by group, in award order) put into ``sink``'s."""
    start_ns, end_ns = data["period"]
    groups = [_group_from_dict(g, rows.get(g["group_id"], []), sink) for g in data["groups"]]
    return Report(Period(int(start_ns), int(end_ns)), groups)  # read now: no ledger record


def _group_from_dict(data: dict[str, Any], rows: list[AwardRow], sink: SinkFactory) -> GroupReport:
    group = GroupReport(
        data["group_id"], audit_from_dict(data["opening"]), audit_from_dict(data["closing"])
    )
    group.received = Counter({k: int(v) for k, v in data["received"].items()})
    group.overflow, group.award_count = int(data["overflow"]), int(data["award_count"])
    group.last_awards = [AwardRow(*row) for row in data["last_awards"]]
    group.configs = [ConfigVersion(**config) for config in data["configs"]]
    group.main_series = [(int(at), int(value)) for at, value in data["main_series"]]
    group.collected_by_hour = Counter({int(h): int(v) for h, v in data["collected_by_hour"]})
    group.problems = list(data["problems"])
    group.opened_from = data["opened_from"]
    checkpoint = data["opened_checkpoint"]
    group.opened_checkpoint = None if checkpoint is None else (checkpoint[0], checkpoint[1])
    group.earlier_payments = int(data["earlier_payments"])
    group.earlier_paid = list(data["earlier_paid"])
    group.steps_before = {
        award: [(int(kind), str(who), str(at)) for kind, who, at in steps]
        for award, steps in data["steps_before"].items()
    }
    group.land, group.studio = _table_books(data["land"]), _table_books(data["studio"])
    group.studio_tables = set(data["studio_tables"])
    group.level_rows = [LevelRow(*row) for row in data["levels"]] if data["levels"] else None
    group.annex = sink(group.group_id)
    for ordinal, row in enumerate(rows):
        group.annex.add(ordinal, row)
    group.annex.close()
    return group


def _table_books_to_dict(books: TableBooks) -> dict[str, Any]:
    """(Not ``dataclasses.asdict``: it rebuilds a Counter from its items, counting them.)"""
    return {
        "collected": books.collected,
        "commission": books.commission,
        "awarded": books.awarded,
        "award_count": books.award_count,
        "hits": dict(books.hits),
        "wins": dict(books.wins),
    }


def _table_books(data: dict[str, Any]) -> TableBooks:
    return TableBooks(
        int(data["collected"]),
        int(data["commission"]),
        int(data["awarded"]),
        int(data["award_count"]),
        Counter(data["hits"]),
        Counter(data["wins"]),
    )


# ---------------------------------------------------------------------------------- the folder


class DayBooks:
    """The folder of one ledger topic's kept days (:meth:`of`)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @classmethod
    def of(cls, folder: Path, ledger_topic: str) -> DayBooks:
        """The days of ``ledger_topic`` in ``folder`` (a folder of its own: two ledgers' days
        never mix)."""
        return cls(folder / ledger_topic)

    def _name(self, day: Period, only_groups: Sequence[str]) -> str:
        name = f"{iso(day.start_ns)}--{iso(day.end_ns)}".replace(":", "")
        return f"{name}__{'+'.join(sorted(only_groups))}" if only_groups else name

    def read(self, day: Period, only_groups: Sequence[str], sink: SinkFactory) -> Report | None:
        """The kept day, or None when it is not kept (or kept in another format)."""
        name = self._name(day, only_groups)
        books, annex = self.folder / f"{name}.json", self.folder / f"{name}.awards.jsonl"
        if not books.exists():
            return None
        try:
            data = json.loads(books.read_text(encoding="utf-8"))
            if data.get("format") != FORMAT:
                return None
            if _digest(annex) != data["annex_sha256"]:
                raise DayBooksError(f"{annex} is not the annex {books.name} states (SHA-256)")
            rows: dict[str, list[AwardRow]] = {}
            for group_id, row in _rows(annex):
                rows.setdefault(group_id, []).append(row)
            return report_from_dict(data, rows, sink)
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise DayBooksError(f"the kept day {books} cannot be read: {error!r}") from error

    def keep(self, report: Report, only_groups: Sequence[str]) -> Path:
        """Write the day (its annex, then its books, which state the annex's digest), each file
        whole or not at all."""
        try:
            return self._keep(report, only_groups)
        except OSError as error:
            raise DayBooksError(f"the day books {self.folder} cannot keep a day: {error}") from None

    def _keep(self, report: Report, only_groups: Sequence[str]) -> Path:
        self.folder.mkdir(parents=True, exist_ok=True)
        name = self._name(report.period, only_groups)
        annex = self.folder / f"{name}.awards.jsonl"
        lines = (
            json.dumps([group.group_id, *(getattr(row, f) for f in ROW_FIELDS)]) + "\n"
            for group in report.groups
            for row in group.annex.rows()
        )
        _write_whole(annex, lines)
        books = self.folder / f"{name}.json"
        data = {**report_to_dict(report), "annex_sha256": _digest(annex)}
        _write_whole(books, iter([json.dumps(data, sort_keys=True)]))
        return books


def _rows(annex: Path) -> Iterator[tuple[str, AwardRow]]:
    with annex.open(encoding="utf-8") as handle:
        for line in handle:
            group_id, *fields = json.loads(line)
            yield group_id, AwardRow(*fields)


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _write_whole(path: Path, lines: Iterator[str]) -> None:
    temporary = path.with_suffix(path.suffix + ".tmp")
    with temporary.open("w", encoding="utf-8") as handle:
        handle.writelines(lines)
        handle.flush()
        os.fsync(handle.fileno())
    temporary.replace(path)
