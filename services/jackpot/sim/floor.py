"""The floor simulator: table controllers, dealer terminals and sign watchers on the real protocols.

Each simulated table speaks the device protocol to a real gateway (``DeviceClient``): it opens a
round, tops up seat credits, places progressive bets, locks, lets players fold or exchange cards
(their games permitting), deals real shuffled cards (one deck per round for the poker games, a
six-deck shoe for blackjack) and reports the results. Hits therefore come at their true frequency
unless ``rig_rate`` asks for a royal or straight flush in that share of rounds.

Dealer terminals connect to the payout service and confirm every payable payout; a simulated
supervisor approves those waiting for approval (:mod:`jackpot.sim.floor_staff`). Sign watchers
follow the display service's sign stream and time two things: from a dealer's lock to the sign
showing a new amount for that pot group, and from a winning result to the dealer terminal
receiving the payout and to the sign showing the winner (:mod:`jackpot.sim.floor_signs`; the
figures: :mod:`jackpot.sim.floor_stats`).

The simulator counts the pesos the gateway acknowledged as bets at each accepted lock, and
records every round it played (``FloorStats.dealt``: the bets, the forfeits the gateway accepted,
the cards dealt, whether the results were accepted); the books (``jackpot.sim.books.judge``)
compare those bets with what the ledger collected, bet by bet, and every award of the ledger with
what the rules give for those cards (``jackpot.sim.oracle``).

With ``device_faults`` the table controllers duplicate, delay and reorder some of their events
(fault 5 of the fault suite, ``jackpot.sim.device_faults``); the counts of what was injected and
what the gateway answered are in the report. Each table's rounds settled and the progressive status
its gateway pushed (with the time) are kept for the site cut-off fault.

Beside the land tables, ``studios`` are played by the simulated operator's game platform
(:mod:`jackpot.sim.studio_platform`: rounds of many online players on one shared hand, O1-O5),
written into the same books.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import grpc
import structlog

from jackpot.clients.device import DeviceClient
from jackpot.domain.cards import GAME_RULES, RANKS, SUITS, Game
from jackpot.platform.tls import TlsSettings
from jackpot.sim.device_faults import DeviceFaultRates, FaultyDeviceClient
from jackpot.sim.floor_signs import SignWatchers
from jackpot.sim.floor_staff import FloorStaff
from jackpot.sim.floor_stats import FloorStats
from jackpot.sim.oracle import Dealt
from jackpot.sim.studio_platform import SimStudio, StudioPlatform
from jackpot.v1 import (
    common_pb2,
    device_pb2,
)

DECK = [r + s for r in RANKS for s in SUITS]
ROYAL = ["AS", "KS", "QS", "JS", "TS"]
STRAIGHT_FLUSH = ["5H", "6H", "7H", "8H", "9H"]
ROUND_FORM, PER_EVENT = "round", "per-event"  # the device protocol's two forms
DEVICE_PROTOCOLS = (ROUND_FORM, PER_EVENT)
TOP_UP_ROUNDS = 10  # a seat's chip exchange buys credits for about this many rounds


@dataclass(frozen=True, slots=True)
class SimTable:
    table_id: str
    game: Game
    pot_group_id: str
    gateway: str  # host:port of its gateway
    credential: str


log = structlog.get_logger("jackpot.sim.floor")
TABLES_FINISH_SECONDS = 30.0  # how long a stopping table may take to finish its round


@dataclass
class FloorConfig:
    tables: list[SimTable]
    # host:port of the payout service, or several comma-separated ("" to skip terminals)
    payout_target: str = ""
    display_target: str = ""  # host:port of the display's SignService ("" to skip watchers)
    rounds_per_minute: float = 60.0  # per table
    participation: float = 0.7  # chance a seat bets on the progressive
    seats_in_play: int = 5
    fold_rate: float = 0.15
    exchange_rate: float = 0.25
    rig_rate: float = 0.0  # share of rounds dealt a royal or straight flush
    # "round": open, LockRound with the bets, SettleRound (and a chip exchange now and then);
    # "per-event": every seat's credits and bet, the lock, each forfeit, the results
    device_protocol: str = ROUND_FORM
    supervisor_delay: float = 0.5  # seconds before the simulated supervisor approves
    # Tables whose dealer presses "Paid" through the reference terminal's HTTP API (the one its
    # screen uses: jackpot.terminal.web) instead of the DealerTerminal stream; table -> URL.
    terminal_urls: dict[str, str] = field(default_factory=dict)
    device_faults: DeviceFaultRates = field(default_factory=DeviceFaultRates)
    seed: int | None = None
    # Where `jackpot pki` put the floor's certificates ("" for plaintext): devices and terminals
    # use the ones bound to their table, watchers the sign's, approvals the supervisor's.
    pki_dir: str = ""
    # Studio tables the simulated operator's platform plays beside the land tables (O1-O5)
    studios: list[SimStudio] = field(default_factory=list)


class Floor:
    """Runs every simulated table, terminal and watcher until stopped."""

    def __init__(self, config: FloorConfig) -> None:
        self.config = config
        self.stats = FloorStats()
        self.approves = True  # the simulated supervisor (one per floor, however many processes)
        self.rng = random.Random(config.seed)
        self.fault_rng = random.Random(None if config.seed is None else config.seed + 1)
        self._stop = asyncio.Event()
        self._tables_stop = asyncio.Event()  # tables stop; terminals pay on until _stop
        self._wins: dict[str, float] = {}  # award key (table/round/seat) -> result time
        self._counters: dict[str, Counter[int]] = {}  # table -> seat -> credits on the counter
        self._playing: list[asyncio.Task[None]] = []
        self.signs = SignWatchers(config.display_target, self._tls, self.stats, self._stop)
        self.staff = FloorStaff(
            config.payout_target,
            config.terminal_urls,
            config.supervisor_delay,
            self._tls,
            self.stats,
            self._wins,
            self._stop,
        )

    def stop(self) -> None:
        self._tables_stop.set()
        self._stop.set()

    def stop_tables(self) -> None:
        """The tables finish their round and stop; dealers and the supervisor go on paying the
        prizes still open until :meth:`stop`."""
        self._tables_stop.set()

    async def tables_finished(self) -> None:
        """Returns once every table that was playing has finished its last round (after
        :meth:`stop_tables`), or after ``TABLES_FINISH_SECONDS``."""
        if self._playing:
            await asyncio.wait(self._playing, timeout=TABLES_FINISH_SECONDS)

    async def run(self, duration: float | None = None) -> FloorStats:
        """Play until stopped (or for ``duration`` seconds); tables finish their round first.

        A table is never cut off between sending an event and counting its reply, so the bets the
        simulator counts as accepted are exactly the ones the gateway acknowledged.
        """
        playing = [asyncio.create_task(self._table(t)) for t in self.config.tables]
        playing += [
            asyncio.create_task(
                StudioPlatform(
                    studio, self.stats, self.config.pki_dir, self.rng.randrange(2**32)
                ).run(self._tables_stop)
            )
            for studio in self.config.studios
        ]
        self._playing = playing
        tasks: list[asyncio.Task[None]] = []
        if self.config.payout_target:
            tables = sorted({t.table_id for t in self.config.tables})
            tasks += [
                asyncio.create_task(
                    self.staff.screen_dealer(t, self.config.terminal_urls[t])
                    if t in self.config.terminal_urls
                    else self.staff.terminal(t)
                )
                for t in tables
            ]
            if self.approves:
                tasks.append(asyncio.create_task(self.staff.supervisor()))
        if self.config.display_target:
            # a sign per pot group, as on the floor: each table's sign shows its own group, and
            # the display paces each sign by itself (one stream of every group shared its pace)
            groups = sorted({t.pot_group_id for t in self.config.tables})
            tasks += [asyncio.create_task(self.signs.watch(g)) for g in groups]
        try:
            if duration is None:
                await self._stop.wait()
            else:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), duration)
        finally:
            self.stop()
            if playing:
                await asyncio.wait(playing, timeout=TABLES_FINISH_SECONDS)
            for task in playing + tasks:
                task.cancel()
            for task in playing + tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        return self.stats

    # ------------------------------------------------------------------------------ tables

    def _tls(self, name: str) -> TlsSettings:
        if not self.config.pki_dir:
            return TlsSettings()
        return TlsSettings.for_name(Path(self.config.pki_dir), name)

    async def _table(self, table: SimTable) -> None:
        client = FaultyDeviceClient(
            table.gateway,
            table.table_id,
            table.game,
            table.credential,
            tls=self._tls(f"device-{table.table_id}"),
            on_command=lambda message: self._command(table.table_id, message),
            rates=self.config.device_faults,
            counts=self.stats.device_faults,
            rng=self.fault_rng,
        )
        await client.connect()
        try:
            period = 60.0 / self.config.rounds_per_minute
            number = 0
            while not self._tables_stop.is_set():
                started = time.monotonic()
                number += 1
                try:
                    await self._round(
                        client, table, f"{table.table_id}-{int(time.time())}-{number}"
                    )
                except (ConnectionError, TimeoutError, grpc.aio.AioRpcError):
                    # the gateway is away (a fault test): resynchronise and play on
                    self.stats.rejects["GATEWAY_UNREACHABLE"] += 1
                    await self._resync(client, table)
                pause = period - (time.monotonic() - started)
                if pause > 0:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._tables_stop.wait(), pause)
        finally:
            await client.close()

    def _command(self, table_id: str, message: device_pb2.ConnectResponse) -> None:
        if message.WhichOneof("message") == "progressive_status":
            changes = self.stats.progressive_changes.setdefault(table_id, [])
            changes.append((time.monotonic(), message.progressive_status.open))

    async def _resync(self, client: FaultyDeviceClient, table: SimTable) -> None:
        """Reconnect; a round the gateway still holds open is finished or voided first."""
        while not self._tables_stop.is_set():
            with contextlib.suppress(ConnectionError, TimeoutError, grpc.aio.AioRpcError):
                welcome = await client.connect()
                # Numbers the client took for events the gateway never accepted (a reordered
                # pair cut short) are free again: nothing is in flight now.
                client.sequence = welcome.last_sequence
                # The gateway kept a round open: void it if it was not locked; if it was, send
                # an empty result so the table can move on (its bets stay collected).
                if welcome.round_id:
                    if await self._send(client.void("controller resync")):
                        self.stats.rounds_voided += 1
                    else:
                        await self._results(client, table, welcome.round_id, {}, [], {})
                return
            await asyncio.sleep(0.5)

    async def _send(self, coroutine: Any) -> bool:
        return self._count(await coroutine)

    def _count(self, reply: device_pb2.EventReply) -> bool:
        self.stats.device_events += 1
        if not reply.accepted:
            self.stats.rejects[common_pb2.RejectReason.Name(reply.reason)] += 1
        return bool(reply.accepted)

    async def _round(self, client: FaultyDeviceClient, table: SimTable, round_id: str) -> None:
        """One round in the protocol's round form (open, lock with the bets, settle) or, with
        ``device_protocol="per-event"``, seat by seat."""
        lock = (
            await self._lock_per_event(client, table, round_id)
            if self.config.device_protocol == PER_EVENT
            else await self._lock_round_form(client, table, round_id)
        )
        if lock is None:
            return
        bets, lock_time, lock_sent_ns = lock
        self.stats.latencies.add("device_reply", time.monotonic() - lock_time)
        self.stats.rounds += 1
        if bets:
            self._locked(table, round_id, bets, lock_time, lock_sent_ns)
        forfeits = self._forfeits(table.game, bets)
        if self.config.device_protocol == PER_EVENT:
            forfeits = {
                seat: why
                for seat, why in forfeits.items()
                if await self._forfeit(client, seat, why)
            }
        hands, community, rigged_seat = self._deal(table.game, sorted(bets))
        result_time = time.monotonic()
        if not await self._results(client, table, round_id, hands, community, forfeits):
            return
        self.stats.rounds_settled[table.table_id] += 1
        if rigged_seat is not None and rigged_seat not in forfeits:
            self.stats.winning_results += 1
            self._wins[f"{table.table_id}/{round_id}/{rigged_seat}"] = result_time
            self.signs.result(table.table_id, round_id, result_time)

    async def _lock_per_event(
        self, client: FaultyDeviceClient, table: SimTable, round_id: str
    ) -> tuple[dict[int, int], float, int] | None:
        """Open, every seat's credits and bet, the lock: the bets accepted (pesos by seat) and
        when the lock was sent (monotonic, Unix ns); None if the round did not lock."""
        if not await self._send(client.open_round(round_id)):
            return None
        bets = await self._bet_per_event(client, self._wagers(table, client))
        lock_time, lock_sent_ns = time.monotonic(), time.time_ns()
        if not await self._send(client.lock()):
            return None
        return bets, lock_time, lock_sent_ns

    async def _lock_round_form(
        self, client: FaultyDeviceClient, table: SimTable, round_id: str
    ) -> tuple[dict[int, int], float, int] | None:
        """Chip exchanges where a counter runs short, RoundOpened, LockRound with the bets: as
        :meth:`_lock_per_event`."""
        wagers = self._wagers(table, client)
        await self._top_up(client, table.table_id, wagers)
        lock_time, lock_sent_ns = time.monotonic(), time.time_ns()
        if client.reorders_now():
            opened, reply = await client.open_and_lock_reordered(round_id, wagers)
        else:
            opened = await client.open_round(round_id)
            lock_time, lock_sent_ns = time.monotonic(), time.time_ns()
            reply = await client.lock_round(round_id, wagers)
        self._count(opened)  # a refused opening is counted; the lock itself may open the round
        if not self._count(reply):
            return None
        return self._bets_locked(client, table.table_id, wagers, reply), lock_time, lock_sent_ns

    def _wagers(self, table: SimTable, client: FaultyDeviceClient) -> dict[int, int]:
        """The seats that bet this round and their credits (none while the progressive is
        closed)."""
        rules = GAME_RULES[table.game]
        welcome = client.welcome
        assert welcome is not None
        credit_value = _credit_value(client)
        max_credits = max(1, welcome.max_bet // credit_value)
        min_credits = max(1, -(-welcome.min_bet // credit_value))
        seats = self.rng.sample(
            range(1, rules.seats + 1), min(self.config.seats_in_play, rules.seats)
        )
        if not client.progressive_open:
            return {}
        return {
            seat: self.rng.randint(min_credits, max_credits)
            for seat in sorted(seats)
            if self.rng.random() <= self.config.participation
        }

    async def _bet_per_event(
        self, client: FaultyDeviceClient, wagers: dict[int, int]
    ) -> dict[int, int]:
        """Each seat's credits then its bet, an event each: the pesos of the bets accepted."""
        credit_value = _credit_value(client)
        bets: dict[int, int] = {}
        for seat, credits in wagers.items():
            credit_reply, bet_reply = await client.credits_and_bet(seat, credits)
            self._count(credit_reply)
            if self._count(bet_reply):
                bets[seat] = credits * credit_value
        return bets

    async def _top_up(
        self, client: FaultyDeviceClient, table_id: str, wagers: dict[int, int]
    ) -> None:
        """A chip exchange (E6) for each seat whose counter cannot cover its wager: credits for
        about TOP_UP_ROUNDS rounds, so that most rounds need none."""
        counters = self._counters.setdefault(table_id, Counter())
        for seat, credits in wagers.items():
            if counters[seat] < credits:
                top_up = credits * TOP_UP_ROUNDS
                if await self._send(client.credits(seat, top_up)):
                    counters[seat] += top_up

    def _bets_locked(
        self,
        client: FaultyDeviceClient,
        table_id: str,
        wagers: dict[int, int],
        reply: device_pb2.EventReply,
    ) -> dict[int, int]:
        """The pesos of the seats the gateway accepted in a LockRound's reply; each refused seat
        counted by its reason."""
        credit_value = _credit_value(client)
        counters = self._counters.setdefault(table_id, Counter())
        bets: dict[int, int] = {}
        for answer in reply.seats:
            if not answer.accepted:
                self.stats.rejects[common_pb2.RejectReason.Name(answer.reason)] += 1
                continue
            counters[answer.seat] -= wagers[answer.seat]
            bets[answer.seat] = wagers[answer.seat] * credit_value
        return bets

    def _locked(
        self, table: SimTable, round_id: str, bets: dict[int, int], lock_time: float, sent_ns: int
    ) -> None:
        """What the judges and the latency watchers need of a lock the gateway accepted."""
        self.signs.locked(table.pot_group_id, table.table_id, round_id, lock_time, sent_ns)
        total = sum(bets.values())
        self.stats.bets_accepted += total
        self.stats.bets_accepted_by_group[table.pot_group_id] += total
        self.stats.bets_by_round[(table.pot_group_id, table.table_id, round_id)] = dict(bets)

    def _forfeits(self, game: Game, bets: dict[int, int]) -> dict[int, str]:
        """The seats that exchange cards or fold this round (their games permitting)."""
        rules = GAME_RULES[game]
        forfeits: dict[int, str] = {}
        for seat in sorted(bets):
            if rules.can_exchange and self.rng.random() < self.config.exchange_rate:
                forfeits[seat] = "CARD_EXCHANGE"
            elif (
                rules.can_fold
                and game is not Game.GO_POKER
                and self.rng.random() < self.config.fold_rate
            ):
                forfeits[seat] = "FOLD"
        return forfeits

    async def _forfeit(self, client: FaultyDeviceClient, seat: int, reason: str) -> bool:
        if reason == "CARD_EXCHANGE":
            return await self._send(client.exchange(seat))
        return await self._send(client.fold(seat))

    async def _results(
        self,
        client: FaultyDeviceClient,
        table: SimTable,
        round_id: str,
        hands: dict[int, list[str]],
        community: list[str],
        forfeits: dict[int, str],
    ) -> bool:
        """Send a round's results (with its forfeits in the round form), recorded for the round
        oracle: its bets as acknowledged at the lock, the forfeits, the cards (none when a
        resynchronising controller settles a locked round) and whether the gateway accepted
        them (None until it answers: a lost answer leaves them possibly applied)."""
        key = (table.pot_group_id, table.table_id, round_id)
        dealt = Dealt(
            table.game.value,
            dict(self.stats.bets_by_round.get(key, {})),
            {seat: tuple(cards) for seat, cards in hands.items()},
            tuple(community),
            frozenset(forfeits),
            None,
        )
        self.stats.dealt[key] = dealt
        if self.config.device_protocol == PER_EVENT:
            accepted = await self._send(client.results(hands, community))
            self.stats.dealt[key] = replace(dealt, results_accepted=accepted)
            return accepted
        reply = await client.settle_round(hands, forfeits, community)
        accepted = self._count(reply)
        refused = {answer.seat for answer in reply.seats if not answer.accepted}
        for answer in reply.seats:
            if not answer.accepted:
                self.stats.rejects[common_pb2.RejectReason.Name(answer.reason)] += 1
        self.stats.dealt[key] = replace(
            dealt, forfeited=frozenset(forfeits) - refused, results_accepted=accepted
        )
        return accepted

    def _deal(
        self, game: Game, seats: list[int]
    ) -> tuple[dict[int, list[str]], list[str], int | None]:
        """Real shuffled cards; in rigged rounds one seat (returned) gets a made hand."""
        rigged = bool(seats) and self.rng.random() < self.config.rig_rate
        if game is Game.BLACKJACK:
            shoe = DECK * 6
            self.rng.shuffle(shoe)
            hands = {seat: [shoe.pop(), shoe.pop()] for seat in seats}
            if rigged:
                winner = self.rng.choice(seats)
                hands[winner] = ["AS", "AS", "AS", "AS"]
                return hands, [], winner
            return hands, [], None
        deck = DECK.copy()
        self.rng.shuffle(deck)
        made: list[str] | None = None
        if rigged:
            made = ROYAL if self.rng.random() < 0.3 else STRAIGHT_FLUSH
            deck = [c for c in deck if c not in made]
        own = GAME_RULES[game].own_cards[0]
        community: list[str] = []
        if game is Game.GO_POKER:
            community = made[3:] if made else [deck.pop(), deck.pop()]
        hands = {seat: [deck.pop() for _ in range(own)] for seat in seats}
        if made:
            winner = self.rng.choice(seats)
            hands[winner] = made[:own] if game is Game.GO_POKER else list(made)
            return hands, community, winner
        return hands, community, None


def _credit_value(client: DeviceClient) -> int:
    """Pesos per credit, as the gateway's Welcome said (1 before any)."""
    return (client.welcome.credit_value if client.welcome else 0) or 1
