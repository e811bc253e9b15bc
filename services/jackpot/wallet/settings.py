"""The reference wallet's settings: one frozen model, read in ``main`` from JACKPOT_WALLET_*.

The reference wallet is the operator's side of the wallet protocol, run by `jackpot wallet` for
the demo (and anyone testing an integration): where it listens, and how badly it behaves
(:class:`jackpot.wallet.reference.WalletFaults`). Under mutual TLS it presents the shared
``JACKPOT_TLS_*`` certificate and requires the payout service's. It reads no Kafka. The table of
every variable is docs/settings.md (``jackpot settings``).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from jackpot.platform.service_settings import ServiceSettings, brokers


class WalletSettings(ServiceSettings):
    """The reference wallet (``WalletService``) and the faults it is told to show."""

    model_config = SettingsConfigDict(env_prefix="JACKPOT_WALLET_")
    service: ClassVar[str] = "wallet"

    bootstrap_servers: str = brokers("JACKPOT_WALLET_")
    grpc_address: str = Field(
        "127.0.0.1:50056", description="where the WalletService listens (host:port)"
    )
    latency_seconds: float = Field(
        0.02, ge=0, le=30, description="how long each credit takes (a real wallet's round trip)"
    )
    fail_rate: float = Field(
        0.0, ge=0, le=1, description="the share of calls refused UNAVAILABLE before crediting"
    )
    lost_answer_rate: float = Field(
        0.0,
        ge=0,
        le=1,
        description="the share of calls that credit, then lose their answer (UNAVAILABLE): the "
        "payout service must send them again under the same key",
    )
