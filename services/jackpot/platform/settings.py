"""One settings scheme for every service: typed, frozen pydantic-settings models, read in ``main``.

* Each service has one :class:`ServiceSettings` subclass with its own environment prefix (pot
  ``JACKPOT_``, payout ``JACKPOT_PAYOUT_``, display ``JACKPOT_DISPLAY_``, gateway
  ``JACKPOT_GATEWAY_``). A field is read from ``<PREFIX><FIELD NAME IN CAPITALS>`` unless it names
  its variables with :class:`Env` (the first one set wins); :class:`NoEnv` fields are not read from
  the environment at all (keyword or file only).
* The parts every service shares are nested :class:`SettingsSection` models with fixed variable
  names: :class:`KafkaSecurity` (``KAFKA_*``) and :class:`AccessSettings` (``JACKPOT_TLS_*``,
  ``JACKPOT_AUDIT_TOPIC``, ``JACKPOT_INSECURE_ROLES``, ``JACKPOT_HEALTH_GRPC``).
* :func:`load_settings` reads a class from a mapping of variables (``os.environ`` by default) and,
  for the gateway, a file's values beneath them. Any bad value is a :class:`SettingsError` of ONE
  line naming the variable, the value and what is allowed; :func:`load_or_exit` (what a ``main``
  calls) prints that line on stderr and exits with status 2 before anything connects.
* Constructing a class with keywords (tests do: ``PotSettings(table_events_topic=...)``) never
  reads the environment: what is passed, or the default. ``settings.replace(**changes)`` is a
  validated copy (the models are frozen).

Booleans accept only true/false, 1/0, yes/no, on/off. Every setting is in docs/settings.md,
generated from these models by :func:`settings_markdown` (``jackpot settings``, which lists
the services' classes: this module imports none of them, as every service imports it).
"""

from __future__ import annotations

import contextvars
import os
import socket
import sys
import types
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, NoReturn, Self, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from jackpot.domain.access import Role, parse_roles
from jackpot.topics import AUDIT

if TYPE_CHECKING:
    import ssl

    import grpc

S = TypeVar("S", bound="ServiceSettings")
T = TypeVar("T")

TRUE_WORDS = frozenset({"true", "1", "yes", "on"})
FALSE_WORDS = frozenset({"false", "0", "no", "off"})


class SettingsError(ValueError):
    """A setting is missing, malformed or inconsistent with another (one line, for stderr)."""


# --------------------------------------------------------------------------- field markers


class Env:
    """The environment variables of a field, the first one set wins (``{prefix}`` is the class's
    prefix). ``kind`` and ``default`` replace the type and default shown in docs/settings.md."""

    __slots__ = ("default", "kind", "names")

    def __init__(self, *names: str, kind: str = "", default: str = "") -> None:
        self.names = names
        self.kind = kind
        self.default = default

    def __repr__(self) -> str:
        return f"Env{self.names!r}"


class NoEnv:
    """The field has no environment variable; ``how`` says where it comes from instead."""

    __slots__ = ("how",)

    def __init__(self, how: str) -> None:
        self.how = how

    def __repr__(self) -> str:
        return f"NoEnv({self.how!r})"


def parse_bool(value: object) -> object:
    """true/false, 1/0, yes/no, on/off (any case); anything else is refused, ``0`` is false."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
    raise ValueError("expected a boolean: true/false, 1/0, yes/no or on/off")


def _roles(value: object) -> object:
    return parse_roles(value) if isinstance(value, str) else value


def _upper(value: object) -> object:
    return value.strip().upper() if isinstance(value, str) else value


Bool = Annotated[bool, BeforeValidator(parse_bool)]
Port = Annotated[int, Field(ge=0, le=65535)]


def default_instance_id() -> str:
    """``<hostname>-<pid>``: unique per process, stable for the life of one."""
    return f"{socket.gethostname()}-{os.getpid()}"


# --------------------------------------------------------------------------- base classes


class SettingsSection(BaseModel):
    """A group of settings nested in every service's settings, with fixed variable names."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    # Documented once, under this title, rather than in each service's table.
    shared_title: ClassVar[str] = ""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Self:
        """This section alone from the variables (``os.environ`` by default)."""
        environ = os.environ if environ is None else environ
        try:
            return cls.model_validate(read_environ(cls, environ))
        except ValidationError as error:
            raise SettingsError(describe(error, cls, environ)) from None

    def replace(self, **changes: Any) -> Self:
        """A validated copy with ``changes`` (the model is frozen)."""
        return type(self)(**{**dict(self), **changes})


@dataclass(frozen=True, slots=True)
class _Load:
    environ: Mapping[str, str]
    values: Mapping[str, Any]


# Set by load_settings while it constructs: the sources to read besides the keywords.
_LOADING: contextvars.ContextVar[_Load | None] = contextvars.ContextVar(
    "jackpot_settings_loading", default=None
)


class EnvironSource(PydanticBaseSettingsSource):
    """The variables of a settings class (and its sections) from the mapping given to
    :func:`load_settings`, keyed by field name."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        super().__init__(settings_cls)
        self.environ = environ

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return self.environ.get(field_name), field_name, False  # unused: __call__ reads all

    def __call__(self) -> dict[str, Any]:
        return read_environ(self.settings_cls, self.environ)


class ValuesSource(PydanticBaseSettingsSource):
    """Values beneath the environment (the gateway's --config file), keyed by field name."""

    def __init__(self, settings_cls: type[BaseSettings], values: Mapping[str, Any]) -> None:
        super().__init__(settings_cls)
        self.values = values

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return self.values.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(self.values)


class KafkaSecurity(SettingsSection):
    """How a client authenticates to the brokers: the same KAFKA_* variables for every service
    (the deployment's shared kafka-client ConfigMap and each service's Secret)."""

    shared_title: ClassVar[str] = "Kafka client security (every service)"

    protocol: Annotated[
        Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"],
        BeforeValidator(_upper),
        Env("KAFKA_SECURITY_PROTOCOL"),
    ] = Field("PLAINTEXT", description="how clients connect to the brokers")
    sasl_mechanism: Annotated[str, Env("KAFKA_SASL_MECHANISM")] = Field(
        "", description="SASL mechanism, for example SCRAM-SHA-512 (empty: PLAIN)"
    )
    username: Annotated[str, Env("KAFKA_SASL_USERNAME")] = Field("", description="SASL user")
    password: Annotated[str, Env("KAFKA_SASL_PASSWORD")] = Field(
        "", repr=False, description="SASL password (from a Secret; never logged)"
    )
    cafile: Annotated[str, Env("KAFKA_SSL_CAFILE")] = Field(
        "", description="CA bundle that signed the brokers' certificates (SSL, SASL_SSL)"
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


class TlsSettings(SettingsSection):
    """Mutual TLS for every gRPC endpoint (:mod:`jackpot.platform.tls`). All three files set:
    servers require and verify client certificates, clients present theirs. None: plaintext."""

    cert_file: Annotated[str, Env("JACKPOT_TLS_CERT")] = Field(
        "", description="this process's certificate (PEM)"
    )
    key_file: Annotated[str, Env("JACKPOT_TLS_KEY")] = Field(
        "", description="its private key (PEM)"
    )
    ca_file: Annotated[str, Env("JACKPOT_TLS_CA")] = Field(
        "",
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


class AccessSettings(SettingsSection):
    """Who may call the gRPC APIs (jackpot.platform.authz): mutual TLS, the audit log, and the
    development escape hatch for plaintext."""

    shared_title: ClassVar[str] = "Access: mutual TLS, audit log, development roles (every service)"

    tls: TlsSettings = Field(default_factory=TlsSettings)
    insecure_roles: Annotated[
        frozenset[Role],
        BeforeValidator(_roles),
        Env("JACKPOT_INSECURE_ROLES", kind="roles, comma-separated"),
    ] = Field(
        frozenset(),
        description="plaintext only: the roles every caller gets, for example operator,supervisor "
        "(development; refused together with TLS)",
    )
    audit_topic: Annotated[str, Env("JACKPOT_AUDIT_TOPIC")] = Field(
        AUDIT.name, description="the hash-chained audit log"
    )
    health_address: Annotated[str, Env("JACKPOT_HEALTH_GRPC")] = Field(
        "",
        description="host:port of a plaintext, health-only gRPC port for probes (empty: none)",
    )

    @model_validator(mode="after")
    def _no_roles_under_tls(self) -> Self:
        if self.tls.enabled and self.insecure_roles:
            raise ValueError("JACKPOT_INSECURE_ROLES is for plaintext development only, not TLS")
        return self


class TracingSettings(SettingsSection):
    """Where spans go (:mod:`jackpot.platform.tracing`): OpenTelemetry's own variables. No
    endpoint: tracing is off and costs nothing. Sampling follows the SDK's OTEL_TRACES_SAMPLER and
    OTEL_TRACES_SAMPLER_ARG."""

    shared_title: ClassVar[str] = "Tracing: OpenTelemetry over OTLP (every service)"

    endpoint: Annotated[
        str, Env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
    ] = Field(
        "",
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


class ServiceSettings(BaseSettings):
    """The settings of one service: subclasses set ``env_prefix`` and ``service``."""

    model_config = SettingsConfigDict(frozen=True, extra="forbid", env_prefix="JACKPOT_")
    service: ClassVar[str] = ""  # the `jackpot <service>` subcommand

    bootstrap_servers: Annotated[
        str, Env("{prefix}BOOTSTRAP_SERVERS", "KAFKA_BOOTSTRAP_SERVERS")
    ] = Field("127.0.0.1:9092", description="Kafka brokers, comma-separated host:port")
    kafka_security: KafkaSecurity = Field(default_factory=KafkaSecurity)
    access: AccessSettings = Field(default_factory=AccessSettings)
    tracing: TracingSettings = Field(default_factory=TracingSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Keywords only, unless :func:`load_settings` is constructing: then keywords, the given
        variables, the given (file) values, in that order of precedence."""
        loading = _LOADING.get()
        if loading is None:
            return (init_settings,)
        return (
            init_settings,
            EnvironSource(settings_cls, loading.environ),
            ValuesSource(settings_cls, loading.values),
        )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Self:
        """Defaults overridden by the variables (``os.environ`` by default); see load_settings."""
        return load_settings(cls, environ)

    def replace(self, **changes: Any) -> Self:
        """A validated copy with ``changes`` (the model is frozen); reads no environment."""
        return type(self)(**{**dict(self), **changes})

    def kafka_options(self) -> dict[str, Any]:
        """Connection options every Kafka client of the service is built with."""
        return {"bootstrap_servers": self.bootstrap_servers, **self.kafka_security.client_options()}

    @classmethod
    def variables(cls) -> list[tuple[str, str]]:
        """(variable, default as shown in docs/settings.md) of every setting read from the
        environment, sections included."""
        return [(row.variables[0], row.default) for row in rows(cls) if row.variables]


# --------------------------------------------------------------------------- loading


def load_settings(
    cls: type[S],
    environ: Mapping[str, str] | None = None,
    *,
    values: Mapping[str, Any] | None = None,
    origin: str = "",
) -> S:
    """``cls`` from the variables in ``environ`` (``os.environ`` by default) over ``values`` (a
    file's, named ``origin`` in errors) over the defaults; a :class:`SettingsError` otherwise."""
    environ = os.environ if environ is None else environ
    token = _LOADING.set(_Load(environ, values or {}))
    try:
        return cls()
    except ValidationError as error:
        raise SettingsError(describe(error, cls, environ, origin)) from None
    finally:
        _LOADING.reset(token)


def settings_or_exit(load: Callable[[], T], program: str) -> T:
    """``load()``; a :class:`SettingsError` is printed as one line on stderr, then exit status 2."""
    try:
        return load()
    except SettingsError as error:
        exit_on_settings_error(error, program)


def exit_on_settings_error(error: SettingsError, program: str) -> NoReturn:
    """Print ``error`` as one line on stderr (``program: bad setting: ...``) and exit 2."""
    message = " ".join(str(error).split())  # one line, whatever the message held
    print(f"{program}: bad setting: {message}", file=sys.stderr, flush=True)
    raise SystemExit(2)


def load_or_exit(cls: type[S], environ: Mapping[str, str] | None = None) -> S:
    """What a service's ``main`` calls: its settings, or one line on stderr and exit status 2."""
    return settings_or_exit(lambda: load_settings(cls, environ), f"jackpot {cls.service}")


def variables_of(model: type[BaseModel], name: str) -> tuple[str, ...]:
    """The variables of one field, in precedence order (empty: not from the environment)."""
    info = model.model_fields[name]
    prefix = str(model.model_config.get("env_prefix") or "")
    for marker in info.metadata:
        if isinstance(marker, NoEnv):
            return ()
        if isinstance(marker, Env) and marker.names:
            return tuple(n.format(prefix=prefix) for n in marker.names)
    if issubclass(model, ServiceSettings):
        return (prefix + name.upper(),)
    return ()


def _section(info: FieldInfo) -> type[SettingsSection] | None:
    annotation = info.annotation
    if isinstance(annotation, type) and issubclass(annotation, SettingsSection):
        return annotation
    return None


def read_environ(model: type[BaseModel], environ: Mapping[str, str]) -> dict[str, Any]:
    """The values of ``model``'s fields (sections as nested dicts) that ``environ`` sets."""
    values: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        section = _section(info)
        if section is not None:
            nested = read_environ(section, environ)
            if nested:
                values[name] = nested
            continue
        variable = next((v for v in variables_of(model, name) if v in environ), None)
        if variable is not None:
            values[name] = environ[variable]
    return values


def _message(error: Mapping[str, Any]) -> str:
    text = str(error["msg"])
    for noise in ("Value error, ", "Assertion failed, "):
        text = text.removeprefix(noise)
    if len(text) > 1 and text[0].isupper() and text[1].islower():  # "Input should be ..."
        text = text[0].lower() + text[1:]
    return text


def _shown(value: object, secret: bool) -> str:
    """A value for the error line: scalars only (a list of tables holds credentials)."""
    if secret:
        return "=***"
    if isinstance(value, str | int | float | bool):
        return f"={value!r}"
    return ""


def _locate(
    model: type[BaseModel], loc: tuple[int | str, ...]
) -> tuple[type[BaseModel], str] | None:
    """The model and field a leaf error location names (None: a section or list element)."""
    if not loc or not isinstance(loc[0], str) or loc[0] not in model.model_fields:
        return None
    section = _section(model.model_fields[loc[0]])
    if section is not None:
        return _locate(section, loc[1:])
    return (model, loc[0]) if len(loc) == 1 else None


def describe(
    error: ValidationError,
    model: type[BaseModel],
    environ: Mapping[str, str],
    origin: str = "",
) -> str:
    """One line for all of ``error``: each problem with its variable, value and what is allowed."""
    parts = []
    for item in error.errors():
        loc = tuple(item["loc"])
        message = _message(item)
        path = ".".join(str(p) if isinstance(p, str) else f"[{p}]" for p in loc).replace(".[", "[")
        located = _locate(model, loc)
        if located is None:
            if _whole_sections(model, loc):  # a model's own check: its message names variables
                parts.append(message)
            else:  # a list element, a file-only field or an unknown key
                parts.append(f"{origin}: {path}: {message}" if origin else f"{path}: {message}")
            continue
        owner, name = located
        secret = owner.model_fields[name].repr is False
        variables = variables_of(owner, name)
        variable = next((v for v in variables if v in environ), None)
        if variable is not None:
            parts.append(f"{variable}{_shown(environ[variable], secret)}: {message}")
            continue
        shown = _shown(item.get("input"), secret)
        if origin:
            parts.append(f"{origin}: {path}{shown}: {message}")
        elif variables:
            parts.append(f"{variables[0]}{shown} (default): {message}")
        else:
            parts.append(f"{path}{shown}: {message}")
    return "; ".join(parts)


def _whole_sections(model: type[BaseModel], loc: tuple[int | str, ...]) -> bool:
    """Whether ``loc`` is the model itself or one of its (nested) sections."""
    if not loc:
        return True
    if not isinstance(loc[0], str) or loc[0] not in model.model_fields:
        return False
    section = _section(model.model_fields[loc[0]])
    return section is not None and _whole_sections(section, loc[1:])


# --------------------------------------------------------------------------- documentation


@dataclass(frozen=True, slots=True)
class Row:
    """One setting as docs/settings.md shows it."""

    path: str  # the keyword / file key, dotted through sections
    variables: tuple[str, ...]
    kind: str
    default: str
    description: str


def _kind(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _kind(typing.get_args(annotation)[0])
    if origin is Literal:
        return "one of " + ", ".join(str(a) for a in typing.get_args(annotation))
    if origin in (types.UnionType, typing.Union):
        kinds = [_kind(a) for a in typing.get_args(annotation) if a is not type(None)]
        return " or ".join(kinds)
    if origin in (tuple, list, frozenset, set):
        return "list of " + _kind(typing.get_args(annotation)[0])
    if origin is not None:
        return (
            "mapping" if issubclass(origin, Mapping) else getattr(origin, "__name__", str(origin))
        )
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return "one of " + ", ".join(str(m.value) for m in annotation)
    return getattr(annotation, "__name__", str(annotation))


def _shown_default(info: FieldInfo) -> str:
    for marker in info.metadata:
        if isinstance(marker, Env) and marker.default:
            return marker.default
    if info.default_factory is not None:
        return "(computed)"
    value = info.default
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None or value in ("", ()) or value == frozenset():
        return "(none)"
    return str(value)


def rows(model: type[BaseModel], prefix: str = "", shared: bool = True) -> Iterator[Row]:
    """Every setting of ``model``, sections flattened (shared sections too, unless not
    ``shared``: they have a table of their own)."""
    for name, info in model.model_fields.items():
        section = _section(info)
        if section is not None:
            if shared or not section.shared_title:
                yield from rows(section, f"{prefix}{name}.", shared)
            continue
        kind = next((m.kind for m in info.metadata if isinstance(m, Env) and m.kind), "")
        how = next((m.how for m in info.metadata if isinstance(m, NoEnv)), "")
        description = info.description or ""
        if how:
            description = f"{description} ({how})" if description else how
        yield Row(
            path=prefix + name,
            variables=variables_of(model, name),
            kind=kind or _kind(info.annotation),
            default=_shown_default(info),
            description=description,
        )


def _table(lines: list[str], model: type[BaseModel], shared: bool, prefix: str = "") -> None:
    lines += ["| variable | setting | type | default | description |", "|---|---|---|---|---|"]
    for row in rows(model, prefix, shared=shared):
        variable = " or ".join(f"`{v}`" for v in row.variables) or "—"
        default = row.default if row.default.startswith("(") else f"`{row.default}`"
        lines.append(
            f"| {variable} | `{row.path}` | {row.kind} | {default} | {row.description} |".replace(
                "|  |", "| |"
            )
        )
    lines.append("")


def _doc(model: type[BaseModel]) -> str:
    text = (model.__doc__ or "").strip()
    return " ".join(text.split())


def settings_markdown(classes: Sequence[type[ServiceSettings]]) -> str:
    """docs/settings.md: one table per service (``classes``, in order; the list is
    :func:`jackpot.tools.settings_doc.service_settings`) and per shared section."""
    lines = [
        "# Settings",
        "",
        "<!-- Generated from the settings models by `jackpot settings > docs/settings.md`;",
        "     tests/unit/test_settings.py fails when this file and the models differ. -->",
        "",
        "Every service reads its settings once at start from environment variables (the gateway "
        "also from its `--config` file, beneath the variables). Where two variables are listed, "
        "the first one set wins. Booleans are `true`/`false`, `1`/`0`, `yes`/`no` or `on`/`off`. "
        "A bad value stops the service before it connects to anything: one line on stderr naming "
        "the variable, the value and what is allowed, exit status 2. The *setting* column is the "
        "keyword of the settings class (`jackpot.<service>.settings`) and, for the gateway, the "
        "key in its file.",
        "",
    ]
    shared = {
        name: section
        for name, info in ServiceSettings.model_fields.items()
        if (section := _section(info)) is not None and section.shared_title
    }
    quoted = [f"`{name}`" for name in shared]
    names = ", ".join(quoted[:-1]) + f" and {quoted[-1]}" if len(quoted) > 1 else "".join(quoted)
    for cls in classes:
        prefix = cls.model_config.get("env_prefix")
        lines += [f"## {cls.service}: `jackpot {cls.service}` ({prefix}*)", "", _doc(cls), ""]
        _table(lines, cls, shared=False)
        lines += [f"Plus {names}: the shared sections at the end.", ""]
    for name, section in shared.items():
        lines += [f"## {section.shared_title}", "", _doc(section), ""]
        _table(lines, section, shared=True, prefix=f"{name}.")
    return "\n".join(lines).rstrip("\n") + "\n"
