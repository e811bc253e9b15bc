"""What a successor finds after a fault run: the pot's stored states against the ledger (R14), and
the payout service's records against the ledger (issue 36 item 6).

A transaction that commits without one of its records leaves its topics disagreeing: the pot's
state snapshot without its ledger entry (or the other way round), a payout's transition on the
payouts topic without its ledger entry. The fault campaign looks for exactly that once a run's
services have stopped:

- ``takeover_check``: each partition's stored state read back from the pot-state topic as a
  starting pot reads it, and judged by the pot's own takeover check
  (:meth:`jackpot.pot.service.PotPartition.verify_restored`, which the pot runs at every
  takeover and which refused scl-blackjack's state in issue 36). The same states are first
  compared with the whole ledger partition (``jackpot.pot.ledger_restore.disagreement`` over
  every entry, not from the last checkpoint): the takeover check repairs a state behind a
  ledger that extends it (issue 36 item 3), and a fault run must never leave one to repair (the
  repairs the check made are counted too);
- ``payout_disagreements``: every transition of every payout on the payouts topic has its ledger
  entry (``payout:<award>:<n>``, of the transition's type), once, and the ledger has no payout
  entry the payouts topic does not have.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from jackpot.platform.bundles import ledger_entries
from jackpot.platform.changelog import read_compacted
from jackpot.platform.codec import payout_ledger_type, payout_state_from_proto
from jackpot.platform.kafka import KafkaConnection, stop_client, topic_partitions
from jackpot.platform.settings import load
from jackpot.pot.ledger_audit import PAYOUT_TYPES, GroupAudit
from jackpot.pot.ledger_restore import TakeoverAudit, disagreement
from jackpot.pot.metrics import PotMetrics
from jackpot.pot.service import PotPartition
from jackpot.pot.settings import PotSettings
from jackpot.sim.books import read_topic
from jackpot.topics import CHANGELOG_OFFSET_KEY
from jackpot.v1 import payout_pb2, pot_pb2

READ_SECONDS = 60.0
EXAMPLES = 10


async def _stored_states(
    settings: PotSettings, partitions: list[int]
) -> dict[int, dict[bytes, bytes]]:
    """The pot-state topic as a starting pot reads it: the latest committed value per key."""
    consumer = KafkaConnection.of(settings).consumer()
    await consumer.start()
    try:
        return await read_compacted(consumer, settings.state_topic, partitions, READ_SECONDS)
    finally:
        await stop_client(consumer)


async def _whole_ledger(
    settings: PotSettings, partition: int, groups: Iterable[str]
) -> TakeoverAudit:
    """One ledger partition's books from its first entry, for the groups stored there."""
    books = TakeoverAudit(dict.fromkeys(groups, 0))
    async with KafkaConnection.of(settings).reader(settings.ledger_topic) as reader:
        async for record in reader.records(None, partitions=[partition]):
            for entry, raw in ledger_entries(record.value or b""):
                books.add(entry, raw)
    return books


def _whole_ledger_disagreements(handler: PotPartition, books: TakeoverAudit) -> list[str]:
    groups = handler.book.groups
    found = []
    for group_id in sorted(set(groups) | set(books.stateless)):
        runtime = groups.get(group_id)
        if runtime is None:
            audit = GroupAudit(group_id, last_sequence=books.stateless[group_id])
            why = disagreement(group_id, None, 0, audit)
        else:
            why = disagreement(
                group_id,
                runtime.group,
                runtime.ledger_sequence,
                books.audits.get(group_id),
                runtime.ledger_chain,
            )
        if why:
            found.append(why)
    return found


def _counted(metrics: PotMetrics, name: str) -> float:
    """A counter's total over its labels (0 when this version of the pot has no such metric)."""
    return sum(
        sample.value
        for metric in metrics.registry.collect()
        if metric.name == name
        for sample in metric.samples
        if sample.name == f"{name}_total"
    )


async def takeover_check(environ: Mapping[str, str]) -> dict[str, Any]:
    """The pot's stored states after a run, checked as a taking-over pot checks them and against
    the whole ledger. ``environ``: the pot's environment (its settings, topics and brokers).
    ``failed_checks``: one line per refusal, naming the partition."""
    settings = load(PotSettings, environ=environ)
    options = settings.kafka_options()
    partitions = sorted(
        range((await topic_partitions(options, [settings.state_topic]))[settings.state_topic])
    )
    changelogs = await _stored_states(settings, partitions)
    failed: list[str] = []
    positions: dict[str, int] = {}
    repaired = 0.0
    for partition in partitions:
        changelog = changelogs[partition]
        changelog.pop(CHANGELOG_OFFSET_KEY, None)
        metrics = PotMetrics()
        handler = PotPartition(partition, settings, metrics)
        handler.restore(changelog, None)
        groups = handler.book.groups
        positions.update({g: r.ledger_sequence for g, r in groups.items()})
        # against the whole ledger first: the takeover check may repair a state behind it
        books = await _whole_ledger(settings, partition, groups)
        against_ledger = _whole_ledger_disagreements(handler, books)
        refused = await handler.verify_restored()
        repaired += _counted(metrics, "jackpot_pot_states_repaired")
        if refused:
            failed.append(f"partition {partition}: the pot's takeover check refuses: {refused}")
        failed += [
            f"partition {partition}: against the whole ledger: {why}"
            for why in against_ledger
            if why != refused
        ]
    return {
        "partitions": len(partitions),
        "groups_stored": dict(sorted(positions.items())),
        "states_repaired_by_the_takeover": int(repaired),
        "failed_checks": failed,
        "status": "failed" if failed else "passed",
    }


def payout_disagreements(
    entries: Iterable[pot_pb2.LedgerEntry],
    records: Iterable[tuple[int, int, payout_pb2.Payout]],
) -> list[str]:
    """Where the ledger's payout entries and the payouts topic (``records``: partition, offset,
    payout) disagree: a transition on the topic without its ledger entry, one the ledger holds
    twice, or a ledger entry for a transition the topic does not hold."""
    ledger: Counter[str] = Counter()
    types: dict[str, int] = {}
    for entry in entries:
        if entry.type in PAYOUT_TYPES:
            ledger[entry.entry_id] += 1
            types[entry.entry_id] = entry.type
    latest: dict[str, tuple[int, int, payout_pb2.Payout]] = {}
    for partition, offset, payout in records:
        if payout.award_id and (
            payout.award_id not in latest or (partition, offset) > latest[payout.award_id][:2]
        ):
            latest[payout.award_id] = (partition, offset, payout)
    wanted: dict[str, int] = {}
    for award_id, (_, _, payout) in latest.items():
        for n, step in enumerate(payout.history):
            wanted[f"payout:{award_id}:{n}"] = payout_ledger_type(
                payout_state_from_proto(step.state)
            )
    found: defaultdict[str, list[str]] = defaultdict(list)
    for entry_id, kind in wanted.items():
        if entry_id not in ledger:
            found["on the payouts topic, not in the ledger"].append(entry_id)
        elif types[entry_id] != kind:
            found["of another type in the ledger"].append(entry_id)
    for entry_id, count in ledger.items():
        if count > 1:
            found["in the ledger more than once"].append(entry_id)
        if entry_id not in wanted:
            found["in the ledger, not on the payouts topic"].append(entry_id)
    return [
        f"{len(ids)} payout transitions {what}: {', '.join(sorted(ids)[:EXAMPLES])}"
        for what, ids in found.items()
    ]


async def payout_records(bootstrap: str, ledger_topic: str, payouts_topic: str) -> dict[str, Any]:
    """``payout_disagreements`` over a run's whole ledger and payouts topic."""
    entries: list[pot_pb2.LedgerEntry] = []
    records: list[tuple[int, int, payout_pb2.Payout]] = []
    await read_topic(
        bootstrap, ledger_topic, lambda v, _p, _o: entries.extend(e for e, _ in ledger_entries(v))
    )
    await read_topic(
        bootstrap,
        payouts_topic,
        lambda v, p, o: records.append((p, o, payout_pb2.Payout.FromString(v))),
    )
    failed = payout_disagreements(entries, records)
    payouts = {payout.award_id for _, _, payout in records}
    return {
        "payouts": len(payouts),
        "ledger_payout_entries": sum(1 for e in entries if e.type in PAYOUT_TYPES),
        "failed_checks": failed,
        "status": "failed" if failed else "passed",
    }
