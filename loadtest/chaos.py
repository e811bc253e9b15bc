"""The fault suite: the whole floor under load while services are killed, judged by the books.

    python -m loadtest.chaos [--pot-kills 20] [--payout-kills 5] [--tables 20]
                             [--device-faults 0.05] [--site-cutoff 20] [--faults 1,4,5,6,7]
                             [--cluster [--outage-seconds 30]] [--allow-skip] [--out build/chaos]
                             [--wan metro,regional,satellite]

Runs the floor as in `jackpot demo` and, while the simulator plays, injects faults:

1. ``kill -9`` of the pot service ``--pot-kills`` times at random moments, restarting it each time;
   each recovery (until the restarted pot serves, its updates of every group are heard again and
   a probe bet at each site is accepted) must take at most ``POT_RECOVERY_BOUND_SECONDS`` (5);
2. with ``--cluster``: on the local three-broker cluster (RF 3, min ISR 2), ``kill -9`` of one
   broker and its restart, then of another;
3. with ``--cluster``: the whole cluster stopped (``kafka.sh cluster-down``) and kept down for
   ``--outage-seconds`` (30) from the moment the last broker process was confirmed stopped. From
   that moment every table of both gateways must refuse progressive bets within the gateway's
   heartbeat timeout + 1 s (their ``jackpot_gateway_tables_closed`` counts all their tables, every
   played table's controller is pushed ProgressiveStatus closed, and a probe bet at each site is
   refused ``PROGRESSIVE_CLOSED``); after the restart the floor must be whole again (a service
   that exits meanwhile is restarted, as Kubernetes would, and fails the suite: brokers gone are
   no reason to exit);
4. ``kill -9`` of a table gateway mid-round and its restart (its spool and its devices resync);
5. during all of the above, the table controllers duplicate, delay (0.2-2 s) and reorder their
   events, each at ``--device-faults`` RATE (``jackpot.sim.device_faults``): every copy must be
   answered ``duplicate``, every event sent before its predecessor refused
   ``SEQUENCE_OUT_OF_ORDER`` and accepted when sent again in order;
6. ``kill -9`` of the payout service ``--payout-kills`` times during play, and of the display
   service once, restarting each; a payout recovery (until every dealer terminal, reconnected, is
   shown its open payouts again and, when a payout was waiting, a payment confirms again) must
   take at most ``PAYOUT_RECOVERY_BOUND_SECONDS`` (5);
8. ``--pause SERVICE:SECONDS`` (repeatable; pot, payout, gateway or display): the service's
   process is stopped with SIGSTOP (a long GC, a frozen VM, a stopped container) and, for the pot
   and the payout, a second instance with the same settings is started on its own ports, as a
   Kubernetes rollout or a replacement would; after SECONDS the first is resumed with SIGCONT.
   The resumed instance must step aside where it lost its partitions (the payout's API reports
   NOT_SERVING and sends its terminals to the new owner), and the floor must pay prizes again
   (payout; the pot, gateway and display: be whole again) within the bound of
   ``loadtest.verdicts`` (pot and payout: 5 s from the resume). The second instance is then
   stopped gracefully and the floor goes on. A gateway or display pause has no second instance
   (a gateway owns its site's spool and devices; the display is the signs' fan-out) and is judged
   on the floor being whole after the resume;
7. after that floor, on a floor of its own: a site cut off from the central cluster for
   ``--site-cutoff`` SECONDS, its gateway in a network namespace whose WAN link is taken down
   (``loadtest.site_cutoff``; root only, recorded as skipped otherwise);
9. ``--wan PROFILE[,PROFILE]``: after those, a remote site over each WAN profile (metro, regional,
   satellite; Toxiproxy between the site and the brokers, stalls, a cut and a flapping link;
   ``loadtest.wan``, which `make wan` runs by itself); a requested profile that did not run fails.

Every service process is watched for the whole run (``loadtest.exits``): each exit is printed
and reported (``service_exits``) with the service, the seconds since the services started, the
exit status and the last error of its log, and the service is started again after a backoff, as
Kubernetes would. The suite's own ``kill -9``s (and the graceful stop of a second instance) are
expected; any other exit fails the suite. The floor must also stay whole (``floor_held``,
``loadtest.floor_held``) from the start of play, between one fault's recovery and the next
fault, and from the last recovery to the end of play, not only at the moment a recovery is
measured: every pot group's updates heard within the gateway's heartbeat timeout, every service
answering SERVING, no gateway counting a table closed; a condition wrong for more than 2 s in a
row fails the suite. The cluster's stops (``kafka.sh cluster-down``) SIGKILL the brokers whose
controlled shutdown has not ended within ``STOP_SECONDS`` (10), and the report says which.

``--faults`` picks which of them run (default all but the cluster's 2 and 3, which ``--cluster``
adds, and 8, which ``--pause`` adds); ``--device-faults 0`` and ``--site-cutoff 0`` also turn 5
and 7 off.

Every figure is judged against a bound named in ``loadtest.verdicts`` and printed next to it.
At the end the tables stop, and the simulated dealers and supervisor pay every prize still open
(``jackpot.sim.books.finish_floor``): every award must be paid (or voided) exactly once.
The books are `jackpot audit` and the simulator's own record of accepted bets, compared bet by bet
per pot group (``jackpot.sim.books``): the pesos lost and duplicated (both must be 0), every award
with one payout, none paid twice. The probe tables (one per site, linked, never played by the
simulator) carry the suite's own bets, so that no played table's controller is displaced.
Exit status 0 only when every fault that ran passed, the books hold, no service exited that the
suite did not kill, the floor stayed whole between faults, and no requested fault was skipped
(fault 7 without root is skipped; ``--allow-skip`` lets a skipped fault pass the suite).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import grpc
from google.protobuf.message import DecodeError
from grpc_health.v1 import health_pb2, health_pb2_grpc

from jackpot.clients.payout import all_payouts
from jackpot.domain.cards import Game
from jackpot.gateway.settings import GatewaySettings
from jackpot.payout.grpc_api import SERVICE_NAME as PAYOUT_API
from jackpot.platform.kafka import KafkaConnection, follow_latest
from jackpot.platform.settings import load
from jackpot.platform.tls import secure_channel
from jackpot.sim.books import finish_floor, judge, list_payouts
from jackpot.sim.device_faults import DeviceFaultRates
from jackpot.sim.floor import Floor
from jackpot.sim.floor_stats import FloorStats
from jackpot.tools.demo_floor import (
    REPO,
    Demo,
    sim_config,
    wait_progressive_open,
)
from jackpot.tools.demo_report import report as demo_report
from jackpot.tools.demo_status import OK, HealthProbe, probe_health
from jackpot.tools.demo_studio import add_studios
from jackpot.tools.demo_tables import (
    BLACKJACK_GROUP,
    POKER_GROUP,
    DemoStudio,
    DemoTable,
)
from jackpot.v1 import payout_pb2, payout_pb2_grpc, pot_pb2
from loadtest.exits import ExitWatch
from loadtest.floor_held import FloorGuard
from loadtest.floor_ports import offset_ports
from loadtest.site_cutoff import gateway_metrics, probe_bet, run_site_cutoff
from loadtest.verdicts import (
    OUTAGE_CLOSE_MARGIN_SECONDS,
    OUTAGE_RECOVERY_BOUND_SECONDS,
    RECOVERY_BOUNDS_SECONDS,
    judge_exits,
    judge_floor_held,
    judge_kills,
    judge_outage,
    suite_verdict,
)
from loadtest.wan import PROFILES, wan_arguments
from loadtest.wan import profiles as wan_profiles
from loadtest.wan import render as render_wan
from loadtest.wan import run as run_wan

# The suite's own cluster script, beside it (not the one beside the jackpot package it imports:
# the suite may drive another checkout's services, PYTHONPATH first, on the same cluster).
KAFKA_SH = Path(__file__).resolve().parents[1] / "deploy" / "local" / "kafka.sh"
# A stop of the cluster SIGKILLs the brokers still running after this long (kafka.sh's default
# is 30: a controlled shutdown of three brokers took 29.8 s on a slow machine).
STOP_SECONDS = 10
# The brokers' JVMs compile with C1 only: a broker restarted under the floor's load starts in
# half the time (cluster-up 16 s against 30-37 s on a loaded two-core machine); the load of a
# fault run is far below what C2 would gain.
BROKER_JVM_OPTS = "-XX:TieredStopAtLevel=1"
# How long a broker may take to start (kafka.sh's default is 90 s: a restart under the floor's
# load on a two-core machine shared with other work took longer).
BROKER_READY_SECONDS = 240
CLUSTER = "127.0.0.1:9192,127.0.0.1:9292,127.0.0.1:9392"
BROKER_PORTS = (9192, 9292, 9392)
GATEWAYS = {"A": "gateway-a", "B": "gateway-b"}
# One table per site that the simulator never plays: the suite's own probe bets go there.
PROBES = (
    DemoTable("A-PRB-98", Game.CARIBBEAN, "A", POKER_GROUP),
    DemoTable("B-PRB-99", Game.CARIBBEAN, "B", POKER_GROUP),
)
# How long the suite waits for a recovery before recording it as never recovered (None).
GIVE_UP_SECONDS = 120.0
POLL_SECONDS = 0.1


class ChaosDemo(Demo):
    """The demo floor with a probe table at each site (linked, configured, never played).

    With an ``exit_watch`` every process it starts is known to the watch (where its output
    begins in its log), and every exit the suite causes (a ``kill -9``, a second instance
    stopped) is recorded as the suite's own."""

    def __init__(self, tables: int, state_dir: Path, run_id: str, replication: int) -> None:
        super().__init__(tables, state_dir, run_id, replication, **offset_ports())
        self.tables.extend(PROBES)
        self.exit_watch: ExitWatch | None = None

    def _spawn(self, name: str, args: list[str], env: dict[str, str]) -> None:
        log = self.state / f"{name}.log"
        offset = log.stat().st_size if log.exists() else 0
        super()._spawn(name, args, env)
        if self.exit_watch is not None:
            self.exit_watch.spawned(self.processes[name], offset)

    def kill(self, name: str) -> None:
        process = self.processes[name]
        super().kill(name)
        if self.exit_watch is not None:
            self.exit_watch.caused(name, process, process.wait(), "kill -9 by the fault suite")

    def environment_of(self, service: str) -> dict[str, str]:
        """The environment ``service`` runs with (its settings, topics, brokers)."""
        _, env = self._commands[service]
        return {**os.environ, **self.service_env(env)}

    def stop_twin(self, twin: str, within_seconds: float = 20) -> int | None:
        process = self.processes[twin]
        code = super().stop_twin(twin, within_seconds)
        if self.exit_watch is not None:
            cause = "second instance stopped by the suite (SIGTERM)"
            self.exit_watch.caused(twin, process, process.wait(), cause)
        return code

    def played_tables(self) -> list[DemoTable]:
        return [t for t in self.tables if t not in PROBES]

    def site_tables(self, site: str) -> int:
        """Tables configured on the site's gateway, the probe table included."""
        return sum(1 for t in self.tables if t.site == site)


D = TypeVar("D", bound=ChaosDemo)
T = TypeVar("T")


class PotWatch:
    """Follows the run's pot updates from their end: when each pot group was last heard of."""

    def __init__(self, demo: Demo, groups: Sequence[str] = (POKER_GROUP, BLACKJACK_GROUP)) -> None:
        self.demo = demo
        self.groups = tuple(groups)
        self.heard: dict[str, float] = {}
        self._task: asyncio.Task[None] | None = None

    def _on_record(self, record: Any) -> None:
        with contextlib.suppress(DecodeError):
            update = pot_pb2.PotUpdate.FromString(record.value or b"")
            self.heard[update.pot_group_id] = time.monotonic()

    def start(self) -> None:
        self._task = asyncio.create_task(
            follow_latest(
                KafkaConnection({"bootstrap_servers": self.demo.bootstrap}),
                [self.demo.topic("pot-updates")],
                self._on_record,
                retry_seconds=1.0,
                # heartbeats come at least once a second per group: a consumer silent for 3 s is
                # rebuilt (one stuck after a broker's restart would delay what the suite sees)
                idle_restart_seconds=3,
            )
        )

    def heard_all_since(self, since: float) -> bool:
        return all(self.heard.get(group, -1.0) > since for group in self.groups)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


def gateways_closed(demo: ChaosDemo) -> dict[str, float | None]:
    """Each site gateway's count of tables closed (None when its /metrics does not answer)."""
    counts: dict[str, float | None] = {}
    for site, name in GATEWAYS.items():
        samples = gateway_metrics("127.0.0.1", demo.metrics_ports[name])
        counts[site] = samples.get("jackpot_gateway_tables_closed")
    return counts


async def probes(demo: ChaosDemo) -> dict[str, str]:
    """What each site's gateway answers to a bet on its probe table (the round is voided)."""

    async def one(table: DemoTable) -> str:
        try:
            return await probe_bet(demo, table)
        except (ConnectionError, TimeoutError, grpc.aio.AioRpcError) as error:
            return f"UNREACHABLE ({type(error).__name__})"

    answers = await asyncio.gather(*(one(t) for t in PROBES))
    return {t.site: a for t, a in zip(PROBES, answers, strict=True)}


class FloorProbes:
    """What 'floor whole' means between faults (``FloorGuard``'s problems): every pot group's
    updates heard within the gateway's heartbeat timeout (longer, and its tables close), every
    service of the floor answering SERVING, no gateway counting a table closed."""

    def __init__(self, demo: ChaosDemo, watch: PotWatch) -> None:
        self.demo = demo
        self.watch = watch
        self.stale_after = load(
            GatewaySettings, file=demo.state / "gateway-a.json"
        ).heartbeat_timeout_seconds
        self.health = {
            name: HealthProbe(demo.target(name), demo.tls("operator")) for name in demo.ports
        }

    async def problems(self) -> dict[str, str]:
        found: dict[str, str] = {}
        now = time.monotonic()
        for group in self.watch.groups:
            heard = self.watch.heard.get(group)
            if heard is None or now - heard > self.stale_after:
                silent = "never" if heard is None else f"{now - heard:.1f} s ago"
                found[f"pot updates of {group}"] = f"last heard {silent}"
        for name, state in (await probe_health(self.health)).items():
            if state != OK:
                found[f"{name} health"] = state
        for site, count in (await asyncio.to_thread(gateways_closed, self.demo)).items():
            if count != 0:
                found[f"gateway {site} tables"] = f"{count} closed" if count else "no /metrics"
        return found

    async def close(self) -> None:
        for probe in self.health.values():
            await probe.close()


async def floor_whole(
    demo: ChaosDemo,
    watch: PotWatch,
    since: float,
    heard_after: float | None = None,
    within: float = GIVE_UP_SECONDS,
) -> float | None:
    """Seconds from ``since`` until the floor takes progressive bets again: every pot group's
    updates heard after ``heard_after`` (default ``since``), both gateways count no table closed
    and a bet on each site's probe table is accepted; None if that does not happen ``within``."""
    heard_after = since if heard_after is None else heard_after
    while time.monotonic() - since < within:
        if watch.heard_all_since(heard_after):
            closed = await asyncio.to_thread(gateways_closed, demo)
            if all(count == 0 for count in closed.values()):
                answers = await probes(demo)
                if all(a == "ACCEPTED" for a in answers.values()):
                    return time.monotonic() - since
        await asyncio.sleep(POLL_SECONDS)
    return None


async def kill_pot(
    demo: ChaosDemo, watch: PotWatch, rng: random.Random, wait: bool = True
) -> float | None:
    """Fault 1, once: SIGKILL the pot at a random moment, restart it; seconds until the floor is
    whole again with the restarted pot (None: never, within GIVE_UP_SECONDS)."""
    if wait:  # a random moment (the caller waits instead: ``wait=False``)
        await asyncio.sleep(rng.uniform(1.0, 4.0))
    demo.kill("pot")
    killed = time.monotonic()
    demo.restart("pot")
    try:
        await demo.wait_serving("pot", GIVE_UP_SECONDS)
    except RuntimeError:
        return None
    # updates heard after the restarted pot serves are its own (none of the killed one in flight)
    return await floor_whole(demo, watch, killed, heard_after=time.monotonic())


async def kill_gateway(
    demo: ChaosDemo, watch: PotWatch, rng: random.Random, wait: bool = True
) -> float | None:
    """Fault 4: SIGKILL site A's gateway mid-round, restart it; seconds until the floor is whole."""
    if wait:  # a random moment (the caller waits instead: ``wait=False``)
        await asyncio.sleep(rng.uniform(1.0, 3.0))
    demo.kill("gateway-a")
    killed = time.monotonic()
    demo.restart("gateway-a")
    try:
        await demo.wait_serving("gateway-a", GIVE_UP_SECONDS)
    except RuntimeError:
        return None
    return await floor_whole(demo, watch, killed)


async def kill_display(demo: ChaosDemo, rng: random.Random, wait: bool = True) -> float | None:
    """Fault 6, the display: SIGKILL, restart; seconds until it answers its health check."""
    if wait:  # a random moment (the caller waits instead: ``wait=False``)
        await asyncio.sleep(rng.uniform(1.0, 3.0))
    demo.kill("display")
    killed = time.monotonic()
    demo.restart("display")
    try:
        await demo.wait_serving("display", GIVE_UP_SECONDS)
    except RuntimeError:
        return None
    return time.monotonic() - killed


TerminalViews = dict[str, list[tuple[float, int, frozenset[str]]]]


def terminals_back(
    views: TerminalViews,
    at_kill: dict[str, tuple[int, frozenset[str]]],
    settled: set[str],
    killed: float,
) -> float | None:
    """Seconds from ``killed`` until every terminal, on a session opened after the kill, was
    shown every payout open for it at the kill that is not paid or voided since (None: not yet).
    ``at_kill``: per table, its session number and the award ids its last message listed."""
    latest = 0.0
    for table_id, (stream, open_ids) in at_kill.items():
        wanted = open_ids - settled
        shown = [
            t
            for t, s, ids in views.get(table_id, ())
            if t > killed and s > stream and wanted <= ids
        ]
        if not shown:
            return None
        latest = max(latest, min(shown) - killed)
    return latest


async def known_payouts(demo: Demo) -> list[payout_pb2.Payout] | None:
    """Every payout the owning payout instance knows (None when none answers)."""
    try:
        return await list_payouts(demo)
    except grpc.aio.AioRpcError:
        return None


async def kill_payout(
    demo: ChaosDemo, floor: Floor, rng: random.Random, wait: bool = True
) -> dict[str, Any]:
    """Fault 6, the payout service once: SIGKILL it at a random moment and restart it.

    ``recovery_seconds``: until the restarted service knows every payout the killed one knew,
    every dealer terminal (on a new session) was shown its table's open payouts again and, if a
    payout was waiting to be paid, a payment confirmed again (a PAID transition stamped after the
    kill); None when that did not happen within GIVE_UP_SECONDS."""
    if wait:  # a random moment (the caller waits instead: ``wait=False``)
        await asyncio.sleep(rng.uniform(1.0, 3.0))
    views = floor.stats.terminal_views
    settled_states = (payout_pb2.PAYOUT_STATE_PAID, payout_pb2.PAYOUT_STATE_VOIDED)
    known = await known_payouts(demo) or []
    open_at_kill: dict[str, set[str]] = {}
    for payout in known:
        if payout.state not in settled_states:
            open_at_kill.setdefault(payout.table_id, set()).add(payout.award_id)
    at_kill = {
        table_id: (
            seen[-1][1] if seen else 0,
            frozenset(open_at_kill.get(table_id, ())) | (seen[-1][2] if seen else frozenset()),
        )
        for table_id, seen in views.items()
    }
    demo.kill("payout")
    killed, killed_wall = time.monotonic(), time.time()
    demo.restart("payout")
    figures: dict[str, Any] = {
        "payouts_known_at_kill": len(known),
        "open_payouts_at_kill": sum(len(ids) for _, ids in at_kill.values()),
        "book_rebuilt_seconds": None,
        "terminals_back_seconds": None,
        "payout_waiting": False,
        "payment_confirmed_seconds": None,
        "recovery_seconds": None,
    }
    try:
        await demo.wait_serving("payout", GIVE_UP_SECONDS)
    except RuntimeError:
        return figures
    payable = (payout_pb2.PAYOUT_STATE_ORDERED, payout_pb2.PAYOUT_STATE_APPROVED)
    known_ids = {p.award_id for p in known}
    async with secure_channel(demo.target("payout"), demo.tls("supervisor")) as channel:
        stub = payout_pb2_grpc.PayoutServiceStub(channel)  # type: ignore[no-untyped-call]
        while time.monotonic() - killed < GIVE_UP_SECONDS:
            try:
                listing = await all_payouts(stub, call_seconds=2)
            except grpc.aio.AioRpcError:
                await asyncio.sleep(POLL_SECONDS)
                continue
            if figures["book_rebuilt_seconds"] is None:
                if not known_ids <= {p.award_id for p in listing}:
                    await asyncio.sleep(POLL_SECONDS)  # its book is not rebuilt yet
                    continue
                figures["book_rebuilt_seconds"] = round(time.monotonic() - killed, 2)
            settled = {p.award_id for p in listing if p.state in settled_states}
            if figures["terminals_back_seconds"] is None:
                back = terminals_back(views, at_kill, settled, killed)
                figures["terminals_back_seconds"] = None if back is None else round(back, 2)
            figures["payout_waiting"] |= any(p.state in payable for p in listing)
            paid_at = [
                t.at.ToNanoseconds() / 1e9
                for p in listing
                for t in p.history
                if t.state == payout_pb2.PAYOUT_STATE_PAID
                and t.at.ToNanoseconds() / 1e9 > killed_wall
            ]
            if paid_at:
                figures["payment_confirmed_seconds"] = round(min(paid_at) - killed_wall, 2)
            back = figures["terminals_back_seconds"]
            paid = figures["payment_confirmed_seconds"]
            if back is not None and (paid is not None or not figures["payout_waiting"]):
                figures["recovery_seconds"] = max(
                    figures["book_rebuilt_seconds"], back, paid or 0.0
                )
                break
            await asyncio.sleep(POLL_SECONDS)
    return figures


PAUSABLE = {"pot": "pot", "payout": "payout", "gateway": "gateway-a", "display": "display"}
TWINNED = ("pot", "payout")


def pause_spec(text: str) -> tuple[str, float]:
    """``SERVICE:SECONDS`` of ``--pause``, or a clear refusal."""
    service, _, seconds = text.partition(":")
    if service not in PAUSABLE:
        raise argparse.ArgumentTypeError(
            f"--pause {text!r}: the service must be one of {', '.join(PAUSABLE)}"
        )
    try:
        pause = float(seconds)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--pause {text!r}: SECONDS must be a number, as in payout:20"
        ) from None
    if not 0 < pause <= 600:
        raise argparse.ArgumentTypeError(f"--pause {text!r}: SECONDS must be in (0, 600]")
    return service, pause


async def first_payment_since(demo: Demo, since_wall: float, since: float) -> float | None:
    """Seconds from ``since`` until a payout is PAID with a stamp after ``since_wall``."""
    while time.monotonic() - since < GIVE_UP_SECONDS:
        for payout in await known_payouts(demo) or []:
            for step in payout.history:
                paid_at = step.at.ToNanoseconds() / 1e9
                if step.state == payout_pb2.PAYOUT_STATE_PAID and paid_at > since_wall:
                    return time.monotonic() - since
        await asyncio.sleep(POLL_SECONDS)
    return None


async def api_not_serving(demo: Demo, name: str, since: float) -> float | None:
    """Seconds from ``since`` until ``name``'s PayoutService API reports NOT_SERVING."""
    while time.monotonic() - since < GIVE_UP_SECONDS:
        async with secure_channel(demo.target(name), demo.tls("operator")) as channel:
            with contextlib.suppress(grpc.aio.AioRpcError):
                answer = await health_pb2_grpc.HealthStub(channel).Check(
                    health_pb2.HealthCheckRequest(service=PAYOUT_API), timeout=1
                )
                if answer.status == health_pb2.HealthCheckResponse.NOT_SERVING:
                    return time.monotonic() - since
        await asyncio.sleep(POLL_SECONDS)
    return None


async def after_resume(
    demo: ChaosDemo, watch: PotWatch, service: str, resumed: float, resumed_wall: float
) -> dict[str, float | None]:
    """What the floor does after the resume: for the payout, the resumed instance stepping
    aside and a prize paid again; for the others, the floor whole again."""
    if service == "payout":
        aside, paid = await asyncio.gather(
            api_not_serving(demo, "payout", resumed),
            first_payment_since(demo, resumed_wall, resumed),
        )
        recovery = None if aside is None or paid is None else max(aside, paid)
        return {"stepped_aside_seconds": aside, "paid_again_seconds": paid, "recovery": recovery}
    if service == "display":
        try:
            back: float | None = await demo.wait_serving("display", GIVE_UP_SECONDS)
        except RuntimeError:
            back = None
        return {"recovery": back}
    return {"recovery": await floor_whole(demo, watch, resumed, heard_after=resumed)}


async def pause_service(
    demo: ChaosDemo,
    watch: PotWatch,
    service: str,
    seconds: float,
    rng: random.Random,
    wait: bool = True,
) -> dict[str, Any]:
    """Fault 8, once: SIGSTOP ``service``, start its twin, SIGCONT after ``seconds``; the
    figures of the recovery from the resume, then the twin stopped gracefully."""
    if wait:  # a random moment (the caller waits instead: ``wait=False``)
        await asyncio.sleep(rng.uniform(1.0, 3.0))
    process = demo.processes[PAUSABLE[service]]
    process.send_signal(signal.SIGSTOP)
    paused = time.monotonic()
    twin = demo.start_twin(service) if service in TWINNED else None
    figures: dict[str, Any] = {"service": service, "pause_seconds": seconds, "twin": twin}
    try:
        if twin is not None:
            api = PAYOUT_API if service == "payout" else ""
            try:
                await demo.wait_serving(twin, GIVE_UP_SECONDS, api=api)
                figures["twin_serving_seconds"] = round(time.monotonic() - paused, 2)
            except RuntimeError:
                figures["twin_serving_seconds"] = None
        await asyncio.sleep(max(0.0, seconds - (time.monotonic() - paused)))
    finally:
        process.send_signal(signal.SIGCONT)
    resumed, resumed_wall = time.monotonic(), time.time()
    found = await after_resume(demo, watch, service, resumed, resumed_wall)
    figures.update(
        {k: None if v is None else round(v, 2) for k, v in found.items() if k != "recovery"}
    )
    figures["recovery_seconds"] = None if found["recovery"] is None else round(found["recovery"], 2)
    figures["resumed_still_running"] = process.poll() is None
    if twin is not None:
        figures["twin_exit"] = await asyncio.to_thread(demo.stop_twin, twin)
        figures["whole_after_twin_stopped_seconds"] = await handed_back(demo, watch, service)
    return figures


async def handed_back(demo: ChaosDemo, watch: PotWatch, service: str) -> float | None:
    """Seconds from the second instance's stop until the first serves again and the floor is
    whole (the hand-back is part of the fault: the floor guard is armed only after it)."""
    stopped = time.monotonic()
    with contextlib.suppress(RuntimeError):
        await demo.wait_serving(PAUSABLE[service], GIVE_UP_SECONDS)
        whole = await floor_whole(demo, watch, stopped, heard_after=stopped)
        return None if whole is None else round(whole, 2)
    return None


async def kill_broker(
    demo: ChaosDemo, watch: PotWatch, node: int, rng: random.Random, wait: bool = True
) -> float | None:
    """Fault 2, once: SIGKILL one broker of the local cluster, restart it 3 s later; seconds from
    the kill until the floor is whole (updates heard after the broker is back)."""
    if wait:  # a random moment (the caller waits instead: ``wait=False``)
        await asyncio.sleep(rng.uniform(2.0, 5.0))
    await asyncio.to_thread(kafka_sh, "kill", str(node))
    killed = time.monotonic()
    await asyncio.sleep(3)  # play on with two brokers for a moment
    await asyncio.to_thread(kafka_sh, "start", str(node))
    return await floor_whole(demo, watch, killed, heard_after=time.monotonic())


async def supervise(demo: ChaosDemo, restarts: list[str]) -> None:
    """Restart any service that exits, as Kubernetes would, each exit printed with its last
    error (``ExitWatch``); ``restarts`` gets the name of each service that exited."""
    watch = demo.exit_watch = demo.exit_watch or ExitWatch(demo)
    while True:
        restarts.extend(e.service for e in watch.check())
        await asyncio.sleep(0.5)


def kafka_sh(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """The suite's cluster script (``KAFKA_SH``) with its stop bound and broker JVM options;
    what it says goes to stderr as it says it."""
    env = {
        "KAFKA_JVM_OPTS": BROKER_JVM_OPTS,
        "KAFKA_READY_TIMEOUT": str(BROKER_READY_SECONDS),
        **{k: v for k, v in os.environ.items() if k != "KAFKA_STOP_SECONDS"},
        "KAFKA_STOP_SECONDS": str(STOP_SECONDS),
    }
    done = subprocess.run([str(KAFKA_SH), *args], env=env, stderr=subprocess.PIPE, text=True)
    print(done.stderr, end="", file=sys.stderr, flush=True)
    if check and done.returncode != 0:
        said = [line for line in done.stderr.splitlines() if line.startswith("kafka.sh:")]
        raise RuntimeError(
            f"kafka.sh {' '.join(args)} failed ({done.returncode}): {'; '.join(said[-3:])}"
        )
    return done


def brokers_unreachable() -> bool:
    """No broker port of the local cluster accepts a TCP connection."""
    for port in BROKER_PORTS:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return False
    return True


@dataclass(frozen=True, slots=True)
class ClusterStop:
    """One stop of the whole cluster: when the last broker had exited, and which were SIGKILLed
    because their controlled shutdown had not ended within the bound."""

    ended_at: float  # monotonic
    took_seconds: float
    killed: list[str]  # "node2 (pid 1234)"


def cluster_down() -> ClusterStop:
    """Stop every broker (SIGTERM, controlled shutdown; SIGKILL after ``STOP_SECONDS``): which
    were killed, as ``kafka.sh cluster-down`` says."""
    started = time.monotonic()
    done = kafka_sh("cluster-down")
    ended = time.monotonic()
    killed = [
        node
        for line in done.stderr.splitlines()
        if "stop bound:" in line
        for node in re.findall(r"node\d \(pid \d+\)", line)
    ]
    return ClusterStop(ended, round(ended - started, 2), killed)


def _devices_told_closed(stats: FloorStats, tables: set[str], since: float) -> float | None:
    """When (monotonic) the last of ``tables`` was first pushed ProgressiveStatus closed after
    ``since`` (None if one never was)."""
    firsts = []
    for table_id in tables:
        changes = stats.progressive_changes.get(table_id, [])
        closed = [t for t, is_open in changes if t >= since and not is_open]
        if not closed:
            return None
        firsts.append(min(closed))
    return max(firsts) if firsts else None


async def stop_cluster(
    demo: ChaosDemo, watch: PotWatch, floor: Floor, seconds: float
) -> dict[str, Any]:
    """Fault 3: every broker stopped, kept down for ``seconds`` from the moment the last one was
    confirmed stopped; the figures ``judge_outage`` judges (seconds from that moment)."""
    heartbeat = load(GatewaySettings, file=demo.state / "gateway-a.json").heartbeat_timeout_seconds
    wanted = {site: demo.site_tables(site) for site in GATEWAYS}
    played = {t.table_id for t in demo.played_tables()}
    stop_started = time.monotonic()
    stopping = asyncio.create_task(asyncio.to_thread(cluster_down))
    unreachable_at: float | None = None
    stop: ClusterStop | None = None
    verified = False
    closed_at: float | None = None
    probing: asyncio.Task[dict[str, str]] | None = None
    while unreachable_at is None or time.monotonic() - unreachable_at < seconds:
        if unreachable_at is None and stopping.done():
            stop = stopping.result()
            unreachable_at = stop.ended_at
            verified = await asyncio.to_thread(brokers_unreachable)
        if closed_at is None:
            counts = await asyncio.to_thread(gateways_closed, demo)
            if all((counts[site] or 0) >= wanted[site] for site in GATEWAYS):
                closed_at = time.monotonic()
                probing = asyncio.create_task(probes(demo))
        await asyncio.sleep(POLL_SECONDS)
    assert unreachable_at is not None
    assert stop is not None
    probe_bets = await probing if probing is not None else {}
    told = _devices_told_closed(floor.stats, played, stop_started)
    await asyncio.to_thread(kafka_sh, "cluster-up")
    restarted = time.monotonic()
    recovery = await floor_whole(demo, watch, restarted, within=GIVE_UP_SECONDS + 60)

    def since_unreachable(moment: float | None) -> float | None:
        return None if moment is None else round(moment - unreachable_at, 2)

    return {
        "outage_seconds": seconds,
        "heartbeat_timeout_seconds": heartbeat,
        "stop_took_seconds": round(unreachable_at - stop_started, 2),
        "stop_bound_seconds": STOP_SECONDS,
        "stop_killed": stop.killed,
        "brokers_unreachable_verified": verified,
        "closed_after_seconds": since_unreachable(closed_at),
        "closed_after_stop_started_seconds": None
        if closed_at is None
        else round(closed_at - stop_started, 2),
        "devices_told_closed_after_seconds": since_unreachable(told),
        "probe_bets": probe_bets,
        "recovery_after_restart_seconds": None if recovery is None else round(recovery, 2),
        "recovery_bound_seconds": OUTAGE_RECOVERY_BOUND_SECONDS,
    }


async def open_floor(
    kind: type[D],
    run_id: str,
    tables: int,
    cluster: bool,
    runs: str = "chaos",
    studios: Sequence[DemoStudio] = (),
) -> D:
    """A floor of ``kind`` (state in .run/<runs>/<run>): the brokers (the local three-broker
    cluster with ``cluster``, else the local broker), the run's topics, its services started;
    ``studios``: its studio tables (and the reference wallet their prizes are credited to)."""
    if cluster:
        await asyncio.to_thread(kafka_sh, "cluster-up")
        os.environ["KAFKA_BOOTSTRAP_SERVERS"] = CLUSTER
    demo = kind(tables, REPO / ".run" / runs / run_id, run_id, 3 if cluster else 1)
    add_studios(demo, list(studios))
    demo.start_kafka()
    await demo.create_topics()
    demo.start_services()
    return demo


async def floor_ready(demo: ChaosDemo, watch: PotWatch) -> None:
    """Every service healthy, the pot groups created and open for bets, the pot updates followed."""
    await demo.wait_healthy()
    await demo.create_groups()
    await wait_progressive_open(demo)
    watch.start()


async def close_floor(demo: ChaosDemo, watch: PotWatch, cluster: bool) -> None:
    """Stop following, stop watching the exits (the services stop now on purpose), stop every
    service, and the cluster if the floor ran on it."""
    await watch.stop()
    if demo.exit_watch is not None:
        demo.exit_watch.stop()
    demo.stop_services()
    if cluster:
        with contextlib.suppress(RuntimeError):
            await asyncio.to_thread(cluster_down)


class Watches:
    """What a fault run keeps an eye on from its services' start to their stop: the pot's
    updates (``pot``), every service exit (``exits``) and, once the floor is ready, the floor
    held whole between faults (``guard``; a fault run through :meth:`during` disarms it)."""

    def __init__(self, demo: ChaosDemo) -> None:
        self.demo = demo
        self.pot = PotWatch(demo)
        self.exits = demo.exit_watch = ExitWatch(demo)
        self.guard: FloorGuard | None = None
        self._probes: FloorProbes | None = None
        self._tasks = [asyncio.create_task(self.exits.run())]

    async def ready(self) -> None:
        """The floor ready (``floor_ready``); from now on it must stay whole between faults."""
        await floor_ready(self.demo, self.pot)
        self._probes = FloorProbes(self.demo, self.pot)
        self.guard = FloorGuard(self._probes.problems)
        self.guard.arm()
        self._tasks.append(asyncio.create_task(self.guard.run()))

    async def during(self, fault: Awaitable[T]) -> T:
        """A fault, from its injection to its recovery, with the guard disarmed."""
        if self.guard is None:
            return await fault
        async with self.guard.fault():
            return await fault

    def end_of_play(self) -> None:
        if self.guard is not None:
            self.guard.disarm()

    def judged(self) -> dict[str, Any]:
        """The run's service exits and its floor held whole, judged (after the play; a run cut
        short before the floor was ready has no floor held to judge)."""
        self.end_of_play()
        judged = {"service_exits": judge_exits(self.exits.report())}
        if self.guard is not None:
            judged["floor_held"] = judge_floor_held(self.guard.report())
        return judged

    async def close(self, cluster: bool) -> None:
        """Stop watching, then the floor (``close_floor``). The services stop before anything
        is awaited: a run cancelled meanwhile (Ctrl-C) leaves none behind."""
        self.end_of_play()
        self.exits.stop()
        for task in self._tasks:
            task.cancel()
        self.demo.stop_services()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._probes is not None:
            await self._probes.close()
        await close_floor(self.demo, self.pot, cluster)


async def play_faults(
    args: argparse.Namespace, wanted: set[int], demo: ChaosDemo, w: Watches, floor: Floor
) -> dict[str, Any]:
    """Faults 1, 2, 3, 4, 6 and 8 one after the other, each from its injection to its recovery
    with the floor guard disarmed; their figures under ``faults`` (and ``cluster_outage``)."""
    rng = random.Random(args.seed)
    names: tuple[str, ...] = ("pot_kill_9", "gateway_kill_9", "payout_kill_9", "display_kill_9")
    names += ("broker_kill_9", *(f"{service}_pause" for service, _ in args.pause))
    faults: dict[str, list[float | None]] = {name: [] for name in names}
    payout_kills: list[dict[str, Any]] = []
    pauses: dict[str, list[dict[str, Any]]] = {}
    outage: dict[str, Any] = {}

    async def at_random(low: float, high: float, fault: Callable[[], Awaitable[T]]) -> T:
        """The fault after a random wait (armed: the floor must stay whole meanwhile)."""
        await asyncio.sleep(rng.uniform(low, high))
        return await w.during(fault())

    for _ in range(args.pot_kills if 1 in wanted else 0):
        killed = await at_random(1.0, 4.0, lambda: kill_pot(demo, w.pot, rng, wait=False))
        faults["pot_kill_9"].append(killed)
    if 4 in wanted:
        killed = await at_random(1.0, 3.0, lambda: kill_gateway(demo, w.pot, rng, wait=False))
        faults["gateway_kill_9"].append(killed)
    if 6 in wanted:
        for _ in range(args.payout_kills):
            kill = await at_random(1.0, 3.0, lambda: kill_payout(demo, floor, rng, wait=False))
            payout_kills.append(kill)
            faults["payout_kill_9"].append(kill["recovery_seconds"])
        killed = await at_random(1.0, 3.0, lambda: kill_display(demo, rng, wait=False))
        faults["display_kill_9"].append(killed)
    for service, seconds in args.pause if 8 in wanted else ():
        figures = await at_random(
            1.0, 3.0, partial(pause_service, demo, w.pot, service, seconds, rng, wait=False)
        )
        pauses.setdefault(f"{service}_pause", []).append(figures)
        faults[f"{service}_pause"].append(figures["recovery_seconds"])
    for node in (1, 2) if 2 in wanted else ():
        killed = await at_random(2.0, 5.0, partial(kill_broker, demo, w.pot, node, rng, wait=False))
        faults["broker_kill_9"].append(killed)
    if 3 in wanted:
        before = len(w.exits.exits)
        figures = await w.during(stop_cluster(demo, w.pot, floor, args.outage_seconds))
        figures["services_restarted"] = sorted(e.service for e in w.exits.exits[before:])
        outage = judge_outage(figures)
    result: dict[str, Any] = {
        "faults": {name: judge_kills(name, times) for name, times in faults.items()}
    }
    if payout_kills:
        result["faults"]["payout_kill_9"]["kills"] = payout_kills
    for name, each in pauses.items():
        result["faults"][name]["pauses"] = each
    if outage:
        result["cluster_outage"] = outage
    return result


async def play_main_floor(
    args: argparse.Namespace, run_id: str, wanted: set[int]
) -> dict[str, Any]:
    """Faults 1 to 6 and 8 on one floor; the books of that floor, its service exits and the
    floor held whole between the faults and to the end of play."""
    demo = await open_floor(ChaosDemo, run_id, args.tables, args.cluster)
    device_fault_rates = DeviceFaultRates.every_kind(args.device_faults if 5 in wanted else 0)
    w = Watches(demo)
    try:
        await w.ready()
        config = sim_config(demo, args.rig_rate, args.rounds_per_minute)
        config.device_faults = device_fault_rates
        floor = Floor(config)
        playing = asyncio.create_task(floor.run())
        started = time.monotonic()
        result = await play_faults(args, wanted, demo, w, floor)
        # play on after the last fault (the floor must stay whole), and long enough for the
        # device faults to show
        played = time.monotonic() - started
        await asyncio.sleep(max(args.settle_seconds, args.min_play_seconds - played))
        w.end_of_play()
        stats = await finish_floor(demo, floor, playing)
        result.update(await judge(demo, stats, await demo_report(demo, stats), require_paid=True))
        if device_fault_rates.any:
            result["device_faults"] = judge_device_faults(args.device_faults, stats)
        result.update(w.judged())
        return result
    finally:
        await w.close(args.cluster)


def judge_device_faults(rate: float, stats: FloorStats) -> dict[str, Any]:
    """Fault 5: every copy answered duplicate, every early event refused out of order, and some
    of each kind injected (the books of the floor judge that nothing was counted twice)."""
    figures = stats.device_faults.report()
    passed = (
        figures["events_delayed"] > 0
        and 0 < figures["duplicates_answered"] == figures["duplicates_sent"]
        and 0 < figures["reorders_refused_out_of_order"] == figures["reorders_injected"]
        and figures["reorders_refused_then_accepted"] > 0
    )
    return {"rate": rate, **figures, "status": "passed" if passed else "failed"}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    run_id = uuid.uuid4().hex[:8]
    wanted = wanted_faults(args)
    result: dict[str, Any] = {"run": run_id, "faults_requested": sorted(wanted)}
    if wanted & {1, 2, 3, 4, 5, 6, 8}:
        result.update(await play_main_floor(args, run_id, wanted))
    if 7 in wanted:
        result["site_cutoff"] = await run_site_cutoff(
            run_id,
            args.tables,
            args.site_cutoff,
            args.rounds_per_minute,
            args.rig_rate,
            args.settle_seconds,
        )
    if args.wan:
        result["wan_requested"] = args.wan
        result["wan"] = await run_wan(wan_arguments(args))
    verdict = suite_verdict(result, args.allow_skip)
    result["verdict"] = verdict
    result["skipped"] = verdict["skipped"]
    result["ok"] = verdict["ok"]
    return result


def wanted_faults(args: argparse.Namespace) -> set[int]:
    wanted = {int(n) for n in args.faults.split(",")} if args.faults else {1, 4, 5, 6, 7}
    if args.cluster and not args.faults:
        wanted |= {2, 3}
    if args.pause:
        wanted.add(8)
    elif 8 in wanted:
        raise SystemExit("fault 8 needs at least one --pause SERVICE:SECONDS")
    if wanted & {2, 3} and not args.cluster:
        raise SystemExit("faults 2 and 3 need --cluster")
    if args.device_faults <= 0:
        wanted.discard(5)
    if args.site_cutoff <= 0:
        wanted.discard(7)
    return wanted


def _seconds(value: float | None) -> str:
    return "never" if value is None else f"{value:g} s"


def print_books(label: str, books: dict[str, Any]) -> None:
    """Per pot group, bet by bet; then the awards against the payouts."""
    for group, g in sorted(books.get("books_by_group", {}).items()):
        print(
            f"{label:16} {group}: accepted {g['accepted']}, collected {g['collected']}, lost "
            f"{g['lost']}, duplicated {g['duplicated']} (rounds with bets accepted "
            f"{g['rounds_accepted']}, collected {g['rounds_collected']}; with a bet lost "
            f"{g['rounds_lost']}, duplicated {g['rounds_duplicated']}, collected twice "
            f"{g['rounds_collected_twice']})"
        )
    for example in books.get("lost_examples", [])[:3] + books.get("duplicated_examples", [])[:3]:
        print(f"{label:16}   ! {example}")
    awards = books.get("awards_check")
    if awards:
        print(
            f"{label:16} awards {awards['awarded']}, payouts {awards['payouts']}: awarded twice "
            f"{len(awards['awarded_twice'])}, without payout "
            f"{len(awards['awards_without_payout'])}, payout without award "
            f"{len(awards['payouts_without_award'])}, paid twice {len(awards['paid_twice'])}, "
            f"never paid {awards.get('unpaid', 0)}"
        )
    oracle = books.get("awards_oracle")
    if oracle:
        print(
            f"{label:16} round oracle: {oracle['rounds_checked']} rounds, "
            f"{oracle['awards_checked']} awards against the rules; mismatches "
            f"{oracle['by_kind'] or 0} -> {'OK' if oracle['ok'] else 'FAILED'}"
        )
        for kind, found in oracle["examples"].items():
            for example in found[:3]:
                print(f"{label:16}   ! {kind} {example}")


def print_watched(result: dict[str, Any], label: str = "") -> None:
    """The service exits (each with its time and last error) and the floor held whole."""
    exits = result.get("service_exits")
    if exits:
        print(
            f"{label or 'service exits':16} {exits['count']}: caused by the suite "
            f"{exits['expected']}, unexpected {exits['unexpected']} -> {exits['status'].upper()}"
        )
        for e in exits["exits"]:
            mark = "  " if e["expected"] else "! "
            print(
                f"{'':16} {mark}{e['service']} (pid {e['pid']}) {e['how']} at "
                f"{e['at_seconds']:g} s{' (' + e['cause'] + ')' if e['cause'] else ''}: "
                f"{e['last_error'] or 'no error logged'}"
            )
    held = result.get("floor_held")
    if held:
        print(
            f"{label or 'floor held':16} whole between faults and to the end: "
            f"{held.get('checks', 0)} checks over {held.get('armed_seconds', 0):g} s, lapses "
            f"over {held.get('grace_seconds', 0):g} s: {len(held.get('lapses', []))} -> "
            f"{held['status'].upper()}"
        )
        for check in held["failed_checks"]:
            print(f"{'':16} ! {check}")


def print_summary(result: dict[str, Any], out: Path) -> None:
    bounds = ", ".join(f"{name} {b:g} s" for name, b in RECOVERY_BOUNDS_SECONDS.items())
    print(
        f"bounds           recovery: {bounds}; fault 3: every table closed within the heartbeat "
        f"timeout + {OUTAGE_CLOSE_MARGIN_SECONDS:g} s of the brokers becoming unreachable, the "
        f"floor whole within {OUTAGE_RECOVERY_BOUND_SECONDS:g} s of the restart"
    )
    for name, fault in result.get("faults", {}).items():
        if not fault["count"]:
            continue
        print(
            f"{name:16} x{fault['count']:<3} recovery max {_seconds(fault['recovery_max_seconds'])}"
            f" (bound {fault['bound_seconds']:g} s; over it {fault['over_bound']}, never "
            f"recovered {fault['not_recovered']}) -> {fault['status'].upper()}"
        )
        print(f"{'':16} all: {fault['recovery_seconds']}; measured {fault['measured']}")
        for n, kill in enumerate(fault.get("kills", ()), 1):
            print(
                f"{'':16} kill {n}: {kill['payouts_known_at_kill']} payouts known again after "
                f"{_seconds(kill['book_rebuilt_seconds'])}, terminals shown their open payouts "
                f"again after {_seconds(kill['terminals_back_seconds'])} "
                f"({kill['open_payouts_at_kill']} open at the kill), payment confirmed after "
                f"{_seconds(kill['payment_confirmed_seconds'])}"
                f"{'' if kill['payout_waiting'] else ' (no payout was waiting to be paid)'}"
            )
        for n, pause in enumerate(fault.get("pauses", ()), 1):
            twin = (
                f"second instance serving after {_seconds(pause.get('twin_serving_seconds'))}"
                if pause["twin"]
                else "no second instance"
            )
            aside = (
                f", resumed one NOT_SERVING after {_seconds(pause['stepped_aside_seconds'])}, "
                f"a prize paid after {_seconds(pause['paid_again_seconds'])}"
                if "stepped_aside_seconds" in pause
                else ""
            )
            print(
                f"{'':16} pause {n}: {pause['pause_seconds']:g} s stopped, {twin}{aside}; "
                f"floor back {_seconds(pause['recovery_seconds'])} after the resume"
            )
    outage = result.get("cluster_outage")
    if outage:
        killed = outage.get("stop_killed") or []
        print(
            f"cluster outage   {outage['outage_seconds']:g} s, measured from "
            f"{outage['measured_from']}; the stop took {outage['stop_took_seconds']} s (bound "
            f"{outage.get('stop_bound_seconds')} s; "
            f"{'SIGKILLed ' + ', '.join(killed) if killed else 'no broker SIGKILLed'}), brokers "
            f"unreachable {'' if outage['brokers_unreachable_verified'] else 'NOT '}verified"
        )
        print(
            f"cluster outage   every table closed after {_seconds(outage['closed_after_seconds'])}"
            f" ({_seconds(outage['closed_after_stop_started_seconds'])} after the stop began), "
            f"every controller told after {_seconds(outage['devices_told_closed_after_seconds'])}"
            f" (bound: heartbeat timeout {outage['heartbeat_timeout_seconds']:g} s + 1 s = "
            f"{outage['close_bound_seconds']:g} s); probe bets {outage['probe_bets']}"
        )
        print(
            f"cluster outage   floor whole "
            f"{_seconds(outage['recovery_after_restart_seconds'])} after the cluster was up again"
            f" (bound {outage['recovery_bound_seconds']:g} s), services restarted "
            f"{outage['services_restarted']} -> {outage['status'].upper()}"
        )
        for check in outage["failed_checks"]:
            print(f"cluster outage   ! {check}")
    if "device_faults" in result:
        f = result["device_faults"]
        print(
            f"device faults    rate {f['rate']}: events delayed {f['events_delayed']}, "
            f"duplicates answered {f['duplicates_answered']}/{f['duplicates_sent']}, "
            f"reorders refused then accepted {f['reorders_refused_then_accepted']}/"
            f"{f['reorders_injected']} -> {f['status'].upper()}"
        )
    if "rounds" in result:
        print(
            f"rounds {result['rounds']}, accepted {result['bets_accepted']}, collected "
            f"{result['collected']}, lost {result['lost']}, duplicated {result['duplicated']}, "
            f"duplicate payouts {result['duplicate_payouts']}, audit "
            f"{'OK' if result['audit_ok'] else 'FAILED'}"
        )
        print_books("books", result)
        chain = result["audit_chain"]
        print(
            f"access log's chain      {chain['entries']} entries in {chain['chains']} chains: "
            f"{'OK' if chain['ok'] else 'TAMPERED: ' + str(chain['first_break'])}"
        )
        print(f"books            -> {'PASSED' if result['books_ok'] else 'FAILED'}")
    print_watched(result)
    site = result.get("site_cutoff")
    if site and not site["status"].startswith("skipped"):
        print(
            f"site cut-off     {site['cut_seconds']:g} s: tables closed after "
            f"{site['closed_after_seconds']} s (heartbeat timeout "
            f"{site['heartbeat_timeout_seconds']:g} s), probe bet {site['probe_bet_during_cut']}, "
            f"other site rounds during the cut {site['other_site_rounds_during_cut']}; after the "
            f"restore reopened in {site['reopened_after_restore_seconds']} s, spool delivered in "
            f"{site['spool_delivered_after_restore_seconds']} s"
        )
        print(
            f"site cut-off     rounds {site['rounds']}, voided {site['rounds_voided']}, accepted "
            f"{site['bets_accepted']}, collected {site['collected']}, lost {site['lost']}, "
            f"duplicated {site['duplicated']}, duplicate payouts {site['duplicate_payouts']}, "
            f"audit {'OK' if site['audit_ok'] else 'FAILED'} -> {site['status'].upper()}"
        )
        print_books("site cut-off", site)
    elif site:
        print(f"site cut-off     SKIPPED: {result['skipped']['site_cutoff']}")
    if "wan" in result:
        print(render_wan(result["wan"]))
    verdict = result["verdict"]
    line = "OK" if verdict["ok"] else f"FAILED: {', '.join(verdict['failed'])}"
    if verdict["skipped"]:
        allowed = "allowed by --allow-skip" if verdict["allow_skip"] else "a skip fails the suite"
        line += f" (not run, so not passed: {', '.join(verdict['skipped'])}; {allowed})"
    print(f"{line} -> {out / 'report.json'}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--pot-kills", type=int, default=20, help="fault 1: kill -9s of the pot")
    parser.add_argument(
        "--payout-kills", type=int, default=5, help="fault 6: kill -9s of the payout service"
    )
    parser.add_argument(
        "--allow-skip",
        action="store_true",
        help="a requested fault that could not run (fault 7 without root) does not fail the suite",
    )
    parser.add_argument("--tables", type=int, default=20)
    parser.add_argument("--rounds-per-minute", type=float, default=60)
    parser.add_argument("--rig-rate", type=float, default=0.05)
    parser.add_argument("--settle-seconds", type=float, default=5)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--out", default="build/chaos")
    parser.add_argument(
        "--cluster", action="store_true", help="run on the local 3-broker cluster and kill brokers"
    )
    parser.add_argument("--outage-seconds", type=float, default=30, help="whole-cluster stop")
    parser.add_argument(
        "--device-faults",
        type=float,
        default=0.05,
        metavar="RATE",
        help="fault 5: chance per device event of a duplicate, of a delay and of a reorder",
    )
    parser.add_argument(
        "--site-cutoff",
        type=float,
        default=20,
        metavar="SECONDS",
        help="fault 7: how long the site's WAN link stays cut (0 skips the fault)",
    )
    parser.add_argument(
        "--faults", default="", help="comma-separated fault numbers to run (default 1,4,5,6,7)"
    )
    parser.add_argument(
        "--pause",
        type=pause_spec,
        action="append",
        default=[],
        metavar="SERVICE:SECONDS",
        help="fault 8: SIGSTOP the service (pot, payout, gateway, display) for SECONDS while a "
        "second instance starts (pot, payout); repeatable",
    )
    parser.add_argument(
        "--min-play-seconds", type=float, default=20, help="the main floor plays at least this"
    )
    parser.add_argument(
        "--wan",
        type=wan_profiles,
        default=[],
        metavar="PROFILE[,PROFILE]",
        help=f"a remote site over these WAN profiles ({', '.join(PROFILES)}; loadtest.wan, root)",
    )
    args = parser.parse_args()
    result = asyncio.run(run(args))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(result, indent=2) + "\n")
    print_summary(result, out)
    raise SystemExit(0 if result["ok"] else 1)


if __name__ == "__main__":
    main()
