"""The studio protocol on a real gateway, a real gRPC channel and a real broker (rules O1, O2,
O5, C1): an operator's platform opens a round, sends 10,000 bets in chunks (each answered, a
chunk sent again recognised), locks, folds, deals the shared hand; the pot's input topic gets the
round as one RoundLocked of every accepted bet, the fold and the shared hand. What the gateway
accepted survives its being stopped without a flush."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from loadtest.rounds import CONFIG
from prometheus_client import REGISTRY

from jackpot.gateway.settings import GatewaySettings, StudioTableSettings
from jackpot.platform.bundles import awards_of
from jackpot.pot import commands
from jackpot.pot.service import PotService
from jackpot.sim.floor_stats import FloorStats
from jackpot.sim.studio_platform import SimStudio, StudioPlatform
from jackpot.tools.audit import audit
from jackpot.v1 import common_pb2, pot_pb2, studio_pb2, studio_pb2_grpc, table_events_pb2
from tests.integration.gateway_harness import (
    GROUP,
    PotHeartbeat,
    RunningGateway,
    create_topics,
    read_topic,
    settings_for,
    start_gateway,
    wait_until,
)
from tests.integration.test_pot_service import create_topics as create_pot_topics
from tests.integration.test_pot_service import pot_settings, produce, running
from tests.polling import eventually

pytestmark = pytest.mark.integration

STUDIO = "S-CAR-1"
ROYAL = ["AH", "KH", "QH", "JH", "TH"]
CHUNK = 2_000


COUNTED = [
    ("jackpot_gateway_studio_calls_total", "bets", "applied"),
    ("jackpot_gateway_studio_calls_total", "bets", "resent"),
    ("jackpot_gateway_studio_calls_total", "bets", "refused"),
    ("jackpot_gateway_studio_calls_total", "deal", "refused"),
    ("jackpot_gateway_studio_bets_total", "accepted", ""),
    ("jackpot_gateway_studio_bets_total", "refused", ""),
]


def sample(name: str, first: str, second: str) -> float:
    """A counter of the gateway's registry (0 before its first increment)."""
    labels = {"call": first, "outcome": second} if second else {"outcome": first}
    return REGISTRY.get_sample_value(name, labels) or 0.0


def studio_settings(bootstrap: str, unique: str, spool: Path) -> GatewaySettings:
    settings = settings_for(bootstrap, unique, spool)
    studio = StudioTableSettings(table_id=STUDIO, pot_group_id=GROUP, seats=20_000, studio="s-a")
    return settings.replace(studio_tables=(studio,))


def chunk(first: int, last: int) -> list[studio_pb2.StudioBet]:
    return [
        studio_pb2.StudioBet(bet_id=f"b{s}", seat=s, bet=1000, player=f"p{s}")
        for s in range(first, last + 1)
    ]


@pytest.fixture
async def studio(
    kafka_bootstrap: str, unique: str, tmp_path: Path
) -> AsyncIterator[tuple[RunningGateway, studio_pb2_grpc.StudioPlatformServiceStub]]:
    settings = studio_settings(kafka_bootstrap, unique, tmp_path / "spool.sqlite")
    await create_topics(settings)
    beat = PotHeartbeat(settings)
    beat.start()
    gateway = await start_gateway(settings)
    try:
        await wait_until(lambda: gateway.gateway.studio.tables[STUDIO].progressive_open)
        async with grpc.aio.insecure_channel(gateway.target) as channel:
            yield gateway, studio_pb2_grpc.StudioPlatformServiceStub(channel)  # type: ignore[no-untyped-call]
    finally:
        await beat.stop()
        await gateway.stop()


async def test_O1_O2_O5_C1_a_round_of_ten_thousand_bets_reaches_the_pots_input(
    studio: tuple[RunningGateway, studio_pb2_grpc.StudioPlatformServiceStub],
) -> None:
    gateway, platform = studio
    before = {key: sample(*key) for key in COUNTED}
    opened = await platform.OpenStudioRound(
        studio_pb2.OpenStudioRoundRequest(table_id=STUDIO, round_id="R1")
    )
    assert opened.progressive_open
    started = time.perf_counter()
    for first in range(1, 10_001, CHUNK):
        request = studio_pb2.PlaceStudioBetsRequest(
            table_id=STUDIO, round_id="R1", chunk_id=f"c{first}", bets=chunk(first, first + 1999)
        )
        placed = await platform.PlaceStudioBets(request)
        assert all(a.accepted for a in placed.answers)
        assert not placed.resent
    placing = time.perf_counter() - started
    # a chunk sent again (its answer lost) is answered the same and adds nothing
    again = await platform.PlaceStudioBets(
        studio_pb2.PlaceStudioBetsRequest(
            table_id=STUDIO, round_id="R1", chunk_id="c2001", bets=chunk(2001, 4000)
        )
    )
    assert again.resent
    assert len(again.answers) == CHUNK
    # each bet is answered on its own: two refused, the rest of the chunk stands
    mixed = await platform.PlaceStudioBets(
        studio_pb2.PlaceStudioBetsRequest(
            table_id=STUDIO,
            round_id="R1",
            chunk_id="late",
            bets=[
                studio_pb2.StudioBet(bet_id="x", seat=20_001, bet=1000, player="q"),
                studio_pb2.StudioBet(bet_id="y", seat=10_001, bet=1500, player="q"),
                studio_pb2.StudioBet(bet_id="z", seat=10_002, bet=5000, player="q"),
            ],
        )
    )
    assert [(a.accepted, a.reason) for a in mixed.answers] == [
        (False, common_pb2.REJECT_REASON_SEAT_OUT_OF_RANGE),
        (False, common_pb2.REJECT_REASON_BET_OUT_OF_LIMITS),
        (True, common_pb2.REJECT_REASON_UNSPECIFIED),
    ]
    locked = await platform.LockStudioRound(
        studio_pb2.LockStudioRoundRequest(table_id=STUDIO, round_id="R1")
    )
    assert (locked.bets, locked.total, locked.resent) == (10_001, 10_005_000, False)
    with pytest.raises(grpc.aio.AioRpcError) as after_lock:
        await platform.PlaceStudioBets(
            studio_pb2.PlaceStudioBetsRequest(
                table_id=STUDIO, round_id="R1", chunk_id="after", bets=chunk(10_003, 10_003)
            )
        )
    assert after_lock.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "BET_AFTER_LOCK" in (after_lock.value.details() or "")
    folded = await platform.FoldStudioBets(
        studio_pb2.FoldStudioBetsRequest(table_id=STUDIO, round_id="R1", seats=[7, 15_000])
    )
    assert [a.accepted for a in folded.answers] == [True, False]
    with pytest.raises(grpc.aio.AioRpcError) as twice:
        await platform.DealStudioHand(
            studio_pb2.DealStudioHandRequest(
                table_id=STUDIO, round_id="R1", cards=[*ROYAL[:4], "AH"]
            )
        )
    assert "DUPLICATE_CARD" in (twice.value.details() or "")
    dealt = await platform.DealStudioHand(
        studio_pb2.DealStudioHandRequest(table_id=STUDIO, round_id="R1", cards=ROYAL)
    )
    assert not dealt.resent
    records = await read_topic(
        gateway.settings.bootstrap_servers, gateway.settings.table_events_topic, 3
    )
    events = [table_events_pb2.TableEvent.FromString(r.value) for r in records]
    assert [e.WhichOneof("payload") for e in events] == [
        "round_locked",
        "seat_forfeited",
        "round_result",
    ]
    assert [e.sequence for e in events] == [1, 2, 3]
    assert len(events[0].round_locked.bets) == 10_001
    assert events[0].round_locked.bets[0].player == "p1"
    assert events[0].pot_group_id == GROUP
    assert events[1].seat_forfeited.seat == 7
    assert list(events[2].round_result.shared_hand) == ROYAL
    assert not events[2].round_result.hands
    counted = {key: sample(*key) - before[key] for key in COUNTED}
    assert counted == {
        ("jackpot_gateway_studio_calls_total", "bets", "applied"): 6,
        ("jackpot_gateway_studio_calls_total", "bets", "resent"): 1,
        ("jackpot_gateway_studio_calls_total", "bets", "refused"): 1,  # after the lock
        ("jackpot_gateway_studio_calls_total", "deal", "refused"): 1,  # a card twice
        ("jackpot_gateway_studio_bets_total", "accepted", ""): 10_001,
        ("jackpot_gateway_studio_bets_total", "refused", ""): 2,
    }
    print(f"\n10,000 studio bets placed in 5 chunks in {placing * 1000:.0f} ms")


async def test_what_the_gateway_accepted_survives_a_stop_without_a_flush(
    kafka_bootstrap: str, unique: str, tmp_path: Path
) -> None:
    """The spool holds every accepted chunk before its answer: a new gateway on the same spool
    answers the chunk's resend the same, and the lock collects it."""
    settings = studio_settings(kafka_bootstrap, unique, tmp_path / "spool.sqlite")
    await create_topics(settings)
    beat = PotHeartbeat(settings)
    beat.start()
    try:
        request = studio_pb2.PlaceStudioBetsRequest(
            table_id=STUDIO, round_id="R1", chunk_id="c1", bets=chunk(1, 500)
        )
        first = await start_gateway(settings)
        await wait_until(lambda: first.gateway.studio.tables[STUDIO].progressive_open)
        async with grpc.aio.insecure_channel(first.target) as channel:
            platform = studio_pb2_grpc.StudioPlatformServiceStub(channel)  # type: ignore[no-untyped-call]
            await platform.OpenStudioRound(
                studio_pb2.OpenStudioRoundRequest(table_id=STUDIO, round_id="R1")
            )
            answered = await platform.PlaceStudioBets(request)
        await first.server.stop(0)
        await first.gateway.stop(flush_seconds=0)  # no drain: as if killed after the answer
        first.spool.close()
        second = await start_gateway(settings)
        try:
            await wait_until(lambda: second.gateway.studio.tables[STUDIO].progressive_open)
            async with grpc.aio.insecure_channel(second.target) as channel:
                platform = studio_pb2_grpc.StudioPlatformServiceStub(channel)  # type: ignore[no-untyped-call]
                again = await platform.PlaceStudioBets(request)
                assert again.resent
                assert list(again.answers) == list(answered.answers)
                locked = await platform.LockStudioRound(
                    studio_pb2.LockStudioRoundRequest(table_id=STUDIO, round_id="R1")
                )
                assert (locked.bets, locked.total) == (500, 500_000)
        finally:
            await second.stop()
    finally:
        await beat.stop()


async def test_O2_O4_a_studio_royal_is_shared_by_ten_thousand_bets_through_the_real_pot(
    kafka_bootstrap: str, unique: str, tmp_path: Path
) -> None:
    """Gateway and pot service on one broker: the platform's 10,000 bets are collected by the
    pot, and its shared royal flush is split among all of them (S3: the remainder to seat 1),
    the ledger balanced (M2). The 10,000 awards and their ledger entries are written as a few
    bundles (jackpot.platform.bundles), not 20,000 records. The time from the deal to the last
    award on Kafka is printed."""
    pot = pot_settings(kafka_bootstrap, unique, partitions=1)
    await create_pot_topics(pot)
    base = settings_for(kafka_bootstrap, unique, tmp_path / "spool.sqlite")
    studio = StudioTableSettings(table_id=STUDIO, pot_group_id=GROUP, seats=10_000, studio="s-a")
    settings = base.replace(
        table_events_topic=pot.table_events_topic,
        pot_updates_topic=pot.pot_updates_topic,
        dead_letter_topic=pot.dead_letter_topic,
        studio_tables=(studio,),
    )
    link = table_events_pb2.LinkTable(
        table_id=STUDIO,
        game=common_pb2.GAME_CARIBBEAN,
        site="studio",
        studio_seats=10_000,
        min_bet=1000,
        max_bet=5000,
        credit_value=1000,
    )
    await produce(pot, [commands.create_group(GROUP, CONFIG), commands.link_table(GROUP, link)])
    async with running(PotService(pot)):
        gateway = await start_gateway(settings)
        try:
            await wait_until(lambda: gateway.gateway.studio.tables[STUDIO].progressive_open, 30)
            async with grpc.aio.insecure_channel(gateway.target) as channel:
                platform = studio_pb2_grpc.StudioPlatformServiceStub(channel)  # type: ignore[no-untyped-call]
                await platform.OpenStudioRound(
                    studio_pb2.OpenStudioRoundRequest(table_id=STUDIO, round_id="R1")
                )
                for first in range(1, 10_001, CHUNK):
                    await platform.PlaceStudioBets(
                        studio_pb2.PlaceStudioBetsRequest(
                            table_id=STUDIO,
                            round_id="R1",
                            chunk_id=f"c{first}",
                            bets=chunk(first, first + CHUNK - 1),
                        )
                    )
                await platform.LockStudioRound(
                    studio_pb2.LockStudioRoundRequest(table_id=STUDIO, round_id="R1")
                )
                dealt_at = time.perf_counter()
                await platform.DealStudioHand(
                    studio_pb2.DealStudioHandRequest(table_id=STUDIO, round_id="R1", cards=ROYAL)
                )

            async def all_awarded() -> tuple[list[Any], list[pot_pb2.Award]] | None:
                records = await read_topic(kafka_bootstrap, pot.awards_topic)
                awards = [award for r in records for award in awards_of(r.value)]
                return (records, awards) if len(awards) >= 10_000 else None

            records, awards = await eventually(all_awarded, "10,000 awards", within=120)
            resolved = time.perf_counter() - dealt_at
        finally:
            await gateway.stop()
    assert len(awards) == 10_000
    assert len(records) <= 10  # bundles of at most BUNDLE_BYTES, not a record per award
    assert [a.seat for a in awards] == list(range(1, 10_001))
    share = awards[1].amount
    assert {a.amount for a in awards[1:]} == {share}
    assert awards[0].amount >= share  # S3: the whole remainder to seat 1
    assert all(list(a.cards) == ROYAL and a.prize == "ROYAL_FLUSH" for a in awards)
    assert all(a.player == f"p{a.seat}" for a in awards)  # O1: whose wallet each is paid to
    ledger = await read_topic(kafka_bootstrap, pot.ledger_topic)
    assert len(ledger) < 100  # the 10,000 prize entries in bundles too
    done = await audit(pot.kafka_options(), pot.ledger_topic, pot.pot_updates_topic)
    (group,) = done.groups
    assert group.problems == []  # M2 and the books, from the ledger alone
    print(
        f"\nshared royal to 10,000 bets: deal to the last award on Kafka {resolved * 1000:.0f} ms"
    )


async def test_O1_O5_the_simulated_platform_plays_a_round_into_the_floors_books(
    studio: tuple[RunningGateway, studio_pb2_grpc.StudioPlatformServiceStub],
    kafka_bootstrap: str,
) -> None:
    """`jackpot demo`'s operator platform (jackpot.sim.studio_platform) on the real gateway: a
    round of 3,000 players, a made hand, a tenth folded after the players' decision time; the
    floor's books hold each bet the gateway accepted and the round as dealt (what the books'
    judges and the oracle read), and the pot's input holds the one lock of those bets, the
    round locked that long before its hand."""
    gateway, platform = studio
    stats = FloorStats()
    sim = SimStudio(
        STUDIO,
        GROUP,
        gateway.target,
        "s-a",
        3_000,
        20_000,
        rig_rate=1.0,
        fold_rate=0.1,
        decision_seconds=0.5,
    )
    await StudioPlatform(sim, stats, seed=7).play_round(platform, "R-sim")
    key = (GROUP, STUDIO, "R-sim")
    bets = stats.bets_by_round[key]
    assert sorted(bets) == list(range(1, 3_001))
    assert sum(bets.values()) == stats.bets_accepted == stats.bets_accepted_by_group[GROUP]
    assert all(bet % 1_000 == 0 and 1_000 <= bet <= 5_000 for bet in bets.values())
    dealt = stats.dealt[key]
    assert dealt.results_accepted is True
    assert (dealt.studio_seats, len(dealt.shared_hand)) == (20_000, 5)
    assert 200 < len(dealt.forfeited) < 400
    assert dealt.forfeited <= set(bets)
    records = await read_topic(kafka_bootstrap, gateway.settings.table_events_topic)
    events = [table_events_pb2.TableEvent.FromString(r.value) for r in records]
    locks = [e for e in events if e.round_id == "R-sim" and e.HasField("round_locked")]
    assert [{b.seat: b.bet for b in e.round_locked.bets} for e in locks] == [bets]
    at = {
        e.WhichOneof("payload"): r.timestamp
        for r, e in zip(records, events, strict=True)
        if e.round_id == "R-sim"
    }
    assert at["round_result"] - at["round_locked"] >= 500  # ms: the players decided meanwhile
