"""The pot service's settings: one frozen model, read once in ``main`` from JACKPOT_* variables.

Every field is read from ``JACKPOT_<FIELD NAME IN CAPITALS>`` (for example
``JACKPOT_BOOTSTRAP_SERVERS``, which wins over ``KAFKA_BOOTSTRAP_SERVERS``), falling back to the
default below; its exactly-once processor's section (``processor``) too
(``JACKPOT_CONSUMER_GROUP``, ``JACKPOT_MAX_BATCH_RECORDS``, ...). Kafka client security comes
from the shared ``KAFKA_*`` variables and access from ``JACKPOT_TLS_*`` and friends
(:mod:`jackpot.platform.settings`). The table of every variable is docs/settings.md
(``jackpot settings``). Tests build the model directly with keywords (unique topic names per
test), which reads no environment, and pass it down.
"""

from __future__ import annotations

from typing import ClassVar, Self

from pydantic import Field, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from jackpot.platform.exactly_once_settings import ExactlyOnceSettings
from jackpot.platform.service_settings import ServiceSettings, brokers
from jackpot.platform.settings import Bool, Port, SettingsError
from jackpot.topics import (
    AUDIT,
    AWARDS,
    DEAD_LETTER,
    LEDGER,
    POT_STATE,
    POT_UPDATES,
    TABLE_EVENTS,
    TopicSpec,
    named_topics,
)

__all__ = ["HEARTBEAT_DEADLINE_MS", "PotSettings", "SettingsError"]

HEARTBEAT_DEADLINE_MS = 1000  # rule D5: at least one pot update per group per second


class PotSettings(ServiceSettings):
    """The pot service: consumes table events, keeps every pot group, publishes pot updates,
    awards and the ledger in one Kafka transaction per batch, and serves the admin API."""

    model_config = SettingsConfigDict(env_prefix="JACKPOT_")
    service: ClassVar[str] = "pot"

    bootstrap_servers: str = brokers("JACKPOT_")
    processor: ExactlyOnceSettings = ExactlyOnceSettings(
        consumer_group="jackpot-pot", transactional_id_prefix="jackpot-pot"
    )
    table_events_topic: str = Field(TABLE_EVENTS.name, description="input: table events")
    pot_updates_topic: str = Field(POT_UPDATES.name, description="output: pot updates (signs)")
    awards_topic: str = Field(AWARDS.name, description="output: awards (payout service)")
    ledger_topic: str = Field(LEDGER.name, description="output: the ledger of every contribution")
    state_topic: str = Field(
        POT_STATE.name, description="the pot groups' compacted state (the processor's changelog)"
    )
    dead_letter_topic: str = Field(DEAD_LETTER.name, description="refused input, with the reason")
    create_topics: Bool = Field(True, description="create missing topics at start")
    topic_partitions: int = Field(
        0, ge=0, description="partitions of the topics it creates (0: those of jackpot.topics)"
    )
    replication_factor: int = Field(1, ge=1, description="replicas of the topics it creates")
    grpc_address: str = Field("127.0.0.1:50052", description="PotService address (host:port)")
    metrics_port: Port = Field(9102, description="/metrics port (0 disables it)")
    heartbeat_interval_ms: int = Field(
        500,
        description="a pot update per group at least this often (rule D5: under 1000; the "
        "processor's poll_timeout_ms at most this)",
    )
    event_id_window: int = Field(
        256,
        description="recent event ids kept per group for idempotency (at least the processor's "
        "max_batch_records)",
    )
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

    @field_validator("heartbeat_interval_ms")
    @classmethod
    def _d5(cls, value: int) -> int:
        if value <= 0 or value >= HEARTBEAT_DEADLINE_MS:
            raise ValueError(
                f"heartbeat_interval_ms {value} must be in 1-999: "
                "rule D5 wants a pot update per group at least once per second"
            )
        return value

    @field_validator("table_events_topic")
    @classmethod
    def _not_empty(cls, value: str) -> str:
        if not value:
            raise ValueError("table_events_topic must not be empty")
        return value

    @model_validator(mode="after")
    def _processor_keeps_the_pots_pace(self) -> Self:
        """Heartbeats are checked after every poll, and the admin API finds applied commands in
        the event id window: a batch must fit in it."""
        processor = self.processor
        if processor.poll_timeout_ms > self.heartbeat_interval_ms:
            raise ValueError(
                "poll_timeout_ms must not exceed heartbeat_interval_ms (JACKPOT_POLL_TIMEOUT_MS "
                f"{processor.poll_timeout_ms} > JACKPOT_HEARTBEAT_INTERVAL_MS "
                f"{self.heartbeat_interval_ms})"
            )
        if self.event_id_window < processor.max_batch_records:
            raise ValueError(
                "event_id_window must be at least max_batch_records (JACKPOT_EVENT_ID_WINDOW "
                f"{self.event_id_window} < JACKPOT_MAX_BATCH_RECORDS "
                f"{processor.max_batch_records}): the admin API finds applied commands in it"
            )
        return self

    @property
    def source(self) -> str:
        """The DeadLetter.source of what this service refuses."""
        return f"pot:{self.table_events_topic}"

    def topic_specs(self) -> list[TopicSpec]:
        """The topics the pot service reads and writes, named as these settings say."""
        return named_topics(
            (TABLE_EVENTS, self.table_events_topic),
            (POT_UPDATES, self.pot_updates_topic),
            (AWARDS, self.awards_topic),
            (LEDGER, self.ledger_topic),
            (POT_STATE, self.state_topic),
            (DEAD_LETTER, self.dead_letter_topic),
            (AUDIT, self.access.audit_topic),
            partitions=self.topic_partitions,
        )
