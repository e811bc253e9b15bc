"""The payout service's settings: one frozen model, read in ``main`` from JACKPOT_PAYOUT_*.

Every field is read from ``JACKPOT_PAYOUT_<FIELD NAME IN CAPITALS>`` unless it names its variable
(``JACKPOT_PAYOUT_GRPC``; the brokers also from ``KAFKA_BOOTSTRAP_SERVERS``); Kafka security and
access are the shared sections of :mod:`jackpot.platform.settings`. The table of every variable
is docs/settings.md (``jackpot settings``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import Field, model_validator
from pydantic_settings import SettingsConfigDict

from jackpot.platform.settings import Bool, Env, NoEnv, Port, ServiceSettings, default_instance_id
from jackpot.topics import AWARDS, DEAD_LETTER, LEDGER, PAYOUTS, open_payouts_topic


class PayoutSettings(ServiceSettings):
    """The payout service: one payout per award, dealer terminals, supervisor approvals. One
    instance owns every awards partition; the others stand by and send clients to it."""

    model_config = SettingsConfigDict(env_prefix="JACKPOT_PAYOUT_")
    service: ClassVar[str] = "payout"

    grpc_address: Annotated[str, Env("{prefix}GRPC")] = Field(
        "127.0.0.1:50053", description="PayoutService address (host:port)"
    )
    advertised_address: str = Field(
        "",
        description="host:port clients reach this instance at; the group tells it to the other "
        "instances, so a standby sends terminals to the owner (empty: the gRPC address's; set it "
        "to the pod IP in Kubernetes)",
    )
    metrics_host: str = Field("127.0.0.1", description="/metrics address (0.0.0.0 in a container)")
    metrics_port: Port = Field(9103, description="/metrics port (0 disables it)")
    approval_threshold: int = Field(
        1_000_000, ge=0, description="prizes of at least this many pesos wait for a supervisor"
    )
    approval_code_seconds: int = Field(
        120,
        gt=0,
        le=3600,
        description="a supervisor's one-time code for approving at a terminal expires after this",
    )
    consumer_group: str = Field("jackpot-payout", description="consumer group on the awards topic")
    transactional_id_prefix: str = Field(
        "jackpot-payout",
        description="transactional ids are `<prefix>-<partition>`: one per awards partition "
        "fences a zombie",
    )
    instance_id: Annotated[str, Env("{prefix}INSTANCE_ID", default="<hostname>-<pid>")] = Field(
        default_factory=default_instance_id,
        description="names this instance in logs and the audit log (the pod name in Kubernetes)",
    )
    terminals_file: str = Field(
        "",
        description="JSON file {table_id: credential} of the dealer terminals (empty: any table, "
        "development)",
    )
    terminal_credentials: Annotated[
        Mapping[str, str] | None, NoEnv("read from terminals_file, or given as a keyword")
    ] = Field(None, repr=False, description="dealer terminal credentials by table id")
    create_topics: Bool = Field(True, description="create missing topics at start")
    awards_topic: str = Field(AWARDS.name, description="input: awards (pot service)")
    payouts_topic: str = Field(
        PAYOUTS.name,
        description="every payout's latest state, kept forever (compacted); what is open of it "
        "is the open-payouts topic named after it (jackpot.topics.open_payouts_topic)",
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
    session_timeout_ms: int = Field(
        3_000,
        description="consumer group session: a killed instance's partitions move after this "
        "long (brokers need group.min.session.timeout.ms at most this; fencing keeps it safe)",
    )
    heartbeat_ms: int = Field(500, description="the consumer group's heartbeat")
    max_poll_interval_ms: int = Field(
        60_000,
        description="a stalled instance leaves the group after this long; its successor fences it",
    )
    transaction_timeout_ms: int = Field(30_000, description="Kafka transaction timeout")
    retry_backoff_ms: int = Field(500, description="pause before retrying a failed transaction")
    poll_timeout_ms: int = Field(100, description="longest wait for input")
    max_batch_records: int = Field(200, ge=1, description="input records per transaction at most")

    @model_validator(mode="before")
    @classmethod
    def _read_terminals_file(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not data.get("terminals_file"):
            return data
        if data.get("terminal_credentials") is not None:
            return data
        path = str(data["terminals_file"])
        try:
            loaded = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise ValueError(f"JACKPOT_PAYOUT_TERMINALS_FILE {path!r}: {error}") from None
        if not isinstance(loaded, dict):
            raise ValueError(
                f"JACKPOT_PAYOUT_TERMINALS_FILE {path!r}: expected a JSON object "
                "{table_id: credential}"
            )
        credentials = {str(k): str(v) for k, v in loaded.items()}
        return {**data, "terminal_credentials": credentials}

    @property
    def open_payouts_topic(self) -> str:
        """What is open of the payouts topic: the processor's changelog (restored at takeover)."""
        return open_payouts_topic(self.payouts_topic)

    def transactional_id(self, partition: int) -> str:
        return f"{self.transactional_id_prefix}-{partition}"
