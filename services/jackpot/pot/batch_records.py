"""A batch's outputs as the records of its one transaction, and the topics they go to.

The pot's book (:mod:`jackpot.pot.pot_book`) hands the exactly-once processor a
:class:`PotBatch`: what the batch changed (:class:`~jackpot.pot.group_runtime.Outputs`, which the
book commits or rolls back) and the producer's records for it. Pot updates, awards and ledger
entries are keyed by pot group (the ledger and the updates keep a group's order); dead letters by
their source; state snapshots, update-sequence marks and locked rounds written apart are pinned
to the input partition's number (the state topic is partitioned as the table events, so a takeover
reads one partition). A locked round's record goes before the snapshot that names it, its
tombstone after the one that no longer does, so that a reader between two fetches never holds a
snapshot without its round.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jackpot.platform.bundles import bundle_awards, bundle_ledger
from jackpot.platform.partition_handler import OutputRecord
from jackpot.pot.group_runtime import Outputs
from jackpot.pot.state_records import locked_round_key, sequence_mark_key, state_key


@dataclass(frozen=True, slots=True)
class OutputTopics:
    """Where a batch's outputs go (the pot's settings name them)."""

    pot_updates: str
    awards: str
    ledger: str
    dead_letters: str
    state: str


@dataclass(slots=True)
class PotBatch:
    """A batch's outputs and the records one transaction writes for them."""

    outputs: Outputs
    records: list[OutputRecord] = field(default_factory=list)


def batch_records(outputs: Outputs, topics: OutputTopics, partition: int) -> PotBatch:
    """``outputs`` of the book of input partition ``partition`` as one transaction's records."""
    records = [
        OutputRecord(topics.pot_updates, m.SerializeToString(), m.pot_group_id.encode())
        for m in outputs.pot_updates
    ]
    records += [
        OutputRecord(topics.awards, raw, group_id.encode())
        for group_id, raw in bundle_awards(outputs.awards)
    ]
    serialized = outputs.serialized  # the ledger entries' bytes, as their chain has them
    ledger = outputs.ledger
    raws = [serialized.get(id(entry)) or entry.SerializeToString() for entry in ledger]
    records += [
        OutputRecord(topics.ledger, raw, group_id.encode())
        for group_id, raw in bundle_ledger(ledger, raws)
    ]
    records += [
        OutputRecord(topics.dead_letters, d.SerializeToString(), d.source.encode())
        for d in outputs.dead_letters
    ]
    apart = outputs.locked_rounds
    records += [
        OutputRecord(topics.state, record, locked_round_key(*key), partition)
        for key, record in apart.items()
        if record is not None
    ]
    records += [
        OutputRecord(topics.state, snapshot, state_key(g), partition)
        for g, snapshot in outputs.snapshots.items()
    ]
    records += [
        OutputRecord(topics.state, None, locked_round_key(*key), partition)
        for key, record in apart.items()
        if record is None
    ]
    records += [
        OutputRecord(topics.state, mark, sequence_mark_key(g), partition)
        for g, mark in outputs.sequence_marks.items()
    ]
    return PotBatch(outputs, records)
