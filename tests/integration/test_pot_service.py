"""The pot service against a real broker: exactly-once through crashes, takeovers and admin calls.

Every test gets its own topics, consumer group and transactional ids (``PotSettings`` carries the
names). The oracle for "nothing lost, nothing twice" is the same event stream applied by an
in-memory :class:`PotBook`: the ledger in Kafka must equal its ledger entry for entry, every
award must appear exactly once, and ``jackpot audit`` must pass.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import random
import signal
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from pathlib import Path

import grpc
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from loadtest.rounds import (
    CONFIG,
    MIN_BET,
    ROYAL_FLUSH,
    interleaved_rounds,
    simulated_tables,
    table_link,
)

from jackpot.domain.access import Role
from jackpot.domain.cards import Game
from jackpot.domain.engine import PotGroup
from jackpot.platform import codec
from jackpot.platform.authz import AccessSettings
from jackpot.platform.bundles import awards_of, ledger_entries
from jackpot.platform.exactly_once_settings import ExactlyOnceSettings
from jackpot.platform.kafka import KafkaConnection, ensure_topics, idempotent_producer
from jackpot.pot import commands
from jackpot.pot.ledger_audit import GroupAudit
from jackpot.pot.metrics import PotMetrics
from jackpot.pot.partitions import key_partition, topic_partitions
from jackpot.pot.pot_book import InputRecord, PotBook
from jackpot.pot.service import PotService
from jackpot.pot.settings import PotSettings
from jackpot.pot.state_records import locked_round_key, state_key
from jackpot.pot.view import PotStateView
from jackpot.tools import partitions
from jackpot.tools.audit import AuditState, audit
from jackpot.topics import CHANGELOG_OFFSET_KEY
from jackpot.v1 import common_pb2, dead_letter_pb2, pot_pb2, pot_pb2_grpc, table_events_pb2
from tests.integration.in_process import pot_in_process
from tests.polling import eventually

pytestmark = pytest.mark.integration

POKER_GAMES = [Game.CARIBBEAN, Game.DRAW, Game.GO_POKER]
SETTLE_TIMEOUT = 60.0


def pot_settings(
    kafka_bootstrap: str, unique: str, partitions: int = 2, **extra: object
) -> PotSettings:
    """The pot's settings for one test; ``extra`` may name the processor's fields too."""
    processor: dict[str, object] = {
        "consumer_group": f"test-pot-{unique}",
        "transactional_id_prefix": f"test-pot-{unique}",
        "session_timeout_ms": 6_000,
        "heartbeat_ms": 1_000,
        "retry_backoff_ms": 100,
    }
    for name in ExactlyOnceSettings.model_fields:
        if name in extra:
            processor[name] = extra.pop(name)
    values: dict[str, object] = {
        "bootstrap_servers": kafka_bootstrap,
        "processor": processor,
        "table_events_topic": f"test.pot.table-events.{unique}",
        "pot_updates_topic": f"test.pot.updates.{unique}",
        "awards_topic": f"test.pot.awards.{unique}",
        "ledger_topic": f"test.pot.ledger.{unique}",
        "state_topic": f"test.pot.state.{unique}",
        "dead_letter_topic": f"test.pot.dead-letter.{unique}",
        "topic_partitions": partitions,
        "metrics_port": 0,
        "grpc_address": "127.0.0.1:0",
        "log_json": False,
        # Plaintext in tests: every caller is the local operator (jackpot.platform.authz).
        "access": AccessSettings(
            insecure_roles=frozenset({Role.OPERATOR}), audit_topic=f"test.pot.audit.{unique}"
        ),
        **extra,
    }
    return PotSettings(**values)  # type: ignore[arg-type]


def environment(settings: PotSettings) -> dict[str, str]:
    """The JACKPOT_* variables that make `jackpot pot` run with these settings."""
    env = dict(os.environ)
    for name in (
        "consumer_group",
        "transactional_id_prefix",
        "session_timeout_ms",
        "heartbeat_ms",
        "retry_backoff_ms",
    ):
        env[f"JACKPOT_{name.upper()}"] = str(getattr(settings.processor, name))
    for name in (
        "bootstrap_servers",
        "table_events_topic",
        "pot_updates_topic",
        "awards_topic",
        "ledger_topic",
        "state_topic",
        "dead_letter_topic",
        "topic_partitions",
        "metrics_port",
        "grpc_address",
    ):
        env[f"JACKPOT_{name.upper()}"] = str(getattr(settings, name))
    env["JACKPOT_LOG_LEVEL"] = "WARNING"
    env["JACKPOT_INSECURE_ROLES"] = ",".join(r.value for r in settings.access.insecure_roles)
    env["JACKPOT_AUDIT_TOPIC"] = settings.access.audit_topic
    return env


def group_names(count: int, partitions: int) -> list[str]:
    """Pot group ids that land on distinct partitions (when count <= partitions)."""
    names: list[str] = []
    seen: set[int] = set()
    n = 0
    while len(names) < count:
        name = f"group-{n}"
        partition = key_partition(name, partitions)
        if partition not in seen or len(seen) == partitions:
            seen.add(partition)
            names.append(name)
        n += 1
    return names


def scripted_events(
    group_ids: Sequence[str], rounds_per_table: int, seed: int, royal_rate: float = 0.004
) -> list[table_events_pb2.TableEvent]:
    """Create each group, link one table per poker game, then interleaved rounds."""
    rng = random.Random(seed)
    events: list[table_events_pb2.TableEvent] = []
    per_group = []
    for group_id in group_ids:
        tables = simulated_tables(group_id, POKER_GAMES, rng, prefix=f"{group_id}-T")
        for table in tables:
            table.royal_rate = royal_rate
        events.append(commands.create_group(group_id, CONFIG))
        events.extend(table.link_command() for table in tables)
        per_group.append(interleaved_rounds(tables, rounds_per_table, rng))
    # Interleave the groups too, keeping each group's order.
    cursors = [0] * len(per_group)
    while any(cursor < len(stream) for cursor, stream in zip(cursors, per_group, strict=True)):
        index = rng.choice([i for i, s in enumerate(per_group) if cursors[i] < len(s)])
        take = rng.randint(1, 6)
        events.extend(per_group[index][cursors[index] : cursors[index] + take])
        cursors[index] += take
    return events


def oracle(
    events: Iterable[table_events_pb2.TableEvent], partitions: int
) -> tuple[dict[str, list[pot_pb2.LedgerEntry]], list[pot_pb2.Award]]:
    """The ledger and awards an uninterrupted, in-memory run produces."""
    processors: dict[int, PotBook] = {}
    ledger: dict[str, list[pot_pb2.LedgerEntry]] = {}
    awards: list[pot_pb2.Award] = []
    for offset, event in enumerate(events):
        partition = key_partition(event.pot_group_id, partitions)
        processor = processors.setdefault(partition, PotBook(partition))
        out = processor.apply_batch(
            [
                InputRecord(
                    event.SerializeToString(),
                    "oracle",
                    partition,
                    offset,
                    event.pot_group_id.encode(),
                )
            ]
        )
        assert not out.dead_letters, out.dead_letters
        processor.commit(out)
        for entry in out.ledger:
            ledger.setdefault(entry.pot_group_id, []).append(entry)
        awards.extend(out.awards)
    return ledger, awards


def comparable(entry: pot_pb2.LedgerEntry) -> tuple[object, ...]:
    """A ledger entry without the wall-clock time it was recorded at, nor its sequence (the
    service's checkpoints come at heartbeats, whose timing the oracle does not share; the audit
    below checks the sequence runs without gap or repeat)."""
    return (
        entry.entry_id,
        entry.type,
        tuple((t.source, t.target, codec.minor_units(t.amount)) for t in entry.transfers),
        entry.config_version,
        entry.detail_json,
    )


async def produce(settings: PotSettings, events: Iterable[table_events_pb2.TableEvent]) -> None:
    producer = idempotent_producer(settings.bootstrap_servers)
    await producer.start()
    try:
        sent = [
            await producer.send(
                settings.table_events_topic,
                event.SerializeToString(),
                key=event.pot_group_id.encode(),
            )
            for event in events
        ]
        await asyncio.gather(*sent)
    finally:
        await producer.stop()


async def read_topic(settings: PotSettings, topic: str) -> list[bytes]:
    """Every committed value of a topic, in partition order."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=settings.bootstrap_servers,
        isolation_level="read_committed",
        enable_auto_commit=False,
    )
    counts = await topic_partitions(settings.kafka_options(), [topic])
    tps = [TopicPartition(topic, p) for p in range(counts[topic])]
    await consumer.start()
    try:
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        ends = await consumer.end_offsets(tps)
        values: dict[TopicPartition, list[bytes]] = {tp: [] for tp in tps}
        todo = {tp for tp in tps if ends[tp]}
        while todo:
            batch = await consumer.getmany(*todo, timeout_ms=1000)
            for tp, batch_records in batch.items():
                values[tp].extend(r.value for r in batch_records if r.offset < ends[tp])
            for tp in list(todo):
                if await consumer.position(tp) >= ends[tp]:
                    todo.discard(tp)
        return [value for tp in tps for value in values[tp]]
    finally:
        await consumer.stop()


async def processed_fraction(settings: PotSettings) -> float:
    """What the pot committed of the input, over the input's end offsets: per partition the
    further of its consumer group's offset and the resume point its transactions write to the
    state topic (the group's lags that by up to group_commit_interval_ms)."""
    written: dict[int, int] = {}
    async with KafkaConnection.of(settings).reader(settings.state_topic) as states:
        async for record in states.records():
            if record.key == CHANGELOG_OFFSET_KEY and record.value is not None:
                written[record.partition] = int(record.value)
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.bootstrap_servers)
    consumer = AIOKafkaConsumer(bootstrap_servers=settings.bootstrap_servers)
    await admin.start()
    await consumer.start()
    try:
        committed = await admin.list_consumer_group_offsets(settings.processor.consumer_group)
        topic = settings.table_events_topic
        counts = await topic_partitions(settings.kafka_options(), [topic])
        tps = [TopicPartition(topic, p) for p in range(counts[topic])]
        ends = await consumer.end_offsets(tps)
        done = 0
        for tp in tps:
            group = committed[tp].offset if tp in committed else 0
            done += min(max(written.get(tp.partition, 0), group), ends[tp])
        total = sum(ends.values())
        return done / total if total else 1.0
    finally:
        await consumer.stop()
        await admin.close()


async def wait_processed(
    settings: PotSettings, fraction: float = 1.0, log: Path | None = None
) -> None:
    """Poll until the pot's group has committed ``fraction`` of the input (``log``: the pot
    process's stderr, whose end explains a miss)."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while (done := await processed_fraction(settings)) < fraction:
        if time.monotonic() >= deadline:
            tail = (await asyncio.to_thread(log.read_text, errors="replace"))[-4000:] if log else ""
            raise AssertionError(
                f"the pot service processed {done:.3f} of the input, not {fraction:.3f}, "
                f"in {SETTLE_TIMEOUT:.0f} s; its log ends:\n{tail}"
            )
        await asyncio.sleep(0.2)


async def assert_exactly_once(
    settings: PotSettings, events: Sequence[table_events_pb2.TableEvent], partitions: int
) -> list[GroupAudit]:
    """Kafka's ledger equals the oracle's, each award once, and the audit passes."""
    expected_ledger, expected_awards = oracle(events, partitions)
    entries = [  # a studio round's prizes in bundles (platform.bundles), each entry as written
        entry
        for value in await read_topic(settings, settings.ledger_topic)
        for entry, _ in ledger_entries(value)
    ]
    by_group: dict[str, list[pot_pb2.LedgerEntry]] = {}
    checkpoints: Counter[str] = Counter()
    for entry in entries:
        if entry.type == pot_pb2.LEDGER_ENTRY_TYPE_CHECKPOINT:
            checkpoints[entry.pot_group_id] += 1
        else:
            by_group.setdefault(entry.pot_group_id, []).append(entry)
    assert set(by_group) == set(expected_ledger)
    assert set(checkpoints) == set(expected_ledger), "every group is checkpointed"
    for group_id, expected_all in expected_ledger.items():
        expected = [e for e in expected_all if e.type != pot_pb2.LEDGER_ENTRY_TYPE_CHECKPOINT]
        got = by_group[group_id]
        assert len(got) == len(expected), (
            f"{group_id}: {len(got)} entries, expected {len(expected)}"
        )
        assert [comparable(e) for e in got] == [comparable(e) for e in expected]

    awards = [
        award for v in await read_topic(settings, settings.awards_topic) for award in awards_of(v)
    ]
    counts = Counter(a.award_id for a in awards)
    assert all(n == 1 for n in counts.values()), [a for a, n in counts.items() if n > 1]
    assert sorted((a.award_id, a.amount) for a in awards) == sorted(
        (a.award_id, a.amount) for a in expected_awards
    )
    assert expected_awards, "the script should produce prizes"

    updates: dict[str, list[int]] = {}
    for value in await read_topic(settings, settings.pot_updates_topic):
        update = pot_pb2.PotUpdate.FromString(value)
        updates.setdefault(update.pot_group_id, []).append(update.update_sequence)
    for group_id, sequences in updates.items():
        # Heartbeats included, across restarts and takeovers: 1, 2, 3... (PotUpdate contract).
        assert sequences == list(range(1, len(sequences) + 1)), group_id

    done = await audit(settings.kafka_options(), settings.ledger_topic, settings.pot_updates_topic)
    groups = done.groups
    assert [g.group_id for g in groups] == sorted(expected_ledger)
    for group in groups:
        assert group.problems == [], group.problems
    return groups


@contextlib.asynccontextmanager
async def running(service: PotService) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(service.run())
    try:
        yield task
    finally:
        await service.stop()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, 30)


async def stopped_abruptly(
    settings: PotSettings, rng: random.Random, stops: int, between: tuple[float, float]
) -> None:
    """The pot run and cancelled ``stops`` times, each once it processed a random fraction of
    the input ``between`` those: whatever transaction is open stays open until fenced."""
    for stop_at in sorted(rng.uniform(*between) for _ in range(stops)):
        service = PotService(settings, PotMetrics())
        task = asyncio.create_task(service.run())
        await wait_processed(settings, stop_at)
        await asyncio.sleep(rng.uniform(0, 0.05))
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def create_topics(settings: PotSettings) -> None:
    await ensure_topics(settings.bootstrap_servers, settings.topic_specs())


async def until(condition: Callable[[], Awaitable[bool]], what: str) -> None:
    await eventually(condition, what, SETTLE_TIMEOUT, step=0.1)


# ------------------------------------------------------------------------------- tests


async def test_rounds_of_several_games_into_one_group_audit_cleanly(
    kafka_bootstrap: str, unique: str
) -> None:
    settings = pot_settings(kafka_bootstrap, unique, partitions=2)
    await create_topics(settings)
    events = scripted_events(["scl-main"], rounds_per_table=120, seed=1)
    await produce(settings, events)
    stray = commands.table_event(
        "nowhere", "T9", "R1", 1, common_pb2.GAME_DRAW, round_locked=commands.locked({1: 1000})
    )
    await produce(settings, [stray, events[-1]])  # an unknown group, and a duplicate
    producer = idempotent_producer(settings.bootstrap_servers)
    await producer.start()
    await producer.send_and_wait(settings.table_events_topic, b"\x00garbage", key=b"scl-main")
    await producer.stop()
    metrics = PotMetrics()
    service = PotService(settings, metrics)
    sample = metrics.registry.get_sample_value
    async with running(service):
        await wait_processed(settings)
        assert service.owned_groups() == ["scl-main"]
        balance = sample(  # a one-level group: no level (rule L4)
            "jackpot_pot_balance_pesos", {"pot_group": "scl-main", "pot": "main", "level": ""}
        )
        partition = str(key_partition("scl-main", 2))

        async def caught_up() -> bool:
            return sample("jackpot_consumer_lag_records", {"partition": partition}) == 0

        await until(caught_up, "the consumer lag gauge never reached 0")
    groups = await assert_exactly_once(settings, events, partitions=2)
    (group,) = groups
    assert group.collected > 0
    assert sum(group.hits.values()) > 0
    assert group.update is not None

    letters = [
        dead_letter_pb2.DeadLetter.FromString(v)
        for v in await read_topic(settings, settings.dead_letter_topic)
    ]
    reasons = sorted(common_pb2.RejectReason.Name(letter.reason) for letter in letters)
    assert reasons == ["REJECT_REASON_MALFORMED", "REJECT_REASON_UNKNOWN_POT_GROUP"]
    assert sample("jackpot_events_applied_total") == len(events)
    assert sample("jackpot_events_ignored_total", {"reason": "DUPLICATE_SEQUENCE"}) == 1
    assert sample("jackpot_events_rejected_total", {"reason": "MALFORMED"}) == 1
    assert sample("jackpot_events_rejected_total", {"reason": "UNKNOWN_POT_GROUP"}) == 1
    assert (sample("jackpot_transaction_seconds_count", {"kind": "batch"}) or 0) >= 1
    assert balance == group.update.sign_value


async def test_service_cancelled_mid_stream_and_restarted_loses_and_repeats_nothing(
    kafka_bootstrap: str, unique: str
) -> None:
    settings = pot_settings(kafka_bootstrap, unique, partitions=2, max_batch_records=16)
    await create_topics(settings)
    events = scripted_events(group_names(2, 2), rounds_per_table=150, seed=2)
    await produce(settings, events)
    await stopped_abruptly(settings, random.Random(unique), stops=3, between=(0.1, 0.9))
    async with running(PotService(settings, PotMetrics())):
        await wait_processed(settings)
    await assert_exactly_once(settings, events, partitions=2)


def with_studio_rounds(
    events: list[table_events_pb2.TableEvent], group_id: str, seed: int, bets: int = 1_500
) -> tuple[list[table_events_pb2.TableEvent], list[int]]:
    """``events`` (one group's land rounds) with a studio table of ``bets`` players linked to
    the group and its rounds woven in, every other one a shared royal flush (O4); the new
    stream, and the offsets of the studio rounds' locks and results in it."""
    rng = random.Random(seed)
    link = table_link("S1", site="studio", studio_seats=bets)
    woven = [*events[:4], commands.link_table(group_id, link)]
    costly: list[int] = []
    land = events[4:]
    step = len(land) // 6
    cursor = 0
    for number in range(6):
        end, half = cursor + step, cursor + step // 2
        between = half + rng.randint(0, 3)  # land records between the lock and the result
        woven.extend(land[cursor:half])
        for sequence, payload, after in (
            (2 * number + 1, {"round_locked": commands.locked(dict.fromkeys(
                range(1, bets + 1), MIN_BET))}, land[half:between]),
            (2 * number + 2, {"round_result": table_events_pb2.RoundResult(
                shared_hand=STUDIO_HANDS[number % 2])}, land[between:end]),
        ):  # fmt: skip
            costly.append(len(woven))
            woven.append(
                commands.table_event(
                    group_id, "S1", f"S-{number}", sequence, common_pb2.GAME_CARIBBEAN, **payload
                )
            )
            woven.extend(after)
        cursor = end
    woven.extend(land[cursor:])
    return woven, costly


# a shared royal flush (every bet shares the top prize, O4), and a hand that wins nothing
STUDIO_HANDS = (list(ROYAL_FLUSH), ["2S", "7D", "9H", "JC", "KD"])


async def changelog(settings: PotSettings, partition: int) -> list[tuple[bytes, bytes | None]]:
    """Every committed record of a partition of the pot's changelog (the state topic), key and
    value, in order, read before any compaction."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=settings.bootstrap_servers, isolation_level="read_committed"
    )
    tp = TopicPartition(settings.state_topic, partition)
    await consumer.start()
    try:
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        end = (await consumer.end_offsets([tp]))[tp]
        written: list[tuple[bytes, bytes | None]] = []
        while await consumer.position(tp) < end:
            for records in (await consumer.getmany(tp, timeout_ms=1000)).values():
                written += [(r.key, r.value) for r in records if r.key is not None]
        return written
    finally:
        await consumer.stop()


async def resume_offsets(settings: PotSettings, partition: int) -> set[int]:
    """Where each committed transaction of a partition left its input: the resume records
    the pot wrote on its changelog."""
    records = await changelog(settings, partition)
    return {int(value) for key, value in records if key == CHANGELOG_OFFSET_KEY and value}


async def test_a_studio_rounds_lock_and_result_each_start_a_transaction_through_restarts(
    kafka_bootstrap: str, unique: str
) -> None:
    """Issue 39 item 6 (pot.transaction_cut): a lock or result of a round of 1,500 bets fetched
    after land records starts a transaction, so those commit without waiting for it; the
    processor gives what the book left to the next transaction. Through two abrupt stops,
    nothing is lost or applied twice (the ledger and the awards are an uninterrupted in-memory
    run's), and every committed transaction ends before each studio lock and result: the
    input is all in the topic before the pot starts, so its fetches hold hundreds of records
    and only the cut ends a transaction there."""
    settings = pot_settings(kafka_bootstrap, unique, partitions=1)
    await create_topics(settings)
    land = scripted_events(["cut-main"], rounds_per_table=60, seed=5)
    events, costly = with_studio_rounds(land, "cut-main", seed=5)
    await produce(settings, events)
    await stopped_abruptly(settings, random.Random(unique), stops=2, between=(0.2, 0.8))
    async with running(PotService(settings, PotMetrics())):
        await wait_processed(settings)
    groups = await assert_exactly_once(settings, events, partitions=1)
    assert groups[0].hits, "the studio's royal flushes were paid"
    ends = await resume_offsets(settings, 0)
    assert set(costly) <= ends, sorted(set(costly) - ends)
    assert len(ends) < len(events) / 4, "the land records still share transactions"


async def test_a_studio_round_locked_across_a_restart_is_restored_from_its_record_apart(
    kafka_bootstrap: str, unique: str
) -> None:
    """Issue 39 item 6 (pot.state_records): while a studio round of 1,500 bets is locked, its
    players deciding, the land tables' transactions write the group's snapshot without its bets
    and players: those are on a record of their own, written once. The pot stopped abruptly
    then takes the group back whole from both (its takeover check against the ledger passes,
    nothing repaired, R14); the round's folds and shared royal flush settle it as if the pot
    never stopped, and its record is tombstoned."""
    settings = pot_settings(kafka_bootstrap, unique, partitions=1)
    await create_topics(settings)
    group = "apart-main"
    land = scripted_events([group], rounds_per_table=60, seed=9)
    bets = dict.fromkeys(range(1, 1_501), MIN_BET)
    link = commands.link_table(group, table_link("S1", site="studio", studio_seats=len(bets)))

    def studio(sequence: int, **payload: object) -> table_events_pb2.TableEvent:
        caribbean = common_pb2.GAME_CARIBBEAN
        return commands.table_event(group, "S1", "S-1", sequence, caribbean, **payload)

    half = len(land) // 2
    fold = table_events_pb2.SeatForfeited(seat=3, reason=table_events_pb2.FORFEIT_REASON_FOLD)
    deciding = [
        *land[:4], link, *land[4:half], studio(1, round_locked=commands.locked(bets)),
        *land[half:-40], studio(2, seat_forfeited=fold),
    ]  # fmt: skip
    await produce(settings, deciding)
    await stopped_abruptly(settings, random.Random(unique), stops=1, between=(0.9, 1.0))
    await stopped_abruptly(settings, random.Random(unique), stops=1, between=(1.0, 1.0))
    written = await changelog(settings, 0)
    key = locked_round_key(group, "S1")
    apart = [i for i, (k, v) in enumerate(written) if k == key]
    assert apart, "the locked round was written apart"
    assert all(written[i][1] is not None for i in apart)  # not settled yet: no tombstone
    records = {pot_pb2.LockedRoundState.FromString(written[i][1] or b"").round_id for i in apart}
    assert records == {"S-1"}
    after = [v for k, v in written[apart[0] + 1 :] if k == state_key(group) and v]
    assert after, "the land tables' transactions after the lock wrote the group's snapshot"
    for value in after:  # a few kilobytes each, the round named, its bets not in them
        engine = json.loads(pot_pb2.PotGroupState.FromString(value).engine_snapshot)
        assert engine["locked"]["S1"]["apart"] is True
        assert "bets" not in engine["locked"]["S1"]
        assert len(value) < 20_000, len(value)
    found = await viewed(settings, group)  # the pot API's (GetPotGroup, the studio's shares)
    locked = found.locked["S1"]
    assert (len(locked.bets), locked.forfeited) == (len(bets), {3: "FOLD"})
    result = table_events_pb2.RoundResult(shared_hand=list(ROYAL_FLUSH))
    settled = [*land[-40:], studio(3, round_result=result)]
    await produce(settings, settled)
    metrics = PotMetrics()
    async with running(PotService(settings, metrics)):
        await wait_processed(settings)
    assert not metrics.registry.get_sample_value(
        "jackpot_pot_states_repaired_total", {"pot_group": group}
    )
    groups = await assert_exactly_once(settings, [*deciding, *settled], partitions=1)
    assert groups[0].hits, "the studio's royal flush was paid"
    last = [v for k, v in await changelog(settings, 0) if k == key][-1]
    assert last is None, "the settled round's record is tombstoned"
    assert "S1" not in (await viewed(settings, group)).locked


async def viewed(settings: PotSettings, group_id: str) -> PotGroup:
    """The group as the pot's API reads it: its state topic followed by a pot view."""
    view = PotStateView(settings)
    await view.start()
    try:
        found = view.group(group_id)
        known = view.group_ids()
    finally:
        await view.stop()
    assert found is not None, known
    return found[1]


async def test_a_takeover_reads_the_ledger_since_the_last_checkpoints_not_its_history(
    kafka_bootstrap: str, unique: str
) -> None:
    """Issue 23, R14: the successor checks each group from its last checkpoint; what it reads
    is bounded by the checkpoint interval, whatever the ledger's length, and nothing is lost."""
    every = 60
    settings = pot_settings(
        kafka_bootstrap,
        unique,
        partitions=2,
        max_batch_records=16,
        checkpoint_interval_entries=every,
        checkpoint_seek_margin_ms=0,  # the whole history here is seconds old
    )
    await create_topics(settings)
    groups = group_names(2, 2)
    events = scripted_events(groups, rounds_per_table=200, seed=7)
    await produce(settings, events)
    async with running(PotService(settings, PotMetrics())):
        await wait_processed(settings)
    ledger = [
        pot_pb2.LedgerEntry.FromString(v) for v in await read_topic(settings, settings.ledger_topic)
    ]
    metrics = PotMetrics()
    successor = PotService(settings, metrics)
    async with running(successor):
        await eventually(
            lambda: len(successor.owned_partitions) == 2, "both partitions owned", SETTLE_TIMEOUT
        )
        read = {
            p: metrics.registry.get_sample_value(
                "jackpot_pot_takeover_ledger_entries", {"partition": str(p)}
            )
            or 0
            for p in (0, 1)
        }
    per_group = Counter(e.pot_group_id for e in ledger)
    assert min(per_group.values()) > 5 * every, "the ledger should be several intervals long"
    for partition, entries in read.items():
        groups_here = {g for g in groups if key_partition(g, 2) == partition}
        history = sum(per_group[g] for g in groups_here)
        assert 0 < entries <= len(groups_here) * (every + 10), (partition, entries, history)
        assert entries < history / 3, (partition, entries, history)
    await assert_exactly_once(settings, events, partitions=2)


async def test_an_incremental_audit_reads_only_what_follows_its_saved_state(
    kafka_bootstrap: str, unique: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 23: `jackpot audit --state FILE` goes on from the last clean audit; its verdict and
    figures equal a full audit's, and a tampered saved state is refused by the entries after; two
    processes reading the partitions side by side (``--jobs 2``) give the same books."""
    settings = pot_settings(kafka_bootstrap, unique, partitions=2, max_batch_records=16)
    await create_topics(settings)
    events = scripted_events(group_names(2, 2), rounds_per_table=60, seed=8)
    half = len(events) // 2
    monkeypatch.setattr(partitions, "RECORDS_PER_PROCESS", 1)  # side by side even when small
    state_file = tmp_path / "audit-state.json"
    topics = (settings.kafka_options(), settings.ledger_topic, settings.pot_updates_topic)
    async with running(PotService(settings, PotMetrics())):
        await produce(settings, events[:half])
        await wait_processed(settings)
        state = AuditState.load(state_file, settings.ledger_topic)
        first = (await audit(*topics, state=state)).groups
        assert all(not g.problems for g in first)
        state.save(state_file)
        await produce(settings, events[half:])
        await wait_processed(settings)
        resumed_state = AuditState.load(state_file, settings.ledger_topic)
        before = sum(g.entries for g in resumed_state.groups.values())
        resumed = (await audit(*topics, state=resumed_state, jobs=2)).groups
        full = (await audit(*topics)).groups
        side_by_side = await audit(*topics, jobs=2)
    assert side_by_side.processes == 2
    assert side_by_side.workers_rss_mb > 0  # it did run in worker processes
    assert [g.figures() for g in side_by_side.groups] == [g.figures() for g in full]
    assert [g.chain for g in side_by_side.groups] == [g.chain for g in full]
    assert side_by_side.records == sum(g.entries for g in full)
    assert [g.problems for g in resumed] == [[] for _ in full]
    assert [g.figures() for g in resumed] == [g.figures() for g in full]
    assert [g.chain for g in resumed] == [g.chain for g in full]
    assert sum(g.entries for g in resumed) == sum(g.entries for g in full)
    assert 0 < before < sum(g.entries for g in full)
    tampered = json.loads(state_file.read_text())
    group = sorted(tampered["groups"])[0]
    tampered["groups"][group]["accounts"]["commission"] += 1  # one picopeso
    state_file.write_text(json.dumps(tampered))
    state = AuditState.load(state_file, settings.ledger_topic)
    refused = (await audit(*topics, state=state, jobs=2)).groups
    problems = next(g.problems for g in refused if g.group_id == group)
    assert any("checkpoint" in p or "M2" in p for p in problems), problems


async def test_two_instances_share_partitions_and_one_takes_over_from_the_other(
    kafka_bootstrap: str, unique: str
) -> None:
    partitions = 4
    settings = pot_settings(kafka_bootstrap, unique, partitions=partitions, max_batch_records=16)
    await create_topics(settings)
    groups = group_names(4, partitions)
    events = scripted_events(groups, rounds_per_table=80, seed=3)
    half = len(events) // 2
    first = PotService(pot_settings(kafka_bootstrap, unique, partitions, instance_id="a"))
    second = PotService(pot_settings(kafka_bootstrap, unique, partitions, instance_id="b"))
    async with running(first), running(second) as second_task:
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while not (
            first.owned_partitions
            and second.owned_partitions
            and len(first.owned_partitions) + len(second.owned_partitions) == partitions
        ):
            assert time.monotonic() < deadline, "the two instances never shared the partitions"
            await asyncio.sleep(0.1)
        await produce(settings, events[:half])
        await wait_processed(settings, 0.5)
        taken_from_second = set(second.owned_groups())
        assert taken_from_second
        # Stop the second instance while the rest of the stream is being published.
        rest = asyncio.create_task(produce(settings, events[half:]))
        await second.stop()
        await second_task
        await rest
        while first.owned_partitions != list(range(partitions)):
            assert time.monotonic() < deadline, "the first instance never took over"
            await asyncio.sleep(0.1)
        await wait_processed(settings)
        assert taken_from_second <= set(first.owned_groups())
    await assert_exactly_once(settings, events, partitions=partitions)


NO_PRIZE = ["2C", "7D", "9S", "JC", "4H"]


class ScriptedTable:
    """One Caribbean table's rounds, numbered in sequence, with chosen hands."""

    def __init__(self, group_id: str, table_id: str) -> None:
        self.group_id = group_id
        self.table_id = table_id
        self.sequence = 0
        self.rounds = 0

    def round(
        self, bets: dict[int, int], hands: dict[int, list[str]]
    ) -> list[table_events_pb2.TableEvent]:
        self.rounds += 1
        round_id = f"R{self.rounds}"
        events = []
        for payload in (
            {"round_locked": commands.locked(bets)},
            {"round_result": commands.result(hands)},
        ):
            self.sequence += 1
            events.append(
                commands.table_event(
                    self.group_id,
                    self.table_id,
                    round_id,
                    self.sequence,
                    common_pb2.GAME_CARIBBEAN,
                    **payload,
                )
            )
        return events


async def test_config_change_takes_effect_only_at_the_next_reset_through_the_api(
    kafka_bootstrap: str, unique: str
) -> None:
    settings = pot_settings(kafka_bootstrap, unique, partitions=1)
    server = pot_in_process(settings)
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}")
    stub = pot_pb2_grpc.PotServiceStub(channel)  # type: ignore[no-untyped-call]
    watched: list[pot_pb2.PotUpdate] = []

    async def watch() -> None:
        request = pot_pb2.WatchPotGroupsRequest(pot_group_ids=["scl"], include_heartbeats=True)
        async for response in stub.WatchPotGroups(request):
            watched.append(response.update)

    watcher = asyncio.create_task(watch())
    try:
        admin = pot_pb2.AdminContext(requested_by="ana", reason="opening")
        created = await stub.CreatePotGroup(
            pot_pb2.CreatePotGroupRequest(
                pot_group_id="scl", config_json=json.dumps(CONFIG), admin=admin
            )
        )
        assert created.pot_group.sign_value == 500_000
        assert created.pot_group.config_version == 1
        with pytest.raises(grpc.aio.AioRpcError) as exists:
            await stub.CreatePotGroup(
                pot_pb2.CreatePotGroupRequest(
                    pot_group_id="scl", config_json=json.dumps(CONFIG), admin=admin
                )
            )
        assert exists.value.code() == grpc.StatusCode.ALREADY_EXISTS
        table = table_events_pb2.LinkTable(
            table_id="T1",
            game=common_pb2.GAME_CARIBBEAN,
            site="SCL",
            min_bet=1000,
            max_bet=5000,
            credit_value=1000,
        )
        mismatched = table_events_pb2.LinkTable()
        mismatched.CopyFrom(table)
        mismatched.table_id, mismatched.max_bet = "T2", 10_000
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.LinkTable(
                pot_pb2.LinkTableRequest(pot_group_id="scl", table=mismatched, admin=admin)
            )
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "E1" in (refused.value.details() or "")
        linked = await stub.LinkTable(
            pot_pb2.LinkTableRequest(pot_group_id="scl", table=table, admin=admin)
        )
        assert [t.table_id for t in linked.pot_group.tables] == ["T1"]

        t1 = ScriptedTable("scl", "T1")
        await produce(settings, t1.round({1: 1000}, {1: NO_PRIZE}))
        v2 = {**CONFIG, "version": 2, "commission_percent": "20", "base": 800_000}
        with pytest.raises(grpc.aio.AioRpcError) as no_reason:
            await stub.UpdateConfig(
                pot_pb2.UpdateConfigRequest(
                    pot_group_id="scl",
                    config_json=json.dumps(v2),
                    admin=pot_pb2.AdminContext(requested_by="ana"),
                )
            )
        assert no_reason.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        proposed = await stub.UpdateConfig(
            pot_pb2.UpdateConfigRequest(
                pot_group_id="scl",
                config_json=json.dumps(v2),
                admin=pot_pb2.AdminContext(
                    requested_by="ana", reason="plan 2027 approved", request_id=f"v2-{unique}"
                ),
            )
        )
        assert proposed.pot_group.config_version == 1
        assert [(p.version, p.changed_by) for p in proposed.pot_group.pending_configs] == [
            (2, "ana")
        ]
        # The same request id again is the same command: applied once, answered at once.
        again = await stub.UpdateConfig(
            pot_pb2.UpdateConfigRequest(
                pot_group_id="scl",
                config_json=json.dumps(v2),
                admin=pot_pb2.AdminContext(
                    requested_by="ana", reason="plan 2027 approved", request_id=f"v2-{unique}"
                ),
            )
        )
        assert again.command_event_id == proposed.command_event_id

        # Play on without a reset: still version 1 (12.5 % commission).
        await produce(settings, t1.round({1: 2000}, {1: NO_PRIZE}))
        # A royal flush pays 100 % of the main pot: a reset, version 2 takes effect (C7).
        await produce(settings, t1.round({2: 1000}, {2: list(ROYAL_FLUSH)}))
        await produce(settings, t1.round({3: 4000}, {3: NO_PRIZE}))
        await wait_processed(settings)

        async def get_group() -> pot_pb2.PotGroup:
            request = pot_pb2.GetPotGroupRequest(pot_group_id="scl")
            response: pot_pb2.GetPotGroupResponse = await stub.GetPotGroup(request)
            return response.pot_group

        async def settled() -> bool:
            return (await get_group()).ledger_sequence >= 14

        await until(settled, "the rounds were never applied")
        group = await get_group()
        assert group.config_version == 2
        assert not group.pending_configs

        entries: list[pot_pb2.LedgerEntry] = []
        token = ""
        while True:
            page = await stub.ListLedger(
                pot_pb2.ListLedgerRequest(pot_group_id="scl", page_size=5, page_token=token)
            )
            entries.extend(page.entries)
            token = page.next_page_token
            if not token:
                break
        assert [e.ledger_sequence for e in entries] == list(range(1, len(entries) + 1))
        collected = [e for e in entries if e.type == pot_pb2.LEDGER_ENTRY_TYPE_BETS_COLLECTED]
        commission = [
            next(codec.minor_units(t.amount) for t in e.transfers if t.target == "commission")
            for e in collected
        ]
        pesos = codec.minor_units(common_pb2.ExactAmount(numerator=1, denominator=1))
        assert [c // pesos for c in commission] == [125, 250, 125, 800]  # 12.5 % x3, then 20 %
        assert [e.config_version for e in collected] == [1, 1, 1, 2]
        activated = [e for e in entries if e.type == pot_pb2.LEDGER_ENTRY_TYPE_CONFIG_ACTIVATED]
        assert [e.round_id for e in activated] == ["R3"]
        proposal = next(e for e in entries if e.type == pot_pb2.LEDGER_ENTRY_TYPE_CONFIG_PROPOSED)
        assert (proposal.changed_by, proposal.reason) == ("ana", "plan 2027 approved")

        meters = (await stub.GetMeters(pot_pb2.GetMetersRequest(pot_group_id="scl"))).meters
        royal = next(p for p in meters.prizes if p.prize == "ROYAL_FLUSH")
        assert royal.hits == 1
        assert [a.prize for a in meters.last_awards] == ["ROYAL_FLUSH"]
        listed = await stub.ListPotGroups(pot_pb2.ListPotGroupsRequest())
        assert [g.pot_group_id for g in listed.pot_groups] == ["scl"]

        # Idle now: a heartbeat at least once per second (D5). Watch until the heartbeats since
        # now span 2 s (or fail at the deadline if they stop), then check every gap.
        idle_from = len(watched)

        def seconds(updates: list[pot_pb2.PotUpdate]) -> list[float]:
            return [u.produced_at.ToNanoseconds() / 1e9 for u in updates]

        async def two_seconds_of_beats() -> bool:
            beats = seconds([u for u in watched[idle_from:] if u.heartbeat])
            return len(beats) >= 3 and beats[-1] - beats[0] >= 2.0

        await until(two_seconds_of_beats, "fewer than 2 s of heartbeats while idle")
        times = seconds(watched[idle_from:])
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError, grpc.aio.AioRpcError):
            await watcher
        await channel.close()
        await server.stop()
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert len(gaps) >= 2
    assert max(gaps) < 1.0, gaps
    sequences = [u.update_sequence for u in watched]
    assert sequences == sorted(set(sequences))
    done = await audit(settings.kafka_options(), settings.ledger_topic, settings.pot_updates_topic)
    (audited,) = done.groups
    assert audited.problems == []


async def test_kill_9_of_the_pot_process_at_random_points_loses_and_repeats_nothing(
    kafka_bootstrap: str, unique: str, tmp_path: Path
) -> None:
    settings = pot_settings(kafka_bootstrap, unique, partitions=2, max_batch_records=16)
    await create_topics(settings)
    events = scripted_events(group_names(2, 2), rounds_per_table=320, seed=5)
    await produce(settings, events)
    env = environment(settings)
    env["JACKPOT_MAX_BATCH_RECORDS"] = "16"
    env["JACKPOT_LOG_LEVEL"] = "INFO"  # a run that stalls shows its takeover steps
    # A join waits at most this for members to rejoin (the rebalance timeout): a killed member
    # leaves at its session timeout (6 s), and no restart may wait out the default 60 s.
    env["JACKPOT_MAX_POLL_INTERVAL_MS"] = "20000"
    rng = random.Random(unique)
    command = [sys.executable, "-m", "jackpot.cli", "pot"]
    for run in range(3):
        # Kill once this run has processed some more, at a random point of a batch.
        stop_at = min(0.9, await processed_fraction(settings) + rng.uniform(0.08, 0.2))
        log = tmp_path / f"pot-{run}.log"
        with log.open("wb") as sink:
            process = await asyncio.create_subprocess_exec(*command, env=env, stderr=sink)
        try:
            await wait_processed(settings, stop_at, log)
            await asyncio.sleep(rng.uniform(0, 0.1))
            assert process.returncode is None, "the pot process died on its own"
        finally:
            process.send_signal(signal.SIGKILL)
            await process.wait()
    log = tmp_path / "pot-last.log"
    with log.open("wb") as sink:
        process = await asyncio.create_subprocess_exec(*command, env=env, stderr=sink)
    try:
        await wait_processed(settings, 1.0, log)
        # the last kill may have come after the end of the input: stop it once it runs
        await eventually(
            lambda: "partitions_assigned" in log.read_text(errors="replace"),
            "the last pot process never took its partitions",
            within=60,
        )
    finally:
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), 30) == 0
    audited = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "jackpot.cli",
        "audit",
        "--bootstrap-servers",
        settings.bootstrap_servers,
        "--ledger-topic",
        settings.ledger_topic,
        "--pot-updates-topic",
        settings.pot_updates_topic,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await audited.communicate()
    report = stdout.decode() + stderr.decode()
    assert audited.returncode == 0, report
    assert "2 pot groups audited, 0 with mismatches" in report
    await assert_exactly_once(settings, events, partitions=2)


class StallingPotService(PotService):
    """A pot service whose next commit can be held, to make it a zombie mid-transaction."""

    def __init__(self, settings: PotSettings) -> None:
        super().__init__(settings, PotMetrics())
        self.hold_next_commit = False
        self.holding = asyncio.Event()
        self.release = asyncio.Event()
        self.fenced: list[BaseException] = []
        fencing_producer = self.processor.fencing_producer

        async def stalling_producer(partition: int):  # type: ignore[no-untyped-def]
            producer = await fencing_producer(partition)
            commit = producer.commit_transaction

            async def held_commit() -> None:
                if self.hold_next_commit:
                    self.hold_next_commit = False
                    self.holding.set()
                    await self.release.wait()
                try:
                    await commit()
                except Exception as error:
                    self.fenced.append(error)
                    raise

            producer.commit_transaction = held_commit
            return producer

        self.processor.fencing_producer = stalling_producer  # type: ignore[method-assign]


async def test_a_zombie_mid_transaction_is_fenced_by_its_successor(
    kafka_bootstrap: str, unique: str
) -> None:
    settings = pot_settings(
        kafka_bootstrap, unique, partitions=1, max_batch_records=16, max_poll_interval_ms=3_000
    )
    await create_topics(settings)
    events = scripted_events(["zombie-group"], rounds_per_table=60, seed=6)
    half = len(events) // 2
    await produce(settings, events[:half])
    zombie = StallingPotService(settings.replace(processor={"instance_id": "zombie"}))
    successor = PotService(settings.replace(processor={"instance_id": "successor"}), PotMetrics())
    async with running(zombie):
        await wait_processed(settings, 0.9)
        zombie.hold_next_commit = True
        await produce(settings, events[half:])
        await asyncio.wait_for(zombie.holding.wait(), SETTLE_TIMEOUT)
        # The zombie sits in an open transaction with records sent; it stops polling, leaves
        # the group after max_poll_interval_ms, and the successor takes the partition over.
        async with running(successor):
            await until(
                lambda: asyncio.sleep(0, successor.owned_partitions == [0]),
                "the successor never got the partition",
            )
            await wait_processed(settings)
            zombie.release.set()
            await until(
                lambda: asyncio.sleep(0, bool(zombie.fenced)), "the zombie was never fenced"
            )
    assert [type(e).__name__ for e in zombie.fenced] == ["ProducerFenced"]
    await assert_exactly_once(settings, events, partitions=1)
