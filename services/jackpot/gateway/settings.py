"""The gateway's settings: one typed object, loaded once in ``main`` from a JSON file.

File format (``jackpot gateway --config FILE``; see deploy/local/gateway.example.json)::

    {"name": "pit-a",                              # names this gateway in logs and dead letters
     "bootstrap_servers": "127.0.0.1:9092",        # env KAFKA_BOOTSTRAP_SERVERS overrides
     "grpc_address": "127.0.0.1:50051",
     "metrics_port": 9101,                         # 0 disables /metrics
     "metrics_host": "127.0.0.1",                  # 0.0.0.0 in a container
     "create_topics": true,                        # false when its Kafka user may not create
     "credentials_file": "/etc/jackpot/credentials.json",  # optional {table_id: credential}
     "spool_path": ".run/gateway-pit-a.sqlite",
     "heartbeat_timeout_seconds": 5,               # D5: close betting after this long without
                                                   #     a pot update or with undelivered events
     "tables": [{"table_id": "SCL-CAR-01", "game": "caribbean", "pot_group_id": "scl-main",
                 "credential": "..."}]}            # the device secret, bound to this table id

Credentials in the file are for development; production leaves them out of the file and mounts
``credentials_file`` from a Secret. Kafka security comes from the ``KAFKA_SECURITY_PROTOCOL`` /
``KAFKA_SASL_*`` / ``KAFKA_SSL_CAFILE`` variables (:class:`jackpot.platform.kafka.KafkaSecurity`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jackpot.domain.cards import Game, parse_game
from jackpot.platform.authz import AccessSettings
from jackpot.platform.kafka import KafkaSecurity
from jackpot.topics import DEAD_LETTER, POT_UPDATES, TABLE_EVENTS


@dataclass(frozen=True, slots=True)
class TableSettings:
    table_id: str
    game: Game
    pot_group_id: str
    credential: str


@dataclass(frozen=True, slots=True)
class Topics:
    table_events: str = TABLE_EVENTS.name
    pot_updates: str = POT_UPDATES.name
    dead_letter: str = DEAD_LETTER.name


@dataclass(frozen=True, slots=True)
class GatewaySettings:
    name: str
    tables: tuple[TableSettings, ...]
    bootstrap_servers: str = "127.0.0.1:9092"
    grpc_address: str = "127.0.0.1:50051"
    metrics_port: int = 0
    metrics_host: str = "127.0.0.1"
    create_topics: bool = True
    kafka_security: KafkaSecurity = field(default_factory=KafkaSecurity)
    spool_path: str = ".run/gateway.sqlite"
    heartbeat_timeout_seconds: float = 5.0
    max_event_bytes: int = 64 * 1024
    hello_timeout_seconds: float = 10.0
    topics: Topics = field(default_factory=Topics)
    # Devices' mTLS (JACKPOT_TLS_*: certificates bound to table ids) and the audit topic.
    access: AccessSettings = field(default_factory=AccessSettings)

    def table(self, table_id: str) -> TableSettings | None:
        return next((t for t in self.tables if t.table_id == table_id), None)


def settings_from_dict(
    data: Mapping[str, Any], environ: Mapping[str, str] = os.environ
) -> GatewaySettings:
    tables = []
    seen = set()
    secrets: dict[str, str] = {}
    if data.get("credentials_file"):
        loaded = json.loads(Path(str(data["credentials_file"])).read_text(encoding="utf-8"))
        secrets = {str(k): str(v) for k, v in loaded.items()}
    for raw in data.get("tables", []):
        table_id = str(raw["table_id"])
        if table_id in seen:
            raise ValueError(f"table {table_id} is configured twice")
        seen.add(table_id)
        credential = secrets.get(table_id) or str(raw.get("credential", ""))
        if len(credential) < 16:
            raise ValueError(f"table {table_id}: the credential must be at least 16 characters")
        tables.append(
            TableSettings(
                table_id, parse_game(str(raw["game"])), str(raw["pot_group_id"]), credential
            )
        )
    if not tables:
        raise ValueError("a gateway needs at least one table")
    topics = Topics(**data.get("topics", {}))
    return GatewaySettings(
        name=str(data.get("name", "gateway")),
        tables=tuple(tables),
        bootstrap_servers=environ.get(
            "KAFKA_BOOTSTRAP_SERVERS", str(data.get("bootstrap_servers", "127.0.0.1:9092"))
        ),
        grpc_address=str(data.get("grpc_address", "127.0.0.1:50051")),
        metrics_port=int(data.get("metrics_port", 0)),
        metrics_host=str(data.get("metrics_host", "127.0.0.1")),
        create_topics=bool(data.get("create_topics", True)),
        kafka_security=KafkaSecurity.from_env(environ),
        spool_path=str(data.get("spool_path", ".run/gateway.sqlite")),
        heartbeat_timeout_seconds=float(data.get("heartbeat_timeout_seconds", 5)),
        max_event_bytes=int(data.get("max_event_bytes", 64 * 1024)),
        hello_timeout_seconds=float(data.get("hello_timeout_seconds", 10)),
        topics=topics,
        access=AccessSettings.from_env(environ),
    )


def load_settings(path: str | Path, environ: Mapping[str, str] = os.environ) -> GatewaySettings:
    return settings_from_dict(json.loads(Path(path).read_text(encoding="utf-8")), environ)
