"""The one typed schema of what sets a session up: ``session.json`` and the session fields of
``scenario.yaml`` (``prompts``, ``settings``, ``session``).

Types are exact (pydantic strict mode): ``"hello"`` is not a list of prompts, ``"no"`` is not a
boolean, ``1.5`` and ``"1"`` and ``true`` are not a seed; an integer is a number, nothing else is
coerced. Unknown keys are refused, so a typo never passes silently. The settings model is built
from `EngineSettings`' own fields and types, so the two cannot drift apart. A problem becomes one
sentence: ``<file>: <field path> <problem> (got <value>).``
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal, TypeVar, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from engine.settings import EngineSettings
from replay.schema.options import InterruptAt, SessionOptions, SessionOptionsError

__all__ = [
    "HOOK_EVENTS",
    "ScenarioSessionDocument",
    "SchemaError",
    "SessionDocument",
    "SessionOptionsDocument",
    "SettingsDocument",
    "document_type",
    "engine_settings_from",
    "session_options_from",
    "validate_document",
]

HOOK_EVENTS: Final = ("pre_tool_use", "post_tool_use", "stop")


_M = TypeVar("_M", bound=BaseModel)


class SchemaError(ValueError):
    """A document that does not fit the schema; the message is one sentence naming the file."""


_EXACT = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, protected_namespaces=(), frozen=True)


class _Exact(BaseModel):
    model_config = _EXACT


def document_type(hint: Any) -> Any:
    """The JSON/YAML shape of a settings type: a tuple is written as a list, a string enum as
    one of its values (the settings turn it back into the enum); the rest is the same type.
    Applied inside unions (``X | None``) and containers."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if isinstance(hint, type) and issubclass(hint, enum.StrEnum):
        # Written as its value (``"resume"``); the settings turn it back into the enum.
        return Literal[tuple(member.value for member in hint)]  # type: ignore[valid-type]
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return list[document_type(args[0])]  # type: ignore[misc]
    if origin in (Union, types.UnionType):
        return Union[tuple(document_type(arg) for arg in args)]  # noqa: UP007 — built at run time
    return hint


def _settings_fields() -> dict[str, Any]:
    hints = typing.get_type_hints(EngineSettings)
    fields: dict[str, Any] = {}
    for item in dataclasses.fields(EngineSettings):
        default = item.default_factory() if item.default_factory is not dataclasses.MISSING else item.default
        if isinstance(default, tuple):
            default = list(default)
        fields[item.name] = (document_type(hints[item.name]), default)
    return fields


SettingsDocument: type[BaseModel] = create_model(  # type: ignore[call-overload]
    "SettingsDocument", __config__=_EXACT, __doc__="`EngineSettings` as JSON/YAML data.", **_settings_fields()
)


class HookDocument(_Exact):
    """One command hook."""

    command: str
    matcher: str | None = None
    timeout_s: float | None = None


class HooksDocument(_Exact):
    """Command hooks by event."""

    pre_tool_use: list[HookDocument] = []
    post_tool_use: list[HookDocument] = []
    stop: list[HookDocument] = []


class PermissionsDocument(_Exact):
    """Permission rules: the tools the session denies."""

    deny: list[str] = []


class InterruptDocument(_Exact):
    """When the user interrupts the session."""

    at: Literal[tuple(at.value for at in InterruptAt)]  # type: ignore[valid-type]
    # Which occurrence; each ``at`` has its own key (`InterruptAt.number_key`), which
    # `SessionOptions.from_mapping` checks. Absent means 1.
    count: int | None = Field(default=None, ge=1)
    batch: int | None = Field(default=None, ge=1)
    n: int | None = Field(default=None, ge=1)


class SessionOptionsDocument(_Exact):
    """`SessionOptions` as JSON/YAML data. Keys this model does not type are left to
    `SessionOptions.from_mapping`, which refuses the ones it does not know."""

    model_config = ConfigDict(**{**_EXACT, "extra": "allow"})

    hooks: HooksDocument | None = None
    permissions: PermissionsDocument | None = None
    interrupt: InterruptDocument | None = None
    clock_advance_minutes: list[typing.Annotated[float, Field(ge=0)]] | None = None
    # Names are checked by `SessionOptions.from_mapping` (a shell variable name, none the engine sets).
    env: dict[str, str] | None = None


class SessionDocument(_Exact):
    """``session.json``, as `SessionSpec.to_json` writes it (``model`` and ``system_prompt`` repeat
    the settings' values for a reader)."""

    format_version: int
    model: str | None = None
    system_prompt: str | None = None
    tools: list[str] | None = None
    prompts: list[str]
    seed: int = 0
    live: bool = False
    scenario: str | None = None
    settings: SettingsDocument | None = None  # type: ignore[valid-type]
    session_options: SessionOptionsDocument | None = None


class ScenarioSessionDocument(BaseModel):
    """The fields of ``scenario.yaml`` that set up a recorded session (its turns are checked by
    `replay.fake.scenario`)."""

    model_config = ConfigDict(**{**_EXACT, "extra": "ignore"})

    prompts: list[str] = []
    settings: SettingsDocument | None = None  # type: ignore[valid-type]
    session: SessionOptionsDocument | None = None


def validate_document(model: type[_M], document: object, *, source: Path | str, prefix: str = "") -> _M:
    """``document`` checked against ``model``; `SchemaError` names ``source`` and the first field
    that does not fit (``prefix`` is put before field paths: ``settings.``)."""
    try:
        return model.model_validate(document)
    except ValidationError as err:
        raise SchemaError(_sentence(err, model, source=source, prefix=prefix)) from None


def engine_settings_from(values: Mapping[str, Any], *, source: Path | str, prefix: str = "settings.") -> EngineSettings:
    """`EngineSettings` from their JSON/YAML shape, exactly typed; the values are kept as written
    (an integer stays an integer), so writing them back gives the same bytes."""
    validate_document(SettingsDocument, values, source=source, prefix=prefix)
    converted: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
    try:
        return EngineSettings(**converted)
    except ValueError as err:
        raise SchemaError(f"{source}: {err}") from None


def session_options_from(values: Mapping[str, Any] | None, *, source: Path | str, prefix: str) -> SessionOptions:
    """`SessionOptions` from their JSON/YAML shape, exactly typed, their hooks built once so that
    a bad hook is refused here rather than when the session starts."""
    validate_document(SessionOptionsDocument, {} if values is None else values, source=source, prefix=prefix)
    try:
        options = SessionOptions.from_mapping(values)
        options.build_hooks()
    except (SessionOptionsError, ValueError) as err:
        raise SchemaError(f"{source}: {prefix.rstrip('.')}: {str(err).rstrip('.')}.") from None
    return options


# ---------------------------------------------------------------------------------------------
# One sentence for a validation error

_PROBLEMS: Final = {
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "float_type": "must be a number",
    "bool_type": "must be a boolean (true or false)",
    "list_type": "must be a list",
    "dict_type": "must be a mapping (a JSON object)",
    "model_type": "must be a mapping (a JSON object)",
    "finite_number": "must be a finite number",
    "missing": "is missing",
}


def _sentence(err: ValidationError, model: type[BaseModel], *, source: Path | str, prefix: str) -> str:
    errors = err.errors(include_url=False)
    first = errors[0]
    path = _path(first["loc"], prefix)
    kind = first["type"]
    if kind == "extra_forbidden":
        problem = "is not a known field" + _suggestion(model, first["loc"])
    elif kind == "literal_error":
        problem = f"must be one of {first['ctx']['expected']}"
    elif kind == "greater_than_equal":
        problem = f"must be at least {first['ctx']['ge']}"
    else:
        problem = _PROBLEMS.get(kind, _lower(first["msg"]))
    got = "" if kind == "missing" else f" (got {_short(first['input'])})"
    more = f"; {len(errors) - 1} more problem(s) after it" if len(errors) > 1 else ""
    return f"{source}: {path} {problem}{got}{more}."


def _path(loc: tuple[int | str, ...], prefix: str) -> str:
    text = prefix.rstrip(".")
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text or "the document"


def _suggestion(model: type[BaseModel], loc: tuple[int | str, ...]) -> str:
    # Walk to the model that holds the unknown key, to name the field it was probably meant as.
    holder: type[BaseModel] | None = model
    for part in loc[:-1]:
        field = holder.model_fields.get(part) if isinstance(part, str) and holder is not None else None
        if field is None:
            return ""
        holder = next((arg for arg in (field.annotation, *typing.get_args(field.annotation)) if _is_model(arg)), None)
    if holder is None:
        return ""
    close = difflib.get_close_matches(str(loc[-1]), list(holder.model_fields), n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def _is_model(value: object) -> bool:
    return isinstance(value, type) and issubclass(value, BaseModel)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _lower(text: str) -> str:
    return text[:1].lower() + text[1:] if text[1:2].islower() else text
