"""Writes a synthesized floor history (``loadtest.history_synth``) to Kafka, fast, and caches it.

The history of each size lives in topics of its own, named like the demo's (``<prefix>.ledger``,
``<prefix>.pot-state`` ... with the real topics' partitions and retention, ``jackpot.topics``),
where ``prefix`` is ``hist-<digest>-t<T>-d<D>`` and the digest covers the code that makes the
records (the pot, the domain, the payout's codec, the protobuf code, this synthesizer): another
version of the code writes another history. Records are written as committed records (no
transactions) by an idempotent producer in batches built by hand (``send_batch``: about 200,000
records/s on one core), each with its synthetic time as the record's timestamp, so time-based
seeks (offsets-for-times) and the broker's retention see the history as it happened. The pot's
and the payout's consumer groups (``<prefix>-pot``, ``<prefix>-payout``) are left committed at
the end of what they consumed, as the running services would have left them.

The groups are synthesized in ``--workers`` processes (the machine's cores), each writing its
groups' partitions; the access log, which chains the facts of every group in time order, is
written last. ``build/history/<prefix>.json`` describes a complete history (counts, times, the
synthesizer's rounds per second); a later run finds it and reuses the topics unless the
history was consumed (``jackpot restore`` rewrites the ledger's tail and the state: the manifest
then says so and the next run writes the history again).

    python -m loadtest.history_kafka --tables 300 --days 1 [--fresh]   # prints the manifest
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import hashlib
import json
import multiprocessing
import os
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.structs import OffsetAndMetadata

from jackpot import topics as jackpot_topics
from jackpot.platform import kafka
from jackpot.platform.logging import configure_logging
from jackpot.topics import ALL_TOPICS, TopicSpec
from loadtest import history_synth
from loadtest.history_synth import (
    Fact,
    GroupCounts,
    GroupHistory,
    GroupPlan,
    Plan,
    Record,
    audit_records,
    floor_facts,
    group_plans,
    instance_starts,
)

BATCH_BYTES = 512 * 1024
MANIFESTS = Path("build/history")
# The code whose output the history is (a change to any of these writes a new history).
CODE = (
    "pot",
    "domain",
    "payout/codec.py",
    "platform/codec.py",
    "v1",
    "topics.py",
    "tools/demo_tables.py",
)


def kind(spec: TopicSpec) -> str:
    """A topic's short name, as the demo names its topics (jackpot.ledger.v1 -> ledger)."""
    return spec.name.removeprefix("jackpot.").removesuffix(".v1")


def topic_names(prefix: str) -> dict[str, str]:
    return {kind(spec): f"{prefix}.{kind(spec)}" for spec in ALL_TOPICS}


def code_digest() -> str:
    """SHA-256 over the files that make the records, of the ``jackpot`` package imported."""
    root = Path(jackpot_topics.__file__).resolve().parent
    digest = hashlib.sha256()
    files = [Path(history_synth.__file__)]
    for name in CODE:
        path = root / name
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    for path in files:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def prefix_of(plan: Plan, digest: str) -> str:
    days = f"{plan.days:g}".replace(".", "_")
    return f"hist-{digest[:10]}-t{plan.tables}-d{days}"


def connection(bootstrap: str) -> Any:
    """The project's Kafka connection, or (code from before it) the bootstrap servers."""
    made = getattr(kafka, "KafkaConnection", None)
    return made({"bootstrap_servers": bootstrap}) if made is not None else bootstrap


def producer(bootstrap: str) -> AIOKafkaProducer:
    options = {"linger_ms": 50, "max_batch_size": BATCH_BYTES, "max_request_size": 4 * BATCH_BYTES}
    made = connection(bootstrap)
    if isinstance(made, str):
        return kafka.idempotent_producer(bootstrap, **options)
    return made.producer(**options)


async def create_topics(bootstrap: str, prefix: str) -> None:
    """Every topic of the history, with the real ones' partitions and retention."""
    specs = [
        TopicSpec(f"{prefix}.{kind(t)}", t.partitions, {**t.config, "min.insync.replicas": "1"})
        for t in ALL_TOPICS
    ]
    await kafka.ensure_topics(bootstrap, specs)


async def delete_topics(bootstrap: str, prefix: str) -> list[str]:
    """Delete every topic named ``<prefix>.*``; their names."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        doomed = sorted(t for t in await admin.list_topics() if t.startswith(prefix + "."))
        if doomed:
            await admin.delete_topics(doomed)
        return doomed
    finally:
        await admin.close()


class Writer:
    """Records to their topics' partitions in batches built by hand, in the order given."""

    def __init__(self, client: AIOKafkaProducer, names: Mapping[str, str]) -> None:
        self.client = client
        self.names = names
        self.written = 0

    async def write(self, records: Iterable[Record]) -> None:
        by_partition: dict[tuple[str, int], list[Record]] = {}
        for record in records:
            by_partition.setdefault((record.kind, record.partition), []).append(record)
        sent = []
        for (name, partition), listed in by_partition.items():
            topic = self.names[name]
            batch = self.client.create_batch()
            for record in listed:
                if batch.append(key=record.key, value=record.value, timestamp=record.time_ms):
                    continue
                batch.close()
                sent.append(await self.client.send_batch(batch, topic, partition=partition))
                batch = self.client.create_batch()
                batch.append(key=record.key, value=record.value, timestamp=record.time_ms)
            batch.close()
            sent.append(await self.client.send_batch(batch, topic, partition=partition))
            self.written += len(listed)
        await asyncio.gather(*sent)


async def _write_groups(
    bootstrap: str, plan: Plan, groups: Sequence[GroupPlan], prefix: str
) -> list[tuple[str, int, GroupCounts, list[Fact], float]]:
    configure_logging("WARNING", json=False)
    client = producer(bootstrap)
    await client.start()
    writer = Writer(client, topic_names(prefix))
    done = []
    try:
        for group in groups:
            started = time.perf_counter()
            history = GroupHistory(plan, group)
            facts: list[Fact] = []
            for chunk in history.chunks():
                await writer.write(chunk.records)
                facts += chunk.facts
            seconds = time.perf_counter() - started
            done.append((group.group_id, group.partition, history.counts, facts, seconds))
    finally:
        await kafka.stop_client(client)
    return done


def worker(
    args: tuple[str, Plan, list[GroupPlan], str],
) -> list[tuple[str, int, GroupCounts, list[Fact], float]]:
    """One process's groups, written (``multiprocessing`` entry point)."""
    bootstrap, plan, groups, prefix = args
    return asyncio.run(_write_groups(bootstrap, plan, groups, prefix))


async def commit_offsets(bootstrap: str, group_id: str, offsets: Mapping[str, int]) -> None:
    """Leave a consumer group committed at ``offsets`` ("topic/partition" -> next offset)."""
    made = connection(bootstrap)
    if isinstance(made, str):  # never commits on its own either
        consumer = kafka.committed_consumer(bootstrap, group_id=group_id)
    else:
        consumer = made.consumer(group_id=group_id)
    await consumer.start()
    try:
        parsed = {}
        for name, offset in offsets.items():
            topic, partition = name.rsplit("/", 1)
            parsed[TopicPartition(topic, int(partition))] = OffsetAndMetadata(offset, "")
        consumer.assign(list(parsed))
        await consumer.commit(parsed)
    finally:
        await kafka.stop_client(consumer)


async def write_floor(
    bootstrap: str, plan: Plan, prefix: str, done: Sequence[tuple[Any, ...]], digest: str
) -> int:
    """The access log of every group's facts and the floor's own; the consumer groups'
    offsets. The audit records written."""
    names = topic_names(prefix)
    groups = group_plans(plan.tables, plan.partitions)
    facts: list[Fact] = floor_facts(plan, groups, digest)
    for *_, group_facts, _ in done:
        facts += group_facts
    audit = audit_records(facts, instance_starts(plan))
    client = producer(bootstrap)
    await client.start()
    try:
        await Writer(client, names).write(audit)
    finally:
        await kafka.stop_client(client)
    pot = {f"{names['table-events']}/{p}": c.table_events for _, p, c, *_ in done}
    payout = {f"{names['awards']}/{p}": c.ordered for _, p, c, *_ in done}
    await commit_offsets(bootstrap, f"{prefix}-pot", pot)
    await commit_offsets(bootstrap, f"{prefix}-payout", payout)
    return len(audit)


def synthesize(bootstrap: str, plan: Plan, prefix: str, workers: int) -> dict[str, Any]:
    """Write the whole history; its manifest (counts, seconds, rounds/s)."""
    started = time.perf_counter()
    asyncio.run(create_topics(bootstrap, prefix))
    groups = group_plans(plan.tables, plan.partitions)
    shares = [groups[n::workers] for n in range(workers)]
    jobs = [(bootstrap, plan, share, prefix) for share in shares if share]
    with multiprocessing.get_context("spawn").Pool(len(jobs)) as pool:
        done = [item for result in pool.map(worker, jobs) for item in result]
    digest = code_digest()
    audit = asyncio.run(write_floor(bootstrap, plan, prefix, done, digest))
    seconds = time.perf_counter() - started
    counts = [c for _, _, c, *_ in done]
    total = {
        f.name: sum(getattr(c, f.name) for c in counts) for f in dataclasses.fields(GroupCounts)
    }
    return {
        "prefix": prefix,
        "digest": digest,
        "code": str(Path(jackpot_topics.__file__).resolve().parent),
        "plan": dataclasses.asdict(plan),
        "groups": {g: {"partition": p, **dataclasses.asdict(c)} for g, p, c, *_ in done},
        "totals": {**total, "audit_entries": audit},
        "seconds": round(seconds, 2),
        "rounds_per_second": round(total["rounds"] / seconds, 1),
        "group_rounds_per_second": round(
            total["rounds"] / max(sum(s for *_, s in done), 1e-9) * workers, 1
        ),
        "state": "complete",
    }


async def topics_exist(bootstrap: str, prefix: str) -> bool:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        present = set(await admin.list_topics())
    finally:
        await admin.close()
    return all(name in present for name in topic_names(prefix).values())


def manifest_path(prefix: str, directory: Path = MANIFESTS) -> Path:
    return directory / f"{prefix}.json"


def history(
    bootstrap: str, plan: Plan, workers: int, fresh: bool = False, directory: Path = MANIFESTS
) -> dict[str, Any]:
    """The manifest of this plan's history, written now unless a complete one is in Kafka."""
    prefix = prefix_of(plan, code_digest())
    path = manifest_path(prefix, directory)
    if not fresh and path.exists():
        cached: dict[str, Any] = json.loads(path.read_text())
        if cached.get("state") == "complete" and asyncio.run(topics_exist(bootstrap, prefix)):
            cached["cached"] = True
            return cached
    asyncio.run(delete_topics(bootstrap, prefix))
    time.sleep(2)  # the broker forgets deleted topics asynchronously
    made = synthesize(bootstrap, plan, prefix, workers)
    directory.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(made, indent=2) + "\n")
    made["cached"] = False
    return made


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tables", type=int, default=300)
    parser.add_argument("--days", type=float, required=True)
    parser.add_argument("--rounds-per-minute", type=float, default=1.0)
    parser.add_argument("--end-ns", type=int, default=0, help="default: now, to the minute")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--fresh", action="store_true", help="write it again even if cached")
    parser.add_argument(
        "--bootstrap-servers", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092")
    )
    args = parser.parse_args(argv)
    configure_logging("WARNING", json=False)
    end = args.end_ns or time.time_ns() // history_synth.MINUTE_NS * history_synth.MINUTE_NS
    plan = Plan(args.tables, args.days, end, args.rounds_per_minute)
    made = history(args.bootstrap_servers, plan, max(1, args.workers), args.fresh)
    print(json.dumps(made))
    return 0


if __name__ == "__main__":
    sys.exit(main())
