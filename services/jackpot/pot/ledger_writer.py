"""What the pot writes to its ledger for a group: one entry per domain event (an award per
prize), folded into the group's hash chain, and a CHECKPOINT entry (its figures and chain, no
money) every ``checkpoint_entries`` entries, at every configuration activation and when the pot
asks (``jackpot.pot.ledger_audit`` checks them). Each entry states the configuration versions in
force after it (C7, D4). :class:`~jackpot.pot.pot_book.PotBook` calls it for each event it
applies."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from jackpot.domain.canonical import canonical_json
from jackpot.domain.events import (
    BetsCollected,
    ConfigActivated,
    ConfigProposed,
    Event,
    MysteryAwarded,
    PotGroupOpened,
    PrizeAwarded,
)
from jackpot.platform import codec
from jackpot.pot import records
from jackpot.pot.group_runtime import EventContext, GroupRuntime, Outputs
from jackpot.pot.ledger_audit import CHECKPOINT, chain_next, checkpoint_detail
from jackpot.pot.prize_records import PrizeRecords
from jackpot.v1 import pot_pb2


@dataclass(frozen=True, slots=True)
class _Stamp:
    """What every entry of one table event states: where it came from, when it was recorded,
    the configuration versions in force after it (C7, D4)."""

    context: EventContext
    recorded_at: Timestamp
    version: int
    pending: list[int]


class LedgerWriter:
    """The ledger entries of one partition's groups, stamped by ``clock_ns``."""

    def __init__(self, clock_ns: Callable[[], int], checkpoint_entries: int) -> None:
        self._clock_ns = clock_ns
        self.checkpoint_entries = checkpoint_entries

    def ledger(
        self,
        runtime: GroupRuntime,
        domain_events: Sequence[Event],
        context: EventContext,
        outputs: Outputs,
    ) -> None:
        """One ledger entry per domain event; one award per prize."""
        group = runtime.group
        recorded_at = codec.timestamp_ns(self._clock_ns())
        # Each entry states the configuration versions in force after it, not after the command.
        version, pending_before = context.config_before
        pending = list(pending_before)
        bets_by_round: dict[int, int] = {}
        activated = False
        prizes = PrizeRecords(
            group.group_id,
            context.event_id,
            context.occurred_at,
            recorded_at,
            context.table_sequence,
        )
        for index, domain_event in enumerate(domain_events):
            runtime.ledger_sequence += 1
            if prizes.handles(domain_event):  # a prize, maybe one of thousands (O4)
                sequence = runtime.ledger_sequence
                entry, award = prizes.records(domain_event, index, sequence, version, pending)
                outputs.awards.append(award)
                self._append(runtime, entry, outputs)
                continue
            if isinstance(domain_event, ConfigProposed):
                pending.append(domain_event.version)
            elif isinstance(domain_event, ConfigActivated):
                version, pending = domain_event.version, []  # the engine drops older pending ones
                activated = True
            elif isinstance(domain_event, BetsCollected):
                bets_by_round = dict(domain_event.bets)
            stamp = _Stamp(context, recorded_at, version, pending)
            entry = self._entry(runtime, domain_event, index, stamp, bets_by_round, outputs)
            self._append(runtime, entry, outputs)
        count_due = runtime.ledger_sequence - runtime.checkpoint_sequence >= self.checkpoint_entries
        if runtime.ledger_chain and (activated or count_due):
            outputs.ledger.append(self.checkpoint(runtime))

    def _entry(
        self,
        runtime: GroupRuntime,
        domain_event: Event,
        index: int,
        stamp: _Stamp,
        bets_by_round: Mapping[int, int],
        outputs: Outputs,
    ) -> pot_pb2.LedgerEntry:
        """The ledger entry of any domain event (and the award of a prize the fast path of
        :class:`~jackpot.pot.prize_records.PrizeRecords` leaves)."""
        context = stamp.context
        fields = domain_event.to_dict()
        detail = {name: value for name, value in fields.items() if name != "transfers"}
        moved: tuple[tuple[str, str, int], ...] = getattr(domain_event, "transfers", ())
        transfers = records.transfers(moved)
        entry = pot_pb2.LedgerEntry(
            entry_id=f"{context.event_id}:{index}",
            pot_group_id=runtime.group.group_id,
            ledger_sequence=runtime.ledger_sequence,
            type=codec.ledger_type(domain_event),
            transfers=transfers,
            config_version=stamp.version,
            pending_config_versions=stamp.pending,
            detail_json=canonical_json(detail),
            source_event_id=context.event_id,
            table_id=detail.get("table_id", context.table_id),
            round_id=detail.get("round_id", context.round_id),
            occurred_at=context.occurred_at,
            recorded_at=stamp.recorded_at,
            table_sequence=context.table_sequence,
        )
        if isinstance(domain_event, BetsCollected):
            entry.amount = domain_event.total_pesos
        elif isinstance(domain_event, PrizeAwarded | MysteryAwarded):
            award = self._award(domain_event, fields, transfers, bets_by_round, context)
            entry.seat = award.seat
            entry.prize = award.prize
            entry.amount = award.amount
            outputs.awards.append(award)
        elif isinstance(domain_event, ConfigProposed | PotGroupOpened):
            entry.changed_by = domain_event.changed_by
            entry.reason = domain_event.reason
        return entry

    @staticmethod
    def _append(runtime: GroupRuntime, entry: pot_pb2.LedgerEntry, outputs: Outputs) -> None:
        """An entry to write, folded into the group's chain as the bytes the ledger will hold
        (kept: the transaction writes those, :func:`~jackpot.pot.batch_records.batch_records`)."""
        if runtime.ledger_chain:
            raw = entry.SerializeToString()
            runtime.ledger_chain = chain_next(runtime.ledger_chain, raw)
            outputs.serialized[id(entry)] = raw
        outputs.ledger.append(entry)

    def _award(
        self,
        domain_event: PrizeAwarded | MysteryAwarded,
        fields: Mapping[str, Any],
        funded_by: list[pot_pb2.Transfer],
        bets: Mapping[int, int],
        context: EventContext,
    ) -> pot_pb2.Award:
        """The award of a prize event (``fields``: its to_dict; ``funded_by``: its transfers,
        as the ledger entry has them)."""
        award = records.award_from_dict(fields, funded_by)
        if isinstance(domain_event, MysteryAwarded):
            award.bet = bets.get(domain_event.seat, 0)
        award.awarded_at.CopyFrom(context.occurred_at)
        award.source_event_id = context.event_id
        return award

    def checkpoint(self, runtime: GroupRuntime) -> pot_pb2.LedgerEntry:
        """The group's next ledger entry: a checkpoint of its figures and chain (no money)."""
        group = runtime.group
        runtime.ledger_sequence += 1
        now_ns = self._clock_ns()
        source = f"checkpoint:{group.group_id}:{runtime.ledger_sequence}"
        detail = checkpoint_detail(
            group, runtime.ledger_chain, runtime.checkpoint_sequence, runtime.table_sequences
        )
        entry = pot_pb2.LedgerEntry(
            entry_id=f"{source}:0",
            pot_group_id=group.group_id,
            ledger_sequence=runtime.ledger_sequence,
            type=CHECKPOINT,
            config_version=group.config.version,
            pending_config_versions=[c.version for c, _, _ in group.pending],
            detail_json=canonical_json(detail),
            source_event_id=source,
            occurred_at=codec.timestamp_ns(now_ns),
            recorded_at=codec.timestamp_ns(now_ns),
        )
        runtime.ledger_chain = chain_next(runtime.ledger_chain, entry.SerializeToString())
        runtime.checkpoint_sequence = runtime.ledger_sequence
        runtime.checkpoint_at_ns = now_ns
        return entry
