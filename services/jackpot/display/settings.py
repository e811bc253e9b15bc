"""The display service's settings: one typed object built in ``main`` from the environment.

| variable | default | meaning |
|---|---|---|
| KAFKA_BOOTSTRAP_SERVERS | 127.0.0.1:9092 | brokers |
| JACKPOT_DISPLAY_GRPC | 127.0.0.1:50054 | SignService address |
| JACKPOT_DISPLAY_HTTP | 127.0.0.1:8080 | web signs (host:port) |
| JACKPOT_DISPLAY_WEB_TLS | true | with JACKPOT_TLS_*: serve the web signs over HTTPS too |
| JACKPOT_DISPLAY_METRICS_HOST / _PORT | 127.0.0.1 / 9104 | /metrics (port 0 disables) |
| JACKPOT_DISPLAY_STALE_SECONDS | 5 | show "closed" after this long without a pot update (D5) |
| JACKPOT_DISPLAY_WINNER_SECONDS | 15 | how long a winner banner stays up (D2) |
| JACKPOT_DISPLAY_MAX_RATE | 4 | updates per second per sign at most |
| JACKPOT_DISPLAY_{POT_UPDATES,AWARDS}_TOPIC | jackpot.<name>.v1 | topic names |
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from jackpot.platform.authz import AccessSettings
from jackpot.platform.kafka import KafkaSecurity
from jackpot.topics import AWARDS, POT_UPDATES


@dataclass(frozen=True)
class DisplaySettings:
    bootstrap_servers: str = "127.0.0.1:9092"
    grpc_address: str = "127.0.0.1:50054"
    http_host: str = "127.0.0.1"
    http_port: int = 8080
    web_tls: bool = True  # HTTPS for the web signs when TLS is configured
    metrics_port: int = 9104
    metrics_host: str = "127.0.0.1"
    stale_seconds: float = 5.0
    winner_seconds: float = 15.0
    max_rate: float = 4.0
    write_timeout_seconds: float = 5.0
    pot_updates_topic: str = POT_UPDATES.name
    awards_topic: str = AWARDS.name
    kafka_security: KafkaSecurity = field(default_factory=KafkaSecurity)
    access: AccessSettings = field(default_factory=AccessSettings)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> DisplaySettings:
        http = environ.get("JACKPOT_DISPLAY_HTTP", "127.0.0.1:8080")
        host, _, port = http.rpartition(":")
        return cls(
            bootstrap_servers=environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092"),
            grpc_address=environ.get("JACKPOT_DISPLAY_GRPC", "127.0.0.1:50054"),
            http_host=host or "127.0.0.1",
            http_port=int(port),
            web_tls=environ.get("JACKPOT_DISPLAY_WEB_TLS", "true").lower() != "false",
            metrics_port=int(environ.get("JACKPOT_DISPLAY_METRICS_PORT", "9104")),
            metrics_host=environ.get("JACKPOT_DISPLAY_METRICS_HOST", "127.0.0.1"),
            stale_seconds=float(environ.get("JACKPOT_DISPLAY_STALE_SECONDS", "5")),
            winner_seconds=float(environ.get("JACKPOT_DISPLAY_WINNER_SECONDS", "15")),
            max_rate=float(environ.get("JACKPOT_DISPLAY_MAX_RATE", "4")),
            pot_updates_topic=environ.get("JACKPOT_DISPLAY_POT_UPDATES_TOPIC", POT_UPDATES.name),
            awards_topic=environ.get("JACKPOT_DISPLAY_AWARDS_TOPIC", AWARDS.name),
            kafka_security=KafkaSecurity.from_env(environ),
            access=AccessSettings.from_env(environ),
        )
