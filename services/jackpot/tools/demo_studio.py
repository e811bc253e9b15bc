"""The local floor's studio tables (rules O1-O9): what :class:`~jackpot.tools.demo_floor.Demo`
adds for them, kept here so the floor harness stays one idea.

A floor with studio tables runs the reference wallet (`jackpot wallet`, the operator's side, 20 ms
a credit) that the payout service credits studio prizes to, gives each studio's platform its
certificate (role ``platform``, CN the studio) and the wallet its server certificate, puts each
studio table on its site's gateway and links it to its group with its seats; the floor simulator
plays it through the platform protocol (:mod:`jackpot.sim.studio_platform`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from jackpot.domain.access import Role
from jackpot.tools.demo_tables import LIMITS, POKER_CONFIG, DemoStudio
from jackpot.tools.pki import LOCAL_HOSTS, issue
from jackpot.v1 import common_pb2, pot_pb2, table_events_pb2

if TYPE_CHECKING:
    from jackpot.sim.studio_platform import SimStudio


class Demo(Protocol):
    """What this module reads and sets of the floor harness (``demo_floor.Demo``)."""

    studio_tables: list[DemoStudio]
    ports: dict[str, int]
    group_configs: dict[str, dict[str, Any]]
    pki: Path
    http_port: int

    def target(self, name: str) -> str: ...

    def tls_env(self, name: str) -> dict[str, str]: ...

    def site_target(self, site: str) -> str: ...


WALLET = "wallet"
WALLET_PORT = 25056
WALLET_LATENCY_SECONDS = "0.02"


def add_studios(demo: Demo, studios: list[DemoStudio]) -> None:
    """The floor plays ``studios`` too: the wallet among its services, each studio's group
    created (the land tables' configuration unless it has one already)."""
    demo.studio_tables = list(studios)
    if studios:
        demo.ports[WALLET] = WALLET_PORT
    for studio in studios:
        demo.group_configs.setdefault(studio.group, POKER_CONFIG)


def issue_studio_certificates(demo: Demo) -> None:
    """The wallet's server certificate and each studio's platform certificate (CN the studio)."""
    if not demo.studio_tables:
        return
    issue(demo.pki, WALLET, {Role.SERVICE}, hosts=LOCAL_HOSTS)
    for studio in sorted({s.studio for s in demo.studio_tables}):
        issue(demo.pki, studio, {Role.PLATFORM})


def wallet_env(demo: Demo) -> dict[str, str]:
    return {
        "JACKPOT_WALLET_GRPC_ADDRESS": demo.target(WALLET),
        "JACKPOT_WALLET_METRICS_PORT": "0",
        "JACKPOT_WALLET_LATENCY_SECONDS": WALLET_LATENCY_SECONDS,
        **demo.tls_env(WALLET),
    }


def payout_wallet_env(demo: Demo) -> dict[str, str]:
    """Where the payout service credits studio prizes (none without a studio table)."""
    return {"JACKPOT_PAYOUT_WALLET_TARGET": demo.target(WALLET)} if demo.studio_tables else {}


def gateway_studio_tables(demo: Demo, site: str) -> list[dict[str, Any]]:
    """The ``studio_tables`` of ``site``'s gateway settings."""
    return [
        {"table_id": s.table_id, "pot_group_id": s.group, "seats": s.seats, "studio": s.studio}
        for s in demo.studio_tables
        if s.site == site
    ]


async def link_studio_tables(demo: Demo, pot: Any, admin: pot_pb2.AdminContext) -> None:
    """Each studio table linked to its group with its seats (O1), as the operator does."""
    for studio in demo.studio_tables:
        link = table_events_pb2.LinkTable(
            table_id=studio.table_id,
            game=common_pb2.GAME_CARIBBEAN,
            site=f"site-{studio.site.lower()}",
            studio_seats=studio.seats,
            **LIMITS,
        )
        request = pot_pb2.LinkTableRequest(pot_group_id=studio.group, table=link, admin=admin)
        await pot.LinkTable(request, timeout=30)


def studio_urls(demo: Demo) -> list[str]:
    """The studio overlay of each studio table, and the wallet."""
    urls = [
        f"studio {s.table_id:12} http://127.0.0.1:{demo.http_port}/studio/{s.group}/{s.table_id}"
        f" ({s.players:,} players)"
        for s in demo.studio_tables
    ]
    if demo.studio_tables:
        urls.append(f"wallet              {demo.target(WALLET)} (reference, the operator's side)")
    return urls


def sim_studios(demo: Demo) -> list[SimStudio]:
    """The floor simulator's studio tables: the platform of each studio on its site's gateway."""
    from jackpot.sim.studio_platform import SimStudio

    return [
        SimStudio(
            s.table_id,
            s.group,
            demo.site_target(s.site),
            s.studio,
            s.players,
            s.seats,
            s.round_seconds,
            **LIMITS,
            rig_rate=s.rig_rate,
            decision_seconds=s.decision_seconds,
        )
        for s in demo.studio_tables
    ]
