"""The local floor harness: the whole floor as real processes on this machine (:class:`Demo`).

With studio tables (:mod:`jackpot.tools.demo_studio`) it also runs the reference wallet.

Kafka (started or reused), the pot, payout and display services and two table gateways (sites A
and B), their ports, certificates (mutual TLS) and topic names (`demo-<run>.…`, so a run's ledger
holds only its own rounds); the pot groups created through the pot's admin API; the floor
simulator's configuration for it (:func:`sim_config`). `jackpot demo` runs it, and so do the
fault suites, the load test and the integration tests that need every service as its own process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from jackpot.clients.device import DeviceClient
from jackpot.domain.access import Role
from jackpot.platform.codec import game_to_proto
from jackpot.platform.kafka import ensure_topics
from jackpot.platform.manifest import record_for_working_tree
from jackpot.platform.tls import TlsSettings, secure_channel
from jackpot.tools.demo_studio import (
    WALLET,
    gateway_studio_tables,
    issue_studio_certificates,
    link_studio_tables,
    payout_wallet_env,
    sim_studios,
    studio_urls,
    wallet_env,
)
from jackpot.tools.demo_supervisor import (
    describe_exit,
    write_pids,
    write_service_files,
)
from jackpot.tools.demo_tables import (
    BLACKJACK_CONFIG,
    BLACKJACK_GROUP,
    LIMITS,
    POKER_CONFIG,
    POKER_GROUP,
    DemoStudio,
    DemoTable,
    floor_tables,
)
from jackpot.tools.pki import LOCAL_HOSTS, issue, issue_dev
from jackpot.topics import ALL_TOPICS, TopicSpec
from jackpot.v1 import (
    pot_pb2,
    pot_pb2_grpc,
    table_events_pb2,
)

REPO = Path(__file__).resolve().parents[3]
KAFKA_SH = REPO / "deploy" / "local" / "kafka.sh"
# A checkout keeps the demo's state under .run/; an installed package (the image) has no
# checkout around it: its state goes under JACKPOT_STATE (as deploy/local/kafka.sh) or ~/.cache.
STATE = Path(
    os.environ.get("JACKPOT_STATE")
    or (REPO / ".run" if KAFKA_SH.exists() else Path.home() / ".cache" / "jackpot")
)
# The services' conventional ports (50051-50054) lie in Linux's ephemeral range (32768-60999), where
# the floor's own outgoing connections (hundreds of Kafka and gRPC clients) may hold one just when a
# service restarts; the local floor listens below that range instead.
PORTS = {"gateway-a": 25051, "pot": 25052, "payout": 25053, "display": 25054, "gateway-b": 25055}
METRICS = {"gateway-a": 9101, "pot": 9102, "payout": 9103, "display": 9104, "gateway-b": 9105}
HTTP_PORT = 8080
TERMINAL_HTTP_PORT = 8071  # the first reference dealer terminal's screen; the next ones follow
DEMO_TERMINALS = 2  # tables of `jackpot demo` whose dealer uses the reference terminal
SUPERVISOR_DELAY_SECONDS = 15.0  # how long a large prize of the demo waits for its approval
# A second instance of the pot or the payout, as a Kubernetes rollout or a node that froze and
# came back produces (the fault suite's pauses): same settings, its own ports. The floor's dealer
# terminals and supervisor know both payout addresses and go to whichever owns the payouts.
TWIN = "-twin"
TWIN_PORTS = {"pot": 25062, "payout": 25063}
TWIN_METRICS = {"pot": 9112, "payout": 9113}
TWIN_ENV = {
    "pot": ("JACKPOT_GRPC_ADDRESS", "JACKPOT_METRICS_PORT"),
    "payout": ("JACKPOT_PAYOUT_GRPC", "JACKPOT_PAYOUT_METRICS_PORT"),
}


class Demo:
    def __init__(
        self,
        tables: int,
        state_dir: Path,
        run_id: str,
        replication_factor: int = 1,
        mutual_tls: bool = True,
        ports: dict[str, int] | None = None,
        metrics_ports: dict[str, int] | None = None,
        http_port: int = HTTP_PORT,
    ) -> None:
        self.tables = floor_tables(tables)
        # The fixed ports by default; tests on a shared machine pass free ones.
        self.ports = dict(ports or PORTS)
        self.metrics_ports = dict(metrics_ports or METRICS)
        self.http_port = http_port
        self.replication_factor = replication_factor
        self.state = state_dir
        self.run_id = run_id
        self.prefix = f"demo-{run_id}"
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self._commands: dict[str, tuple[list[str], dict[str, str]]] = {}
        self.started_kafka = False
        self.bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "")
        # Every gRPC endpoint of the floor runs mutual TLS with a CA made for this run; without
        # (the load test's --plaintext, to measure what TLS costs) callers get development roles.
        self.mutual_tls = mutual_tls
        self.pki = state_dir / "pki"
        # Tables whose dealer uses the reference terminal (`jackpot terminal`); `jackpot demo`
        # runs a few, the fault suite and the load test none.
        self.terminal_tables: list[DemoTable] = []
        self.studio_tables: list[DemoStudio] = []  # demo_studio.add_studios; none by default
        # Each group's configuration; `jackpot demo` makes the poker group's five levels
        # (LEVELS_POKER_CONFIG), the fault suite and the load test keep the SCJ's.
        self.group_configs: dict[str, dict[str, Any]] = {
            POKER_GROUP: POKER_CONFIG,
            BLACKJACK_GROUP: BLACKJACK_CONFIG,
        }

    # -------------------------------------------------------------------------------- TLS

    def gateway_hosts(self, name: str) -> tuple[str, ...]:
        """The addresses a gateway's certificate names (where its devices dial it)."""
        return LOCAL_HOSTS

    def issue_certificates(self) -> None:
        """The run's CA, a certificate per service, operator, supervisor and sign, and a device
        and a dealer-terminal certificate bound to each table."""
        if not self.mutual_tls:
            return
        issue_dev(self.pki, [t.table_id for t in self.tables])
        for name in self.ports:
            if name.startswith("gateway-"):
                issue(self.pki, name, {Role.SERVICE}, hosts=self.gateway_hosts(name))
        issue_studio_certificates(self)

    def tls(self, name: str) -> TlsSettings:
        """The certificate ``name`` (a service, ``operator``, ``device-<table>``, ...)."""
        return TlsSettings.for_name(self.pki, name) if self.mutual_tls else TlsSettings()

    def tls_env(self, name: str) -> dict[str, str]:
        if not self.mutual_tls:
            roles = {"pot": "operator", "payout": "supervisor"}.get(name)
            return {"JACKPOT_INSECURE_ROLES": roles} if roles else {}
        tls = self.tls(name)
        return {
            "JACKPOT_TLS_CERT": tls.cert_file,
            "JACKPOT_TLS_KEY": tls.key_file,
            "JACKPOT_TLS_CA": tls.ca_file,
        }

    # ----------------------------------------------------------------------------- topics

    def topic(self, name: str) -> str:
        return f"{self.prefix}.{name}"

    # ------------------------------------------------------------------------- processes

    def start_kafka(self) -> None:
        if self.bootstrap:
            return
        if not KAFKA_SH.exists():
            raise SystemExit(
                "jackpot demo: set KAFKA_BOOTSTRAP_SERVERS (no checkout here to start a local "
                f"broker from: {KAFKA_SH} is missing)"
            )
        status = subprocess.run([str(KAFKA_SH), "status"], capture_output=True)
        if status.returncode != 0:
            subprocess.run([str(KAFKA_SH), "up"], check=True)
            self.started_kafka = True
        self.bootstrap = "127.0.0.1:9092"

    def service_env(self, env: dict[str, str]) -> dict[str, str]:
        """What a service gets on top of the demo's own environment."""
        return {
            "KAFKA_BOOTSTRAP_SERVERS": self.bootstrap,
            "JACKPOT_AUDIT_TOPIC": self.topic("audit"),
            **env,
        }

    def _spawn(self, name: str, args: list[str], env: dict[str, str]) -> None:
        self._commands[name] = (args, env)
        log = open(self.state / f"{name}.log", "ab")  # noqa: SIM115 (the child owns it)
        self.processes[name] = subprocess.Popen(
            [sys.executable, "-m", "jackpot.cli", *args],
            env={**os.environ, **self.service_env(env)},
            stdout=log,
            stderr=log,
            start_new_session=True,
        )

    async def create_topics(self) -> None:
        """Every topic of the run's namespace, with the real ones' partitions and retention."""
        await ensure_topics(
            self.bootstrap,
            [
                TopicSpec(
                    self.topic(t.name.removeprefix("jackpot.").removesuffix(".v1")),
                    t.partitions,
                    {**t.config, "min.insync.replicas": str(min(2, self.replication_factor))},
                )
                for t in ALL_TOPICS
            ],
            replication_factor=self.replication_factor,
        )

    def start_services(self) -> None:
        """Every service of the floor as a process: the pot, the payout, the display, a gateway
        per site and the reference dealer terminals, in that order."""
        self.state.mkdir(parents=True, exist_ok=True)
        record_for_working_tree()  # R6: the services verify the tree they run from
        self.issue_certificates()
        self._spawn("pot", ["pot"], self._pot_env())
        if self.studio_tables:  # the operator's wallet that studio prizes are paid to (O9)
            self._spawn(WALLET, ["wallet"], wallet_env(self))
        self._spawn("payout", ["payout"], self._payout_env())
        self._spawn("display", ["display"], self._display_env())
        for site in ("A", "B"):
            name = f"gateway-{site.lower()}"
            path = self._write_gateway_config(site)
            self._spawn(name, ["gateway", "--config", str(path)], self.tls_env(name))
        for table, url in self.terminal_urls().items():
            self._spawn(
                f"terminal-{table.table_id}",
                ["terminal", "--table", table.table_id],
                self._terminal_env(table, url),
            )

    def _pot_env(self) -> dict[str, str]:
        return {
            "JACKPOT_BOOTSTRAP_SERVERS": self.bootstrap,
            "JACKPOT_GRPC_ADDRESS": self.target("pot"),
            "JACKPOT_METRICS_PORT": str(self.metrics_ports["pot"]),
            "JACKPOT_CONSUMER_GROUP": f"{self.prefix}-pot",
            "JACKPOT_TRANSACTIONAL_ID_PREFIX": f"{self.prefix}-pot",
            "JACKPOT_TABLE_EVENTS_TOPIC": self.topic("table-events"),
            "JACKPOT_POT_UPDATES_TOPIC": self.topic("pot-updates"),
            "JACKPOT_AWARDS_TOPIC": self.topic("awards"),
            "JACKPOT_LEDGER_TOPIC": self.topic("ledger"),
            "JACKPOT_STATE_TOPIC": self.topic("pot-state"),
            "JACKPOT_DEAD_LETTER_TOPIC": self.topic("dead-letter"),
            **self.tls_env("pot"),
        }

    def _payout_env(self) -> dict[str, str]:
        return {
            "JACKPOT_PAYOUT_GRPC": self.target("payout"),
            "JACKPOT_PAYOUT_METRICS_PORT": str(self.metrics_ports["payout"]),
            "JACKPOT_PAYOUT_CONSUMER_GROUP": f"{self.prefix}-payout",
            "JACKPOT_PAYOUT_TRANSACTIONAL_ID_PREFIX": f"{self.prefix}-payout",
            "JACKPOT_PAYOUT_AWARDS_TOPIC": self.topic("awards"),
            "JACKPOT_PAYOUT_PAYOUTS_TOPIC": self.topic("payouts"),
            "JACKPOT_PAYOUT_LEDGER_TOPIC": self.topic("ledger"),
            **payout_wallet_env(self),
            **self.tls_env("payout"),
        }

    def _display_env(self) -> dict[str, str]:
        return {
            "JACKPOT_DISPLAY_GRPC": self.target("display"),
            "JACKPOT_DISPLAY_HTTP": f"127.0.0.1:{self.http_port}",
            "JACKPOT_DISPLAY_METRICS_PORT": str(self.metrics_ports["display"]),
            "JACKPOT_DISPLAY_MAX_RATE": "20",
            "JACKPOT_DISPLAY_POT_UPDATES_TOPIC": self.topic("pot-updates"),
            "JACKPOT_DISPLAY_AWARDS_TOPIC": self.topic("awards"),
            "JACKPOT_DISPLAY_PAYOUTS_TOPIC": self.topic("payouts"),
            **self.tls_env("display"),
            # The web signs stay plain HTTP so a browser opens them without the dev CA.
            "JACKPOT_DISPLAY_WEB_TLS": "false",
        }

    def _write_gateway_config(self, site: str) -> Path:
        """The JSON settings of ``site``'s gateway (its tables, topics, spool); their path."""
        name = f"gateway-{site.lower()}"
        config = {
            "name": f"site-{site.lower()}-pit-1",
            "grpc_address": self.target(name),
            "metrics_port": self.metrics_ports[name],
            "spool_path": str(self.state / f"{name}.sqlite"),
            "table_events_topic": self.topic("table-events"),
            "pot_updates_topic": self.topic("pot-updates"),
            "dead_letter_topic": self.topic("dead-letter"),
            "tables": [
                {
                    "table_id": t.table_id,
                    "game": t.game.value,
                    "pot_group_id": t.group,
                    "credential": t.credential,
                }
                for t in self.tables
                if t.site == site
            ],
            "studio_tables": gateway_studio_tables(self, site),
        }
        path = self.state / f"{name}.json"
        path.write_text(json.dumps(config, indent=2))
        return path

    def _terminal_env(self, table: DemoTable, url: str) -> dict[str, str]:
        return {
            "JACKPOT_TERMINAL_GATEWAY": self.site_target(table.site),
            "JACKPOT_TERMINAL_PAYOUT": self.payout_targets(),
            "JACKPOT_TERMINAL_HTTP_PORT": url.rsplit(":", 1)[1].rstrip("/"),
            "JACKPOT_TERMINAL_DEALER": f"dealer-{table.table_id.lower()}",
            **self.tls_env(f"terminal-{table.table_id}"),
        }

    def terminal_urls(self) -> dict[DemoTable, str]:
        """The screen of each table that runs the reference dealer terminal."""
        return {
            table: f"http://127.0.0.1:{TERMINAL_HTTP_PORT + n}/"
            for n, table in enumerate(self.terminal_tables)
        }

    async def wait_healthy(self, within_seconds: float = 60) -> None:
        for name in self.ports:
            await self.wait_serving(name, within_seconds)

    async def create_groups(self) -> None:
        admin = pot_pb2.AdminContext(requested_by="demo", reason="demo floor")
        async with secure_channel(self.target("pot"), self.tls("operator")) as channel:
            pot = pot_pb2_grpc.PotServiceStub(channel)  # type: ignore[no-untyped-call]
            for group, config in self.group_configs.items():
                await pot.CreatePotGroup(
                    pot_pb2.CreatePotGroupRequest(
                        pot_group_id=group, config_json=json.dumps(config), admin=admin
                    ),
                    timeout=30,
                )
            for table in self.tables:
                await pot.LinkTable(
                    pot_pb2.LinkTableRequest(
                        pot_group_id=table.group,
                        table=table_events_pb2.LinkTable(
                            table_id=table.table_id,
                            game=game_to_proto(table.game),
                            site=f"site-{table.site.lower()}",
                            **LIMITS,
                        ),
                        admin=admin,
                    ),
                    timeout=30,
                )
            await link_studio_tables(self, pot, admin)

    def kill(self, name: str) -> None:
        """SIGKILL one service (fault tests): no shutdown code runs."""
        process = self.processes[name]
        process.kill()
        process.wait()

    def restart(self, name: str) -> None:
        """Start a killed or stopped service again with the same command and environment."""
        args, env = self._commands[name]
        self._spawn(name, args, env)

    def write_service_files(self) -> None:
        """Each service's env file and the run's manifest and pids (``--print-commands``)."""
        write_service_files(
            self.state,
            self.run_id,
            {n: (args, self.service_env(env)) for n, (args, env) in self._commands.items()},
            self.bootstrap,
        )
        write_pids(self.state, self.processes)

    async def wait_serving(self, name: str, within_seconds: float = 60, api: str = "") -> float:
        """Seconds until ``name`` answers its gRPC health check (of ``api``, default the
        process's) with SERVING."""
        started = time.monotonic()
        async with secure_channel(self.target(name), self.tls("operator")) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            while time.monotonic() - started < within_seconds:
                code = self.processes[name].poll()
                if code is not None:
                    raise RuntimeError(f"{name} {describe_exit(code)}; see {self.state}/{name}.log")
                with contextlib.suppress(grpc.aio.AioRpcError):
                    answer = await stub.Check(health_pb2.HealthCheckRequest(service=api), timeout=1)
                    if answer.status == health_pb2.HealthCheckResponse.SERVING:
                        return time.monotonic() - started
                await asyncio.sleep(0.1)
        raise RuntimeError(f"{name} not serving after {within_seconds:.0f} s")

    def stop_services(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 20
        for process in self.processes.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(max(0.1, deadline - time.monotonic()))
            if process.poll() is None:
                process.kill()
        if self.started_kafka:
            subprocess.run([str(KAFKA_SH), "down"], check=False)

    def target(self, name: str) -> str:
        """host:port of a service's gRPC port (of its twin: ``<name>-twin``)."""
        if name.endswith(TWIN):
            return f"127.0.0.1:{TWIN_PORTS[name.removesuffix(TWIN)]}"
        return f"127.0.0.1:{self.ports[name]}"

    def payout_targets(self) -> str:
        """Every address a payout instance of the floor may serve at, comma-separated."""
        return f"{self.target('payout')},{self.target('payout' + TWIN)}"

    def start_twin(self, name: str) -> str:
        """A second instance of ``name`` (pot or payout) with the same settings on its own ports;
        its name (``<name>-twin``)."""
        args, env = self._commands[name]
        grpc_key, metrics_key = TWIN_ENV[name]
        twin = name + TWIN
        self._spawn(
            twin,
            args,
            {
                **env,
                grpc_key: self.target(twin),
                metrics_key: str(TWIN_METRICS[name]),
            },
        )
        return twin

    def stop_twin(self, twin: str, within_seconds: float = 20) -> int | None:
        """SIGTERM a twin and forget it; its exit status (None if it had to be killed)."""
        process = self.processes.pop(twin)
        self._commands.pop(twin, None)
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(within_seconds)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            return None

    def site_target(self, site: str) -> str:
        """Where the devices of ``site`` reach their gateway."""
        return self.target(f"gateway-{site.lower()}")

    def played_tables(self) -> list[DemoTable]:
        """The tables the floor simulator plays."""
        return list(self.tables)

    def device(self, table: DemoTable) -> DeviceClient:
        """A controller of ``table`` with its own certificate, dialling its site's gateway."""
        return DeviceClient(
            self.site_target(table.site),
            table.table_id,
            table.game,
            table.credential,
            tls=self.tls(f"device-{table.table_id}"),
        )

    def urls(self) -> list[str]:
        return [
            f"floor overview      http://127.0.0.1:{self.http_port}/",
            f"sign {POKER_GROUP:14} http://127.0.0.1:{self.http_port}/sign/{POKER_GROUP}",
            f"sign {BLACKJACK_GROUP:14} http://127.0.0.1:{self.http_port}/sign/{BLACKJACK_GROUP}",
            *(f"terminal {t.table_id:10} {url}" for t, url in self.terminal_urls().items()),
            *studio_urls(self),
            *(f"gRPC {name:14} 127.0.0.1:{port}" for name, port in self.ports.items()),
            *(
                f"metrics {name:11} http://127.0.0.1:{port}/metrics"
                for name, port in self.metrics_ports.items()
            ),
            f"Kafka               {self.bootstrap} (topics {self.prefix}.*)",
            f"logs                {self.state}/",
            f"mTLS certificates   {self.pki}/ (ca.crt; operator, supervisor, sign, "
            "device-<table>, terminal-<table>)",
        ]


def sim_config(
    demo: Demo, rig_rate: float, rounds_per_minute: float, device_protocol: str = "round"
) -> Any:
    """The floor simulator's configuration for ``demo``'s tables; ``device_protocol`` is the
    device protocol's form the controllers speak (``round`` or ``per-event``)."""
    from jackpot.sim.floor import FloorConfig, SimTable

    return FloorConfig(
        tables=[
            SimTable(t.table_id, t.game, t.group, demo.site_target(t.site), t.credential)
            for t in demo.played_tables()
        ],
        payout_target=demo.payout_targets(),
        display_target=demo.target("display"),
        # Their dealers press the buttons through the terminal's own API, as its screen does.
        terminal_urls={t.table_id: url for t, url in demo.terminal_urls().items()},
        # A large prize stays pending on the signs and the terminals long enough to be seen.
        supervisor_delay=SUPERVISOR_DELAY_SECONDS if demo.terminal_tables else 0.5,
        rounds_per_minute=rounds_per_minute,
        rig_rate=rig_rate,
        device_protocol=device_protocol,
        pki_dir=str(demo.pki) if demo.mutual_tls else "",
        studios=sim_studios(demo),
    )


async def wait_progressive_open(
    demo: Demo, within_seconds: float = 30, tables: Sequence[DemoTable] = ()
) -> None:
    """The gateways open betting once they hear the new pot groups' updates."""
    deadline = time.monotonic() + within_seconds
    for table in tables or demo.tables[0:5:2]:  # a few tables of each site (fewer on a small floor)
        client = demo.device(table)
        while True:
            welcome = await client.connect()
            await client.close()
            if welcome.progressive_open:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"table {table.table_id} never opened for progressive bets")
            await asyncio.sleep(0.5)
