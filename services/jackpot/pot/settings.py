"""The pot service's settings: one frozen dataclass, read once in ``main`` from JACKPOT_* variables.

Every field is read from the environment variable ``JACKPOT_<FIELD NAME IN CAPITALS>`` (for example
``JACKPOT_BOOTSTRAP_SERVERS``), falling back to the default below; the Kafka client security
fields (``kafka_*``) are read from ``KAFKA_<...>`` instead, the names the deployment's shared
kafka-client ConfigMap and Secrets use. Tests build the dataclass directly (unique topic names per
test) and pass it down; nothing reads the environment elsewhere.
"""

from __future__ import annotations

import dataclasses
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jackpot.platform.authz import AccessSettings
from jackpot.platform.kafka import KafkaSecurity
from jackpot.topics import AWARDS, DEAD_LETTER, LEDGER, POT_STATE, POT_UPDATES, TABLE_EVENTS

ENV_PREFIX = "JACKPOT_"
HEARTBEAT_DEADLINE_MS = 1000  # rule D5: at least one pot update per group per second


def _default_instance_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


class SettingsError(ValueError):
    """A setting is missing, malformed or inconsistent with another."""


@dataclass(frozen=True, slots=True)
class PotSettings:
    """Everything the pot service can be told; defaults suit the local broker."""

    bootstrap_servers: str = "127.0.0.1:9092"
    # Consumer group of all pot-service instances; its committed offsets live in transactions.
    consumer_group: str = "jackpot-pot"
    # Transactional ids are "<prefix>-<partition>": one per input partition fences zombies.
    transactional_id_prefix: str = "jackpot-pot"
    table_events_topic: str = TABLE_EVENTS.name
    pot_updates_topic: str = POT_UPDATES.name
    awards_topic: str = AWARDS.name
    ledger_topic: str = LEDGER.name
    state_topic: str = POT_STATE.name
    dead_letter_topic: str = DEAD_LETTER.name
    create_topics: bool = True
    # Partitions for topics this service creates (0: the default of jackpot.topics).
    topic_partitions: int = 0
    replication_factor: int = 1
    grpc_address: str = "127.0.0.1:50052"
    metrics_host: str = "127.0.0.1"
    metrics_port: int = 9102  # 0 disables the /metrics endpoint
    heartbeat_interval_ms: int = 500
    poll_timeout_ms: int = 100
    max_batch_records: int = 200
    # Recent event ids kept per group for idempotency; at least max_batch_records.
    event_id_window: int = 256
    session_timeout_ms: int = 10_000
    # A stalled instance leaves the group after this long; its successor then fences it.
    max_poll_interval_ms: int = 60_000
    heartbeat_ms: int = 3_000  # the consumer group's heartbeat, not the pot's (D5)
    transaction_timeout_ms: int = 30_000
    retry_backoff_ms: int = 500
    # How long an admin RPC waits to see its command applied before DEADLINE_EXCEEDED.
    command_timeout_ms: int = 10_000
    grpc_grace_seconds: float = 5.0
    log_level: str = "INFO"
    log_json: bool = True
    instance_id: str = field(default_factory=_default_instance_id)
    # Kafka client security (environment KAFKA_SECURITY_PROTOCOL, KAFKA_SASL_MECHANISM, ...).
    kafka_security_protocol: str = "PLAINTEXT"  # or SSL, SASL_PLAINTEXT, SASL_SSL
    kafka_sasl_mechanism: str = ""  # for example SCRAM-SHA-512
    kafka_sasl_username: str = ""
    kafka_sasl_password: str = field(default="", repr=False)
    kafka_ssl_cafile: str = ""  # CA bundle that signed the brokers' certificates
    # mTLS, the audit topic, development roles: JACKPOT_TLS_*, JACKPOT_AUDIT_TOPIC,
    # JACKPOT_INSECURE_ROLES (jackpot.platform.authz).
    access: AccessSettings = field(default_factory=AccessSettings)

    def __post_init__(self) -> None:
        if self.heartbeat_interval_ms <= 0 or self.heartbeat_interval_ms >= HEARTBEAT_DEADLINE_MS:
            raise SettingsError(
                f"heartbeat_interval_ms {self.heartbeat_interval_ms} must be in 1-999: "
                "rule D5 wants a pot update per group at least once per second"
            )
        if self.poll_timeout_ms > self.heartbeat_interval_ms:
            raise SettingsError("poll_timeout_ms must not exceed heartbeat_interval_ms")
        if self.max_batch_records < 1:
            raise SettingsError("max_batch_records must be at least 1")
        if self.event_id_window < self.max_batch_records:
            raise SettingsError(
                f"event_id_window {self.event_id_window} must be at least max_batch_records "
                f"{self.max_batch_records}: the admin API finds applied commands in that window"
            )
        for name in ("consumer_group", "transactional_id_prefix", "table_events_topic"):
            if not getattr(self, name):
                raise SettingsError(f"{name} must not be empty")
        protocols = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
        if self.kafka_security_protocol.upper() not in protocols:
            raise SettingsError(
                f"KAFKA_SECURITY_PROTOCOL {self.kafka_security_protocol!r} is not one of "
                f"{', '.join(protocols)}"
            )

    @property
    def source(self) -> str:
        """The DeadLetter.source of what this service refuses."""
        return f"pot:{self.table_events_topic}"

    def transactional_id(self, partition: int) -> str:
        return f"{self.transactional_id_prefix}-{partition}"

    def kafka_options(self) -> dict[str, Any]:
        """Connection options every Kafka client of the service is built with."""
        security = KafkaSecurity(
            self.kafka_security_protocol,
            self.kafka_sasl_mechanism,
            self.kafka_sasl_username,
            self.kafka_sasl_password,
            self.kafka_ssl_cafile,
        )
        return {"bootstrap_servers": self.bootstrap_servers, **security.client_options()}

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> PotSettings:
        """Defaults overridden by JACKPOT_<FIELD> variables; SettingsError names a bad one."""
        environ = os.environ if environ is None else environ
        values: dict[str, object] = {}
        if "KAFKA_BOOTSTRAP_SERVERS" in environ:  # the variable every other service reads
            values["bootstrap_servers"] = environ["KAFKA_BOOTSTRAP_SERVERS"]
        try:
            values["access"] = AccessSettings.from_env(environ)
        except ValueError as error:
            raise SettingsError(str(error)) from None
        for spec in dataclasses.fields(cls):
            if spec.name == "access":
                continue
            name = _variable(spec.name)
            raw = environ.get(name)
            if raw is None:
                continue
            values[spec.name] = _parse(name, raw, spec.type)
        return cls(**values)  # type: ignore[arg-type]

    @classmethod
    def variables(cls) -> list[tuple[str, str]]:
        """(variable, default) for every setting, for --help and the README."""
        defaults = cls()
        return [
            (_variable(spec.name), "" if spec.name == "kafka_sasl_password" else str(value))
            for spec in dataclasses.fields(cls)
            if spec.name != "access" and (value := getattr(defaults, spec.name)) is not None
        ]


def _variable(field_name: str) -> str:
    """The environment variable of a field (``kafka_*`` fields use the KAFKA_* names)."""
    if field_name.startswith("kafka_"):
        return field_name.upper()
    return ENV_PREFIX + field_name.upper()


def _parse(name: str, raw: str, kind: object) -> object:
    text = raw.strip()
    try:
        if kind in ("int", int):
            return int(text)
        if kind in ("float", float):
            return float(text)
        if kind in ("bool", bool):
            lowered = text.lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
            raise ValueError(f"not a boolean: {raw!r}")
    except ValueError as error:
        raise SettingsError(f"{name}: {error}") from None
    return text
