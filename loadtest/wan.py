"""A remote site over a real WAN (issue 28): slow, jittery, lossy, thin and flapping links, judged.

    python -m loadtest.wan --profiles metro,regional,satellite        (root; `make wan`)
    python -m loadtest.wan --profiles regional --short                (what `make test` runs)

The floor of the site cut-off fault (``loadtest.site_cutoff``: site B's table gateway inside a
network namespace, on its own broker), except that the site reaches the broker only through
Toxiproxy (``loadtest.toxiproxy``) on the central side of its WAN link: the broker gets a second
listener for the site that advertises the proxy's address, so every connection the site's clients
open, bootstrap or after metadata, crosses the proxy. Each profile puts its toxics on that path
(:data:`PROFILES`; the delays are one way, in each direction, as ``netem`` states them), then,
while the floor plays:

1. **steady**: the profile alone, with :data:`STALLS` stalls of :data:`STALL_SECONDS` (the WAN
   link down, below the gateway's heartbeat timeout);
2. **cut**: the link down for ``--cut`` seconds (30), then back;
3. **flap**: the link down :data:`FLAP_DOWN` s every :data:`FLAP_UP` s for ``--flap`` seconds (120).

Judged at the remote site, with the bounds in the report (``build/wan/report.json``: per profile
the figures, their bounds and ``status``; ``ok`` for the run; exit 1 when a bound is missed):

- ``spurious_closes`` = 0: no site table is told the progressive closed during the steady phase
  (latency, jitter, stalls shorter than the heartbeat timeout);
- the cut closes every site table within the heartbeat timeout + 1 s and reopens them within
  :data:`REOPEN_SECONDS` of the link's return; after each flap every site table is open again
  within :data:`REOPEN_SECONDS`;
- nothing lost or duplicated, bet by bet and award by award, every award paid once, the audit
  (``jackpot.sim.books.judge``); what the gateway spooled during the cut (its spool depth, read
  every 0.2 s) delivered within :data:`REOPEN_SECONDS` of the link's return;
- p99 lock-to-sign of the remote site's tables within 3 round trips + 150 ms of the local
  site's p99, over the steady phase outside the stalls (both figures in the report);
- the site's own display (``display-b``, inside the namespace, reading the pot over the WAN like
  the gateway; its ``/api/signs`` read every :data:`SIGN_SAMPLE_SECONDS`): no sign
  shown closed in the steady phase, every sign live and showing what the pot published within
  :data:`FRESH_SECONDS` by :data:`REOPEN_SECONDS` after the cut's end, and never above every sign
  value the pot published over the display's ``stale_seconds`` and a round trip before (M3 at a
  remote site: a live sign lags the pot by at most that, then shows closed; after a cut it must
  not come back showing an amount the pot no longer holds). The pot's values are its updates on
  the pot updates topic, read after the run, timed by their ``produced_at``.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import os
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jackpot.display.settings import DisplaySettings
from jackpot.gateway.settings import GatewaySettings
from jackpot.platform.kafka import KafkaConnection
from jackpot.platform.settings import load
from jackpot.sim.books import finish_floor, judge
from jackpot.sim.floor import Floor
from jackpot.sim.floor_stats import FloorStats
from jackpot.tools.demo_floor import (
    METRICS,
    REPO,
    sim_config,
)
from jackpot.tools.demo_report import report as demo_report
from jackpot.v1 import pot_pb2
from loadtest.free_ports import free_port
from loadtest.netns import NetnsUnavailable, SiteNetwork
from loadtest.site_cutoff import (
    BROKER_PORT,
    PROBE_TABLE,
    SITE,
    SITE_GATEWAY,
    SiteDemo,
    first_status_after,
    gateway_metrics,
    new_site_network,
    start_broker,
    stop_broker,
    wait_open,
)
from loadtest.toxiproxy import Toxic, Toxiproxy

# The broker's controller listens on BROKER_PORT + 1 (kafka.sh); the proxy's address, which the
# site listener advertises, and the listener behind it come after.
PROXY_PORT = BROKER_PORT + 2
SITE_LISTENER_PORT = BROKER_PORT + 3
STALL_SECONDS = 2.0
STALLS = 3
FLAP_UP, FLAP_DOWN = 20.0, 3.0
REOPEN_SECONDS = 10.0  # a table reopens within this long of the link's return
LATENCY_MARGIN_MS = 150.0  # remote p99 <= local p99 + 3 round trips + this
AFTER_STALL_SECONDS = 3.0  # locks this long after a stall are the stall's, not the profile's
OUT = REPO / "build" / "wan"
# The site's own display (its signs read the pot over the WAN), inside the site's namespace.
SITE_DISPLAY = "display-b"
SITE_DISPLAY_PORTS = {"grpc": 25056, "http": 8081, "metrics": 9106}
SIGN_SAMPLE_SECONDS = 0.25
# After a cut a site sign "shows the pot again" when it shows a value the pot published this
# recently (the pot moves several times a second; the WAN delays the site by its one-way delay).
FRESH_SECONDS = 1.0
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass(frozen=True, slots=True)
class Profile:
    """A WAN: one-way delay and jitter in each direction, a share of connections reset, a rate."""

    name: str
    delay_ms: int
    jitter_ms: int
    reset_share: float = 0.0
    rate_kb_per_second: int = 0  # 0: as fast as the machine

    @property
    def round_trip_ms(self) -> int:
        return 2 * self.delay_ms

    def toxics(self) -> list[Toxic]:
        out = []
        for stream in ("downstream", "upstream"):
            delay = {"latency": self.delay_ms, "jitter": self.jitter_ms}
            out.append(Toxic(f"delay-{stream}", "latency", stream, delay))
            if self.rate_kb_per_second:
                rate = {"rate": self.rate_kb_per_second}
                out.append(Toxic(f"rate-{stream}", "bandwidth", stream, rate))
        if self.reset_share:
            reset = {"timeout": 0}
            out.append(Toxic("reset", "reset_peer", "downstream", reset, self.reset_share))
        return out


PROFILES = {
    "metro": Profile("metro", 5, 2),
    "regional": Profile("regional", 40, 15, reset_share=0.005),
    "satellite": Profile("satellite", 300, 50, rate_kb_per_second=125),  # 1 Mbit/s
}


@dataclass
class Timeline:
    """When each phase ran (time.monotonic()), to judge what the floor saw in it."""

    steady: tuple[float, float] = (0.0, 0.0)
    stalls: list[tuple[float, float]] = field(default_factory=list)
    cut: tuple[float, float] = (0.0, 0.0)
    flaps: list[tuple[float, float]] = field(default_factory=list)
    spool: list[tuple[float, float]] = field(default_factory=list)  # (when, depth) around the cut
    signs: list[SignSample] = field(default_factory=list)
    pot: PotSeries = field(default_factory=dict)  # what the pot published, read after the run


class WanDemo(SiteDemo):
    """The site floor with a display of the site's own, inside its namespace: the site's signs
    follow the pot over the WAN, as the multi-site overlay runs them."""

    def start_services(self) -> None:
        super().start_services()
        lan = self.network.site_lan
        env = {
            **self.service_env(self._display_env()),
            "KAFKA_BOOTSTRAP_SERVERS": self.site_bootstrap,
            "JACKPOT_DISPLAY_GRPC": f"{lan}:{SITE_DISPLAY_PORTS['grpc']}",
            "JACKPOT_DISPLAY_HTTP": f"{lan}:{SITE_DISPLAY_PORTS['http']}",
            "JACKPOT_DISPLAY_METRICS_HOST": lan,
            "JACKPOT_DISPLAY_METRICS_PORT": str(SITE_DISPLAY_PORTS["metrics"]),
        }
        log = (self.state / f"{SITE_DISPLAY}.log").open("ab")
        self.processes[SITE_DISPLAY] = subprocess.Popen(
            self.network.command(sys.executable, "-m", "jackpot.cli", "display"),
            env={**os.environ, **env},
            stdout=log,
            stderr=log,
            start_new_session=True,
        )

    @property
    def site_signs(self) -> str:
        return f"http://{self.network.site_lan}:{SITE_DISPLAY_PORTS['http']}/api/signs"

    async def wait_site_display(self, within_seconds: float = 60) -> None:
        deadline = time.monotonic() + within_seconds
        while time.monotonic() < deadline:
            if self.processes[SITE_DISPLAY].poll() is not None:
                raise RuntimeError(f"{SITE_DISPLAY} exited; see {self.state}/{SITE_DISPLAY}.log")
            if await asyncio.to_thread(read_signs, self.site_signs):
                return
            await asyncio.sleep(0.2)
        raise RuntimeError(f"{SITE_DISPLAY} shows no sign after {within_seconds:.0f} s")


def read_signs(url: str) -> list[dict[str, Any]]:
    """A display's signs (``/api/signs``), [] when it does not answer."""
    try:
        with _NO_PROXY.open(url, timeout=1) as page:
            return list(json.loads(page.read()))
    except (OSError, ValueError):
        return []


# (time.monotonic(), the display ("site"), pot group, live, amount) of each sign read
SignSample = tuple[float, str, str, bool, int]
# per pot group: the times (time.monotonic()) and the sign values the pot published, in order
PotSeries = dict[str, tuple[list[float], list[int]]]


async def sample_signs(demo: WanDemo, into: list[SignSample]) -> None:
    """The site display's signs every SIGN_SAMPLE_SECONDS until cancelled."""
    while True:
        signs = await asyncio.to_thread(read_signs, demo.site_signs)
        now = time.monotonic()
        for sign in signs:
            into.append((now, "site", sign["pot_group_id"], bool(sign["live"]), sign["amount"]))
        await asyncio.sleep(SIGN_SAMPLE_SECONDS)


# ----------------------------------------------------------------------------- the run


async def run_profile(profile: Profile, args: argparse.Namespace) -> dict[str, Any]:
    """One profile from start to end; ``{"status": "skipped: <why>"}`` without netns."""
    run_id = uuid.uuid4().hex[:8]
    try:
        network, _ = await new_site_network(run_id)
    except NetnsUnavailable as error:
        return {"status": f"skipped: {error}"}
    state = REPO / ".run" / "wan" / f"{run_id}-{profile.name}"
    state.mkdir(parents=True, exist_ok=True)
    central = network.central
    broker = {
        "host": central,
        "port": BROKER_PORT,
        "state": str(state),
        "site_listener": f"{central}:{SITE_LISTENER_PORT}",
        "site_advertised": f"{central}:{PROXY_PORT}",
    }
    proxy = Toxiproxy(state / "toxiproxy.log", api_port=free_port())
    demo: WanDemo | None = None
    try:
        network.record(broker=broker)
        proxy.start()
        proxy.proxy("kafka", f"{central}:{PROXY_PORT}", f"{central}:{SITE_LISTENER_PORT}")
        await asyncio.to_thread(start_broker, broker)
        demo = WanDemo(
            args.tables,
            state,
            run_id,
            network,
            f"{central}:{BROKER_PORT}",
            site_bootstrap=f"{central}:{PROXY_PORT}",
        )
        await demo.create_topics()
        demo.start_services()
        # a run killed midway leaves these to the next run's clean_stale
        pids = [p.pid for p in demo.processes.values()] + [proxy.pid]
        network.record(broker=broker, service_pids=[pid for pid in pids if pid is not None])
        await demo.wait_healthy()
        await demo.create_groups()
        await wait_open(demo)
        await demo.wait_site_display()
        for toxic in profile.toxics():
            proxy.add("kafka", toxic)
        applied = proxy.toxics("kafka")  # as the proxy holds them: the run's evidence
        result = await play(demo, network, profile, args)
        result["toxics"] = [
            {k: t[k] for k in ("type", "stream", "toxicity", "attributes")} for t in applied
        ]
        return result
    finally:
        if demo is not None:
            demo.stop_services()
        proxy.stop()
        await asyncio.to_thread(stop_broker, broker)
        network.destroy()


async def play(
    demo: WanDemo, network: SiteNetwork, profile: Profile, args: argparse.Namespace
) -> dict[str, Any]:
    """The three phases while the floor plays, then the books and the judgement."""
    floor = Floor(sim_config(demo, args.rig_rate, args.rounds_per_minute))
    playing = asyncio.create_task(floor.run())
    timeline = Timeline()
    sampling = asyncio.create_task(sample_signs(demo, timeline.signs))
    await asyncio.sleep(args.warmup)
    started = time.monotonic()
    gap = args.steady / (STALLS + 1)
    for _ in range(STALLS):
        await asyncio.sleep(gap)
        timeline.stalls.append(await link_down(network, STALL_SECONDS))
    await asyncio.sleep(gap)
    timeline.steady = (started, time.monotonic())
    spool = asyncio.create_task(spool_through_cut(network, args.cut + REOPEN_SECONDS))
    timeline.cut = await link_down(network, args.cut)
    await asyncio.sleep(REOPEN_SECONDS)
    timeline.spool = await spool
    flap_end = time.monotonic() + args.flap
    while time.monotonic() + FLAP_DOWN < flap_end:
        await asyncio.sleep(FLAP_UP)
        timeline.flaps.append(await link_down(network, FLAP_DOWN))
    await asyncio.sleep(REOPEN_SECONDS + args.settle)
    sampling.cancel()
    stats = await finish_floor(demo, floor, playing)
    books = await judge(demo, stats, await demo_report(demo, stats), require_paid=True)
    timeline.pot = await read_pot_series(demo, time.time() - time.monotonic())
    gateway = load(GatewaySettings, file=demo.state / f"{SITE_GATEWAY}.json")
    heartbeat = gateway.heartbeat_timeout_seconds
    return judged(demo, stats, books, profile, timeline, heartbeat, expect_flaps=args.flap > 0)


async def spool_through_cut(network: SiteNetwork, seconds: float) -> list[tuple[float, float]]:
    """The site gateway's spool depth (time.monotonic(), records) every 0.2 s for ``seconds``:
    what it held back while the link was cut, and when that was delivered after."""
    samples = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        page = await asyncio.to_thread(gateway_metrics, network.site_lan, METRICS[SITE_GATEWAY])
        if "jackpot_gateway_spool_depth_records" in page:
            samples.append((time.monotonic(), page["jackpot_gateway_spool_depth_records"]))
        await asyncio.sleep(0.2)
    return samples


async def link_down(network: SiteNetwork, seconds: float) -> tuple[float, float]:
    """The site's WAN link down for ``seconds``: (when it went down, when it came back)."""
    down = time.monotonic()
    await asyncio.to_thread(network.cut)
    await asyncio.sleep(seconds)
    await asyncio.to_thread(network.restore)
    return down, time.monotonic()


# --------------------------------------------------------------------------- the judge


def judged(
    demo: SiteDemo,
    stats: FloorStats,
    books: dict[str, Any],
    profile: Profile,
    timeline: Timeline,
    heartbeat: float,
    expect_flaps: bool = True,
) -> dict[str, Any]:
    """The figures of a profile's run, their bounds and its status."""
    site = {t.table_id for t in demo.tables if t.site == SITE and t is not PROBE_TABLE}
    local = {t.table_id for t in demo.tables if t.site != SITE}
    changes = stats.progressive_changes
    calm = [timeline.steady]
    stalled = [(a, b + AFTER_STALL_SECONDS) for a, b in timeline.stalls]
    remote_p99 = p99_ms(locks_within(stats, site, calm, stalled))
    local_p99 = p99_ms(locks_within(stats, local, calm, stalled))
    cut_down, cut_up = timeline.cut
    # A live sign may lag the pot by the display's stale_seconds at most (then it shows closed,
    # D5), plus the WAN's round trip: the window M3 is judged over at the site.
    stale = float(DisplaySettings.model_fields["stale_seconds"].default)
    allowance = stale + profile.round_trip_ms / 1000
    figures = {
        "spurious_closes": closes_within(changes, site, [timeline.steady]),
        "cut_closed_after_seconds": first_status_after(changes, site, cut_down, is_open=False),
        "cut_reopened_after_seconds": first_status_after(changes, site, cut_up, is_open=True),
        "flaps": len(timeline.flaps),
        "flaps_not_reopened": [
            round(up - timeline.steady[0], 1)
            for _, up in timeline.flaps
            if not all_open_at(changes, site, up + REOPEN_SECONDS)
        ],
        "spool_max_records_during_cut": max((depth for _, depth in timeline.spool), default=None),
        "spool_delivered_after_seconds": delivered_after(timeline.spool, cut_up),
        "site_signs_closed_in_steady": signs_closed_within(timeline.signs, [timeline.steady]),
        "site_signs_agree_after_cut_seconds": signs_agree_after(
            timeline.signs, timeline.pot, cut_up, FRESH_SECONDS
        ),
        "site_signs_overstated": len(over := overstated(timeline.signs, timeline.pot, allowance)),
        "site_signs_overstated_examples": [
            (round(at - timeline.steady[0], 2), *rest) for at, *rest in over[:5]
        ],
        # seconds from the steady phase's start, to place the examples
        "cut_seconds_from_start": [round(t - timeline.steady[0], 2) for t in timeline.cut],
        "remote_p99_lock_to_sign_ms": remote_p99,
        "local_p99_lock_to_sign_ms": local_p99,
        "lost_pesos": books.get("lost"),
        "duplicated_pesos": books.get("duplicated"),
        "books_ok": books.get("books_ok"),
    }
    bounds = {
        "spurious_closes": 0,
        "cut_closed_after_seconds": heartbeat + 1,
        "cut_reopened_after_seconds": REOPEN_SECONDS,
        "spool_delivered_after_seconds": REOPEN_SECONDS,
        "site_signs_closed_in_steady": 0,
        "site_signs_agree_after_cut_seconds": REOPEN_SECONDS,
        "site_signs_overstated": 0,
        "remote_p99_lock_to_sign_ms": None
        if local_p99 is None
        else round(local_p99 + 3 * profile.round_trip_ms + LATENCY_MARGIN_MS, 1),
    }
    missed = missed_bounds(figures, bounds, expect_flaps)
    return {
        "profile": profile.name,
        "round_trip_ms": profile.round_trip_ms,
        "heartbeat_timeout_seconds": heartbeat,
        "figures": figures,
        "bounds": bounds,
        "missed": missed,
        "books": books,
        "status": "failed" if missed else "passed",
    }


def missed_bounds(
    figures: dict[str, Any], bounds: dict[str, Any], expect_flaps: bool = True
) -> list[str]:
    missed = []
    for name, bound in bounds.items():
        value = figures[name]
        if bound is None or value is None or value > bound:
            missed.append(f"{name} {value} (bound {bound})")
    if figures["flaps_not_reopened"]:
        missed.append(f"not reopened after the flaps at {figures['flaps_not_reopened']} s")
    if expect_flaps and not figures["flaps"]:
        missed.append("no flap ran")
    if not figures["books_ok"]:
        missed.append("the books")
    return missed


def signs_closed_within(samples: list[SignSample], windows: list[tuple[float, float]]) -> int:
    """The site display's readings inside ``windows`` that showed a sign closed (D5)."""
    return sum(
        1
        for at, where, _, live, _ in samples
        if where == "site" and not live and any(a <= at <= b for a, b in windows)
    )


def signs_agree_after(
    samples: list[SignSample], pot: PotSeries, since: float, fresh: float
) -> float | None:
    """Seconds from ``since`` until every group's site sign is live and shows an amount the pot
    published in the last ``fresh`` seconds (None: some group never did)."""
    agreed: dict[str, float] = {}
    groups = {group for _, where, group, _, _ in samples if where == "site"}
    for at, where, group, live, amount in samples:
        wanted = where == "site" and at >= since and live and group not in agreed
        if wanted and amount in published(pot, group, at - fresh, at):
            agreed[group] = at - since
    if not groups or set(agreed) != groups:
        return None
    return round(max(agreed.values()), 2)


def overstated(
    samples: list[SignSample], pot: PotSeries, allowance: float
) -> list[tuple[float, str, int, int]]:
    """The site display's live readings above every sign value the pot published for that group
    in the ``allowance`` seconds before (M3: a sign never shows more than the pot holds; a live
    sign lags the pot by the display's stale_seconds at most, then shows closed): (when, group,
    shown, highest the pot published then)."""
    found = []
    for at, where, group, live, amount in samples:
        if where != "site" or not live:
            continue
        seen = published(pot, group, at - allowance, at)
        if seen and amount > max(seen):
            found.append((round(at, 2), group, amount, max(seen)))
    return found


def published(pot: PotSeries, group: str, start: float, end: float) -> list[int]:
    """The sign values the pot published for ``group`` from ``start`` to ``end``, and the one in
    force at ``start`` (the last before it)."""
    times, values = pot.get(group, ([], []))
    first = max(0, bisect.bisect_left(times, start) - 1)
    return values[first : bisect.bisect_right(times, end)]


async def read_pot_series(demo: SiteDemo, clock_offset: float) -> PotSeries:
    """Per group, when (time.monotonic(), from each update's produced_at less ``clock_offset``)
    the pot published which sign value: the pot updates topic read whole (this run's, short)."""
    series: dict[str, tuple[list[float], list[int]]] = {}
    connection = KafkaConnection({"bootstrap_servers": demo.bootstrap})
    async with connection.reader(demo.topic("pot-updates")) as reader:
        firsts, ends = await reader.bounds()
        async for record in reader.records(firsts, ends):
            update = pot_pb2.PotUpdate.FromString(record.value or b"")
            at = update.produced_at.seconds + update.produced_at.nanos / 1e9 - clock_offset
            times, values = series.setdefault(update.pot_group_id, ([], []))
            times.append(at)
            values.append(update.sign_value)
    for times, values in series.values():  # the partitions' records in time order per group
        order = sorted(range(len(times)), key=times.__getitem__)
        times[:], values[:] = [times[i] for i in order], [values[i] for i in order]
    return series


def delivered_after(samples: list[tuple[float, float]], since: float) -> float | None:
    """Seconds from ``since`` until the spool was first seen empty (None: never, or no sample)."""
    empty = [at for at, depth in samples if at >= since and depth == 0]
    return round(empty[0] - since, 2) if empty else None


def closes_within(
    changes: dict[str, list[tuple[float, bool]]],
    tables: set[str],
    windows: list[tuple[float, float]],
) -> int:
    """How often a table of ``tables`` was told closed inside one of ``windows``."""
    return sum(
        1
        for table in tables
        for at, is_open in changes.get(table, [])
        if not is_open and any(a <= at <= b for a, b in windows)
    )


def all_open_at(changes: dict[str, list[tuple[float, bool]]], tables: set[str], at: float) -> bool:
    """Whether every table's last status before ``at`` was open (a table never told is open)."""
    for table in tables:
        before = [status for when, status in changes.get(table, []) if when <= at]
        if before and not before[-1]:
            return False
    return True


def locks_within(
    stats: FloorStats,
    tables: Iterable[str],
    windows: list[tuple[float, float]],
    excluded: list[tuple[float, float]],
) -> list[float]:
    """Lock-to-sign seconds of ``tables`` whose sign moved inside ``windows`` and outside
    ``excluded``."""
    return [
        seconds
        for table in tables
        for at, seconds in stats.lock_to_sign_by_table.get(table, [])
        if any(a <= at <= b for a, b in windows) and not any(a <= at <= b for a, b in excluded)
    ]


def p99_ms(seconds: list[float]) -> float | None:
    if not seconds:
        return None
    ordered = sorted(seconds)
    return round(1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 1)


# ----------------------------------------------------------------------------- the command


async def run(args: argparse.Namespace) -> dict[str, Any]:
    results = {}
    for name in args.profiles:
        results[name] = await run_profile(PROFILES[name], args)
    statuses = [r["status"] for r in results.values()]
    return {"profiles": results, "ok": all(s == "passed" for s in statuses)}


def render(result: dict[str, Any]) -> str:
    lines = []
    for name, run in result["profiles"].items():
        if "figures" not in run:
            lines.append(f"{name:<10} {run['status']}")
            continue
        f, b = run["figures"], run["bounds"]
        lines.append(
            f"{name:<10} {run['status']}: spurious closes {f['spurious_closes']}, cut closed "
            f"{f['cut_closed_after_seconds']} s (<= {b['cut_closed_after_seconds']}) reopened "
            f"{f['cut_reopened_after_seconds']} s (<= {b['cut_reopened_after_seconds']}), "
            f"{f['flaps']} flaps, p99 remote {f['remote_p99_lock_to_sign_ms']} ms "
            f"(<= {b['remote_p99_lock_to_sign_ms']}) local {f['local_p99_lock_to_sign_ms']} ms, "
            f"lost {f['lost_pesos']} duplicated {f['duplicated_pesos']}; site signs: closed in "
            f"steady {f['site_signs_closed_in_steady']}, the pot's again after "
            f"{f['site_signs_agree_after_cut_seconds']} s, above the pot "
            f"{f['site_signs_overstated']}"
        )
        lines += [f"  missed: {m}" for m in run["missed"]]
    lines.append("WAN: ok" if result["ok"] else "WAN: FAILED")
    return "\n".join(lines)


def profiles(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in PROFILES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"--profiles {text!r}: known profiles are {', '.join(PROFILES)}"
        )
    return names


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--profiles", type=profiles, default=list(PROFILES))
    parser.add_argument(
        "--short", action="store_true", help="steady 20 s and a 10 s cut, no flap (make test)"
    )
    parser.add_argument("--steady", type=float, default=60.0, help="seconds of the profile alone")
    parser.add_argument("--cut", type=float, default=30.0, help="seconds of the cut")
    parser.add_argument("--flap", type=float, default=120.0, help="seconds of the flapping link")
    parser.add_argument("--tables", type=int, default=8)
    parser.add_argument("--rounds-per-minute", type=float, default=60)
    parser.add_argument("--rig-rate", type=float, default=0.05)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--settle", type=float, default=5.0)
    parser.add_argument("--out", default=str(OUT))
    return parser


def wan_arguments(suite: argparse.Namespace) -> argparse.Namespace:
    """The WAN run's arguments within the fault suite (``loadtest.chaos --wan``): its profiles,
    tables, rate and rig rate, the rest as `python -m loadtest.wan` has them."""
    args = parser().parse_args([])
    args.profiles = suite.wan
    args.rounds_per_minute, args.rig_rate = suite.rounds_per_minute, suite.rig_rate
    return args


def main() -> None:
    args = parser().parse_args()
    if args.short:
        args.steady, args.cut, args.flap = 20.0, 10.0, 0.0
    result = asyncio.run(run(args))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(render(result))
    print(f"report: {out / 'report.json'}")
    sys.exit(0 if result["ok"] else 1)


if __name__ == "__main__":
    main()
