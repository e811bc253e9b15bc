"""A studio gateway killed -9 while an operator's platform streams chunks of bets (rules O1, C1).

A real gateway process (real Kafka behind it, a pot heartbeat so the table is open) takes chunks
of 2,000 bets of one round, one after another; at a random moment (seeded: ``SEED``, or
``JACKPOT_TEST_SEED``; a failure names it) after some chunks were answered it is killed with
SIGKILL, twice, on the same spool. After each start every chunk the platform was answered is
answered again the same, as a resend (the spool kept it); the chunk still owed at the kill is
sent again and answered either way. At the end the lock collects exactly the bets the platform
was told were accepted, and the pot's input gets them in one RoundLocked.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from loadtest.free_ports import free_port

from jackpot.gateway.settings import GatewaySettings
from jackpot.v1 import studio_pb2, studio_pb2_grpc, table_events_pb2
from tests.integration.gateway_harness import (
    PotHeartbeat,
    create_topics,
    read_topic,
    wait_health,
)
from tests.integration.test_studio_platform import STUDIO, chunk, studio_settings
from tests.polling import eventually

pytestmark = pytest.mark.integration

KILLS = 2
CHUNK = 2_000
SEATS = 60_000  # room for every chunk the kills leave time for (a chunk takes some 30 ms)
SEED = int(os.environ.get("JACKPOT_TEST_SEED", "39"))  # the kills' moments
Answers = list[studio_pb2.StudioBetAnswer]


def bets(number: int) -> studio_pb2.PlaceStudioBetsRequest:
    """Chunk ``number`` (from 1) of round R1: 2,000 bets of its own seats."""
    first = (number - 1) * CHUNK + 1
    return studio_pb2.PlaceStudioBetsRequest(
        table_id=STUDIO, round_id="R1", chunk_id=f"c{number}", bets=chunk(first, first + CHUNK - 1)
    )


async def opened(platform: studio_pb2_grpc.StudioPlatformServiceStub) -> bool:
    """Round R1 open (or open already) and the table taking bets (its pot group heard, D5)."""
    request = studio_pb2.OpenStudioRoundRequest(table_id=STUDIO, round_id="R1")
    return bool((await platform.OpenStudioRound(request)).progressive_open)


async def limits_adopted(platform: studio_pb2_grpc.StudioPlatformServiceStub, seen: str) -> None:
    """Until a probe round takes a bet, each voided: a round opened before the pot group is
    heard keeps the unknown limits to its end (the group's are adopted between rounds, E1)."""
    probes = iter(range(1, 1000))

    async def bet_taken() -> bool:
        round_id = f"probe-{next(probes)}"
        await platform.OpenStudioRound(
            studio_pb2.OpenStudioRoundRequest(table_id=STUDIO, round_id=round_id)
        )
        request = studio_pb2.PlaceStudioBetsRequest(
            table_id=STUDIO, round_id=round_id, chunk_id="probe", bets=chunk(1, 1)
        )
        (answer,) = (await platform.PlaceStudioBets(request)).answers
        await platform.VoidStudioRound(
            studio_pb2.VoidStudioRoundRequest(table_id=STUDIO, round_id=round_id, reason="probe")
        )
        return answer.accepted

    await eventually(bet_taken, f"{seen}: no bet taken (the pot group never heard)", 30)


async def answered_again(
    platform: studio_pb2_grpc.StudioPlatformServiceStub, answered: dict[int, Answers], seen: str
) -> None:
    """Every chunk answered before a kill: a resend now, answered the same."""
    for number, answers in answered.items():
        again = await platform.PlaceStudioBets(bets(number))
        assert again.resent, f"{seen}: chunk {number} was answered, then lost"
        assert list(again.answers) == answers, f"{seen}: chunk {number} answered otherwise"


async def stream(
    platform: studio_pb2_grpc.StudioPlatformServiceStub,
    answered: dict[int, Answers],
    owed: list[int],
) -> None:
    """Chunks one after another from the next not answered; ``owed``: the one sent and not yet
    answered ([] between two)."""
    number = max(answered, default=0) + 1
    while True:
        owed[:] = [number]
        answered[number] = list((await platform.PlaceStudioBets(bets(number))).answers)
        owed[:] = []
        number += 1


async def test_kill_9_while_chunks_stream_keeps_every_chunk_the_platform_was_answered(
    kafka_bootstrap: str, unique: str, tmp_path: Path
) -> None:
    settings = studio_settings(kafka_bootstrap, unique, tmp_path / "spool.sqlite")
    studio = settings.studio_tables[0].model_copy(update={"seats": SEATS})
    settings = settings.replace(studio_tables=(studio,))
    await create_topics(settings)
    target = f"127.0.0.1:{free_port()}"
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps(gateway_config(settings, target)))
    beat = PotHeartbeat(settings)
    beat.start()
    rng = random.Random(SEED)
    answered: dict[int, Answers] = {}
    try:
        for kill in range(1, KILLS + 1):
            seen = f"kill {kill} of {KILLS}, seed {SEED}"
            async with gateway_process(config, target) as (process, platform):
                if kill == 1:
                    await limits_adopted(platform, seen)
                await eventually(lambda: opened(platform), f"{seen}: the table never opened", 30)
                await answered_again(platform, answered, seen)
                await streamed_then_killed(platform, process, answered, rng, seen)
        seen = f"after {KILLS} kills, seed {SEED}"
        async with gateway_process(config, target) as (_, platform):
            await eventually(lambda: opened(platform), f"{seen}: the table never opened", 30)
            await answered_again(platform, answered, seen)
            await locked_as_answered(platform, answered)
            await pot_gets_the_accepted_bets(kafka_bootstrap, settings, answered)
    finally:
        await beat.stop()


@contextlib.asynccontextmanager
async def gateway_process(
    config: Path, target: str
) -> AsyncIterator[tuple[asyncio.subprocess.Process, studio_pb2_grpc.StudioPlatformServiceStub]]:
    """A gateway process on ``config``, serving, and a platform's channel to it; the process
    killed at the end if it still runs."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "jackpot.cli", "gateway", "--config", str(config),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        await wait_health(target, api="jackpot.v1.StudioPlatformService", within=60)
        async with grpc.aio.insecure_channel(target) as channel:
            yield process, studio_pb2_grpc.StudioPlatformServiceStub(channel)  # type: ignore[no-untyped-call]
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def streamed_then_killed(
    platform: studio_pb2_grpc.StudioPlatformServiceStub,
    process: asyncio.subprocess.Process,
    answered: dict[int, Answers],
    rng: random.Random,
    seen: str,
) -> None:
    """Stream chunks until two to four more (the seed says how many) are answered and the next
    one is owed, then kill -9 the gateway at once; the chunk owed then is left for the next start
    to send again."""
    before, owed = len(answered), list[int]()
    more = rng.randint(2, 4)
    streaming = asyncio.create_task(stream(platform, answered, owed))

    def in_flight() -> bool:
        assert not streaming.done(), streaming.exception()
        return len(answered) >= before + more and bool(owed)

    await eventually(in_flight, f"{seen}: the chunks stalled", 60)
    assert process.returncode is None, f"{seen}: the gateway exited before its kill"
    process.send_signal(signal.SIGKILL)
    assert owed, f"{seen}: no chunk was owed an answer at the kill (it tested nothing)"
    assert await process.wait() == -signal.SIGKILL, f"{seen}: not ended by the kill"
    streaming.cancel()
    await asyncio.gather(streaming, return_exceptions=True)
    print(f"{seen}: killed with {len(answered)} chunks answered, owed {owed}")


def gateway_config(settings: GatewaySettings, target: str) -> dict[str, object]:
    """The gateway process's configuration file: the studio table only."""
    return {
        "name": settings.name,
        "bootstrap_servers": settings.bootstrap_servers,
        "grpc_address": target,
        "spool_path": settings.spool_path,
        "heartbeat_timeout_seconds": settings.heartbeat_timeout_seconds,
        "table_events_topic": settings.table_events_topic,
        "pot_updates_topic": settings.pot_updates_topic,
        "dead_letter_topic": settings.dead_letter_topic,
        "studio_tables": [json.loads(t.model_dump_json()) for t in settings.studio_tables],
    }


def accepted_seats(answered: dict[int, Answers]) -> set[int]:
    return {a.seat for answers in answered.values() for a in answers if a.accepted}


async def locked_as_answered(
    platform: studio_pb2_grpc.StudioPlatformServiceStub, answered: dict[int, Answers]
) -> None:
    """The chunk owed at the last kill sent again, then the lock: exactly the accepted bets."""
    number = max(answered) + 1
    answered[number] = list((await platform.PlaceStudioBets(bets(number))).answers)
    accepted = accepted_seats(answered)
    assert len(accepted) == CHUNK * len(answered)  # every seat its own: all accepted
    locked = await platform.LockStudioRound(
        studio_pb2.LockStudioRoundRequest(table_id=STUDIO, round_id="R1")
    )
    assert (locked.bets, locked.total) == (len(accepted), 1000 * len(accepted))


async def pot_gets_the_accepted_bets(
    bootstrap: str, settings: GatewaySettings, answered: dict[int, Answers]
) -> None:
    """The pot's input: one RoundLocked of exactly the accepted bets (the gateway publishes
    it while it runs; the probe rounds' voids before it)."""

    async def locks() -> list[table_events_pb2.RoundLocked]:
        records = await read_topic(bootstrap, settings.table_events_topic)
        events = [table_events_pb2.TableEvent.FromString(r.value) for r in records]
        return [e.round_locked for e in events if e.WhichOneof("payload") == "round_locked"]

    (lock,) = await eventually(locks, "no RoundLocked on the pot's input", 30)
    assert {bet.seat for bet in lock.bets} == accepted_seats(answered)
