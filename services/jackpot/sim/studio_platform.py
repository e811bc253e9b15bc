"""The operator's game platform, simulated: a studio table's rounds of many online players (rules
O1-O5) through the gateway's ``StudioPlatformService``, for `jackpot demo` and the load test.

Each round the platform opens it, sends every player's bet (one seat each, whole credits within
the group's limits) in chunks of up to 2,000, locks it, folds a few bets, and deals the shared
hand: real shuffled cards and, in rigged rounds, a made hand so that the round's winners are seen.
What the gateway acknowledged is written in the floor's books (:class:`FloorStats`: the pesos
accepted seat by seat at the lock, the round as dealt), so the same judges
(:mod:`jackpot.sim.books`, the round oracle) hold a studio table to the ledger bet by bet, as a
land table. A call that fails is sent again with the same ids (the protocol answers a resend
the same); a round the gateway refused to lock is voided.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import grpc
import structlog

from jackpot.domain.cards import RANKS, SUITS
from jackpot.platform.tls import TlsSettings, secure_channel
from jackpot.sim.floor_stats import FloorStats
from jackpot.sim.oracle import Dealt
from jackpot.v1 import common_pb2, studio_pb2, studio_pb2_grpc

log = structlog.get_logger("jackpot.sim.studio")
CHUNK = 2_000  # bets per PlaceStudioBets call (the protocol's largest chunk)
DECK = [r + s for r in RANKS for s in SUITS]
MADE_HANDS = (  # a rigged round's shared hand: every bet wins it
    ["AD", "KD", "QD", "JD", "TD"],
    ["4C", "5C", "6C", "7C", "8C"],
    ["9S", "9H", "9D", "9C", "2H"],
    ["KS", "KH", "KD", "3C", "3S"],
    ["2H", "6H", "9H", "JH", "AH"],
)
RETRY_SECONDS = 1.0
CALL_SECONDS = 30.0


@dataclass(frozen=True)
class SimStudio:
    """A studio table the simulated platform drives, and how."""

    table_id: str
    pot_group_id: str
    gateway: str  # host:port of the gateway that has the studio table
    studio: str  # the platform's certificate (its CN is the table's studio)
    players: int  # bets each round: seats 1 to players
    seats: int  # the table's seats, as its gateway and its link say (O1)
    round_seconds: float = 20.0  # a round starts this often
    decision_seconds: float = 0.0  # the round stays locked while players decide, then folds
    min_bet: int = 1000
    max_bet: int = 5000
    credit_value: int = 1000
    fold_rate: float = 0.02
    rig_rate: float = 0.1


class StudioPlatform:
    """Plays one studio table's rounds until told to stop (each round finished first)."""

    def __init__(
        self, studio: SimStudio, stats: FloorStats, pki_dir: str = "", seed: int | None = None
    ) -> None:
        self.studio = studio
        self.stats = stats
        self.rng = random.Random(seed)
        self.tls = TlsSettings.for_name(Path(pki_dir), studio.studio) if pki_dir else TlsSettings()

    async def run(self, stop: asyncio.Event) -> None:
        async with secure_channel(self.studio.gateway, self.tls) as channel:
            platform = studio_pb2_grpc.StudioPlatformServiceStub(channel)  # type: ignore[no-untyped-call]
            while not stop.is_set():
                started = time.monotonic()
                try:
                    await self.play_round(platform, f"{self.studio.table_id}-{time.time_ns()}")
                except grpc.aio.AioRpcError as refused:  # counted; the next round is played
                    self.stats.rejects[f"STUDIO_{refused.code().name}"] += 1
                    log.warning(
                        "studio_round_refused",
                        table=self.studio.table_id,
                        error=str(refused.details()),
                    )
                pause = self.studio.round_seconds - (time.monotonic() - started)
                if pause > 0:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), pause)

    async def play_round(
        self, platform: studio_pb2_grpc.StudioPlatformServiceStub, round_id: str
    ) -> None:
        """One round, from its opening to its hand (or its void when the lock was refused)."""
        table = self.studio.table_id
        opened = await self._call(
            platform.OpenStudioRound,
            studio_pb2.OpenStudioRoundRequest(table_id=table, round_id=round_id),
        )
        if not opened.progressive_open:
            self.stats.rejects["STUDIO_PROGRESSIVE_CLOSED"] += 1
        accepted = await self._bets(platform, round_id)
        started = time.perf_counter()
        try:
            locked = await self._call(
                platform.LockStudioRound,
                studio_pb2.LockStudioRoundRequest(table_id=table, round_id=round_id),
            )
        except grpc.aio.AioRpcError as refused:
            self.stats.rejects[f"STUDIO_LOCK_{refused.code().name}"] += 1
            await self._call(
                platform.VoidStudioRound,
                studio_pb2.VoidStudioRoundRequest(
                    table_id=table, round_id=round_id, reason="lock refused"
                ),
            )
            return
        self.stats.latencies.add("studio_lock", time.perf_counter() - started)
        self._locked(round_id, accepted, locked.bets)
        if self.studio.decision_seconds:  # the cards are out; the players raise or fold
            await asyncio.sleep(self.studio.decision_seconds)
        folded = await self._folds(platform, round_id, accepted)
        await self._deal(platform, round_id, accepted, folded)

    async def _bets(
        self, platform: studio_pb2_grpc.StudioPlatformServiceStub, round_id: str
    ) -> dict[int, int]:
        """Every player's bet, in chunks; the pesos the gateway accepted, by seat."""
        studio = self.studio
        credits = range(
            studio.min_bet // studio.credit_value, studio.max_bet // studio.credit_value + 1
        )
        accepted: dict[int, int] = {}
        for first in range(1, studio.players + 1, CHUNK):
            seats = range(first, min(first + CHUNK, studio.players + 1))
            bets = [
                studio_pb2.StudioBet(
                    bet_id=f"{round_id}/{seat}",
                    seat=seat,
                    bet=self.rng.choice(credits) * studio.credit_value,
                    player=f"player-{studio.table_id.lower()}-{seat}",
                )
                for seat in seats
            ]
            request = studio_pb2.PlaceStudioBetsRequest(
                table_id=studio.table_id, round_id=round_id, chunk_id=f"c{first}", bets=bets
            )
            answer = await self._call(platform.PlaceStudioBets, request)
            for bet, said in zip(bets, answer.answers, strict=True):
                if said.accepted:
                    accepted[bet.seat] = bet.bet
                else:
                    self.stats.rejects[common_pb2.RejectReason.Name(said.reason)] += 1
        return accepted

    def _locked(self, round_id: str, accepted: dict[int, int], collected: int) -> None:
        """The lock's bets into the books, as the gateway acknowledged them."""
        if collected != len(accepted):
            log.warning(
                "studio_lock_count_differs",
                table=self.studio.table_id,
                said=collected,
                counted=len(accepted),
            )
        total = sum(accepted.values())
        group = self.studio.pot_group_id
        self.stats.rounds += 1
        self.stats.bets_accepted += total
        self.stats.bets_accepted_by_group[group] += total
        self.stats.bets_by_round[(group, self.studio.table_id, round_id)] = dict(accepted)

    async def _folds(
        self,
        platform: studio_pb2_grpc.StudioPlatformServiceStub,
        round_id: str,
        accepted: dict[int, int],
    ) -> frozenset[int]:
        """A few players fold (O5); the seats whose fold the gateway accepted."""
        seats = [seat for seat in accepted if self.rng.random() < self.studio.fold_rate]
        if not seats:
            return frozenset()
        request = studio_pb2.FoldStudioBetsRequest(
            table_id=self.studio.table_id, round_id=round_id, seats=seats
        )
        answer = await self._call(platform.FoldStudioBets, request)
        return frozenset(said.seat for said in answer.answers if said.accepted)

    async def _deal(
        self,
        platform: studio_pb2_grpc.StudioPlatformServiceStub,
        round_id: str,
        accepted: dict[int, int],
        folded: frozenset[int],
    ) -> None:
        """The shared hand, recorded for the round oracle before it is sent (an answer lost
        leaves it possibly applied: ``results_accepted`` None until the gateway answers)."""
        if self.rng.random() < self.studio.rig_rate:
            cards = list(self.rng.choice(MADE_HANDS))
        else:
            cards = self.rng.sample(DECK, 5)
        key = (self.studio.pot_group_id, self.studio.table_id, round_id)
        dealt = Dealt(
            "caribbean", dict(accepted), {}, (), folded, None, self.studio.seats, tuple(cards)
        )
        self.stats.dealt[key] = dealt
        request = studio_pb2.DealStudioHandRequest(
            table_id=self.studio.table_id, round_id=round_id, cards=cards
        )
        await self._call(platform.DealStudioHand, request)
        self.stats.dealt[key] = replace(dealt, results_accepted=True)
        self.stats.rounds_settled[self.studio.table_id] += 1

    async def _call(self, method: Any, request: Any) -> Any:
        """The call until answered; UNAVAILABLE and DEADLINE_EXCEEDED sent again as they were
        (the protocol answers a resend the same), any other refusal raised. The first resend
        of a call is a warning, the others debug lines, and an answer after resends says how
        many (a start waiting for its group's pot resends for as long as that takes)."""
        retries = 0
        while True:
            try:
                answer = await method(request, timeout=CALL_SECONDS)
            except grpc.aio.AioRpcError as error:
                if error.code() not in (
                    grpc.StatusCode.UNAVAILABLE,
                    grpc.StatusCode.DEADLINE_EXCEEDED,
                ):
                    raise
                retries += 1
                (log.warning if retries == 1 else log.debug)(
                    "studio_call_retried", table=self.studio.table_id, error=error.code().name
                )
                await asyncio.sleep(RETRY_SECONDS)
                continue
            if retries:
                log.info("studio_call_answered", table=self.studio.table_id, retries=retries)
            return answer
