"""A period's award rows for `jackpot report` and where they go once complete (R1).

An :class:`AwardRow` is one award of the period as the report states it (who approved and paid
it included). The figures (:mod:`jackpot.tools.report_figures`) hand each group's complete rows
to an :class:`AwardSink`: kept in memory (:class:`KeptAwards`, tests and small reports) or
spooled to disk for the CSV annex (:class:`jackpot.tools.report_annex.AwardSpool`), so the
report holds only the awards still open and the last 25. Pure, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol


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
    studio: bool = False  # at a studio table (O1), whose prize is paid into a wallet (O9)


class AwardSink(Protocol):
    """Where one group's award rows of the period go once complete (paid, voided, or still open
    at ``--to``), each with its place in award order (``ordinal``, from 0): the report holds
    only the awards still open and the last 25, so a month of prizes costs it no memory.
    :class:`KeptAwards` keeps them (tests, the default); `jackpot report` spools them to disk
    for the CSV annex (:class:`jackpot.tools.report_annex.AwardSpool`)."""

    def add(self, ordinal: int, row: AwardRow) -> None: ...

    def close(self) -> None: ...

    def rows(self) -> Iterator[AwardRow]:
        """Every row added, in award order (by ``ordinal``)."""
        ...


# A group id -> its sink (picklable: builders travel to `--jobs` worker processes and back)
SinkFactory = Callable[[str], AwardSink]


@dataclass
class KeptAwards:
    """Every row kept in memory: a ledger of a test, a small report."""

    kept: dict[int, AwardRow] = field(default_factory=dict)

    def add(self, ordinal: int, row: AwardRow) -> None:
        self.kept[ordinal] = row

    def close(self) -> None:
        return None

    def rows(self) -> Iterator[AwardRow]:
        return (self.kept[ordinal] for ordinal in sorted(self.kept))


def keep_awards(group_id: str) -> AwardSink:
    """The default :data:`SinkFactory`: every group's rows kept in memory."""
    return KeptAwards()
