"""`jackpot report`'s annex: every award of the period in ``awards.csv``, bound to the document
by its SHA-256 (R1; D4).

Each row ends with its table's kind, ``land`` or ``studio`` (O1; the column added last, so a
reader of the columns before it keeps working). The document lists the last 25 prizes (R1) and
prints the annex's file name, its row count and its digest, so a regulator checks that the CSV
beside the PDF is the one it was issued with (any byte changed after the fact changes the
digest). A day of 300 tables is 8,000 prizes and a month
a quarter of a million: the rows never sit in memory together. Each group's complete rows are
spooled to a file of its own as the ledger streams by (:class:`AwardSpool`, an
:class:`~jackpot.tools.report_rows.AwardSink` per group, picklable for ``--jobs`` workers),
with only each row's place in award order kept (8 bytes a prize); :func:`write_annex` then
writes ``awards.csv`` from the spools, group by group in award order, and :meth:`Annex.of` reads
the written file back for its digest.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
import uuid
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from jackpot.tools.report_model import Report
from jackpot.tools.report_rows import AwardRow

ANNEX_NAME = "awards.csv"
AWARD_HEADER = [
    *("pot_group", "award_id", "table", "seat", "round", "prize", "amount", "hand"),
    *("occurred_at", "recorded_at", "approved_by", "paid_by", "paid_at"),
    "table_kind",  # land or studio (O1): last, so a reader of the columns before keeps working
]
ROW_FIELDS = tuple(f.name for f in dataclasses.fields(AwardRow))
SPOOL_BATCH = 512  # rows a spool keeps before it appends them to its file
READ_CHUNK = 1 << 20
NOT_WRITTEN = -1  # an ordinal with no row (a replayed award entry took its place)


def award_cells(group_id: str, a: AwardRow) -> list[str]:
    """One award as a CSV row of ``awards.csv`` and ``last_awards.csv`` (AWARD_HEADER)."""
    return [
        *(group_id, a.award_id, a.table_id, str(a.seat), a.round_id, a.prize, str(a.amount)),
        *(a.cards, a.occurred_at, a.recorded_at, a.approved_by, a.paid_by, a.paid_at),
        "studio" if a.studio else "land",
    ]


@dataclass(frozen=True, slots=True)
class Annex:
    """What the document prints of its annex: the file's name, its rows (the header apart)
    and the SHA-256 of its bytes."""

    name: str
    rows: int
    sha256: str

    @classmethod
    def of(cls, path: Path, rows: int) -> Annex:
        """The annex as written: its digest read back from the file."""
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            while chunk := handle.read(READ_CHUNK):
                digest.update(chunk)
        return cls(path.name, rows, digest.hexdigest())


@dataclass
class SpooledAwards:
    """One group's award rows on disk (a JSON array a line), in the order they were complete,
    with each one's offset in the file at its place in award order."""

    path: Path
    offsets: array[int] = field(default_factory=lambda: array("q"))
    size: int = 0  # bytes written and batched
    batch: list[bytes] = field(default_factory=list)

    def add(self, ordinal: int, row: AwardRow) -> None:
        line = (json.dumps([getattr(row, name) for name in ROW_FIELDS]) + "\n").encode()
        missing = ordinal + 1 - len(self.offsets)
        if missing > 0:
            self.offsets.extend([NOT_WRITTEN] * missing)
        self.offsets[ordinal] = self.size
        self.size += len(line)
        self.batch.append(line)
        if len(self.batch) >= SPOOL_BATCH:
            self.close()

    def close(self) -> None:
        """The batched rows appended to the file (a builder then travels as it is: no open
        file)."""
        if self.batch:
            with self.path.open("ab") as handle:
                handle.writelines(self.batch)
            self.batch.clear()

    def rows(self) -> Iterator[AwardRow]:
        self.close()
        if not any(offset != NOT_WRITTEN for offset in self.offsets):
            return
        with self.path.open("rb") as handle:
            for offset in self.offsets:
                if offset == NOT_WRITTEN:
                    continue
                if handle.tell() != offset:  # paid out of award order: look it up
                    handle.seek(offset)
                yield AwardRow(*json.loads(handle.readline()))


@dataclass(frozen=True)
class AwardSpool:
    """The :data:`~jackpot.tools.report_rows.SinkFactory` of `jackpot report`: a spool file
    per group (and per read of it: a replayed group spools afresh) in ``folder``."""

    folder: Path

    def __call__(self, group_id: str) -> SpooledAwards:
        return SpooledAwards(self.folder / f"awards-{uuid.uuid4().hex}.jsonl")


def write_annex(path: Path, report: Report) -> Annex:
    """``awards.csv``: every award of the period, group by group in award order, streamed
    from the groups' sinks; what the document prints of it."""
    rows = 0
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(AWARD_HEADER)
        for group in report.groups:
            for award in group.annex.rows():
                writer.writerow(award_cells(group.group_id, award))
                rows += 1
    return Annex.of(path, rows)


__all__ = [
    "ANNEX_NAME",
    "AWARD_HEADER",
    "Annex",
    "AwardSpool",
    "SpooledAwards",
    "award_cells",
    "write_annex",
]
