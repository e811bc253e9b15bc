"""The floor's sign watchers: one stream of the display's SignService per pot group, timing what a
player sees. From a dealer's lock to the sign showing a new amount for its group
(``lock_to_sign``), the hops of every traced lock (:class:`~jackpot.sim.hops.Hops`), and from a
winning result to the sign showing the winner (``result_to_sign_winner``), into the floor's
:class:`~jackpot.sim.floor_stats.FloorStats`. The tables tell them what they locked and dealt."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import grpc

from jackpot.platform.tls import TlsSettings, secure_channel
from jackpot.sim.floor_stats import FloorStats
from jackpot.v1 import display_pb2, display_pb2_grpc


class SignWatchers:
    """What the signs of one simulated floor showed, and when."""

    def __init__(
        self,
        display_target: str,
        tls: Callable[[str], TlsSettings],
        stats: FloorStats,
        stop: asyncio.Event,
    ) -> None:
        self.display_target = display_target  # host:port of the display's SignService
        self.tls = tls
        self.stats = stats
        self.stop = stop
        self._locks: dict[str, list[float]] = {}  # group -> lock times not on its sign yet
        self._win_signs: dict[str, float] = {}  # "table/round" -> result time
        self._shown: dict[str, int] = {}  # group -> amount the sign shows
        self._lock_sent: dict[tuple[str, str], int] = {}  # (table, round) -> send, Unix ns

    def locked(
        self, group: str, table_id: str, round_id: str, lock_time: float, sent_ns: int
    ) -> None:
        """A lock the gateway accepted: its sign should show a new amount, and its trace come."""
        self._lock_sent[(table_id, round_id)] = sent_ns
        self._locks.setdefault(group, []).append(lock_time)

    def result(self, table_id: str, round_id: str, result_time: float) -> None:
        """A winning result dealt: its sign should show the winner."""
        self._win_signs[f"{table_id}/{round_id}"] = result_time

    async def watch(self, group: str) -> None:
        """Follow the sign of ``group`` on the display service until the floor stops."""
        request = display_pb2.WatchSignsRequest(pot_group_ids=[group])
        while not self.stop.is_set():
            try:
                async with secure_channel(self.display_target, self.tls("sign")) as channel:
                    stub = display_pb2_grpc.SignServiceStub(channel)  # type: ignore[no-untyped-call]
                    async for message in stub.WatchSigns(request):
                        self._sign(message.sign, time.monotonic())
            except grpc.aio.AioRpcError:
                await asyncio.sleep(0.5)

    def _sign(self, sign: display_pb2.SignState, now: float) -> None:
        group = sign.pot_group_id
        signed_ns = time.time_ns()
        by_table = self.stats.lock_to_sign_by_table
        for trace in sign.lock_traces:
            sent_ns = self._lock_sent.pop((trace.table_id, trace.round_id), None)
            if sent_ns is not None:
                self.stats.hops.record(trace, sent_ns, signed_ns)
                by_table.setdefault(trace.table_id, []).append((now, (signed_ns - sent_ns) / 1e9))
        if sign.live and sign.amount != self._shown.get(group):
            self._shown[group] = sign.amount
            pending = self._locks.get(group, [])
            # every lock made before this new amount appeared is now reflected on the sign
            for lock_time in pending:
                self.stats.latencies.add("lock_to_sign", now - lock_time)
            self._locks[group] = []
        if sign.HasField("winner"):
            key = f"{sign.winner.table_id}/{sign.winner.award_id.split('/')[2]}"
            if key in self._win_signs:
                self.stats.latencies.add("result_to_sign_winner", now - self._win_signs.pop(key))
