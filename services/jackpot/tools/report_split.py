"""A period report's books split between a group's land tables and its studio tables (O1; R1).

A table is a studio table when the ledger linked it with ``studio_seats`` (its ``TableLinked``
entry carries them only then; a checkpoint's state lists a studio table's seats after its game and
site). :class:`TableKinds` follows that as the ledger streams by, and :func:`split_entry` gives each
entry of the period to the books of its table's kind (:class:`TableBooks`): what it moved from
bets, to the casino's commission and to the awards account, and each award's count, hand and
amount. An entry of no table (a reseed, a configuration) moves none of these.

The split is a second count of the same money, never a second source of it: the model
(:meth:`jackpot.tools.report_model.GroupReport.split_problems`) checks that land + studio equals
every period total the report prints, and a report whose split does not add up does not
reconcile. Pure, no I/O.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from jackpot.domain.money import format_amount
from jackpot.pot.ledger_audit import AWARD_TYPES, GroupAudit
from jackpot.v1 import pot_pb2

LINKED = pot_pb2.LEDGER_ENTRY_TYPE_TABLE_LINKED
UNLINKED = pot_pb2.LEDGER_ENTRY_TYPE_TABLE_UNLINKED
LINKING_TYPES = frozenset({LINKED, UNLINKED})  # the entries TableKinds.note reads
KINDS = ("land", "studio")


@dataclass
class TableBooks:
    """A group's period figures at one kind of table, land or studio (picopesos; pesos for
    ``wins``, as the audit counts them)."""

    collected: int = 0  # from bets
    commission: int = 0
    awarded: int = 0
    award_count: int = 0
    hits: Counter[str] = field(default_factory=Counter)  # prize -> awards
    wins: Counter[str] = field(default_factory=Counter)  # prize -> whole pesos

    def prize(self, name: str) -> tuple[int, int]:
        return self.hits[name], self.wins[name]


@dataclass
class TableKinds:
    """Which tables of a group are studio tables, as its ledger links them (O1): a table keeps
    its kind after it is unlinked (a payment of its prize may come later), and a table linked
    again takes the kind of its new link."""

    studio: dict[str, bool] = field(default_factory=dict)  # table -> linked as a studio table
    linked_studio: set[str] = field(default_factory=set)  # studio tables linked now

    def note(self, entry: pot_pb2.LedgerEntry) -> str:
        """A link or an unlink; the studio table it linked ('' if none)."""
        if entry.type == UNLINKED:
            self.linked_studio.discard(entry.table_id)
        if entry.type != LINKED:
            return ""
        seats = int(json.loads(entry.detail_json or "{}").get("studio_seats", 0))
        self.studio[entry.table_id] = seats > 0
        if seats > 0:
            self.linked_studio.add(entry.table_id)
            return entry.table_id
        self.linked_studio.discard(entry.table_id)
        return ""

    def from_state(self, tables: Mapping[str, list[Any]]) -> None:
        """The tables a checkpoint's state lists (``[game, site]``, a studio table's seats after):
        linked when it was written."""
        self.linked_studio = set()
        for table_id, entry in tables.items():
            seats = int(entry[2]) if len(entry) > 2 else 0
            self.studio[table_id] = seats > 0
            if seats > 0:
                self.linked_studio.add(table_id)

    def is_studio(self, table_id: str, player: str = "") -> bool:
        """Whether ``table_id`` is a studio table; one not linked in what was read is by its
        award's ``player`` (only a studio prize names one, O1)."""
        known = self.studio.get(table_id)
        return bool(player) if known is None else known


def figures_of(audit: GroupAudit) -> tuple[int, int, int]:
    """What an entry can move that the split counts: (collected, commission, awarded)."""
    accounts = audit.accounts
    return -accounts["bets"], accounts["commission"], accounts["awards"]


def split_entry(
    books: TableBooks,
    entry: pot_pb2.LedgerEntry,
    before: tuple[int, int, int],
    after: tuple[int, int, int],
) -> None:
    """One entry of the period, to its table kind's ``books``: the money it moved (the closing
    audit's figures ``before`` and ``after`` it) and, an award, its count, hand and pesos."""
    books.collected += after[0] - before[0]
    books.commission += after[1] - before[1]
    books.awarded += after[2] - before[2]
    if entry.type in AWARD_TYPES:
        books.award_count += 1
        books.hits[entry.prize] += 1
        books.wins[entry.prize] += entry.amount


def split_problems(
    totals: Iterable[tuple[str, int, bool]],
    land: TableBooks,
    studio: TableBooks,
    prizes: Mapping[str, tuple[int, int]],
) -> list[str]:
    """Every total (name, value, whether money) and every prize's hits and pesos that land +
    studio does not equal, as a line each."""
    wrong = []
    for name, total, money in totals:
        parts = (getattr(land, name), getattr(studio, name))
        if sum(parts) != total:
            show = format_amount if money else str
            wrong.append(
                f"{name}: land {show(parts[0])} + studio {show(parts[1])} != {show(total)}"
            )
    for prize in sorted({*prizes, *land.hits, *studio.hits}):
        hits, pesos = prizes.get(prize, (0, 0))
        (land_hits, land_wins), (studio_hits, studio_wins) = land.prize(prize), studio.prize(prize)
        if (land_hits + studio_hits, land_wins + studio_wins) != (hits, pesos):
            wrong.append(
                f"prize {prize}: land {land_hits} hits {land_wins} + studio {studio_hits} hits "
                f"{studio_wins} != {hits} hits {pesos}"
            )
    return [f"land + studio tables do not add up to the period's books: {w}" for w in wrong]
