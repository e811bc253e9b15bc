"""`jackpot audit`: recompute every pot group from its ledger and prove rule M2, exactly (D4).

Reads jackpot.ledger.v1 from the beginning (read_committed) and the latest PotUpdate of each group
from jackpot.pot-updates.v1, then for each pot group:

- replays every transfer into accounts (``bets``, ``house``, ``commission``, ``awards``,
  ``pot:<name>``) in exact picopesos, and checks M2:
  ``collected + house advances == commission + sum(pots) + awarded``, with no pot negative;
- checks that no pot ever decreases but by an award or a reseed (R2), and the ledger itself:
  ``ledger_sequence`` runs 1, 2, 3... with no gap or repeat, every entry
  id and every award id appears once, each collection's transfers equal its bets; the payout
  service's lifecycle entries move no money, and each payment matches one award's amount, once;
- checks that the balances equal those of the group's latest pot update, exactly, and that its
  sign value is the main pot floored (M3);
- prints a table of meters per group (collected, commission, each pot, overflow, house advances,
  awarded, hits and wins by prize, payouts paid).

Exit status 0 when everything matches, 1 on any mismatch, 2 when the topics cannot be read.
With the pot service running, the ledger and the updates are read at a consistent cut (the ledger
end offsets are taken before and after the updates' and must agree); heartbeats move no money.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError

from jackpot.domain.money import MINOR_PER_PESO, floor_pesos, format_amount
from jackpot.pot import records
from jackpot.pot.partitions import topic_partitions
from jackpot.v1 import pot_pb2

CUT_ATTEMPTS = 10
AWARD_TYPES = (
    pot_pb2.LEDGER_ENTRY_TYPE_PRIZE_AWARDED,
    pot_pb2.LEDGER_ENTRY_TYPE_MYSTERY_AWARDED,
)
# The only entries that may take money out of a pot (R2): a prize paid from it, and the S8 top-up
# that moves reserves to the main pot after a reset. There is no correction entry.
POT_DEBIT_TYPES = (*AWARD_TYPES, pot_pb2.LEDGER_ENTRY_TYPE_POT_RESEEDED)
# Written by the payout service: no ledger_sequence, no transfers (the money moved at award).
PAYOUT_TYPES = (
    pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_ORDERED,
    pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_AWAITING_APPROVAL,
    pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_APPROVED,
    pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_PAID,
    pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_VOIDED,
)


@dataclass
class GroupAudit:
    """One pot group recomputed from its ledger."""

    group_id: str
    accounts: Counter[str] = field(default_factory=Counter)
    entries: int = 0
    last_sequence: int = 0
    overflow: int = 0
    hits: Counter[str] = field(default_factory=Counter)
    wins: Counter[str] = field(default_factory=Counter)
    award_ids: set[str] = field(default_factory=set)
    award_amounts: dict[str, int] = field(default_factory=dict)  # award id -> whole pesos
    entry_ids: set[str] = field(default_factory=set)
    paid: dict[str, int] = field(default_factory=dict)  # award id -> whole pesos paid
    voided: set[str] = field(default_factory=set)
    config_version: int = 0
    problems: list[str] = field(default_factory=list)
    update: pot_pb2.PotUpdate | None = None

    @property
    def collected(self) -> int:
        return -self.accounts["bets"]

    @property
    def house_advances(self) -> int:
        return -self.accounts["house"]

    @property
    def pots(self) -> dict[str, int]:
        return {
            name.removeprefix("pot:"): amount
            for name, amount in sorted(self.accounts.items())
            if name.startswith("pot:")
        }

    def add(self, entry: pot_pb2.LedgerEntry) -> None:
        self.entries += 1
        if entry.type in PAYOUT_TYPES:
            self._add_payout(entry)
            return
        if entry.ledger_sequence != self.last_sequence + 1:
            self.problems.append(
                f"ledger_sequence {entry.ledger_sequence} follows {self.last_sequence} "
                f"(entry {entry.entry_id}): a gap or a duplicate"
            )
        self.last_sequence = max(self.last_sequence, entry.ledger_sequence)
        if entry.entry_id in self.entry_ids:
            self.problems.append(f"entry {entry.entry_id} appears twice")
        self.entry_ids.add(entry.entry_id)
        self.config_version = entry.config_version
        moved_from_bets = 0
        for transfer in entry.transfers:
            try:
                amount = records.minor_units(transfer.amount)
            except ValueError as error:
                self.problems.append(f"entry {entry.entry_id}: {error}")
                continue
            if amount <= 0:
                self.problems.append(f"entry {entry.entry_id}: transfer of {amount} minor units")
            if transfer.source.startswith("pot:") and entry.type not in POT_DEBIT_TYPES:
                self.problems.append(
                    f"R2: {transfer.source} decreased by {format_amount(amount)} in entry "
                    f"{entry.entry_id} ({pot_pb2.LedgerEntryType.Name(entry.type)}), which is "
                    "neither an award nor a reseed"
                )
            self.accounts[transfer.source] -= amount
            self.accounts[transfer.target] += amount
            if transfer.source == "bets":
                moved_from_bets += amount
        if entry.type == pot_pb2.LEDGER_ENTRY_TYPE_BETS_COLLECTED:
            if moved_from_bets != entry.amount * MINOR_PER_PESO:
                self.problems.append(
                    f"entry {entry.entry_id}: bets of {entry.amount} pesos but "
                    f"{format_amount(moved_from_bets)} moved from bets"
                )
            detail = json.loads(entry.detail_json)
            self.overflow += sum(int(amount) for _, _, amount in detail.get("overflow", ()))
        elif entry.type in AWARD_TYPES:
            award_id = json.loads(entry.detail_json).get("award_id", "")
            if award_id in self.award_ids:
                self.problems.append(f"award {award_id} appears twice")
            self.award_ids.add(award_id)
            self.award_amounts[award_id] = entry.amount
            self.hits[entry.prize] += 1
            self.wins[entry.prize] += entry.amount

    def _add_payout(self, entry: pot_pb2.LedgerEntry) -> None:
        """A payout lifecycle step: it moves no money; a payment must match one award."""
        if entry.entry_id in self.entry_ids:
            self.problems.append(f"entry {entry.entry_id} appears twice")
        self.entry_ids.add(entry.entry_id)
        if entry.transfers or entry.ledger_sequence:
            self.problems.append(f"payout entry {entry.entry_id} moves money or is sequenced")
        award_id = entry.source_event_id
        if entry.type == pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_PAID:
            if award_id in self.paid:
                self.problems.append(f"award {award_id} paid twice")
            self.paid[award_id] = entry.amount
        elif entry.type == pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_VOIDED:
            self.voided.add(award_id)

    def finish(self) -> None:
        """The checks that need the whole ledger and the latest pot update."""
        pots = self.pots
        commission = self.accounts["commission"]
        awarded = self.accounts["awards"]
        left = self.collected + self.house_advances
        right = commission + sum(pots.values()) + awarded
        if left != right:
            self.problems.append(
                f"M2 broken: collected {format_amount(self.collected)} + house "
                f"{format_amount(self.house_advances)} != commission {format_amount(commission)} "
                f"+ pots {format_amount(sum(pots.values()))} + awarded {format_amount(awarded)}"
            )
        unknown = (
            set(self.accounts)
            - {"bets", "house", "commission", "awards"}
            - {f"pot:{name}" for name in pots}
        )
        if unknown:
            self.problems.append(f"transfers name unknown accounts {sorted(unknown)}")
        for name, balance in pots.items():
            if balance < 0:
                self.problems.append(f"pot {name} is negative: {format_amount(balance)}")
        if awarded != sum(self.wins.values()) * MINOR_PER_PESO:
            self.problems.append(
                f"awards account {format_amount(awarded)} != prizes awarded "
                f"{sum(self.wins.values())}"
            )
        for award_id, amount in sorted(self.paid.items()):
            if self.award_amounts.get(award_id) != amount:
                self.problems.append(
                    f"payment of {amount} for award {award_id}, which awarded "
                    f"{self.award_amounts.get(award_id)}"
                )
            if award_id in self.voided:
                self.problems.append(f"award {award_id} was paid and voided")
        if self.update is None:
            self.problems.append("no pot update found for the group")
            return
        shown = {p.name: records.minor_units(p.balance) for p in self.update.pots}
        if any(pots.get(name, 0) != shown.get(name, 0) for name in {*pots, *shown}):
            self.problems.append(
                f"balances differ from the latest pot update #{self.update.update_sequence}: "
                f"ledger { {k: format_amount(v) for k, v in pots.items()} }, "
                f"update { {k: format_amount(v) for k, v in shown.items()} }"
            )
        if self.update.sign_value != floor_pesos(pots.get("main", 0)):
            self.problems.append(
                f"sign value {self.update.sign_value} is not the main pot floored (M3)"
            )


def _partitions(counts: dict[str, int], topic: str) -> list[TopicPartition]:
    if topic not in counts:
        raise LookupError(f"topic {topic} does not exist")
    return [TopicPartition(topic, p) for p in range(counts[topic])]


async def _read(
    consumer: AIOKafkaConsumer, starts: dict[TopicPartition, int], ends: dict[TopicPartition, int]
) -> Iterable[tuple[bytes | None, bytes]]:
    """(key, value) of every committed record from ``starts`` up to ``ends``, per partition."""
    out: list[tuple[bytes | None, bytes]] = []
    todo = {tp for tp in starts if ends[tp] > starts[tp]}
    consumer.assign(list(todo))
    for tp in todo:
        consumer.seek(tp, starts[tp])
    while todo:
        batch = await consumer.getmany(*todo, timeout_ms=1000)
        for tp, batch_records in batch.items():
            for record in batch_records:
                if record.offset < ends[tp] and record.value is not None:
                    out.append((record.key, record.value))
        for tp in list(todo):
            if await consumer.position(tp) >= ends[tp]:
                todo.discard(tp)
    consumer.assign([])
    return out


async def audit(
    kafka_options: Mapping[str, Any],
    ledger_topic: str,
    updates_topic: str,
    only_groups: Sequence[str] = (),
) -> list[GroupAudit]:
    """Recompute every pot group (or only the named ones) from the ledger.

    ``kafka_options`` are the client options (bootstrap servers, security), as
    :meth:`jackpot.pot.settings.PotSettings.kafka_options` gives them.
    """
    counts = await topic_partitions(kafka_options, [ledger_topic, updates_topic])
    ledger_tps = _partitions(counts, ledger_topic)
    update_tps = _partitions(counts, updates_topic)
    consumer = AIOKafkaConsumer(
        **kafka_options,
        group_id=None,
        isolation_level="read_committed",
        enable_auto_commit=False,
    )
    await consumer.start()
    try:
        for _ in range(CUT_ATTEMPTS):
            ledger_ends = await consumer.end_offsets(ledger_tps)
            update_ends = await consumer.end_offsets(update_tps)
            if await consumer.end_offsets(ledger_tps) == ledger_ends:
                break
            await asyncio.sleep(0.2)
        else:
            raise RuntimeError("the ledger kept growing: no consistent cut; stop the pot service")
        ledger_starts = await consumer.beginning_offsets(ledger_tps)
        update_starts = await consumer.beginning_offsets(update_tps)
        groups: dict[str, GroupAudit] = {}
        for key, value in await _read(consumer, ledger_starts, ledger_ends):
            entry = pot_pb2.LedgerEntry.FromString(value)
            if only_groups and entry.pot_group_id not in only_groups:
                continue
            if key != entry.pot_group_id.encode():
                raise RuntimeError(f"ledger entry {entry.entry_id} is keyed {key!r}")
            group = groups.setdefault(entry.pot_group_id, GroupAudit(entry.pot_group_id))
            group.add(entry)
        for key, value in await _read(consumer, update_starts, update_ends):
            if key is None or key.decode() not in groups:
                continue
            update = pot_pb2.PotUpdate.FromString(value)
            group = groups[update.pot_group_id]
            if group.update is None or update.update_sequence > group.update.update_sequence:
                group.update = update
        for group in groups.values():
            group.finish()
        return [groups[g] for g in sorted(groups)]
    finally:
        await consumer.stop()


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
            ("payouts paid", f"{len(group.paid)} / {sum(group.paid.values())}"),
        )
        if group.voided:
            rows.append(("payouts voided", str(len(group.voided))))
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


def run(
    kafka_options: Mapping[str, Any],
    ledger_topic: str,
    updates_topic: str,
    only_groups: Sequence[str] = (),
) -> int:
    try:
        groups = asyncio.run(audit(kafka_options, ledger_topic, updates_topic, only_groups))
    except (LookupError, RuntimeError, OSError, KafkaError) as error:
        print(f"jackpot audit: {error}", file=sys.stderr)
        return 2
    print(render(groups))
    missing = set(only_groups) - {g.group_id for g in groups}
    for group_id in sorted(missing):
        print(f"pot group {group_id}: no ledger entries", file=sys.stderr)
    return 1 if missing or any(g.problems for g in groups) else 0
