"""The display service's settings: one frozen model, read in ``main`` from JACKPOT_DISPLAY_*.

Every field is read from ``JACKPOT_DISPLAY_<FIELD NAME IN CAPITALS>`` unless it names its variable
(``JACKPOT_DISPLAY_GRPC``, ``JACKPOT_DISPLAY_HTTP``; the brokers also from
``KAFKA_BOOTSTRAP_SERVERS``); Kafka security and access are the shared sections of
:mod:`jackpot.platform.settings`. The table of every variable is docs/settings.md
(``jackpot settings``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from jackpot.platform.service_settings import ServiceSettings, brokers
from jackpot.platform.settings import Bool, Port
from jackpot.topics import AWARDS, PAYOUTS, POT_UPDATES, open_payouts_topic


class DisplaySettings(ServiceSettings):
    """The display service: the jackpot signs (a gRPC stream and web pages); stateless, scale at
    will."""

    model_config = SettingsConfigDict(env_prefix="JACKPOT_DISPLAY_")
    service: ClassVar[str] = "display"

    bootstrap_servers: str = brokers("JACKPOT_DISPLAY_")
    grpc_address: str = Field(
        "127.0.0.1:50054",
        validation_alias="JACKPOT_DISPLAY_GRPC",
        description="SignService address (host:port)",
    )
    http: str = Field(
        "",
        description="the web signs' host:port (no host: 127.0.0.1); when set, it sets http_host "
        "and http_port",
    )
    http_host: str = Field("127.0.0.1", description="the web signs' address")
    http_port: Port = Field(8080, description="the web signs' port (0: any free port)")
    web_tls: Bool = Field(
        True, description="with JACKPOT_TLS_*: serve the web signs over HTTPS too"
    )
    metrics_port: Port = Field(9104, description="/metrics port (0 disables it)")
    stale_seconds: float = Field(
        5.0,
        gt=0,
        description='show "closed" after this long without a pot update (D5); at a remote '
        "site also how long a live sign may lag the pot (M3), so no longer than the gateway's "
        "heartbeat timeout (make wan)",
    )
    winner_seconds: float = Field(15.0, ge=0, description="how long a winner banner stays up (D2)")
    max_rate: float = Field(4.0, gt=0, description="updates per second per sign at most")
    write_timeout_seconds: float = Field(
        5.0, gt=0, description="a web sign that takes longer to accept an update is disconnected"
    )
    kafka_request_timeout_ms: int = Field(
        5000,
        ge=1000,
        le=60_000,
        description="how long the pot-update, award and payout readers wait for the brokers to "
        "answer one request before they give the connection up and retry on a new one. At a "
        "remote site (make wan): above the link's round trip and its short stalls, or a slow "
        "link is taken for a dead one (a satellite's 0.6 s round trip, 1 Mbit/s and 2 s stalls; "
        "under 1 s even a fetch, which waits 0.5 s at the broker, times out); and about "
        "stale_seconds or less, since after a cut a sign shows the pot again only once the "
        "request lost in it is retried; 5 s holds from metro to satellite",
    )
    pot_updates_topic: str = Field(POT_UPDATES.name, description="input: pot updates")
    awards_topic: str = Field(AWARDS.name, description="input: awards (winner banners)")
    payouts_topic: str = Field(
        PAYOUTS.name,
        description="input: payouts (prizes pending approval); the signs start from its "
        "open-payouts topic, and read this one whole only while that one is incomplete",
    )

    @property
    def open_payouts_topic(self) -> str:
        """What is open of the payouts topic (jackpot.topics.open_payouts_topic)."""
        return open_payouts_topic(self.payouts_topic)

    @field_validator("http")
    @classmethod
    def _host_and_port(cls, value: str) -> str:
        if value and _split(value) is None:
            raise ValueError("expected host:port with a port in 0-65535")
        return value

    @model_validator(mode="before")
    @classmethod
    def _http_sets_host_and_port(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("http"), str):
            split = _split(data["http"])
            if split is not None:
                return {**data, "http_host": split[0], "http_port": split[1]}
        return data


def _split(address: str) -> tuple[str, int] | None:
    host, _, port = address.rpartition(":")
    if not port.isdigit() or int(port) > 65535:
        return None
    return host or "127.0.0.1", int(port)
