"""docs/settings.md from every service's settings model (`jackpot settings`).

One table per service, its sections flattened into it (the exactly-once processor's under the
service's prefix), and one per shared section (Kafka security, access, tracing) at the end. The
variables are those :func:`jackpot.platform.settings.variables_of` names, the very ones
:func:`jackpot.platform.settings.load` reads. The list of services lives here, above them all:
``jackpot.platform.settings`` is imported by every service and so imports none of them.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined
from pydantic_settings import BaseSettings

from jackpot.display.settings import DisplaySettings
from jackpot.gateway.settings import GatewaySettings
from jackpot.payout.settings import PayoutSettings
from jackpot.platform.service_settings import ServiceSettings
from jackpot.platform.settings import prefix_of, section_of, variables_of
from jackpot.pot.settings import PotSettings
from jackpot.terminal.settings import TerminalSettings
from jackpot.tools.report_document import ReportSettings
from jackpot.wallet.settings import WalletSettings

INTRO = (
    "Every service reads its settings once at start from environment variables (the gateway "
    "also from its `--config` file, beneath the variables). Where two variables are listed, "
    "the first one set wins. Booleans are `true`/`false`, `1`/`0`, `yes`/`no` or `on`/`off`. "
    "A bad value stops the service before it connects to anything: one line on stderr naming "
    "the variable, the value and what is allowed, exit status 2. The *setting* column is the "
    "keyword of the settings class (`jackpot.<service>.settings`; a dotted one is a field of a "
    "nested section, such as the exactly-once processor's `processor`) and, for the gateway, "
    "the key in its file."
)


def service_settings() -> list[type[ServiceSettings]]:
    """Every service's settings class, in the order docs/settings.md lists them."""
    return [
        PotSettings,
        PayoutSettings,
        DisplaySettings,
        GatewaySettings,
        TerminalSettings,
        WalletSettings,
    ]


@dataclass(frozen=True, slots=True)
class Row:
    """One setting as docs/settings.md shows it."""

    path: str  # the keyword / file key, dotted through sections
    variables: tuple[str, ...]
    kind: str
    default: str
    description: str


def _extra(info: FieldInfo) -> Mapping[str, Any]:
    return info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}


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


def _shown_default(info: FieldInfo, default: Any) -> str:
    shown = _extra(info).get("shown_default")
    if shown:
        return str(shown)
    if default is PydanticUndefined:
        return "(computed)" if info.default_factory is not None else "(required)"
    value = default
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None or value in ("", ()) or value == frozenset():
        return "(none)"
    return str(value)


def rows(
    model: type[BaseSettings],
    path: str = "",
    prefix: str = "",
    shared: bool = True,
    defaults: BaseModel | None = None,
) -> Iterator[Row]:
    """Every setting of ``model``, sections flattened (shared sections too, unless not
    ``shared``: they have a table of their own). ``defaults``: the section's default as its
    service gives it (the processor's consumer group is the pot's or the payout's)."""
    prefix = prefix_of(model, prefix)
    for name, info in model.model_fields.items():
        section = section_of(info)
        if section is not None:
            if shared or not section.shared_title:
                default = info.default if isinstance(info.default, BaseModel) else None
                yield from rows(section, f"{path}{name}.", prefix, shared, default)
            continue
        extra = _extra(info)
        description = info.description or ""
        source = str(extra.get("source") or "")
        if source:
            description = f"{description} ({source})" if description else source
        yield Row(
            path=path + name,
            variables=variables_of(model, name, prefix),
            kind=str(extra.get("shown_type") or _kind(info.annotation)),
            default=_shown_default(
                info, getattr(defaults, name) if defaults is not None else info.default
            ),
            description=description,
        )


def variables(model: type[ServiceSettings]) -> list[tuple[str, str]]:
    """(variable, default as docs/settings.md shows it) of every setting ``model`` reads from
    the environment, sections included."""
    return [(row.variables[0], row.default) for row in rows(model) if row.variables]


def _table(lines: list[str], model: type[BaseSettings], shared: bool, path: str = "") -> None:
    lines += ["| variable | setting | type | default | description |", "|---|---|---|---|---|"]
    for row in rows(model, path, shared=shared):
        variable = " or ".join(f"`{v}`" for v in row.variables) or "—"
        default = row.default if row.default.startswith("(") else f"`{row.default}`"
        lines.append(
            f"| {variable} | `{row.path}` | {row.kind} | {default} | {row.description} |".replace(
                "|  |", "| |"
            )
        )
    lines.append("")


def _doc(model: type[BaseSettings]) -> str:
    text = (model.__doc__ or "").strip()
    return " ".join(text.split())


def markdown() -> str:
    """The whole of docs/settings.md."""
    lines = [
        "# Settings",
        "",
        "<!-- Generated from the settings models by `jackpot settings > docs/settings.md`;",
        "     tests/unit/test_settings.py fails when this file and the models differ. -->",
        "",
        INTRO,
        "",
    ]
    shared = {
        name: section
        for name, info in ServiceSettings.model_fields.items()
        if (section := section_of(info)) is not None and section.shared_title
    }
    quoted = [f"`{name}`" for name in shared]
    names = ", ".join(quoted[:-1]) + f" and {quoted[-1]}" if len(quoted) > 1 else "".join(quoted)
    for cls in service_settings():
        prefix = cls.model_config.get("env_prefix")
        lines += [f"## {cls.service}: `jackpot {cls.service}` ({prefix}*)", "", _doc(cls), ""]
        _table(lines, cls, shared=False)
        lines += [f"Plus {names}: the shared sections at the end.", ""]
    lines += [f"## report: `jackpot report` ({ReportSettings.model_config.get('env_prefix')}*)"]
    lines += ["", _doc(ReportSettings), ""]
    _table(lines, ReportSettings, shared=False)
    for name, section in shared.items():
        lines += [f"## {section.shared_title}", "", _doc(section), ""]
        _table(lines, section, shared=True, path=f"{name}.")
    return "\n".join(lines).rstrip("\n") + "\n"
