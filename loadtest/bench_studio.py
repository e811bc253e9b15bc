"""`make bench` row 7: studio tables at the issue's scale (rules O1-O8), each figure against its
target.

- *lock collected*: an operator's platform sends 10,000 bets in chunks of 2,000 to a real gateway
  (gRPC, its spool) and locks; the time from the first chunk to the round's ``RoundLocked`` read
  back from Kafka (target <= 1 s), and the gateway process's peak resident memory growth.
- *the spool per chunk*: the bytes the gateway's spool stores for each chunk of 2,000 bets of a
  round of 10,000: the table's whole state (what the gateway wrote per chunk before the round's
  entries, growing with the round) against the table's row and the chunk's own entry (now).
- *split in the pot*: the pot's book applies the shared royal flush of a round of 10,000 bets and
  returns its transaction's records (10,000 awards and their ledger entries, in a few bundles,
  ``jackpot.platform.bundles``); the median of
  ``repeats`` (target <= 200 ms) and the peak of Python memory it allocates (tracemalloc).

- *the banner in the display*: the display applies that split's 10,000 prizes, as the pot writes
  them, onto the sign's banner (one count and total, rule O4): the median ms, against the same
  prizes as single records (no target; the land signs wait behind it).

- *wallet credits*: 10,000 studio prizes (published in bundles, as the pot writes one round's
  prizes) paid by the real payout service into the reference
  wallet at 20 ms a call (``jackpot.payout.wallet_payer``): seconds from the first award owned to
  the last PAID (target <= 60 s), and the wallet's calls (a resend after a rebalance is answered
  as a duplicate, never credited twice).

- *the land floor beside a studio* (not with ``--quick``): the load test's land floor (40 tables
  at 30 rounds a minute, one step of 60 s) without a studio table, then with one of 10,000
  players in the land tables' group, a round every 15 s, every round a made hand (10,000 winners,
  10,000 wallet credits): the land tables' p99 lock-to-sign of each run, and their ratio (target
  <= 1.10, "not worse by more than 10 %"), with the studio's rounds and lock p99, and each
  service's cores and seconds in full garbage collections alone and beside.

Run as a module (``python -m loadtest.bench_studio --pairs 3``, ``make bench-land-pairs``), it
repeats only that land pair, alternated, and judges the ratio of the medians: one pair on this
machine has ranged 1.07x-2.18x on the same code.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
from aiokafka import AIOKafkaConsumer

from jackpot.display.board import Board
from jackpot.display.feed import apply_record
from jackpot.display.settings import DisplaySettings
from jackpot.domain.money import pesos
from jackpot.domain.payout import PayoutState
from jackpot.domain.studio_table import StudioBet
from jackpot.domain.table import Limits
from jackpot.gateway.service import Gateway
from jackpot.gateway.settings import GatewaySettings, StudioTableSettings
from jackpot.gateway.spool import Spool
from jackpot.gateway.studio_api import StudioPlatformServicer
from jackpot.gateway.studio_desk import StudioDesk
from jackpot.payout.service import PayoutService
from jackpot.payout.settings import PayoutSettings
from jackpot.payout.wallet_payer import WalletPayer
from jackpot.platform.bundles import bundle_awards
from jackpot.platform.grpc_server import GrpcServer
from jackpot.platform.kafka import (
    ensure_service_topics,
    ensure_topics,
    idempotent_producer,
    stop_client,
)
from jackpot.pot import commands, state_records
from jackpot.pot.pot_book import InputRecord, PotBook
from jackpot.topics import TopicSpec
from jackpot.v1 import common_pb2, pot_pb2, studio_pb2, studio_pb2_grpc, table_events_pb2
from jackpot.wallet.reference import ReferenceWallet, WalletFaults
from loadtest.rounds import CONFIG, CREDIT_VALUE, MAX_BET, MIN_BET, table_link

BETS = 10_000
CHUNK = 2_000
ROYAL = ["AH", "KH", "QH", "JH", "TH"]
LOCK_TARGET_MS = 1000.0
SPLIT_TARGET_MS = 200.0
GROUP, TABLE = "bench-studio", "S-BENCH"


# ----------------------------------------------------------------------- the split in the pot


def _locked_book(players: bool = False) -> tuple[PotBook, int]:
    """A book whose studio table has a round of ``BETS`` bets locked (each of a player of its
    own if ``players``, as a platform sends them, O1); the next offset."""
    book = PotBook(0, source="pot:bench")
    link = table_link(TABLE, site="studio", studio_seats=BETS)
    seats = range(1, BETS + 1)
    named = {seat: f"p{seat}" for seat in seats} if players else None
    lock = commands.table_event(
        GROUP,
        TABLE,
        "R1",
        1,
        common_pb2.GAME_CARIBBEAN,
        round_locked=commands.locked(dict.fromkeys(seats, MIN_BET), named),
    )
    events = [commands.create_group(GROUP, CONFIG), commands.link_table(GROUP, link), lock]
    for offset, event in enumerate(events):
        record = InputRecord(event.SerializeToString(), "bench", 0, offset, GROUP.encode())
        book.commit(book.batch([record]).outputs)
    book.groups[GROUP].group.balances["main"] += pesos(1_000_000)  # a pot worth splitting
    book.groups[GROUP].group.house_advance += pesos(1_000_000)
    return book, len(events)


def _result(offset: int) -> InputRecord:
    dealt = commands.table_event(
        GROUP,
        TABLE,
        "R1",
        2,
        common_pb2.GAME_CARIBBEAN,
        round_result=table_events_pb2.RoundResult(shared_hand=ROYAL),
    )
    return InputRecord(dealt.SerializeToString(), "bench", 0, offset, GROUP.encode())


def split_in_the_pot(repeats: int = 5) -> dict[str, Any]:
    """The pot's book resolving a shared royal of ``BETS`` bets: median ms, peak MB."""
    times = []
    awards = 0
    for _ in range(repeats):
        book, offset = _locked_book()
        record = _result(offset)
        started = time.perf_counter()
        batch = book.batch([record])
        times.append((time.perf_counter() - started) * 1000)
        awards = len(batch.outputs.awards)
    book, offset = _locked_book()
    record = _result(offset)
    tracemalloc.start()
    book.batch([record])
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "winners": awards,
        "median_ms": statistics.median(times),
        "peak_mb": peak / 1e6,
        "target_ms": SPLIT_TARGET_MS,
    }


def banner_in_the_display(repeats: int = 5) -> dict[str, Any]:
    """The display applying a studio hit's ``BETS`` prizes, as the pot writes them (a few
    bundles), onto the sign's banner: the median ms of ``repeats``; against the same prizes as
    single records, each a change of the board (as the bundles were applied until this
    measurement: the land tables' pot updates waited behind them, issue 39 item 6)."""
    settings = DisplaySettings()
    awards = [_studio_prize(seat) for seat in range(1, BETS + 1)]
    bundled = [value for _, value in bundle_awards(awards)]
    single = [award.SerializeToString() for award in awards]

    def applied(values: list[bytes]) -> float:
        board = Board(stale_after=5.0, winner_seconds=5.0)
        started = time.perf_counter()
        for value in values:
            apply_record(board, settings.awards_topic, value, settings)
        elapsed = (time.perf_counter() - started) * 1000
        assert board.signs[GROUP].winner.studio_winners == BETS  # every prize counted
        return elapsed

    return {
        "winners": BETS,
        "bundles": len(bundled),
        "median_ms": statistics.median(applied(bundled) for _ in range(repeats)),
        "single_records_median_ms": statistics.median(applied(single) for _ in range(repeats)),
    }


def _studio_prize(seat: int) -> pot_pb2.Award:
    """A studio round's royal flush at ``seat``, as the pot writes one (O4, O9)."""
    return pot_pb2.Award(
        award_id=f"{GROUP}/{TABLE}/R1/{seat}/ROYAL_FLUSH",
        pot_group_id=GROUP,
        table_id=TABLE,
        round_id="R1",
        seat=seat,
        prize="ROYAL_FLUSH",
        bet=MIN_BET,
        amount=1_010,
        cards=ROYAL,
        player=f"p{seat}",
        source_event_id="bench-result",
    )


def locked_state_per_batch(repeats: int = 30) -> dict[str, Any]:
    """The group's state as every batch of its partition writes it while a studio round of
    ``BETS`` bets is locked: with the round in it (before issue 39's record apart) and with the
    round written apart (``pot.state_records``); bytes and median ms to build each."""
    book, _ = _locked_book()
    runtime = book.groups[GROUP]
    figures: dict[str, Any] = {}
    for name, apart in (("whole", None), ("apart", runtime.apart)):
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            state = state_records.snapshot(runtime, 0, 0, 0, apart)
            times.append((time.perf_counter() - started) * 1000)
        figures[f"{name}_bytes"], figures[f"{name}_ms"] = len(state), statistics.median(times)
    return figures


# ------------------------------------------------------------------- the spool per chunk


def spool_bytes_per_chunk() -> dict[str, Any]:
    """Per chunk of a round of ``BETS`` bets, the bytes of the table's whole state (the older
    gateway's write) and those the spool now stores (the table's row and the chunk's entry)."""
    return asyncio.run(_spool_bytes())


async def _spool_bytes() -> dict[str, Any]:
    whole, rows = [], []
    with tempfile.TemporaryDirectory() as directory:
        path = str(Path(directory) / "spool.sqlite")
        table = StudioTableSettings(table_id=TABLE, pot_group_id=GROUP, seats=BETS, studio="s")
        settings = GatewaySettings(name="bench-spool", studio_tables=(table,), spool_path=path)
        spool = Spool(path)
        try:
            desk = StudioDesk(settings, spool, asyncio.Event())
            desk.refresh(lambda _: "", lambda _: Limits(MIN_BET, MAX_BET, CREDIT_VALUE))
            await desk.open_round(TABLE, "R1")
            for number, first in enumerate(range(1, BETS + 1, CHUNK), start=1):
                seats = range(first, first + CHUNK)
                bets = [StudioBet(f"b{s}", s, MIN_BET, f"p{s}") for s in seats]
                await desk.place_bets(TABLE, "R1", f"c{number}", bets)
                state = desk.tables[TABLE].to_state()
                whole.append(len(json.dumps(state, separators=(",", ":")).encode()))
                rows.append(_stored(path, number))
        finally:
            spool.close()
    return {
        "chunks": len(rows),
        "whole_state_bytes": whole,
        "stored_bytes": rows,
        "whole_state_mean": statistics.mean(whole),
        "stored_mean": statistics.mean(rows),
    }


def _stored(path: str, number: int) -> int:
    """The bytes of the table's row and of its round's entry ``number``, as the file holds them."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        (state,) = db.execute(
            "SELECT length(CAST(state AS BLOB)) FROM tables WHERE table_id = ?", (TABLE,)
        ).fetchone()
        (entry,) = db.execute(
            "SELECT length(CAST(entry AS BLOB)) FROM round_entries"
            " WHERE table_id = ? AND round_id = 'R1' AND number = ?",
            (TABLE, number),
        ).fetchone()
    return int(state) + int(entry)


# ------------------------------------------------------------------- the lock, end to end


async def _beat(settings: GatewaySettings, stop: asyncio.Event) -> None:
    """The pot group's heartbeat, as the pot service sends it (D5: the table opens on it)."""
    producer = idempotent_producer(settings.bootstrap_servers)
    await producer.start()
    try:
        sequence = 0
        while not stop.is_set():
            sequence += 1
            update = pot_pb2.PotUpdate(
                pot_group_id=GROUP,
                sign_value=1,
                min_bet=MIN_BET,
                max_bet=MAX_BET,
                credit_value=CREDIT_VALUE,
                heartbeat=True,
                update_sequence=sequence,
            )
            await producer.send_and_wait(settings.pot_updates_topic, update.SerializeToString())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.2)
    finally:
        await stop_client(producer)


async def _locked_on_kafka(consumer: AIOKafkaConsumer) -> int:
    """Wait for the RoundLocked record; its bets."""
    while True:
        batch = await consumer.getmany(timeout_ms=100)
        for records in batch.values():
            for record in records:
                event = table_events_pb2.TableEvent.FromString(record.value or b"")
                if event.WhichOneof("payload") == "round_locked":
                    return len(event.round_locked.bets)


async def _lock(platform: studio_pb2_grpc.StudioPlatformServiceStub) -> None:
    await platform.OpenStudioRound(studio_pb2.OpenStudioRoundRequest(table_id=TABLE, round_id="R1"))
    for first in range(1, BETS + 1, CHUNK):
        bets = [
            studio_pb2.StudioBet(bet_id=f"b{s}", seat=s, bet=MIN_BET, player=f"p{s}")
            for s in range(first, first + CHUNK)
        ]
        await platform.PlaceStudioBets(
            studio_pb2.PlaceStudioBetsRequest(
                table_id=TABLE, round_id="R1", chunk_id=f"c{first}", bets=bets
            )
        )
    await platform.LockStudioRound(studio_pb2.LockStudioRoundRequest(table_id=TABLE, round_id="R1"))


async def lock_end_to_end(bootstrap: str) -> dict[str, Any]:
    """``BETS`` bets through a real gateway to Kafka: ms from the first chunk to the lock read
    back, and the process's peak resident memory growth (MB)."""
    unique = f"{time.time_ns():x}"
    with tempfile.TemporaryDirectory() as directory:
        settings = GatewaySettings(
            name=f"bench-{unique}",
            studio_tables=(
                StudioTableSettings(table_id=TABLE, pot_group_id=GROUP, seats=BETS, studio="s"),
            ),
            bootstrap_servers=bootstrap,
            grpc_address="127.0.0.1:0",
            spool_path=str(Path(directory) / "spool.sqlite"),
            table_events_topic=f"bench.studio.table-events.{unique}",
            pot_updates_topic=f"bench.studio.pot-updates.{unique}",
            dead_letter_topic=f"bench.studio.dead-letter.{unique}",
        )
        await ensure_topics(
            bootstrap,
            [
                TopicSpec(settings.table_events_topic, 1),
                TopicSpec(settings.pot_updates_topic, 1),
                TopicSpec(settings.dead_letter_topic, 1),
            ],
        )
        return await _measure_lock(settings)


async def _measure_lock(settings: GatewaySettings) -> dict[str, Any]:
    spool = Spool(settings.spool_path)
    gateway = Gateway(settings, spool)
    servicer = StudioPlatformServicer(gateway)
    server = GrpcServer(settings.grpc_address, [servicer.register], [servicer.service_name], None)
    stop = asyncio.Event()
    beat = asyncio.create_task(_beat(settings, stop))
    consumer = AIOKafkaConsumer(
        settings.table_events_topic,
        bootstrap_servers=settings.bootstrap_servers,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
    )
    await gateway.start()
    await server.start()
    await consumer.start()
    try:
        for _ in range(600):  # D5: open once the heartbeat is heard (30 s at most)
            if gateway.studio.tables[TABLE].progressive_open:
                break
            await asyncio.sleep(0.05)
        else:
            raise RuntimeError("the studio table never opened: no pot heartbeat heard")
        baseline = _resident_mb()
        peak = [baseline]
        sampler = asyncio.create_task(_sample_resident(peak))
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            started = time.perf_counter()
            await _lock(studio_pb2_grpc.StudioPlatformServiceStub(channel))  # type: ignore[no-untyped-call]
            bets = await asyncio.wait_for(_locked_on_kafka(consumer), 60)
            elapsed_ms = (time.perf_counter() - started) * 1000
        sampler.cancel()
    finally:
        stop.set()
        await beat
        await stop_client(consumer)
        await server.stop(0)
        await gateway.stop()
        spool.close()
    return {
        "bets": bets,
        "ms": elapsed_ms,
        "peak_rss_growth_mb": peak[0] - baseline,
        "target_ms": LOCK_TARGET_MS,
    }


def _resident_mb() -> float:
    """This process's resident memory now (Linux /proc)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize() / 1e6


async def _sample_resident(peak: list[float], every: float = 0.01) -> None:
    """Keep the highest resident memory seen in ``peak[0]`` until cancelled."""
    while True:
        peak[0] = max(peak[0], _resident_mb())
        await asyncio.sleep(every)


WALLET_TARGET_SECONDS = 60.0
CREDITED_WITHOUT_APPROVAL = 10**12  # a studio approval threshold above every prize of the row


async def wallet_credits(bootstrap: str, prizes: int = BETS) -> dict[str, Any]:
    """``prizes`` studio awards paid through the payout service into a 20 ms reference wallet."""
    wallet = ReferenceWallet(WalletFaults(latency_seconds=0.02))
    server = grpc.aio.server()
    wallet.register(server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    unique = f"{time.time_ns():x}"
    settings = PayoutSettings(
        bootstrap_servers=bootstrap,
        grpc_address="127.0.0.1:0",
        metrics_port=0,
        studio_approval_threshold=CREDITED_WITHOUT_APPROVAL,
        wallet_target=f"127.0.0.1:{port}",
        processor={"consumer_group": f"bench-{unique}", "transactional_id_prefix": f"b-{unique}"},
        awards_topic=f"bench.awards.{unique}",
        payouts_topic=f"bench.payouts.{unique}",
        ledger_topic=f"bench.ledger.{unique}",
        dead_letter_topic=f"bench.dead-letter.{unique}",
    )
    await ensure_service_topics(settings)
    ids = await _publish_awards(settings, prizes)
    service = PayoutService(settings)
    processing = asyncio.create_task(service.run())
    payer: asyncio.Task[None] | None = None
    try:
        await _until(lambda: all(a in service.book.payouts for a in ids))
        started = time.perf_counter()
        payer = asyncio.create_task(WalletPayer(service).run())
        await _until(lambda: all(_paid(service, a) for a in ids))
        seconds = time.perf_counter() - started
    finally:
        if payer is not None:
            payer.cancel()
            await asyncio.gather(payer, return_exceptions=True)
        await service.stop()
        await processing
        await server.stop(None)
    return {
        "prizes": prizes,
        "seconds": seconds,
        "wallet_calls": wallet.calls,
        "target_seconds": WALLET_TARGET_SECONDS,
    }


async def _until(done: Callable[[], bool], within: float = 600.0) -> None:
    """Poll ``done`` every 50 ms (RuntimeError after ``within`` seconds)."""
    for _ in range(int(within / 0.05)):
        if done():
            return
        await asyncio.sleep(0.05)
    raise RuntimeError(f"not done within {within:g} s")


def _paid(service: PayoutService, award_id: str) -> bool:
    payout = service.book.payouts.get(award_id)
    return payout is not None and payout.state is PayoutState.PAID


async def _publish_awards(settings: PayoutSettings, prizes: int) -> list[str]:
    """One round's ``prizes`` studio awards, in bundles as the pot writes them."""
    awards = [_studio_prize(seat) for seat in range(1, prizes + 1)]
    producer = idempotent_producer(settings.bootstrap_servers)
    await producer.start()
    try:
        for group_id, value in bundle_awards(awards):
            await producer.send(settings.awards_topic, value, key=group_id.encode())
        await producer.flush()
    finally:
        await stop_client(producer)
    return [award.award_id for award in awards]


# ------------------------------------------------------ the land floor beside a studio

LAND_ARGS = ["--tables", "40", "--start", "30", "--max-steps", "1"]
# The pair the target compares runs 300 s each (6,000 land locks, five studio hits beside): at
# 120 s the land floor alone measured 79 to 112 ms at p99 run to run, the target's size
LAND_SECONDS, STRESS_SECONDS = 300, 120
# The row's case: a studio round of 10,000 bets every minute, every round a made hand (each
# locked, split among its 10,000 bets and credited to their wallets while the land floor plays)
STUDIO_ARGS = ["--studio-tables", "1", "--studio-players", str(BETS),
               "--studio-round-seconds", "60", "--studio-rig-rate", "1.0"]  # fmt: skip
# The harshest case, measured beside it without a target: such a hit every 15 s
STRESS_ARGS = ["--studio-tables", "1", "--studio-players", str(BETS),
               "--studio-round-seconds", "15", "--studio-rig-rate", "1.0"]  # fmt: skip
LAND_TARGET_RATIO = 1.10


def _land_run(name: str, extra: list[str], seconds: int = LAND_SECONDS) -> dict[str, Any]:
    """One load test run (its own processes); its one step's figures. Every studio prize is
    credited, none waits for a supervisor: the row measures the land floor while the credits
    happen (with the default threshold, the load test's pot made most of a round's prizes wait)."""
    out = Path(f"build/bench-studio-{name}")
    threshold = {"JACKPOT_PAYOUT_STUDIO_APPROVAL_THRESHOLD": str(CREDITED_WITHOUT_APPROVAL)}
    run = [*LAND_ARGS, "--step-seconds", str(seconds), *extra, "--out", str(out)]
    subprocess.run(
        [sys.executable, "-m", "loadtest.run", *run],
        check=False,
        env={**os.environ, **threshold},
    )
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    timeline = report["timeline"]
    return {
        **report["steps"][0],
        "full_gc_seconds": _full_gc_seconds(timeline),
        "pot_transactions": _pot_transactions(timeline),
        "window_p99_ms": _window_p99s(timeline),
    }


def _window_p99s(timeline: list[dict[str, Any]]) -> dict[str, float | None]:
    """The land p99 of the timeline's 5-s windows: their median (the floor between studio
    hits) and their worst (a hit's stall)."""
    p99s = [
        s["lock_to_sign"]["p99_ms"]
        for s in timeline
        if s.get("step") == 1 and (s.get("lock_to_sign") or {}).get("p99_ms") is not None
    ]
    if not p99s:
        return {"median": None, "worst": None}
    return {"median": statistics.median(p99s), "worst": max(p99s)}


def _full_gc_seconds(timeline: list[dict[str, Any]]) -> dict[str, float]:
    """Each service's seconds in full garbage collections during the step (what it stood still
    for, ``jackpot.platform.heap``): its last sample's less its first."""
    samples = [s["full_gc_seconds"] for s in timeline if s.get("step") == 1]
    if not samples:
        return {}
    return {name: round(samples[-1][name] - samples[0].get(name, 0.0), 3) for name in samples[-1]}


def _pot_transactions(timeline: list[dict[str, Any]]) -> dict[str, float]:
    """The pot's batch transactions during the step: how many, their seconds, those over
    0.2 s (``loadtest.timeline``): a hit's stall in the transaction shows there."""
    samples = [s["transactions"]["pot"] for s in timeline if s.get("step") == 1]
    if not samples:
        return {}
    return {name: round(samples[-1][name] - samples[0][name], 3) for name in samples[-1]}


def land_beside_studio() -> dict[str, Any]:
    """The land tables' p99 lock-to-sign without a studio table, beside one whose round of
    10,000 bets hits every minute (the target), and beside one hitting every 15 s (no target),
    in that order, and their ratios to the first."""
    alone = _land_run("land-only", [])
    beside = _land_run("land-and-studio", STUDIO_ARGS)
    stress = _land_run("land-and-studio-every-15-s", STRESS_ARGS, STRESS_SECONDS)
    alone_p99 = alone["latency"]["lock_to_sign"]["p99_ms"]
    beside_p99 = beside["latency"]["lock_to_sign"]["p99_ms"]
    stress_p99 = stress["latency"]["lock_to_sign"]["p99_ms"]
    studio = beside["latency"].get("studio_lock", {})
    windows = beside["window_p99_ms"]
    return {
        "land_rounds_per_second": alone["rounds_per_second"],
        "without_studio_p99_ms": alone_p99,
        "with_studio_p99_ms": beside_p99,
        "ratio": beside_p99 / alone_p99 if alone_p99 else None,
        "target_ratio": LAND_TARGET_RATIO,
        "studio_rounds": studio.get("count", 0),
        "studio_lock_p99_ms": studio.get("p99_ms"),
        "every_15_s_p99_ms": stress_p99,
        "every_15_s_ratio": stress_p99 / alone_p99 if alone_p99 else None,
        "every_15_s_studio_rounds": stress["latency"].get("studio_lock", {}).get("count", 0),
        "seconds": LAND_SECONDS,
        "cores": {  # each service's, alone and beside: where the studio's work lands
            name: [alone["cost"].get(name, {}).get("cores"), cost["cores"]]
            for name, cost in beside["cost"].items()
        },
        "full_gc_seconds": {  # each service's event loop stopped by full collections, the same
            name: [alone["full_gc_seconds"].get(name), seconds]
            for name, seconds in beside["full_gc_seconds"].items()
        },
        "pot_transactions": [alone["pot_transactions"], beside["pot_transactions"]],
        # the 5-s windows' land p99, alone and beside: between the hits, and at the worst hit
        "window_p99_median_ms": [alone["window_p99_ms"]["median"], windows["median"]],
        "window_p99_worst_ms": [alone["window_p99_ms"]["worst"], windows["worst"]],
    }


def studio_figures(bootstrap: str, quick: bool = False) -> dict[str, Any]:
    """Row 7's figures (``studio.*`` in build/bench.json): the lock first, so that its memory
    is measured on a process the split has not grown yet; the land floor beside a studio
    unless ``quick``."""
    lock = asyncio.run(lock_end_to_end(bootstrap))
    wallet = asyncio.run(wallet_credits(bootstrap))
    figures = {
        "lock": lock,
        "spool": spool_bytes_per_chunk(),
        "split": split_in_the_pot(),
        "banner": banner_in_the_display(),
        "locked_state": locked_state_per_batch(),
        "wallet": wallet,
    }
    if not quick:
        figures["land"] = land_beside_studio()
    return figures


def _row(name: str, figure: float, target: float, unit: str = "") -> None:
    verdict = "ok" if figure <= target else "over"
    print(f"{name:56} {figure:14,.2f} {'<= ' + format(target, 'g') + unit:>12} {verdict:>7}")


def print_studio(figures: dict[str, Any]) -> None:
    lock, split, wallet = figures["lock"], figures["split"], figures["wallet"]
    print(f"{'7 studio tables (issue 39)':56} {'figure':>14} {'target':>12} {'':>7}")
    _row("7 lock of 10,000 bets collected, end to end ms", lock["ms"], lock["target_ms"])
    print(f"  the gateway's peak resident memory growth: {lock['peak_rss_growth_mb']:.1f} MB")
    spool = figures["spool"]
    print(
        f"  the spool per chunk of {CHUNK:,} bets: {spool['stored_mean']:,.0f} bytes, the "
        f"table's row and the chunk's own\n    (the whole table, as before: "
        f"{spool['whole_state_mean']:,.0f}); at chunk {spool['chunks']} "
        f"{spool['stored_bytes'][-1]:,} against {spool['whole_state_bytes'][-1]:,}"
    )
    _row("7 top prize split among 10,000 winners in the pot ms", split["median_ms"],
         split["target_ms"])  # fmt: skip
    print(f"  its peak Python memory: {split['peak_mb']:.1f} MB")
    banner = figures["banner"]
    print(
        f"  the display counting its {banner['winners']:,} prizes onto the sign's banner: "
        f"{banner['median_ms']:.1f} ms from {banner['bundles']} bundles\n    (the same prizes "
        "as single records, each a change of the board: "
        f"{banner['single_records_median_ms']:.1f} ms)"
    )
    held = figures["locked_state"]
    print(
        f"  the group's state each batch writes while the round is locked: "
        f"{held['apart_bytes']:,} bytes in {held['apart_ms']:.2f} ms, the round apart\n"
        f"    (with the round in it, as before: {held['whole_bytes']:,} bytes in "
        f"{held['whole_ms']:.2f} ms)"
    )
    _row(f"7 {wallet['prizes']:,} wallet credits at 20 ms, all PAID s", wallet["seconds"],
         wallet["target_seconds"])  # fmt: skip
    print(f"  the wallet's calls: {wallet['wallet_calls']:,}")
    land = figures.get("land")
    if land is None:
        print("  the land floor beside a studio: not measured (--quick)")
        return
    if land["ratio"] is not None:
        _row("7 land p99 lock-to-sign with / without a studio", land["ratio"],
             land["target_ratio"], "x")  # fmt: skip
    print(
        f"  land p99 {land['without_studio_p99_ms']:.1f} ms alone, "
        f"{land['with_studio_p99_ms']:.1f} ms beside {land['studio_rounds']} studio rounds of "
        f"10,000 bets hitting (their lock p99 {land['studio_lock_p99_ms']} ms); beside a hit "
        f"every 15 s ({land['every_15_s_studio_rounds']} rounds, no target): "
        f"{land['every_15_s_p99_ms']:.1f} ms, {land['every_15_s_ratio']:.2f}x"
    )
    cores = ", ".join(f"{name} {a}/{b}" for name, (a, b) in land.get("cores", {}).items())
    print(f"  cores alone/beside: {cores}")
    stood = ", ".join(f"{n} {a}/{b}" for n, (a, b) in land.get("full_gc_seconds", {}).items())
    print(f"  seconds in full garbage collections alone/beside: {stood}")
    transactions = land.get("pot_transactions")
    if transactions:
        print(
            "  the pot's batch transactions alone/beside: "
            + ", ".join(
                f"{name} {transactions[0].get(name)}/{transactions[1].get(name)}"
                for name in ("count", "seconds", "over_200_ms")
            )
        )
    median, worst = land.get("window_p99_median_ms"), land.get("window_p99_worst_ms")
    if median and worst:
        print(
            f"  the 5-s windows' land p99 alone/beside: median {median[0]}/{median[1]} ms "
            f"(between the hits), worst {worst[0]}/{worst[1]} ms (a hit's stall)"
        )


# ------------------------------------------------- the land pair, repeated (make bench-land-pairs)

PAIR_ORDER = ("alone", "beside", "beside", "alone")  # alternated: a drift of the machine spreads


def land_pairs(pairs: int) -> dict[str, Any]:
    """Row 7's land pair ``pairs`` times, alternated (alone, beside, beside, alone, alone, ...):
    each run's p99 and the ratio of the medians, the figure the target is judged on (one pair
    on this machine has ranged 1.07x-2.18x on the same code)."""
    runs: dict[str, list[float]] = {"alone": [], "beside": []}
    for index in range(2 * pairs):
        kind = PAIR_ORDER[index % len(PAIR_ORDER)]
        run = _land_run(f"pair-{index}-{kind}", STUDIO_ARGS if kind == "beside" else [])
        p99 = run["latency"]["lock_to_sign"]["p99_ms"]
        runs[kind].append(p99)
        print(f"  run {index + 1}/{2 * pairs}, {kind}: land p99 {p99:.1f} ms", flush=True)
    alone, beside = statistics.median(runs["alone"]), statistics.median(runs["beside"])
    return {**runs, "ratio_of_medians": beside / alone, "target_ratio": LAND_TARGET_RATIO}


def main() -> int:
    parser = argparse.ArgumentParser(description=land_pairs.__doc__)
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args()
    figures = land_pairs(args.pairs)
    print(f"  alone {figures['alone']} ms; beside {figures['beside']} ms")
    _row("7 land p99 with / without a studio, medians", figures["ratio_of_medians"],
         LAND_TARGET_RATIO, "x")  # fmt: skip
    return 0 if figures["ratio_of_medians"] <= LAND_TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
