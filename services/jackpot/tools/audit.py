"""`jackpot audit`: recompute every pot group from its ledger and prove rule M2, exactly (D4).

Streams jackpot.ledger.v1 (read_committed) from its beginning, or, with ``--state FILE``, from
where the last clean audit saved in FILE stopped, and the latest PotUpdate of each group from
jackpot.pot-updates.v1; memory is bounded whatever the ledger's length. For each pot group it
recomputes, with :class:`jackpot.pot.ledger_audit.GroupAudit`:

- replays every transfer into accounts (``bets``, ``house``, ``commission``, ``awards``,
  ``pot:<name>``) in exact picopesos, and checks M2:
  ``collected + house advances == commission + sum(pots) + awarded``, with no pot negative;
- checks that no pot ever decreases but by an award or a reseed (R2), and the ledger itself:
  ``ledger_sequence`` runs 1, 2, 3... with no gap or repeat, no entry or award id repeats within
  the last ``RECENT_IDS``, each collection's transfers equal its bets, every checkpoint states
  the figures and the hash chain of the entries before it; the payout service's lifecycle
  entries move no money, and each payment settles one open award, for its amount, once;
- checks that the balances equal those of the group's latest pot update, exactly, and that its
  sign value is the main pot floored (M3);
- for a group with levels (rules L1-L4, V1-V3; :mod:`jackpot.pot.level_books`), checks each
  prize is paid by the level the paytable names, from that level's pot, reserves or the house
  only (a level's prize paid from another level's pot is a finding), each top-up fills its
  level from its own reserves or the house, every transfer names its pot's level, and each level
  holds what its own entries moved (M2 per level);
- prints a table of meters per group (collected, commission, each pot, overflow, house advances,
  awarded, hits and wins by prize, envy bonuses under their own names ``ENVY_<hand>``, payouts
  paid) and, for a group with levels, each level's balance, reserves, what it collected, paid
  and was refilled from its reserves and the house.

Exit status 0 when everything matches, 1 on any mismatch, 2 when the topics cannot be read.
With the pot service running, the ledger and the updates are read at a consistent cut (the ledger
end offsets are taken before and after the updates' and must agree); heartbeats move no money.
"""

from __future__ import annotations

import asyncio
import functools
import json
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiokafka.errors import KafkaError

from jackpot.domain.canonical import canonical_json
from jackpot.domain.money import format_amount
from jackpot.platform.bundles import ledger_entries
from jackpot.platform.kafka import KafkaConnection, TopicReader
from jackpot.pot.ledger_audit import (
    GroupAudit,
    audit_from_dict,
    audit_to_dict,
)
from jackpot.tools.partitions import cost_line, map_shares
from jackpot.v1 import pot_pb2

CUT_ATTEMPTS = 10


@dataclass
class AuditState:
    """Where a verified audit stopped: the ledger's next offset per partition and each group's
    books there. ``jackpot audit --state FILE`` starts from it and, when everything audits,
    saves the new one, so a daily audit reads only the day (docs/architecture.md)."""

    ledger_topic: str
    offsets: dict[int, int] = field(default_factory=dict)
    groups: dict[str, GroupAudit] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path, ledger_topic: str) -> AuditState:
        if not path.exists():
            return cls(ledger_topic)
        data = json.loads(path.read_text())
        if data.get("ledger_topic") != ledger_topic:
            raise ValueError(
                f"{path} is the audit state of {data.get('ledger_topic')!r}, not {ledger_topic}"
            )
        return cls(
            ledger_topic,
            {int(p): int(o) for p, o in data["offsets"].items()},
            {g: audit_from_dict(a) for g, a in data["groups"].items()},
        )

    def save(self, path: Path) -> None:
        data = {
            "format": 1,
            "ledger_topic": self.ledger_topic,
            "offsets": {str(p): o for p, o in sorted(self.offsets.items())},
            "groups": {g: audit_to_dict(a) for g, a in sorted(self.groups.items())},
        }
        temporary = path.with_suffix(path.suffix + ".tmp")
        temporary.write_text(canonical_json(data))
        temporary.replace(path)  # a crash leaves the previous state, never half of one


async def _consistent_cut(
    ledger: TopicReader, updates: TopicReader
) -> tuple[dict[int, int], dict[int, int], dict[int, int]]:
    """The ledger's first and end offsets and the updates' end offsets, the ledger's unmoved
    while the updates' were taken."""
    for _ in range(CUT_ATTEMPTS):
        firsts, ends = await ledger.bounds()
        _, update_ends = await updates.bounds()
        if (await ledger.bounds())[1] == ends:
            return firsts, ends, update_ends
        await asyncio.sleep(0.2)
    raise RuntimeError("the ledger kept growing: no consistent cut; stop the pot service")


@dataclass
class AuditRun:
    """The groups an audit computed, and what it read to do so."""

    groups: list[GroupAudit]
    records: int = 0
    processes: int = 1
    workers_rss_mb: float = 0.0  # the worker processes' peak RSS, summed (0: none)


async def audit(
    kafka_options: Mapping[str, Any],
    ledger_topic: str,
    updates_topic: str,
    only_groups: Sequence[str] = (),
    state: AuditState | None = None,
    jobs: int = 1,
) -> AuditRun:
    """Recompute every pot group (or only the named ones) from the ledger, streamed: memory is
    one fetch plus each group's bounded books, whatever the ledger's length; ``jobs`` processes
    read the partitions side by side (:mod:`jackpot.tools.partitions`).

    ``kafka_options`` are the client options (bootstrap servers, security), as
    :meth:`jackpot.pot.settings.PotSettings.kafka_options` gives them. ``state``: go on from an
    earlier verified audit (its offsets and books), and leave the new ones in it.
    """
    state = state or AuditState(ledger_topic)
    connection = KafkaConnection(kafka_options)
    async with connection.reader(ledger_topic) as ledger, connection.reader(updates_topic) as up:
        for reader in (ledger, up):
            if not reader.partitions:
                raise LookupError(f"topic {reader.topic} does not exist")
        firsts, ends, update_ends = await _consistent_cut(ledger, up)
        todo = {p: ends[p] - max(firsts[p], state.offsets.get(p, 0)) for p in ledger.partitions}
        cut = LedgerCut(
            dict(kafka_options),
            ledger_topic,
            dict(state.offsets),
            dict(ends),
            tuple(only_groups),
            state.groups,
        )
        shares = await map_shares(cut.audit, todo, jobs, functools.partial(cut.read, ledger))
        groups = dict(state.groups)
        for share in shares:
            groups.update(share.value[0])
        state.groups, state.offsets = groups, dict(ends)
        # The latest update of each group is near the tail (a heartbeat every 500 ms, D5).
        latest = await up.latest({g.encode() for g in groups}, end=update_ends)
        for key, record in latest.items():
            if key.decode() in groups and record.value:
                update = pot_pb2.PotUpdate.FromString(record.value)
                groups[update.pot_group_id].update = update
    for group in groups.values():
        group.finish()
    chosen = [groups[g] for g in sorted(groups) if not only_groups or g in only_groups]
    return AuditRun(
        chosen,
        sum(share.value[1] for share in shares),
        len(shares),
        sum(share.rss_mb for share in shares),
    )


@dataclass(frozen=True)
class LedgerCut:
    """What each process of an audit reads (:mod:`jackpot.tools.partitions`): the ledger from
    the saved offsets to the cut, with the saved books (picklable: a worker gets a copy)."""

    kafka_options: dict[str, Any]
    ledger_topic: str
    start: dict[int, int]
    ends: dict[int, int]
    only_groups: tuple[str, ...]
    known: dict[str, GroupAudit]

    def audit(self, partitions: list[int]) -> tuple[dict[str, GroupAudit], int]:
        """These partitions audited: the books of the groups that had entries there, and the
        records read."""
        return asyncio.run(self._audit(partitions))

    async def _audit(self, partitions: list[int]) -> tuple[dict[str, GroupAudit], int]:
        async with KafkaConnection(self.kafka_options).reader(self.ledger_topic) as ledger:
            return await self.read(ledger, partitions)

    async def read(
        self, ledger: TopicReader, partitions: list[int]
    ) -> tuple[dict[str, GroupAudit], int]:
        """These partitions audited through an open reader of the ledger."""
        touched: dict[str, GroupAudit] = {}
        count = 0
        records = ledger.records(self.start or None, self.ends, partitions=partitions)
        async for record in records:
            count += 1
            if record.value is None:
                continue
            for entry, raw in ledger_entries(record.value):
                group_id = entry.pot_group_id
                if self.only_groups and group_id not in self.only_groups:
                    continue
                if record.key != group_id.encode():
                    raise RuntimeError(f"ledger entry {entry.entry_id} is keyed {record.key!r}")
                group = touched.get(group_id)
                if group is None:
                    group = touched[group_id] = self.known.get(group_id) or GroupAudit(group_id)
                group.add(entry, raw)
        return touched, count


def render(groups: Sequence[GroupAudit]) -> str:
    """A per-group table of meters and the verdict; amounts in exact pesos."""
    lines: list[str] = []
    for group in groups:
        rows: list[tuple[str, str]] = [
            ("ledger entries", str(group.entries)),
            ("config version", str(group.config_version)),
            ("collected (progressive-in)", format_amount(group.collected)),
            ("commission", format_amount(group.accounts["commission"])),
        ]
        rows += [(f"pot {name}", format_amount(amount)) for name, amount in group.pots.items()]
        rows += level_rows(group)
        rows += [
            ("overflow", format_amount(group.overflow)),
            ("house advances", format_amount(group.house_advances)),
            ("awarded", format_amount(group.accounts["awards"])),
        ]
        rows += [
            (f"hits/wins {prize}", f"{group.hits[prize]} / {group.wins[prize]}")
            for prize in sorted(group.hits)
        ]
        rows.append(
            ("payouts paid", f"{group.paid_count} / {group.paid_pesos}"),
        )
        if group.voided_count:
            rows.append(("payouts voided", str(group.voided_count)))
        if group.update is not None:
            rows.append(("latest pot update", f"#{group.update.update_sequence}"))
        verdict = "OK" if not group.problems else f"MISMATCH ({len(group.problems)})"
        lines.append(f"pot group {group.group_id}: {verdict}")
        width = max(len(name) for name, _ in rows)
        lines += [f"  {name:<{width}}  {value:>24}" for name, value in rows]
        lines += [f"  ! {problem}" for problem in group.problems]
    bad = sum(1 for g in groups if g.problems)
    lines.append(f"{len(groups)} pot groups audited, {bad} with mismatches")
    return "\n".join(lines)


# Each level's figures as the audit prints them (L1-L4): (label, figure of LevelBooks).
LEVEL_ROWS = (
    ("collected", "collected"),
    ("collected to its reserves", "collected_reserves"),
    ("opening advances", "opened"),
    ("prizes paid", "prizes"),
    ("envy paid", "envy"),
    ("  of which from its reserves", "paid_from_reserves"),
    ("  of which by the house", "paid_by_house"),
    ("refilled from its reserves", "refilled_from_reserves"),
    ("refilled by the house", "refilled_from_house"),
)


def level_rows(group: GroupAudit) -> list[tuple[str, str]]:
    """A group with levels: each level's balance and reserves, what it collected, paid (its
    prizes and its envy bonuses apart) and was refilled from its reserves and the house; none
    for a one-level group (its table is as it was before levels existed)."""
    books = group.levels
    if books is None:
        return []
    pots = group.pots
    rows: list[tuple[str, str]] = []
    for level in books.levels:
        pot, reserves = books.held(level, pots)
        name = f"level {level.name}"
        rows += [
            (f"{name} (pot {level.pot})", format_amount(pot)),
            (f"{name} reserves", format_amount(reserves)),
        ]
        rows += [
            (f"{name} {label}", format_amount(books.figure(level.name, figure)))
            for label, figure in LEVEL_ROWS
        ]
        taken = books.figure(level.name, "taken_by_other_levels")
        if taken:
            rows.append((f"{name} TAKEN BY OTHER LEVELS", format_amount(taken)))
    return rows


def run(
    kafka_options: Mapping[str, Any],
    ledger_topic: str,
    updates_topic: str,
    only_groups: Sequence[str] = (),
    state_path: Path | None = None,
    jobs: int = 1,
) -> int:
    started = time.perf_counter()
    try:
        state = AuditState.load(state_path, ledger_topic) if state_path else None
        done = asyncio.run(
            audit(kafka_options, ledger_topic, updates_topic, only_groups, state, jobs)
        )
    except (LookupError, RuntimeError, OSError, KafkaError, ValueError) as error:
        print(f"jackpot audit: {error}", file=sys.stderr)
        return 2
    groups = done.groups
    print(render(groups))
    print(cost_line("jackpot audit", done.records, started, done.workers_rss_mb), file=sys.stderr)
    missing = set(only_groups) - {g.group_id for g in groups}
    for group_id in sorted(missing):
        print(f"pot group {group_id}: no ledger entries", file=sys.stderr)
    failed = bool(missing or any(g.problems for g in groups))
    if state is not None and state_path is not None:
        if failed or only_groups:
            print(f"jackpot audit: {state_path} left as it was", file=sys.stderr)
        else:
            state.save(state_path)
    return 1 if failed else 0
