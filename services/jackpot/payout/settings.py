"""The payout service's settings: one typed object built in ``main`` from the environment.

| variable | default | meaning |
|---|---|---|
| KAFKA_BOOTSTRAP_SERVERS | 127.0.0.1:9092 | brokers |
| JACKPOT_PAYOUT_GRPC | 127.0.0.1:50053 | PayoutService address |
| JACKPOT_PAYOUT_METRICS_HOST / _PORT | 127.0.0.1 / 9103 | /metrics (port 0 disables) |
| JACKPOT_PAYOUT_APPROVAL_THRESHOLD | 1000000 | prizes >= this (pesos) wait for a supervisor |
| JACKPOT_PAYOUT_CONSUMER_GROUP | jackpot-payout | consumer group on the awards topic |
| JACKPOT_PAYOUT_TRANSACTIONAL_ID_PREFIX | jackpot-payout | transactional id (fences a zombie) |
| JACKPOT_PAYOUT_TERMINALS_FILE | (none) | JSON {table_id: credential}; unset: any table (dev) |
| JACKPOT_PAYOUT_CREATE_TOPICS | true | create missing topics at start |
| JACKPOT_PAYOUT_{AWARDS,PAYOUTS,LEDGER}_TOPIC | jackpot.<name>.v1 | topic names |
| JACKPOT_TLS_CERT / _KEY / _CA | (none) | mutual TLS (jackpot.platform.tls) |
| JACKPOT_INSECURE_ROLES | (none) | plaintext only: roles every caller gets (development) |
| JACKPOT_AUDIT_TOPIC | jackpot.audit.v1 | the hash-chained audit log |
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from jackpot.platform.authz import AccessSettings
from jackpot.platform.kafka import KafkaSecurity
from jackpot.topics import AWARDS, DEAD_LETTER, LEDGER, PAYOUTS


@dataclass(frozen=True)
class PayoutSettings:
    bootstrap_servers: str = "127.0.0.1:9092"
    grpc_address: str = "127.0.0.1:50053"
    metrics_host: str = "127.0.0.1"
    metrics_port: int = 9103
    approval_threshold: int = 1_000_000
    consumer_group: str = "jackpot-payout"
    transactional_id: str = "jackpot-payout"
    terminal_credentials: Mapping[str, str] | None = None
    create_topics: bool = True
    awards_topic: str = AWARDS.name
    payouts_topic: str = PAYOUTS.name
    ledger_topic: str = LEDGER.name
    dead_letter_topic: str = DEAD_LETTER.name
    kafka_security: KafkaSecurity = field(default_factory=KafkaSecurity)
    access: AccessSettings = field(default_factory=AccessSettings)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> PayoutSettings:
        credentials = None
        path = environ.get("JACKPOT_PAYOUT_TERMINALS_FILE")
        if path:
            credentials = {str(k): str(v) for k, v in json.loads(Path(path).read_text()).items()}
        return cls(
            bootstrap_servers=environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092"),
            grpc_address=environ.get("JACKPOT_PAYOUT_GRPC", "127.0.0.1:50053"),
            metrics_host=environ.get("JACKPOT_PAYOUT_METRICS_HOST", "127.0.0.1"),
            metrics_port=int(environ.get("JACKPOT_PAYOUT_METRICS_PORT", "9103")),
            approval_threshold=int(environ.get("JACKPOT_PAYOUT_APPROVAL_THRESHOLD", "1000000")),
            consumer_group=environ.get("JACKPOT_PAYOUT_CONSUMER_GROUP", "jackpot-payout"),
            transactional_id=environ.get(
                "JACKPOT_PAYOUT_TRANSACTIONAL_ID_PREFIX", "jackpot-payout"
            ),
            terminal_credentials=credentials,
            create_topics=environ.get("JACKPOT_PAYOUT_CREATE_TOPICS", "true").lower() != "false",
            awards_topic=environ.get("JACKPOT_PAYOUT_AWARDS_TOPIC", AWARDS.name),
            payouts_topic=environ.get("JACKPOT_PAYOUT_PAYOUTS_TOPIC", PAYOUTS.name),
            ledger_topic=environ.get("JACKPOT_PAYOUT_LEDGER_TOPIC", LEDGER.name),
            dead_letter_topic=environ.get("JACKPOT_PAYOUT_DEAD_LETTER_TOPIC", DEAD_LETTER.name),
            kafka_security=KafkaSecurity.from_env(environ),
            access=AccessSettings.from_env(environ),
        )
