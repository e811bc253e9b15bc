"""Audit writers resume from their chain head, not from the access log's beginning (issue 23).

Real Kafka. Thousands of entries of other chains are produced as the writers put them (key: the
chain id, value: an AuditRecord), then a writer of an existing chain starts: it continues its
chain (the verifier passes) and its resume reads a number of audit records that does not depend on
the history: one (its head's own entry) after a clean stop, and only what was written after its
head after a crash between an entry and its head. The first start after the upgrade (no heads at
all) scans the log once and writes every chain's head, so a later writer of another old chain
resumes from its head too. A forked chain is still refused by the verifier.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import subprocess
import sys

import pytest

from jackpot.domain.access import Principal, Role
from jackpot.domain.access_chain import ChainHead, ChainReport
from jackpot.platform.access_log import EVERY_CHAIN, AccessLog, read_entries, to_record
from jackpot.platform.kafka import (
    KafkaConnection,
    ensure_topics,
    idempotent_producer,
    read_records,
)
from jackpot.platform.manifest import verified_digest
from jackpot.topics import AUDIT, audit_heads_topic
from jackpot.v1 import audit_pb2
from tests.polling import eventually

pytestmark = pytest.mark.integration

HISTORY = 3_000  # entries of other chains: the resume must not read them
ANA = Principal("ana", frozenset({Role.OPERATOR}))


async def produce_chains(
    bootstrap: str, topic: str, names: list[str], count: int, heads: dict[str, ChainHead]
) -> dict[str, ChainHead]:
    """``count`` entries spread over the chains ``names`` (continuing ``heads``), produced fast
    in the writers' format; the heads after them."""
    heads = {name: heads.get(name, ChainHead(name)) for name in names}
    producer = idempotent_producer(bootstrap, linger_ms=20)
    await producer.start()
    try:
        for n in range(count):
            name = names[n % len(names)]
            heads[name], entry = heads[name].append(
                time_ns=1_000 + n,
                principal="CAR-1",
                roles=["device"],
                action="progressive_closed",
                outcome="fault",
                target=f"T{n}",
                detail="no heartbeat",
            )
            await producer.send(topic, to_record(entry).SerializeToString(), key=name.encode())
        await producer.flush()
    finally:
        await producer.stop()
    return heads


def connection(bootstrap: str) -> KafkaConnection:
    return KafkaConnection({"bootstrap_servers": bootstrap})


async def verify(bootstrap: str, topic: str) -> ChainReport:
    from jackpot.tools.access_chain import verify_stream

    return await verify_stream(read_entries(connection(bootstrap), topic))


async def audit_topic(bootstrap: str, unique: str) -> str:
    topic = f"test.audit.{unique}"
    await ensure_topics(bootstrap, [dataclasses.replace(AUDIT, name=topic)])
    return topic


def own_entries() -> int:
    """Entries a writer appends at start on its own: the software it verified, once a service
    started in this process verified it (R6)."""
    return 1 if verified_digest() else 0


async def run_writer(log: AccessLog, entries: int) -> AccessLog:
    """Start ``log``, append ``entries`` entries (each on the log when awaited), stop it."""
    await log.start()
    try:
        for n in range(entries):
            await log.record(ANA, "configure_pot", "allowed", "scl", f"change {n}")
    finally:
        await log.stop()
    return log


class DiesBeforeItsHead(AccessLog):
    """A writer whose process dies after appending entry ``dies_at``, before writing its head."""

    dies_at = -1  # set once the entries before the crash are written

    async def _write_head(self, checked: int, closed: bool = False) -> None:
        if self.head.sequence == self.dies_at and not closed:
            await asyncio.Event().wait()  # never returns: stop() finds the entry half-written
        await super()._write_head(checked, closed)


async def test_a_restarted_writer_continues_its_chain_reading_only_its_heads_entry(
    kafka_bootstrap: str, unique: str
) -> None:
    topic = await audit_topic(kafka_bootstrap, unique)
    first = await run_writer(AccessLog(kafka_bootstrap, topic, "pot-api:a"), 3)
    assert first.resumed.how == "full scan"  # the first writer ever: an empty log, then the mark
    others = [f"gateway:g{n}" for n in range(5)]
    heads = await produce_chains(kafka_bootstrap, topic, others, HISTORY, {})

    again = AccessLog(kafka_bootstrap, topic, "pot-api:a")
    await run_writer(again, 2)

    assert again.resumed.how == "closed head"
    assert again.resumed.audit_records == 1  # its head's entry, not the 3,000 records after it
    assert again.resumed.read_from == [first.head.sequence - 1]
    assert again.resumed.heads_records < 20  # the heads topic: a few records of one chain
    assert again.head.sequence == first.head.sequence + own_entries() + 2
    report = await verify(kafka_bootstrap, topic)
    assert report.ok, report.first_break
    mine = {"pot-api:a": again.head.sequence}
    assert report.chains == {**mine, **{name: heads[name].sequence for name in others}}
    assert report.entries == again.head.sequence + HISTORY


async def test_a_crash_between_an_entry_and_its_head_does_not_fork_the_chain(
    kafka_bootstrap: str, unique: str
) -> None:
    topic = await audit_topic(kafka_bootstrap, unique)
    others = ["gateway:g1", "gateway:g2"]
    heads = await produce_chains(kafka_bootstrap, topic, others, HISTORY, {})
    crashing = DiesBeforeItsHead(kafka_bootstrap, topic, "payout:p", refresh_seconds=0.2)
    await crashing.start()
    for n in range(2):
        await crashing.record(ANA, "approve_payout", "allowed", f"award-{n}")
    crashing.dies_at = crashing.head.sequence + 1
    # Idle, the writer moves its head's checked offset on past what other chains write meanwhile.
    heads = await produce_chains(kafka_bootstrap, topic, others, 500, heads)
    end = crashing.head.sequence + HISTORY + 500
    await eventually(
        lambda: latest_head(kafka_bootstrap, topic, "payout:p", checked=end),
        "the idle writer's head checked up to the log's end",
    )
    third = await crashing.record(ANA, "approve_payout", "allowed", "award-2")
    assert third.sequence == crashing.dies_at  # on the log; its head never written
    await crashing.stop(drain_seconds=0.5)
    head = await latest_head(kafka_bootstrap, topic, "payout:p")
    assert head is not None
    assert (head.sequence, head.closed) == (third.sequence - 1, False)  # lags by one entry
    heads = await produce_chains(kafka_bootstrap, topic, others, 10, heads)

    resumed = AccessLog(kafka_bootstrap, topic, "payout:p")
    await run_writer(resumed, 1)

    assert resumed.resumed.how == "head"
    # Its head's entry, then from the checked offset: entry 3 and the 10 records after it.
    assert resumed.resumed.audit_records == 1 + 1 + 10
    assert resumed.head.sequence == third.sequence + own_entries() + 1
    report = await verify(kafka_bootstrap, topic)
    assert report.ok, report.first_break
    assert report.chains["payout:p"] == resumed.head.sequence


async def latest_head(
    bootstrap: str, topic: str, chain: str, checked: int | None = None
) -> audit_pb2.AuditHead | None:
    """The last head of ``chain`` on the heads topic (with ``checked``: only if it says so)."""
    found = None
    async for record in read_records(connection(bootstrap), audit_heads_topic(topic)):
        if record.key == chain.encode() and record.value is not None:
            found = audit_pb2.AuditHead.FromString(record.value)
    if checked is not None and (found is None or found.checked_offset != checked):
        return None
    return found


async def test_the_first_start_after_the_upgrade_scans_once_and_heads_every_chain(
    kafka_bootstrap: str, unique: str
) -> None:
    topic = await audit_topic(kafka_bootstrap, unique)
    old = ["gateway:old", "pot-api:old", "display:gone"]  # written before there were heads
    heads = await produce_chains(kafka_bootstrap, topic, old, HISTORY, {})

    upgraded = AccessLog(kafka_bootstrap, topic, "gateway:old")
    await run_writer(upgraded, 1)

    assert upgraded.resumed.how == "full scan"
    assert upgraded.resumed.heads_records == 0
    assert upgraded.resumed.audit_records == HISTORY  # once, streamed
    assert upgraded.head.sequence == heads["gateway:old"].sequence + own_entries() + 1
    mark = await latest_head(kafka_bootstrap, topic, EVERY_CHAIN)
    assert mark is not None
    assert mark.checked_offset == HISTORY
    for name in old:
        written = await latest_head(kafka_bootstrap, topic, name)
        assert written is not None
        assert written.sequence >= heads[name].sequence, name

    # Another old chain's writer, upgraded later, resumes from the head the scan wrote for it.
    later = AccessLog(kafka_bootstrap, topic, "pot-api:old")
    await run_writer(later, 1)

    assert later.resumed.how == "head"
    since = upgraded.head.sequence - heads["gateway:old"].sequence  # gateway:old's, after the scan
    assert later.resumed.audit_records == 1 + since  # its head's entry, then what came after
    assert later.head.sequence == heads["pot-api:old"].sequence + own_entries() + 1
    report = await verify(kafka_bootstrap, topic)
    assert report.ok, report.first_break
    assert report.chains["gateway:old"] == upgraded.head.sequence
    assert report.chains["pot-api:old"] == later.head.sequence


async def test_the_verifier_still_refuses_a_forked_chain(kafka_bootstrap: str, unique: str) -> None:
    topic = await audit_topic(kafka_bootstrap, unique)
    await produce_chains(kafka_bootstrap, topic, ["gateway:g1"], HISTORY, {})
    writer = await run_writer(AccessLog(kafka_bootstrap, topic, "pot-api:f"), 3)
    assert (await verify(kafka_bootstrap, topic)).ok
    # A writer that lost its head and started the chain again: entry 1 after entry 3.
    restarted = await produce_chains(kafka_bootstrap, topic, ["pot-api:f"], 1, {})
    assert restarted["pot-api:f"].sequence == 1

    report = await verify(kafka_bootstrap, topic)

    assert report.first_break is not None
    assert (report.first_break.chain, report.first_break.sequence) == ("pot-api:f", 1)
    assert report.first_break.position == HISTORY + writer.head.sequence
    assert f"sequence 1 where {writer.head.sequence + 1} was expected" in report.first_break.problem
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap}
    command = [sys.executable, "-m", "jackpot.cli", "audit", "--chain", "--audit-topic", topic]
    cli = await asyncio.to_thread(
        subprocess.run, command, env=env, capture_output=True, text=True, timeout=120
    )
    assert cli.returncode == 1, cli.stdout + cli.stderr
    assert "TAMPERED: chain 'pot-api:f' breaks at entry 1" in cli.stdout
