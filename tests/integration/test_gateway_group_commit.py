"""Group commit under kill -9: a gateway process killed while its spool writer is mid-batch.

Eight table controllers hammer one real gateway process (real Kafka behind it) so that its spool
writer is always committing a group of several tables' events; the process is killed with SIGKILL
at a random moment (seeded: ``SEED``, or ``JACKPOT_TEST_SEED``; a failure names it), three times,
on the same spool. Each kill must land as the fault it is meant to be: it is what ended the
process (SIGKILL, not an exit of its own before it), and devices were owed replies at that
moment (events sent and not answered: the spool writer had a group to commit). After each kill
the spool, opened as the next start would open it, must hold for every table exactly what its
device was told, and nothing it was not: the last event the device heard "accepted" for, or
(when a reply was still owed) that event's successor the device had sent; never anything later,
never anything earlier (an accepted event is durable, and nothing the device did not send is on
disk).

And every table event the spool ever stored is delivered: after the kills it is on the topic or
still in the outbox (a deletion of what the broker acknowledged, queued or riding in a later
transaction, never takes a record the broker had not acknowledged).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from loadtest.free_ports import free_port

from jackpot.domain.cards import Game
from jackpot.gateway.spool import Spool
from jackpot.v1 import device_pb2, table_events_pb2
from tests.integration.gateway_harness import (
    CREDENTIAL,
    Device,
    create_topics,
    read_topic,
    settings_for,
    wait_health,
)
from tests.polling import eventually

pytestmark = pytest.mark.integration

TABLES = [f"CAR-{n}" for n in range(1, 9)]
KILLS = 3
SEED = int(os.environ.get("JACKPOT_TEST_SEED", "24"))  # the kills' moments


@dataclass
class Told:
    """What one device knows: the last sequence accepted, and the one still awaiting a reply."""

    accepted: int = 0
    in_flight: int | None = None
    accepted_count: int = 0


def undelivered(published: dict[str, int], delivered: dict[str, set[int]]) -> dict[str, object]:
    """Each table's event sequences stored (1..published) that were not delivered, and any
    delivered that were never stored; empty when the two match."""
    wrong: dict[str, object] = {}
    for table in published.keys() | delivered.keys():
        stored = set(range(1, published.get(table, 0) + 1))
        got = delivered.get(table, set())
        if stored != got:
            wrong[table] = {"missing": sorted(stored - got), "never stored": sorted(got - stored)}
    return wrong


def test_the_delivery_judge_names_a_missing_event_and_one_never_stored() -> None:
    assert undelivered({"T": 3}, {"T": {1, 2, 3}}) == {}
    assert undelivered({"T": 3}, {"T": {1, 3}}) == {"T": {"missing": [2], "never stored": []}}
    assert undelivered({"T": 1}, {"T": {1, 2}}) == {"T": {"missing": [], "never stored": [2]}}


async def delivered_events(bootstrap: str, topic: str, spool_path: str) -> dict[str, object]:
    """What :func:`undelivered` finds between the spool (its tables' ``published`` and its
    outbox) and the topic."""
    spool = Spool(spool_path)
    try:
        published = {t: int(s["published"]) for t, s in spool.table_states().items()}
        outbox = [r.value for r in spool.pending(limit=10**6) if r.topic == topic]
    finally:
        spool.close()
    sent = [record.value for record in await read_topic(bootstrap, topic)]
    delivered: dict[str, set[int]] = {}
    for value in [*sent, *outbox]:
        published_event = table_events_pb2.TableEvent.FromString(value)
        delivered.setdefault(published_event.table_id, set()).add(published_event.sequence)
    assert sum(published.values()) > 0, "no table event was stored: the check saw nothing"
    return undelivered(published, delivered)


ROUND = [
    ("round_opened", device_pb2.RoundOpened()),
    ("dealer_lock", device_pb2.DealerLock()),
    ("hand_results", device_pb2.HandResults()),
]
VOID = ("round_void", device_pb2.RoundVoid(reason="resync"))
RESULTS = ("hand_results", device_pb2.HandResults())


async def play(device: Device, told: Told) -> None:
    """Rounds without bets (the table is closed to the progressive: no pot heartbeat), one event
    at a time, recording what the gateway answered. A refusal (a round left open by a kill) is
    followed by a void, then by results, then by a new round."""
    welcome = await device.connect()
    told.accepted = welcome.last_sequence  # the spool's word, not the device's guess
    steps = [VOID] if welcome.round_id else []
    number = 0
    while True:
        if not steps:
            number += 1
            device.round_id = f"{device.table_id}-{told.accepted}-{number}"
            steps = list(ROUND)
        name, payload = step = steps.pop(0)
        event = device.event(sequence=told.accepted + 1, **{name: payload})
        told.in_flight = event.sequence
        reply = await device.send_raw(device_pb2.ConnectRequest(event=event).SerializeToString())
        told.in_flight = None
        if reply.accepted:
            told.accepted = event.sequence
            told.accepted_count += 1
        elif step is VOID:
            steps = [RESULTS]
        elif step is not RESULTS:
            steps = [VOID]
        else:
            steps = []


async def play_then_kill(
    config: Path, target: str, told: dict[str, Told], moment: float, seen: str
) -> dict[str, int]:
    """Start the gateway process, play every table until each had 5 more events accepted, then
    ``moment`` seconds later (a random point of the commit cycle) kill -9 it. The replies owed
    at the kill: table -> the sequence sent and not answered."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "jackpot.cli", "gateway", "--config", str(config),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    devices = {t: Device(target, t, Game.CARIBBEAN) for t in TABLES}
    try:
        await wait_health(target, api="jackpot.v1.TableDeviceService", within=60)
        before = {t: told[t].accepted_count for t in TABLES}
        players = [asyncio.create_task(play(devices[t], told[t])) for t in TABLES]

        def playing_on() -> bool:
            assert not any(p.done() for p in players), [p.exception() for p in players]
            return min(told[t].accepted_count - before[t] for t in TABLES) >= 5

        await eventually(playing_on, f"{seen}: the devices stalled", 60)
        await asyncio.sleep(moment)  # the moment of the fault, not a wait for a result
        assert process.returncode is None, f"{seen}: the gateway exited before its kill"
        process.send_signal(signal.SIGKILL)
        owed = {t: n for t in TABLES if (n := told[t].in_flight) is not None}
        assert await process.wait() == -signal.SIGKILL, f"{seen}: not ended by the kill"
        for player in players:
            player.cancel()
        await asyncio.gather(*players, return_exceptions=True)
        return owed
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        for device in devices.values():
            with contextlib.suppress(Exception):
                await device.close()


async def test_kill_9_in_the_middle_of_a_group_commit_keeps_exactly_what_was_accepted(
    kafka_bootstrap: str, unique: str, tmp_path: Path
) -> None:
    settings = settings_for(kafka_bootstrap, unique, tmp_path / "spool.sqlite")
    await create_topics(settings)
    target = f"127.0.0.1:{free_port()}"
    config = {
        "name": settings.name,
        "bootstrap_servers": kafka_bootstrap,
        "grpc_address": target,
        "spool_path": settings.spool_path,
        "table_events_topic": settings.table_events_topic,
        "pot_updates_topic": settings.pot_updates_topic,
        "dead_letter_topic": settings.dead_letter_topic,
        "tables": [
            {"table_id": t, "game": "caribbean", "pot_group_id": "g", "credential": CREDENTIAL}
            for t in TABLES
        ],
    }
    path = tmp_path / "gateway.json"
    path.write_text(json.dumps(config))
    rng = random.Random(SEED)
    told = {t: Told() for t in TABLES}
    for kill in range(1, KILLS + 1):
        seen = f"kill {kill} of {KILLS}, seed {SEED}"
        owed = await play_then_kill(path, target, told, rng.uniform(0.0, 0.5), seen)
        spool = Spool(settings.spool_path)
        try:
            stored = {t: s["last_sequence"] for t, s in spool.table_states().items()}
        finally:
            spool.close()
        # the fault landed: the kill cut into events sent and not yet answered
        assert owed, f"{seen}: no device was owed a reply at the kill (it tested nothing)"
        for table in TABLES:
            allowed = {told[table].accepted, told[table].in_flight}
            assert stored.get(table, 0) in allowed, (seen, table, stored.get(table), told[table])
        durable_unanswered = sorted(t for t, n in owed.items() if stored.get(t) == n)
        print(f"{seen}: {len(owed)} replies owed, {len(durable_unanswered)} of them on disk")
    topic = settings.table_events_topic
    assert await delivered_events(kafka_bootstrap, topic, settings.spool_path) == {}
