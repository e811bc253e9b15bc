"""Every service's settings: frozen pydantic-settings models, read once by :func:`load`.

* A service's settings are one :class:`~jackpot.platform.service_settings.ServiceSettings`
  subclass (that module holds the sections every service shares) whose ``model_config`` names its
  ``env_prefix`` (pot ``JACKPOT_``, payout ``JACKPOT_PAYOUT_``, display ``JACKPOT_DISPLAY_``,
  gateway ``JACKPOT_GATEWAY_``, terminal ``JACKPOT_TERMINAL_``). A field is read from
  ``<env_prefix><FIELD NAME IN CAPITALS>``, or, when it has a ``validation_alias``, from that
  variable (an ``AliasChoices``: the first one set wins): pydantic-settings' own rule, exactly
  as named (not also the field's name beside its alias, nor in another case).
* A field whose type is a :class:`Settings` model is a nested *section*. A section that declares
  its own ``env_prefix`` or aliases has the same variables in every service (``KafkaSecurity``
  ``KAFKA_*``, ``AccessSettings`` ``JACKPOT_TLS_*`` and friends, ``TracingSettings``
  ``OTEL_*``); one that does not is read under its service's prefix (the exactly-once
  processor's :class:`~jackpot.platform.exactly_once_settings.ExactlyOnceSettings`:
  ``JACKPOT_CONSUMER_GROUP`` for the pot, ``JACKPOT_PAYOUT_CONSUMER_GROUP`` for the payout).
* :func:`load` is the one way to read them: the variables of a mapping (``os.environ`` by
  default) over a JSON file's values (the gateway's ``--config``) over the defaults. Any bad value
  is a :class:`SettingsError` of ONE line naming the variable, the value and what is allowed; the
  ``jackpot`` command prints it on stderr and exits with status 2 before anything connects.
* Constructing a class with keywords (tests do: ``PotSettings(table_events_topic=...)``) reads
  no environment: what is passed, or the default; a section given as a mapping changes only the
  fields it names. ``settings.replace(**changes)`` is a validated copy (the models are frozen).

Booleans accept only true/false, 1/0, yes/no, on/off. Every setting is in docs/settings.md,
generated from these models by :mod:`jackpot.tools.settings_doc` (``jackpot settings``).
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, Self, TypeVar

import pydantic_settings
from pydantic import AliasChoices, BeforeValidator, Field, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)
from pydantic_settings.sources import PydanticBaseEnvSettingsSource

S = TypeVar("S", bound="Settings")

TRUE_WORDS = frozenset({"true", "1", "yes", "on"})
FALSE_WORDS = frozenset({"false", "0", "no", "off"})


class SettingsError(ValueError):
    """A setting is missing, malformed or inconsistent with another (one line, for stderr)."""


# --------------------------------------------------------------------------- value types


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


Bool = Annotated[bool, BeforeValidator(parse_bool)]
Port = Annotated[int, Field(ge=0, le=65535)]


def default_instance_id() -> str:
    """``<hostname>-<pid>``: unique per process, stable for the life of one."""
    return f"{socket.gethostname()}-{os.getpid()}"


# A field's ``json_schema_extra`` may say how docs/settings.md shows it ("shown_type",
# "shown_default": instead of the annotation's and the default's), and keep it out of the
# environment (NOT_FROM_ENVIRONMENT: a file's or a keyword's only; "source" says which).
NOT_FROM_ENVIRONMENT = "from_environment"


def not_from_environment(source: str) -> dict[str, Any]:
    """``json_schema_extra`` of a field no variable sets; ``source`` says what does."""
    return {NOT_FROM_ENVIRONMENT: False, "source": source}


# --------------------------------------------------------------------------- base classes


class Settings(BaseSettings):
    """A settings model (a service's, or a section nested in it): frozen, unknown keys refused,
    fields given by name or by their variable's alias.

    Constructing one reads keywords only (``settings_customise_sources``): the environment is read
    by :func:`load` alone. A section given as a mapping updates its default
    (``nested_model_default_partial_update``): ``PotSettings(processor={"instance_id": "a"})``
    keeps the pot's consumer group."""

    model_config = SettingsConfigDict(
        frozen=True,
        extra="forbid",
        validate_by_name=True,
        nested_model_default_partial_update=True,
    )
    # A section documented once, under this title, rather than in each service's table.
    shared_title: ClassVar[str] = ""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)

    def replace(self, **changes: Any) -> Self:
        """A validated copy with ``changes`` (the models are frozen); a section's change may be a
        mapping of the fields to change (``processor={"instance_id": "b"}``)."""
        values = dict(self)
        for name, change in changes.items():
            current = values.get(name)
            if isinstance(current, Settings) and isinstance(change, Mapping):
                change = current.replace(**change)
            values[name] = change
        return type(self)(**values)


# --------------------------------------------------------------------------- loading


def load(
    cls: type[S], environ: Mapping[str, str] | None = None, *, file: str | Path | None = None
) -> S:
    """The one way settings are read: ``cls`` from the variables in ``environ`` (``os.environ``
    by default) over the JSON object in ``file`` (the gateway's ``--config``; its keys are the
    fields) over the defaults. A :class:`SettingsError` of one line otherwise."""
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    if file is not None:
        try:
            values = read_json_object(file)
        except (OSError, ValueError) as error:
            what = getattr(cls, "service", "") or cls.__name__
            raise SettingsError(f"{file}: cannot read the {what} settings: {error}") from None
    try:
        values = _merged(values, from_environment(cls, environ))
    except pydantic_settings.SettingsError as error:  # a complex value that is not JSON
        raise SettingsError(f"{error}: {error.__cause__}") from None
    try:
        return cls(**values)
    except ValidationError as error:
        raise SettingsError(describe(error, cls, environ, str(file or ""))) from None


def read_json_object(path: str | Path) -> dict[str, Any]:
    """The JSON object in the file at ``path`` (OSError or ValueError otherwise)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    return data


def read_credentials(path: str, setting: str) -> dict[str, str]:
    """The ``{table_id: credential}`` JSON object of a credentials file (the gateway's devices,
    the payout's terminals); a ValueError naming ``setting`` otherwise."""
    try:
        loaded = read_json_object(path)
    except (OSError, ValueError) as error:
        raise ValueError(f"{setting} {path!r}: {error} (a {{table_id: credential}} file)") from None
    return {str(k): str(v) for k, v in loaded.items()}


def _merged(below: Mapping[str, Any], above: Mapping[str, Any]) -> dict[str, Any]:
    """``above`` over ``below``, sections (nested mappings) merged key by key."""
    merged = dict(below)
    for key, value in above.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            value = _merged(merged[key], value)
        merged[key] = value
    return merged


def section_of(info: FieldInfo) -> type[Settings] | None:
    """The section a field holds, if it is one."""
    annotation = info.annotation
    if isinstance(annotation, type) and issubclass(annotation, Settings):
        return annotation
    return None


def prefix_of(model: type[BaseSettings], enclosing: str = "") -> str:
    """The ``env_prefix`` of ``model``'s own variables: its own, else its enclosing model's."""
    return str(model.model_config.get("env_prefix") or enclosing)


def variables_of(model: type[BaseSettings], name: str, prefix: str = "") -> tuple[str, ...]:
    """The variables of one field, in precedence order (empty: not from the environment):
    its ``validation_alias`` (choices in order), else ``<prefix><NAME>``."""
    info = model.model_fields[name]
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    if section_of(info) is not None or extra.get(NOT_FROM_ENVIRONMENT) is False:
        return ()
    alias = info.validation_alias
    if isinstance(alias, AliasChoices):
        return tuple(choice for choice in alias.choices if isinstance(choice, str))
    if isinstance(alias, str):
        return (alias,)
    return (prefix_of(model, prefix) + name.upper(),)


class EnvironmentSource(PydanticBaseEnvSettingsSource):
    """pydantic-settings' environment source over a given mapping: each field from its own
    variables (:func:`variables_of`), exactly as named (sections are read by
    :func:`from_environment`). Complex values are JSON unless the field says ``NoDecode``."""

    def __init__(
        self, settings_cls: type[BaseSettings], environ: Mapping[str, str], prefix: str
    ) -> None:
        super().__init__(settings_cls, case_sensitive=True, env_prefix=prefix)
        self.environ = environ

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        for variable in variables_of(self.settings_cls, field_name, self.env_prefix):
            if variable in self.environ:
                return self.environ[variable], field_name, False
        return None, field_name, False


def from_environment(
    model: type[BaseSettings], environ: Mapping[str, str], enclosing: str = ""
) -> dict[str, Any]:
    """The values of ``model``'s fields that ``environ`` sets, keyed by field name (sections as
    nested mappings, read under their own prefix or ``model``'s)."""
    prefix = prefix_of(model, enclosing)
    values = EnvironmentSource(model, environ, prefix)()
    for name, info in model.model_fields.items():
        section = section_of(info)
        if section is not None and (nested := from_environment(section, environ, prefix)):
            values[name] = nested
    return values


# --------------------------------------------------------------------------- one-line errors


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
    model: type[BaseSettings], loc: tuple[int | str, ...], enclosing: str
) -> tuple[type[BaseSettings], str, str] | None:
    """The model, field and prefix a leaf error location names (None: a list element or a key
    that is no field)."""
    if not loc or not isinstance(loc[0], str) or loc[0] not in model.model_fields:
        return None
    prefix = prefix_of(model, enclosing)
    section = section_of(model.model_fields[loc[0]])
    if section is not None:
        return _locate(section, loc[1:], prefix)
    return (model, loc[0], prefix) if len(loc) == 1 else None


def _whole_sections(model: type[BaseSettings], loc: tuple[int | str, ...]) -> bool:
    """Whether ``loc`` is the model itself or one of its (nested) sections: its own check,
    whose message names its variables."""
    if not loc:
        return True
    if not isinstance(loc[0], str) or loc[0] not in model.model_fields:
        return False
    section = section_of(model.model_fields[loc[0]])
    return section is not None and _whole_sections(section, loc[1:])


def describe(
    error: ValidationError,
    model: type[BaseSettings],
    environ: Mapping[str, str],
    origin: str = "",
) -> str:
    """One line for all of ``error``: each problem with its variable, value and what is allowed
    (``origin``: the file the other values came from)."""
    parts = []
    for item in error.errors():
        loc = tuple(item["loc"])
        message = _message(item)
        path = ".".join(str(p) if isinstance(p, str) else f"[{p}]" for p in loc).replace(".[", "[")
        located = _locate(model, loc, "")
        if located is None:
            if _whole_sections(model, loc):
                parts.append(message)
            else:  # a list element, a file-only field or an unknown key
                parts.append(f"{origin}: {path}: {message}" if origin else f"{path}: {message}")
            continue
        owner, name, prefix = located
        secret = owner.model_fields[name].repr is False
        variables = variables_of(owner, name, prefix)
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


def settings_refused(error: SettingsError, program: str) -> int:
    """What the ``jackpot`` command does with a bad setting: ``program: bad setting: ...`` as
    one line on stderr, and exit status 2."""
    message = " ".join(str(error).split())  # one line, whatever the message held
    print(f"{program}: bad setting: {message}", file=sys.stderr, flush=True)
    return 2
