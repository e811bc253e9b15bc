"""The payout service's settings: one frozen model, read in ``main`` from JACKPOT_PAYOUT_*.

Every field is read from ``JACKPOT_PAYOUT_<FIELD NAME IN CAPITALS>`` unless it names its variable
(``JACKPOT_PAYOUT_GRPC``; the brokers also from ``KAFKA_BOOTSTRAP_SERVERS``), its exactly-once
processor's section (``processor``) too (``JACKPOT_PAYOUT_CONSUMER_GROUP``, ...); Kafka security
and access are the shared sections of :mod:`jackpot.platform.settings`. The table of every
variable is docs/settings.md (``jackpot settings``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import Field, model_validator
from pydantic_settings import SettingsConfigDict

from jackpot.platform.exactly_once_settings import ExactlyOnceSettings
from jackpot.platform.service_settings import ServiceSettings, brokers
from jackpot.platform.settings import Bool, Port, not_from_environment, read_credentials
from jackpot.topics import (
    AUDIT,
    AWARDS,
    DEAD_LETTER,
    LEDGER,
    PAYOUTS,
    TopicSpec,
    named_topics,
    open_payouts_topic,
)


class PayoutSettings(ServiceSettings):
    """The payout service: one payout per award, dealer terminals, supervisor approvals. One
    instance owns every awards partition; the others stand by and send clients to it."""

    model_config = SettingsConfigDict(env_prefix="JACKPOT_PAYOUT_")
    service: ClassVar[str] = "payout"

    bootstrap_servers: str = brokers("JACKPOT_PAYOUT_")
    processor: ExactlyOnceSettings = ExactlyOnceSettings(
        consumer_group="jackpot-payout", transactional_id_prefix="jackpot-payout"
    )
    grpc_address: str = Field(
        "127.0.0.1:50053",
        validation_alias="JACKPOT_PAYOUT_GRPC",
        description="PayoutService address (host:port)",
    )
    advertised_address: str = Field(
        "",
        description="host:port clients reach this instance at; the group tells it to the other "
        "instances, so a standby sends terminals to the owner (empty: the gRPC address's; set it "
        "to the pod IP in Kubernetes)",
    )
    metrics_port: Port = Field(9103, description="/metrics port (0 disables it)")
    approval_threshold: int = Field(
        1_000_000, ge=0, description="prizes of at least this many pesos wait for a supervisor"
    )
    studio_approval_threshold: int = Field(
        1_000_000,
        ge=0,
        description="a studio prize (paid to a wallet) of at least this many pesos waits for a "
        "supervisor's approval before it is credited",
    )
    wallet_target: str = Field(
        "",
        description="the operator's WalletService (host:port) that studio prizes are credited "
        "to (empty: none; studio prizes then wait, unpaid)",
    )
    wallet_concurrency: int = Field(
        64, ge=1, le=1024, description="wallet credits in flight at once"
    )
    wallet_credits_per_second: int = Field(
        300,
        ge=0,
        le=100_000,
        description="wallet credits started a second at most (0: no limit): a studio round's "
        "10,000 prizes are credited over about 33 s, not in one burst that floods the "
        "operator's wallet and takes the cores from the land tables",
    )
    approval_code_seconds: int = Field(
        120,
        gt=0,
        le=3600,
        description="a supervisor's one-time code for approving at a terminal expires after this",
    )
    terminals_file: str = Field(
        "",
        description="JSON file {table_id: credential} of the dealer terminals (empty: any table, "
        "development)",
    )
    terminal_credentials: Mapping[str, str] | None = Field(
        None,
        repr=False,
        description="dealer terminal credentials by table id",
        json_schema_extra=not_from_environment("read from terminals_file, or given as a keyword"),
    )
    create_topics: Bool = Field(True, description="create missing topics at start")
    awards_topic: str = Field(
        AWARDS.name, description="input: awards (pot service); the processor's input"
    )
    payouts_topic: str = Field(
        PAYOUTS.name,
        description="every payout's latest state, kept forever (compacted); what is open of it "
        "is the open-payouts topic named after it (jackpot.topics.open_payouts_topic), the "
        "processor's changelog",
    )
    settled_kept_seconds: float = Field(
        3600.0,
        ge=0,
        description="a paid or voided payout stays in the book and on the open-payouts topic "
        "this long, so an award seen again meanwhile is refused even across a restart; then a "
        "tombstone (0: at once)",
    )
    checkpoint_seconds: float = Field(
        30.0,
        gt=0,
        description="how often the owner records how far the payouts topic is reflected on the "
        "open-payouts topic (a takeover reads the payouts written since)",
    )
    ledger_topic: str = Field(LEDGER.name, description="output: paid and voided payouts")
    dead_letter_topic: str = Field(DEAD_LETTER.name, description="refused awards, with the reason")

    @model_validator(mode="before")
    @classmethod
    def _read_terminals_file(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not data.get("terminals_file"):
            return data
        if data.get("terminal_credentials") is not None:
            return data
        path = str(data["terminals_file"])
        credentials = read_credentials(path, "JACKPOT_PAYOUT_TERMINALS_FILE")
        return {**data, "terminal_credentials": credentials}

    @property
    def open_payouts_topic(self) -> str:
        """What is open of the payouts topic: the processor's changelog (restored at takeover)."""
        return open_payouts_topic(self.payouts_topic)

    def topic_specs(self) -> list[TopicSpec]:
        """The topics the payout service creates at start, named as these settings say (the
        open-payouts topic follows the payouts topic's partitions: PayoutService makes it)."""
        return named_topics(
            (AWARDS, self.awards_topic),
            (PAYOUTS, self.payouts_topic),
            (LEDGER, self.ledger_topic),
            (DEAD_LETTER, self.dead_letter_topic),
            (AUDIT, self.access.audit_topic),
        )
