"""The dealer terminal's settings: one frozen model, read in ``main`` from JACKPOT_TERMINAL_*.

Every field is read from ``JACKPOT_TERMINAL_<FIELD NAME IN CAPITALS>`` unless it names its
variable; ``jackpot terminal --table ID`` sets the table. The terminal's identity is its table's
terminal certificate (the shared ``JACKPOT_TLS_*`` section: ``jackpot pki`` issues
``terminal-<table>``); it reads no Kafka (the brokers' settings are unused). The table of every
variable is docs/settings.md (``jackpot settings``).
"""

from __future__ import annotations

import re
from typing import ClassVar

from pydantic import Field, field_validator
from pydantic_settings import SettingsConfigDict

from jackpot.platform.service_settings import ServiceSettings, brokers
from jackpot.platform.settings import Port

TABLE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class TerminalSettings(ServiceSettings):
    """The reference dealer terminal of one table: its screen as a local web page, fed by the
    gateway's watch of the table and the payout service's DealerTerminal stream."""

    model_config = SettingsConfigDict(env_prefix="JACKPOT_TERMINAL_")
    service: ClassVar[str] = "terminal"

    bootstrap_servers: str = brokers("JACKPOT_TERMINAL_")
    table_id: str = Field(
        "",
        validation_alias="JACKPOT_TERMINAL_TABLE",
        description="the table this terminal serves (`--table`; required)",
    )
    gateway_address: str = Field(
        "127.0.0.1:50051",
        validation_alias="JACKPOT_TERMINAL_GATEWAY",
        description="the table's gateway (TableDeviceService, host:port)",
    )
    payout_targets: str = Field(
        "127.0.0.1:50053",
        validation_alias="JACKPOT_TERMINAL_PAYOUT",
        description="PayoutService addresses, comma-separated; the terminal follows the owner",
    )
    http_host: str = Field(
        "127.0.0.1", description="the screen's address (the device's own display: keep it local)"
    )
    http_port: Port = Field(8070, description="the screen's port (0: any free port)")
    dealer: str = Field("dealer", description="the dealer signed in, for the audit trail")
    credential: str = Field(
        "", description="the terminal credential of the payout service's terminals file, if any"
    )
    reconnect_seconds: float = Field(
        0.5, gt=0, le=60, description="wait before reconnecting a lost link"
    )
    answer_seconds: float = Field(
        10.0,
        gt=0,
        le=120,
        description="how long the terminal waits for the payout service's answer: to a "
        "confirmation, and to a new session's hello (an instance silent that long is left for "
        "the next address)",
    )

    @field_validator("table_id")
    @classmethod
    def _table(cls, value: str) -> str:
        if not TABLE_ID.match(value):
            raise ValueError(
                "a table id is required: letters, digits, '.', '_' or '-' (at most 64)"
            )
        return value
