"""The pot service's settings: one frozen model, read once in ``main`` from JACKPOT_* variables.

Every field is read from ``JACKPOT_<FIELD NAME IN CAPITALS>`` (for example
``JACKPOT_BOOTSTRAP_SERVERS``, which wins over ``KAFKA_BOOTSTRAP_SERVERS``), falling back to the
default below; Kafka client security comes from the shared ``KAFKA_*`` variables and access from
``JACKPOT_TLS_*`` and friends (:mod:`jackpot.platform.settings`). The table of every variable is
docs/settings.md (``jackpot settings``). Tests build the model directly with keywords (unique
topic names per test), which reads no environment, and pass it down.
"""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field, ValidationInfo, field_validator
from pydantic_settings import SettingsConfigDict

from jackpot.platform.settings import (
    Bool,
    Env,
    Port,
    ServiceSettings,
    SettingsError,
    default_instance_id,
)
from jackpot.topics import AWARDS, DEAD_LETTER, LEDGER, POT_STATE, POT_UPDATES, TABLE_EVENTS

__all__ = ["HEARTBEAT_DEADLINE_MS", "PotSettings", "SettingsError"]

HEARTBEAT_DEADLINE_MS = 1000  # rule D5: at least one pot update per group per second


class PotSettings(ServiceSettings):
    """The pot service: consumes table events, keeps every pot group, publishes pot updates,
    awards and the ledger in one Kafka transaction per batch, and serves the admin API."""

    model_config = SettingsConfigDict(env_prefix="JACKPOT_")
    service: ClassVar[str] = "pot"

    consumer_group: str = Field(
        "jackpot-pot",
        description="consumer group of all pot instances; its offsets commit in transactions",
    )
    transactional_id_prefix: str = Field(
        "jackpot-pot",
        description="transactional ids are `<prefix>-<partition>`: one per input partition "
        "fences a zombie",
    )
    table_events_topic: str = Field(TABLE_EVENTS.name, description="input: table events")
    pot_updates_topic: str = Field(POT_UPDATES.name, description="output: pot updates (signs)")
    awards_topic: str = Field(AWARDS.name, description="output: awards (payout service)")
    ledger_topic: str = Field(LEDGER.name, description="output: the ledger of every contribution")
    state_topic: str = Field(POT_STATE.name, description="the pot groups' compacted state")
    dead_letter_topic: str = Field(DEAD_LETTER.name, description="refused input, with the reason")
    create_topics: Bool = Field(True, description="create missing topics at start")
    topic_partitions: int = Field(
        0, ge=0, description="partitions of the topics it creates (0: those of jackpot.topics)"
    )
    replication_factor: int = Field(1, ge=1, description="replicas of the topics it creates")
    grpc_address: str = Field("127.0.0.1:50052", description="PotService address (host:port)")
    metrics_host: str = Field("127.0.0.1", description="/metrics address (0.0.0.0 in a container)")
    metrics_port: Port = Field(9102, description="/metrics port (0 disables it)")
    heartbeat_interval_ms: int = Field(
        500, description="a pot update per group at least this often (rule D5: under 1000)"
    )
    poll_timeout_ms: int = Field(
        100, description="longest wait for input (at most heartbeat_interval_ms)"
    )
    max_batch_records: int = Field(200, description="input records per transaction at most")
    event_id_window: int = Field(
        256,
        description="recent event ids kept per group for idempotency (at least max_batch_records)",
    )
    session_timeout_ms: int = Field(
        3_000,
        description="consumer group session: a killed instance's partitions move after this "
        "long (brokers need group.min.session.timeout.ms at most this; fencing keeps it safe)",
    )
    max_poll_interval_ms: int = Field(
        60_000,
        description="a stalled instance leaves the group after this long; its successor fences it",
    )
    heartbeat_ms: int = Field(
        500, description="the consumer group's heartbeat (not the pot's, see D5)"
    )
    transaction_timeout_ms: int = Field(30_000, description="Kafka transaction timeout")
    retry_backoff_ms: int = Field(500, description="pause before retrying a failed transaction")
    command_timeout_ms: int = Field(
        10_000,
        description="how long an admin call waits to see its command applied (DEADLINE_EXCEEDED)",
    )
    checkpoint_interval_entries: int = Field(
        10_000,
        ge=1,
        description="a ledger checkpoint per group at least every this many entries (a "
        "takeover reads the entries since the last one)",
    )
    checkpoint_interval_seconds: float = Field(
        3600.0,
        gt=0,
        description="and at least this often (seconds), even for a quiet group",
    )
    checkpoint_seek_margin_ms: int = Field(
        5_000,
        ge=0,
        description="a takeover reads the ledger from this long before the oldest checkpoint it "
        "starts from (a checkpoint found later reads the partition whole: only cost, never "
        "correctness, depends on it)",
    )
    grpc_grace_seconds: float = Field(5.0, description="calls in flight may finish this long")
    log_level: str = Field("INFO", description="DEBUG, INFO, WARNING or ERROR")
    log_json: Bool = Field(True, description="JSON log lines (false: for a terminal)")
    instance_id: Annotated[str, Env("{prefix}INSTANCE_ID", default="<hostname>-<pid>")] = Field(
        default_factory=default_instance_id,
        description="names this instance in logs and the audit log (the pod name in Kubernetes)",
    )

    @field_validator("heartbeat_interval_ms")
    @classmethod
    def _d5(cls, value: int) -> int:
        if value <= 0 or value >= HEARTBEAT_DEADLINE_MS:
            raise ValueError(
                f"heartbeat_interval_ms {value} must be in 1-999: "
                "rule D5 wants a pot update per group at least once per second"
            )
        return value

    @field_validator("poll_timeout_ms")
    @classmethod
    def _poll_within_heartbeat(cls, value: int, info: ValidationInfo) -> int:
        heartbeat = info.data.get("heartbeat_interval_ms")
        if heartbeat is not None and value > heartbeat:
            raise ValueError("poll_timeout_ms must not exceed heartbeat_interval_ms")
        return value

    @field_validator("max_batch_records")
    @classmethod
    def _at_least_one(cls, value: int) -> int:
        if value < 1:
            raise ValueError("max_batch_records must be at least 1")
        return value

    @field_validator("event_id_window")
    @classmethod
    def _window_holds_a_batch(cls, value: int, info: ValidationInfo) -> int:
        batch = info.data.get("max_batch_records")
        if batch is not None and value < batch:
            raise ValueError(
                f"event_id_window {value} must be at least max_batch_records "
                f"{batch}: the admin API finds applied commands in that window"
            )
        return value

    @field_validator("consumer_group", "transactional_id_prefix", "table_events_topic")
    @classmethod
    def _not_empty(cls, value: str, info: ValidationInfo) -> str:
        if not value:
            raise ValueError(f"{info.field_name} must not be empty")
        return value

    @property
    def source(self) -> str:
        """The DeadLetter.source of what this service refuses."""
        return f"pot:{self.table_events_topic}"

    def transactional_id(self, partition: int) -> str:
        return f"{self.transactional_id_prefix}-{partition}"
