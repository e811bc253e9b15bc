"""Fault 7 of the fault suite: a site cut off from the central cluster, on real network namespaces.

    python -m loadtest.chaos --faults 7 --site-cutoff 20        (root only; skipped otherwise)

A floor as in `jackpot demo`, except that site B's table gateway runs inside the site's network
namespace (``loadtest.netns.SiteNetwork``) and Kafka is a broker of its own, started by
``deploy/local/kafka.sh up`` on the central address (``KAFKA_HOST``; ``KAFKA_PORT`` 9492; its data
under the run's directory), which the host's services reach locally and the site only over its
WAN link. Site B's devices (the simulator, on the host) reach their gateway over the site's LAN.

While the floor plays, the WAN link is cut for ``cut_seconds``. Measured and judged:

- the cut holds: from inside the site the broker is unreachable, and the gateway stays reachable
  from its devices (real TCP connections, before, during and after the cut);
- the site's tables fail closed (rule D5) within the gateway's heartbeat timeout + 1 s: the
  gateway's ``jackpot_gateway_tables_closed`` counts all of them, and a bet on a probe table of the
  site (a round never locked, so no money moves) is refused ``PROGRESSIVE_CLOSED``; the seconds
  until every site device was pushed ``ProgressiveStatus`` closed are reported too;
- site A keeps playing: rounds it settled during the cut (must be > 0);
- after the link is back: seconds until the site's tables reopen and until its spool is empty
  (what was spooled meanwhile delivered), and the books as for every fault (audit, pesos lost and
  duplicated, payouts made twice: all 0).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from jackpot.domain.cards import Game
from jackpot.gateway.settings import GatewaySettings
from jackpot.platform.settings import load
from jackpot.sim.books import finish_floor, judge
from jackpot.sim.device_faults import answer
from jackpot.sim.floor import Floor
from jackpot.tools.demo_floor import (
    KAFKA_SH,
    REPO,
    Demo,
    sim_config,
    wait_progressive_open,
)
from jackpot.tools.demo_report import report as demo_report
from jackpot.tools.demo_tables import (
    LIMITS,
    POKER_GROUP,
    DemoTable,
)
from loadtest.floor_ports import offset_ports
from loadtest.netns import NetnsUnavailable, SiteNetwork, clean_stale, unavailable_reason

SITE = "B"
SITE_GATEWAY = "gateway-b"
BROKER_PORT = 9492
PROBE_TABLE = DemoTable("B-PRB-99", Game.CARIBBEAN, SITE, POKER_GROUP)
RECOVERY_LIMIT_SECONDS = 180
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _broker_environment(broker: dict[str, Any]) -> dict[str, str]:
    """kafka.sh's variables for ``broker`` (with ``site_listener`` and ``site_advertised``: the
    listener a remote site reaches through its WAN proxy, loadtest.wan)."""
    env = {
        **os.environ,
        "KAFKA_HOST": str(broker["host"]),
        "KAFKA_PORT": str(broker["port"]),
        "JACKPOT_STATE": str(broker["state"]),
    }
    if broker.get("site_listener"):
        env["KAFKA_SITE_LISTENER"] = str(broker["site_listener"])
        env["KAFKA_SITE_ADVERTISED"] = str(broker["site_advertised"])
    return env


def start_broker(broker: dict[str, Any]) -> None:
    subprocess.run([str(KAFKA_SH), "up"], env=_broker_environment(broker), check=True)


def stop_broker(broker: dict[str, Any]) -> None:
    subprocess.run([str(KAFKA_SH), "down"], env=_broker_environment(broker), check=False)


def gateway_metrics(host: str, port: int) -> dict[str, float]:
    """The unlabelled samples of a gateway's /metrics ({} when it does not answer)."""
    samples = {}
    with (
        contextlib.suppress(OSError),
        _NO_PROXY.open(f"http://{host}:{port}/metrics", timeout=2) as page,
    ):
        for line in page.read().decode().splitlines():
            name, _, value = line.partition(" ")
            if name and not name.startswith("#") and "{" not in name:
                samples[name] = float(value)
    return samples


class SiteDemo(Demo):
    """The demo floor on the central broker, with site B's gateway inside the site namespace."""

    def __init__(
        self,
        tables: int,
        state_dir: Path,
        run_id: str,
        network: SiteNetwork,
        bootstrap: str,
        site_bootstrap: str = "",
    ) -> None:
        super().__init__(tables, state_dir, run_id, **offset_ports())
        self.tables.append(PROBE_TABLE)
        self.network = network
        self.bootstrap = bootstrap
        # the brokers as the site reaches them (over its WAN proxy, loadtest.wan), else directly
        self.site_bootstrap = site_bootstrap or bootstrap

    def site_target(self, site: str) -> str:
        if site == SITE:
            return f"{self.network.site_lan}:{self.ports[SITE_GATEWAY]}"
        return super().site_target(site)

    def target(self, name: str) -> str:
        if name == SITE_GATEWAY:
            return self.site_target(SITE)
        return super().target(name)

    def gateway_hosts(self, name: str) -> tuple[str, ...]:
        if name == SITE_GATEWAY:  # its devices dial it on the site's LAN address
            return (self.network.site_lan, *super().gateway_hosts(name))
        return super().gateway_hosts(name)

    def played_tables(self) -> list[DemoTable]:
        return [t for t in self.tables if t is not PROBE_TABLE]

    def _spawn(self, name: str, args: list[str], env: dict[str, str]) -> None:
        if name != SITE_GATEWAY:
            super()._spawn(name, args, env)
            return
        config_path = Path(args[-1])
        config = json.loads(config_path.read_text())
        config["grpc_address"] = self.site_target(SITE)
        config["metrics_host"] = self.network.site_lan
        config_path.write_text(json.dumps(config, indent=2))
        self._commands[name] = (args, env)
        log = open(self.state / f"{name}.log", "ab")  # noqa: SIM115 (the child owns it)
        self.processes[name] = subprocess.Popen(
            self.network.command(sys.executable, "-m", "jackpot.cli", *args),
            env={**os.environ, "KAFKA_BOOTSTRAP_SERVERS": self.site_bootstrap, **env},
            stdout=log,
            stderr=log,
            start_new_session=True,
        )

    async def wait_serving(self, name: str, within_seconds: float = 60) -> float:
        if name != SITE_GATEWAY:
            return await super().wait_serving(name, within_seconds)
        started = time.monotonic()
        host, port = self.network.site_lan, self.ports[name]
        while time.monotonic() - started < within_seconds:
            if self.processes[name].poll() is not None:
                raise RuntimeError(f"{name} exited; see {self.state}/{name}.log")
            if await asyncio.to_thread(self.network.reachable_from_host, host, port, 1):
                return time.monotonic() - started
            await asyncio.sleep(0.1)
        raise RuntimeError(f"{name} not serving on {host}:{port} after {within_seconds:.0f} s")


async def wait_open(demo: SiteDemo, within_seconds: float = 60) -> None:
    """Both sites' gateways take progressive bets (they heard the new pot groups)."""
    other = next(t for t in demo.tables if t.site != SITE)
    await wait_progressive_open(demo, within_seconds, tables=(other, PROBE_TABLE))


async def probe_bet(demo: Demo, table: DemoTable = PROBE_TABLE) -> str:
    """What the table's gateway answers to a bet on ``table``, a probe table no controller plays
    (the site's by default); the round is then voided, so no money moves."""
    client = demo.device(table)
    try:
        welcome = await client.connect()
        if welcome.round_id:
            await client.void("probe: previous probe round")
        await client.open_round(f"probe-{uuid.uuid4().hex[:8]}")
        credits = LIMITS["min_bet"] // LIMITS["credit_value"]
        await client.credits(1, credits)
        reply = await client.bet(1, credits)
        await client.void("probe: a bet while the site is cut off")
        return answer(reply)
    finally:
        await client.close()


def first_status_after(
    changes: dict[str, list[tuple[float, bool]]], tables: set[str], since: float, is_open: bool
) -> float | None:
    """Seconds from ``since`` until every table in ``tables`` was pushed that status (or None)."""
    firsts = []
    for table_id in tables:
        times = [t for t, status in changes.get(table_id, []) if t >= since and status is is_open]
        if not times:
            return None
        firsts.append(min(times) - since)
    return round(max(firsts), 2)


async def play_through_cut(
    demo: SiteDemo,
    network: SiteNetwork,
    cut_seconds: float,
    rounds_per_minute: float,
    rig_rate: float,
    settle_seconds: float,
    warmup_seconds: float,
) -> dict[str, Any]:
    site_tables = {t.table_id for t in demo.tables if t.site == SITE and t is not PROBE_TABLE}
    other_tables = {t.table_id for t in demo.tables if t.site != SITE}
    gateway_tables = len(site_tables) + 1  # with the probe table
    gateway = load(GatewaySettings, file=demo.state / f"{SITE_GATEWAY}.json")
    heartbeat = gateway.heartbeat_timeout_seconds
    central, lan = network.central, network.site_lan

    def broker_from_site() -> bool:
        return network.reachable_from_site(central, BROKER_PORT)

    def gateway_from_devices() -> bool:
        return network.reachable_from_host(lan, demo.ports[SITE_GATEWAY])

    def metrics() -> dict[str, float]:
        return gateway_metrics(lan, demo.metrics_ports[SITE_GATEWAY])

    paths: dict[str, bool] = {
        "broker_reachable_from_site_before_cut": await asyncio.to_thread(broker_from_site),
        "gateway_reachable_from_devices_before_cut": await asyncio.to_thread(gateway_from_devices),
    }
    floor = Floor(sim_config(demo, rig_rate, rounds_per_minute))
    playing = asyncio.create_task(floor.run())
    await asyncio.sleep(warmup_seconds)
    settled = floor.stats.rounds_settled
    settled_at_cut = dict(settled)

    cut_at = time.monotonic()
    await asyncio.to_thread(network.cut)
    during_cut = asyncio.gather(
        asyncio.to_thread(broker_from_site), asyncio.to_thread(gateway_from_devices)
    )
    closed_after = None
    probe: asyncio.Task[str] | None = None
    spool_max = 0.0
    while time.monotonic() - cut_at < cut_seconds:
        sample = await asyncio.to_thread(metrics)
        spool_max = max(spool_max, sample.get("jackpot_gateway_spool_depth_records", 0.0))
        if (
            closed_after is None
            and sample.get("jackpot_gateway_tables_closed", 0.0) >= gateway_tables
        ):
            closed_after = time.monotonic() - cut_at
            probe = asyncio.create_task(probe_bet(demo))
        await asyncio.sleep(0.1)
    (
        paths["broker_reachable_from_site_during_cut"],
        paths["gateway_reachable_from_devices_during_cut"],
    ) = await during_cut
    probe_answer = await probe if probe is not None else "not tried: the tables never closed"
    settled_at_restore = dict(settled)

    restored_at = time.monotonic()
    await asyncio.to_thread(network.restore)
    reopened_after = delivered_after = None
    while time.monotonic() - restored_at < RECOVERY_LIMIT_SECONDS and (
        reopened_after is None or delivered_after is None
    ):
        sample = await asyncio.to_thread(metrics)
        if reopened_after is None and sample.get("jackpot_gateway_tables_closed") == 0:
            reopened_after = time.monotonic() - restored_at
        if delivered_after is None and sample.get("jackpot_gateway_spool_depth_records") == 0:
            delivered_after = time.monotonic() - restored_at
        await asyncio.sleep(0.1)
    paths["broker_reachable_from_site_after_restore"] = await asyncio.to_thread(broker_from_site)

    await asyncio.sleep(settle_seconds)
    stats = await finish_floor(demo, floor, playing)
    books = await judge(demo, stats, await demo_report(demo, stats), require_paid=True)

    def rounds_during_cut(tables: set[str]) -> int:
        return sum(settled_at_restore.get(t, 0) - settled_at_cut.get(t, 0) for t in tables)

    changes = stats.progressive_changes
    # every path open, except site to broker while the link is cut
    expected_paths = {name: name != "broker_reachable_from_site_during_cut" for name in paths}
    result: dict[str, Any] = {
        "cut_seconds": cut_seconds,
        "heartbeat_timeout_seconds": heartbeat,
        "network": {
            "namespace": network.namespace,
            "site_gateway": demo.site_target(SITE),
            "central_broker": f"{central}:{BROKER_PORT}",
            "paths": paths,
            "cut_verified": paths == expected_paths,
        },
        "site_tables": len(site_tables),
        "closed_after_seconds": None if closed_after is None else round(closed_after, 2),
        "devices_told_closed_after_seconds": first_status_after(
            changes, site_tables, cut_at, is_open=False
        ),
        "probe_bet_during_cut": probe_answer,
        "spool_max_records_during_cut": int(spool_max),
        "other_site_rounds_during_cut": rounds_during_cut(other_tables),
        "site_rounds_during_cut": rounds_during_cut(site_tables),
        "reopened_after_restore_seconds": None
        if reopened_after is None
        else round(reopened_after, 2),
        "spool_delivered_after_restore_seconds": None
        if delivered_after is None
        else round(delivered_after, 2),
        "devices_told_open_after_restore_seconds": first_status_after(
            changes, site_tables, restored_at, is_open=True
        ),
        "rounds_voided": stats.rounds_voided,
        **books,
    }
    passed = (
        result["network"]["cut_verified"]
        and closed_after is not None
        and closed_after <= heartbeat + 1
        and probe_answer == "PROGRESSIVE_CLOSED"
        and result["other_site_rounds_during_cut"] > 0
        and reopened_after is not None
        and delivered_after is not None
        and books["books_ok"]
    )
    result["status"] = "passed" if passed else "failed"
    return result


async def new_site_network(run_id: str) -> tuple[SiteNetwork, int]:
    """The site's namespace and links for ``run_id``, made once the ones killed runs left are
    removed (how many: the second value); NetnsUnavailable, with the reason, where it cannot be."""
    reason = unavailable_reason()
    if reason is not None:
        raise NetnsUnavailable(reason)
    stale = await asyncio.to_thread(clean_stale, stop_broker)
    network = SiteNetwork(run_id)
    network.create()
    return network, stale


async def run_site_cutoff(
    run_id: str,
    tables: int,
    cut_seconds: float,
    rounds_per_minute: float,
    rig_rate: float,
    settle_seconds: float,
    warmup_seconds: float = 5,
) -> dict[str, Any]:
    """Fault 7 from start to end; ``{"status": "skipped: <why>"}`` when netns cannot be used."""
    try:
        network, stale = await new_site_network(run_id)
    except NetnsUnavailable as error:
        return {"status": f"skipped: {error}"}
    state = REPO / ".run" / "chaos" / f"{run_id}-site"
    broker = {"host": network.central, "port": BROKER_PORT, "state": str(state)}
    demo: SiteDemo | None = None
    try:
        network.record(broker=broker)
        await asyncio.to_thread(start_broker, broker)
        demo = SiteDemo(tables, state, run_id, network, f"{network.central}:{BROKER_PORT}")
        await demo.create_topics()
        demo.start_services()
        network.record(broker=broker, service_pids=[p.pid for p in demo.processes.values()])
        await demo.wait_healthy()
        await demo.create_groups()
        await wait_open(demo)
        result = await play_through_cut(
            demo, network, cut_seconds, rounds_per_minute, rig_rate, settle_seconds, warmup_seconds
        )
        result["stale_namespaces_removed"] = stale
        return result
    finally:
        if demo is not None:
            demo.stop_services()
        await asyncio.to_thread(stop_broker, broker)
        network.destroy()
