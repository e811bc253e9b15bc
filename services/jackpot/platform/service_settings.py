"""The sections every service's settings share, and :class:`ServiceSettings`, which holds them.

The scheme they follow (prefixes, sections, :func:`~jackpot.platform.settings.load`, the one-line
refusal) is :mod:`jackpot.platform.settings`; each service's own model (``PotSettings``,
``GatewaySettings``, ...) subclasses :class:`ServiceSettings`. The sections: how a client
authenticates to Kafka (:class:`KafkaSecurity`, ``KAFKA_*``), mutual TLS of the gRPC edges
(:class:`TlsSettings`), who may call what (:class:`AccessSettings`), traces
(:class:`TracingSettings`, ``OTEL_*``) and the process itself (:class:`RuntimeSettings`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Self

from pydantic import AliasChoices, BeforeValidator, Field, model_validator
from pydantic_settings import NoDecode, SettingsConfigDict

from jackpot.domain.access import Role, parse_roles
from jackpot.platform.manifest import parse_digest
from jackpot.platform.settings import (
    Bool,
    Port,
    Settings,
)
from jackpot.topics import AUDIT

if TYPE_CHECKING:
    import ssl

    import grpc


def _roles(value: object) -> object:
    return parse_roles(value) if isinstance(value, str) else value


def _upper(value: object) -> object:
    return value.strip().upper() if isinstance(value, str) else value


# Comma-separated in a variable (NoDecode: not JSON), a set of roles as a keyword.
Roles = Annotated[frozenset[Role], NoDecode, BeforeValidator(_roles)]


class KafkaSecurity(Settings):
    """How a client authenticates to the brokers: the same KAFKA_* variables for every service
    (the deployment's shared kafka-client ConfigMap and each service's Secret)."""

    model_config = SettingsConfigDict(env_prefix="KAFKA_")
    shared_title: ClassVar[str] = "Kafka client security (every service)"

    protocol: Annotated[
        Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"], BeforeValidator(_upper)
    ] = Field(
        "PLAINTEXT",
        validation_alias="KAFKA_SECURITY_PROTOCOL",
        description="how clients connect to the brokers",
    )
    sasl_mechanism: str = Field(
        "", description="SASL mechanism, for example SCRAM-SHA-512 (empty: PLAIN)"
    )
    username: str = Field("", validation_alias="KAFKA_SASL_USERNAME", description="SASL user")
    password: str = Field(
        "",
        repr=False,
        validation_alias="KAFKA_SASL_PASSWORD",
        description="SASL password (from a Secret; never logged)",
    )
    cafile: str = Field(
        "",
        validation_alias="KAFKA_SSL_CAFILE",
        description="CA bundle that signed the brokers' certificates (SSL, SASL_SSL)",
    )

    def client_options(self) -> dict[str, Any]:
        """Keyword arguments for any aiokafka client (producer, consumer, admin)."""
        if self.protocol == "PLAINTEXT":
            return {}
        options: dict[str, Any] = {"security_protocol": self.protocol}
        if self.protocol in ("SSL", "SASL_SSL"):
            from aiokafka.helpers import create_ssl_context

            options["ssl_context"] = create_ssl_context(cafile=self.cafile or None)
        if self.protocol.startswith("SASL"):
            options["sasl_mechanism"] = self.sasl_mechanism or "PLAIN"
            options["sasl_plain_username"] = self.username
            options["sasl_plain_password"] = self.password
        return options


class TlsSettings(Settings):
    """Mutual TLS for every gRPC endpoint (:mod:`jackpot.platform.tls`). All three files set:
    servers require and verify client certificates, clients present theirs. None: plaintext."""

    cert_file: str = Field(
        "", validation_alias="JACKPOT_TLS_CERT", description="this process's certificate (PEM)"
    )
    key_file: str = Field(
        "", validation_alias="JACKPOT_TLS_KEY", description="its private key (PEM)"
    )
    ca_file: str = Field(
        "",
        validation_alias="JACKPOT_TLS_CA",
        description="the CA that signs every peer (PEM): peers must present a certificate it "
        "signed",
    )

    @model_validator(mode="after")
    def _whole(self) -> Self:
        given = [bool(self.cert_file), bool(self.key_file), bool(self.ca_file)]
        if any(given) and not all(given):
            raise ValueError("JACKPOT_TLS_CERT, JACKPOT_TLS_KEY and JACKPOT_TLS_CA go together")
        return self

    @classmethod
    def for_name(cls, directory: Path, name: str) -> TlsSettings:
        """The files ``jackpot pki`` writes for ``name`` in ``directory``."""
        return cls(
            cert_file=str(directory / f"{name}.crt"),
            key_file=str(directory / f"{name}.key"),
            ca_file=str(directory / "ca.crt"),
        )

    @property
    def enabled(self) -> bool:
        return bool(self.cert_file)

    def _read(self) -> tuple[bytes, bytes, bytes]:
        return (
            Path(self.key_file).read_bytes(),
            Path(self.cert_file).read_bytes(),
            Path(self.ca_file).read_bytes(),
        )

    def server_credentials(self) -> grpc.ServerCredentials | None:
        """Credentials that require a client certificate signed by the CA (None: plaintext)."""
        if not self.enabled:
            return None
        import grpc

        key, cert, ca = self._read()
        return grpc.ssl_server_credentials(
            [(key, cert)], root_certificates=ca, require_client_auth=True
        )

    def server_context(self) -> ssl.SSLContext | None:
        """For HTTPS (web signs): the server certificate, no client certificate asked."""
        if not self.enabled:
            return None
        import ssl

        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert_file, self.key_file)
        return context

    def channel_credentials(self) -> grpc.ChannelCredentials | None:
        if not self.enabled:
            return None
        import grpc

        key, cert, ca = self._read()
        return grpc.ssl_channel_credentials(
            root_certificates=ca, private_key=key, certificate_chain=cert
        )


class AccessSettings(Settings):
    """Who may call the gRPC APIs (jackpot.platform.authz): mutual TLS, the access log, and the
    development escape hatch for plaintext."""

    model_config = SettingsConfigDict(env_prefix="JACKPOT_")
    shared_title: ClassVar[str] = (
        "Access: mutual TLS, access log, development roles (every service)"
    )

    tls: TlsSettings = TlsSettings()
    insecure_roles: Roles = Field(
        frozenset(),
        description="plaintext only: the roles every caller gets, for example operator,supervisor "
        "(development; refused together with TLS)",
        json_schema_extra={"shown_type": "roles, comma-separated"},
    )
    audit_topic: str = Field(AUDIT.name, description="the hash-chained access log")
    health_address: str = Field(
        "",
        validation_alias="JACKPOT_HEALTH_GRPC",
        description="host:port of a plaintext, health-only gRPC port for probes (empty: none)",
    )

    @model_validator(mode="after")
    def _no_roles_under_tls(self) -> Self:
        if self.tls.enabled and self.insecure_roles:
            raise ValueError("JACKPOT_INSECURE_ROLES is for plaintext development only, not TLS")
        return self


class TracingSettings(Settings):
    """Where spans go (:mod:`jackpot.platform.tracing`): OpenTelemetry's own variables. No
    endpoint: tracing is off and costs nothing. Sampling follows the SDK's OTEL_TRACES_SAMPLER and
    OTEL_TRACES_SAMPLER_ARG."""

    shared_title: ClassVar[str] = "Tracing: OpenTelemetry over OTLP (every service)"

    endpoint: str = Field(
        "",
        validation_alias=AliasChoices(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"
        ),
        description="the OTLP/gRPC collector: http://host:port plaintext, https://host:port TLS "
        "(empty: tracing off)",
    )

    @model_validator(mode="after")
    def _endpoint_is_a_url(self) -> Self:
        if self.endpoint:
            scheme, _, rest = self.endpoint.partition("://")
            host, _, port = rest.rstrip("/").rpartition(":")
            if scheme not in ("http", "https") or not host or not port.isdigit():
                raise ValueError(
                    f"the OTLP endpoint {self.endpoint!r} (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or "
                    "OTEL_EXPORTER_OTLP_ENDPOINT) is not http(s)://host:port"
                )
        return self


def _approved_digest(value: object) -> object:
    """ "" (none approved), or a manifest digest: ``sha256:`` and 64 hex digits, or the digits."""
    if not isinstance(value, str) or not value.strip():
        return value
    return parse_digest(value)


class RuntimeSettings(Settings):
    """What :func:`jackpot.platform.runtime.run_service` needs before the service starts: the
    software the regulator approved (R6) and the event loop."""

    shared_title: ClassVar[str] = "Runtime: the approved software, the event loop (every service)"

    approved_software_digest: Annotated[str, BeforeValidator(_approved_digest)] = Field(
        "",
        validation_alias="JACKPOT_APPROVED_SOFTWARE_DIGEST",
        description="R6: the SHA-256 of the software manifest the regulator approved "
        "(sha256: and its 64 hex digits, as `jackpot manifest` and `jackpot verify` print it); a "
        "service whose installed manifest has another digest never starts (exit 3, one line). "
        "Empty: the installed files are checked against their own manifest only",
    )
    event_loop: Literal["uvloop", "asyncio"] = Field(
        "uvloop",
        validation_alias="JACKPOT_EVENT_LOOP",
        description="uvloop (libuv: about a tenth less CPU per device event, issue 26), or "
        "asyncio, the standard library's loop: the fallback where uvloop cannot be installed",
    )


def brokers(prefix: str) -> Any:
    """The ``bootstrap_servers`` field of the service whose prefix is ``prefix``: its own
    variable, else the deployment's shared ``KAFKA_BOOTSTRAP_SERVERS``."""
    return Field(
        "127.0.0.1:9092",
        validation_alias=AliasChoices(f"{prefix}BOOTSTRAP_SERVERS", "KAFKA_BOOTSTRAP_SERVERS"),
        description="Kafka brokers, comma-separated host:port",
    )


class ServiceSettings(Settings):
    """The settings of one service: subclasses set ``env_prefix``, ``service`` and their
    ``bootstrap_servers = brokers(<prefix>)``."""

    model_config = SettingsConfigDict(env_prefix="JACKPOT_")
    service: ClassVar[str] = ""  # the `jackpot <service>` subcommand

    bootstrap_servers: str = brokers("JACKPOT_")
    kafka_security: KafkaSecurity = KafkaSecurity()
    access: AccessSettings = AccessSettings()
    tracing: TracingSettings = TracingSettings()
    runtime: RuntimeSettings = RuntimeSettings()
    metrics_host: str = Field("127.0.0.1", description="/metrics address (0.0.0.0 in a container)")
    # each service sets its own default port
    metrics_port: Port = Field(0, description="/metrics port (0 disables it)")
    log_level: str = Field("INFO", description="DEBUG, INFO, WARNING or ERROR")
    log_json: Bool = Field(True, description="JSON log lines (false: for a terminal)")

    def kafka_options(self) -> dict[str, Any]:
        """Connection options every Kafka client of the service is built with."""
        return {"bootstrap_servers": self.bootstrap_servers, **self.kafka_security.client_options()}
