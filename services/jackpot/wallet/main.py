"""`jackpot wallet`: the composition root of the reference wallet (the operator's side of
protos/jackpot/v1/wallet.proto), for `jackpot demo` and integration testing (rule O9)."""

from __future__ import annotations

import os

import structlog

from jackpot.platform.grpc_server import GrpcServer
from jackpot.platform.runtime import Supervisor, service_main
from jackpot.platform.settings import load
from jackpot.wallet.reference import ReferenceWallet, WalletFaults
from jackpot.wallet.settings import WalletSettings

log = structlog.get_logger("jackpot.wallet")
GRACE_SECONDS = 2.0


async def compose_wallet(settings: WalletSettings, supervisor: Supervisor) -> None:
    """The WalletService on its address under ``supervisor`` (health and graceful stop)."""
    faults = WalletFaults(settings.latency_seconds, settings.fail_rate, settings.lost_answer_rate)
    wallet = ReferenceWallet(faults)
    server = GrpcServer(
        settings.grpc_address,
        [wallet.register],
        [wallet.service_name],
        settings.access.tls.server_credentials(),
        settings.access.health_address,
    )
    supervisor.health(server)
    supervisor.on_stop("grpc", lambda: server.stop(supervisor.grace(GRACE_SECONDS)))
    await server.start()
    log.info(
        "wallet_started",
        address=settings.grpc_address,
        latency_seconds=settings.latency_seconds,
        fail_rate=settings.fail_rate,
        lost_answer_rate=settings.lost_answer_rate,
        tls=settings.access.tls.enabled,
    )


def main() -> int:
    """A bad setting is one line and exit 2."""
    settings = load(WalletSettings, dict(os.environ))
    return service_main("wallet", settings, lambda supervisor: compose_wallet(settings, supervisor))
