"""The gateway's settings: one frozen model, read in ``main`` from its file and JACKPOT_GATEWAY_*.

``jackpot gateway --config FILE`` reads a JSON object whose keys are the fields below (see
deploy/local/gateway.example.json)::

    {"name": "pit-a", "grpc_address": "127.0.0.1:50051", "metrics_port": 9101,
     "spool_path": ".run/gateway-pit-a.sqlite", "heartbeat_timeout_seconds": 5,
     "credentials_file": "/etc/jackpot/credentials.json",      # optional {table_id: credential}
     "table_events_topic": "...", "pot_updates_topic": "...", "dead_letter_topic": "...",
     "tables": [{"table_id": "SCL-CAR-01", "game": "caribbean", "pot_group_id": "scl-main",
                 "credential": "..."}]}                       # the device secret of this table id

Every scalar setting can also be given as ``JACKPOT_GATEWAY_<FIELD IN CAPITALS>``, which wins over
the file (a file of an earlier release with a ``topics`` object still reads); the brokers also
come from ``KAFKA_BOOTSTRAP_SERVERS``; Kafka security and access are the shared sections of
:mod:`jackpot.platform.settings`. The tables come only from the file. Credentials in the file are
for development; production leaves them out and mounts ``credentials_file`` from a Secret.
``load(GatewaySettings, file=FILE)`` (:func:`jackpot.platform.settings.load`) reads them. The
table of every setting is docs/settings.md (``jackpot settings``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Self

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator
from pydantic_settings import SettingsConfigDict

from jackpot.domain.cards import Game, parse_game
from jackpot.domain.studio import MAX_STUDIO_SEATS
from jackpot.platform.service_settings import ServiceSettings, brokers
from jackpot.platform.settings import Bool, Port, not_from_environment, read_credentials
from jackpot.topics import AUDIT, DEAD_LETTER, POT_UPDATES, TABLE_EVENTS, TopicSpec, named_topics

MIN_CREDENTIAL_LENGTH = 16


def _game(value: object) -> object:
    return parse_game(value) if isinstance(value, str) else value


class TableSettings(BaseModel):
    """One table of the pit: its id, game, pot group and device credential."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    table_id: str
    game: Annotated[Game, BeforeValidator(_game)]
    pot_group_id: str
    credential: str = Field("", repr=False)

    @model_validator(mode="after")
    def _strong_credential(self) -> Self:
        if len(self.credential) < MIN_CREDENTIAL_LENGTH:
            raise ValueError(
                f"table {self.table_id}: the credential must be at least "
                f"{MIN_CREDENTIAL_LENGTH} characters"
            )
        return self


class StudioTableSettings(BaseModel):
    """One studio table (rules O1-O9): its id, pot group, seats and the studio whose platform
    drives it (with mutual TLS: the CN of that platform's certificate)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    table_id: str
    pot_group_id: str
    seats: int = Field(ge=1, le=MAX_STUDIO_SEATS)
    studio: str = Field(min_length=1)


class GatewaySettings(ServiceSettings):
    """A table gateway for one pit: the devices' gRPC stream in, Kafka out, a local spool for
    when the brokers are away. Its file (`--config FILE`, JSON) has the keys of the *setting*
    column; the variables win over the file."""

    model_config = SettingsConfigDict(env_prefix="JACKPOT_GATEWAY_")
    service: ClassVar[str] = "gateway"

    bootstrap_servers: str = brokers("JACKPOT_GATEWAY_")
    name: str = Field("gateway", description="names this gateway in logs and dead letters")
    tables: tuple[TableSettings, ...] = Field(
        (),
        description="the pit's tables: table_id, game, pot_group_id, credential (at least 16 "
        "characters)",
        json_schema_extra=not_from_environment("the `tables` list of the file"),
    )
    studio_tables: tuple[StudioTableSettings, ...] = Field(
        (),
        description="studio tables driven by an operator's platform (rules O1-O9): table_id, "
        "pot_group_id, seats, studio",
        json_schema_extra=not_from_environment("the `studio_tables` list of the file"),
    )
    grpc_address: str = Field("127.0.0.1:50051", description="TableDevice address (host:port)")
    metrics_port: Port = Field(0, description="/metrics port (0 disables it)")
    create_topics: Bool = Field(
        True, description="create missing topics at start (false when its Kafka user may not)"
    )
    credentials_file: str = Field(
        "", description="JSON file {table_id: credential} that fills in the tables' credentials"
    )
    spool_path: str = Field(".run/gateway.sqlite", description="the local spool (SQLite)")
    heartbeat_timeout_seconds: float = Field(
        5.0,
        gt=0,
        description="D5: close betting after this long without a pot update or with undelivered "
        "events (over a WAN: above the link's worst stall and round trip; 5 s holds from metro to "
        "satellite, make wan)",
    )
    max_event_bytes: int = Field(64 * 1024, ge=1, description="larger device messages are refused")
    spool_gather_ms: float = Field(
        0.0,
        ge=0,
        le=100,
        description="how long the spool's writer gathers writes into one transaction after the "
        "first (0: those already waiting; 1 ms measured ~5 % less CPU per write but +1 ms per "
        "reply, docs/capacity.md)",
    )
    hello_timeout_seconds: float = Field(
        10.0, gt=0, description="a device must say hello within this long"
    )
    kafka_request_timeout_ms: int = Field(
        5000,
        ge=1000,
        le=60_000,
        description="how long the spool's producer and the pot watcher wait for the brokers to "
        "answer one request before they give the connection up and retry on a new one. Over a "
        "WAN (make wan): above the link's round trip and its short stalls, or a slow link is "
        "taken for a dead one (a satellite's 0.6 s round trip, 1 Mbit/s and 2 s stalls; under "
        "1 s even a fetch, which waits 0.5 s at the broker, times out); and well under the 10 s "
        "in which a table reopens after a cut, since a request lost in the cut is retried only "
        "then; 5 s holds from metro to satellite",
    )
    table_events_topic: str = Field(TABLE_EVENTS.name, description="output: the tables' events")
    pot_updates_topic: str = Field(
        POT_UPDATES.name, description="input: pot updates (D5: betting closes without them)"
    )
    dead_letter_topic: str = Field(
        DEAD_LETTER.name, description="refused device messages, with the reason"
    )

    @model_validator(mode="before")
    @classmethod
    def _topics_as_written_before(cls, data: Any) -> Any:
        """A file written before the topics were flat fields (``"topics": {"table_events": ...}``)
        still reads: each of its keys is the field ``<key>_topic``."""
        if not isinstance(data, dict) or not isinstance(data.get("topics"), Mapping):
            return data
        flat = {k: v for k, v in data.items() if k != "topics"}
        for key, name in data["topics"].items():
            flat.setdefault(f"{key}_topic", name)
        return flat

    @model_validator(mode="before")
    @classmethod
    def _credentials_from_file(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not data.get("credentials_file"):
            return data
        secrets = read_credentials(str(data["credentials_file"]), "credentials_file")
        tables = [
            {**t, "credential": secrets.get(str(t.get("table_id"))) or t.get("credential", "")}
            if isinstance(t, Mapping)
            else t
            for t in data.get("tables", ())
        ]
        return {**data, "tables": tables}

    @model_validator(mode="after")
    def _distinct_tables(self) -> Self:
        seen = set()
        for table_id in [t.table_id for t in self.tables] + [
            t.table_id for t in self.studio_tables
        ]:
            if table_id in seen:
                raise ValueError(f"table {table_id} is configured twice")
            seen.add(table_id)
        if not seen:
            raise ValueError("a gateway needs at least one table or studio table")
        return self

    def table(self, table_id: str) -> TableSettings | None:
        return next((t for t in self.tables if t.table_id == table_id), None)

    def studio_table(self, table_id: str) -> StudioTableSettings | None:
        return next((t for t in self.studio_tables if t.table_id == table_id), None)

    @property
    def pot_groups(self) -> frozenset[str]:
        """The pot groups of this gateway's tables, land and studio."""
        land = {t.pot_group_id for t in self.tables}
        return frozenset(land | {t.pot_group_id for t in self.studio_tables})

    def topic_specs(self) -> list[TopicSpec]:
        """The topics a gateway creates at start, named as these settings say."""
        return named_topics(
            (TABLE_EVENTS, self.table_events_topic),
            (POT_UPDATES, self.pot_updates_topic),
            (DEAD_LETTER, self.dead_letter_topic),
            (AUDIT, self.access.audit_topic),
        )
