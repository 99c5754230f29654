"""Scenario scripts for the fake model: what it answers, turn by turn, and the faults it injects.

A scenario is loaded from YAML (see docs/scenarios.md) or built from dataclasses. Every
malformed script raises `ScenarioError` with one sentence naming the file, the turn and the
problem; unknown keys are errors so that a typo never passes silently.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any, Final

import yaml

from replay.fake.blocks import (
    Block,
    Match,
    RedactedThinkingBlock,
    RequestPurpose,
    ScenarioError,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Turn,
    Usage,
    is_int,
    to_enum,
)
from replay.fake.faults import (
    DropConnection,
    ErrorType,
    Fault,
    FaultKind,
    HttpError,
    MalformedEvent,
    ResetConnection,
    StreamError,
    TurnOrFault,
    check_fault_reach,
)
from replay.schema.documents import (
    ScenarioSessionDocument,
    SchemaError,
    engine_settings_from,
    session_options_from,
    validate_document,
)
from replay.storage.bundle_files import MAX_SCENARIO_BYTES, BadFileError, read_capped_text
from replay.storage.strict_yaml import load_yaml

__all__ = ["SCENARIO_VERSION", "Scenario", "load_scenario"]

SCENARIO_VERSION: Final = 1


@dataclass(frozen=True, kw_only=True)
class Scenario:
    """A script of model turns and faults, played in order (turns are numbered from 1)."""

    turns: tuple[TurnOrFault, ...]
    model: str | None = None
    name: str | None = None
    # What to submit and how to set the engine up when this script is recorded as a bundle.
    prompts: tuple[str, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)
    # Hooks, permission rules, an interruption, the clock between prompts (replay.schema.options).
    session: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "turns", tuple(self.turns))
        object.__setattr__(self, "prompts", tuple(self.prompts))
        object.__setattr__(self, "settings", dict(self.settings))
        object.__setattr__(self, "session", dict(self.session))
        for number, turn in enumerate(self.turns, start=1):
            with _located(f"turn {number}"):
                if not isinstance(turn, TurnOrFault):
                    raise ScenarioError(f"expected a Turn or a fault, not {type(turn).__name__}.")
                if isinstance(turn, StreamError | DropConnection | MalformedEvent):
                    check_fault_reach(turn)

    @classmethod
    def from_list(
        cls, items: Sequence[TurnOrFault | Mapping[str, Any]], *, model: str | None = None, name: str | None = None
    ) -> Scenario:
        """Build a scenario from turns given as dataclasses or as dicts in the YAML shape."""
        if isinstance(items, str | bytes | Mapping) or not isinstance(items, Sequence):
            raise ScenarioError(f"turns must be a list, not {_type_name(items)}.")
        turns: list[TurnOrFault] = []
        for number, item in enumerate(items, start=1):
            with _located(f"turn {number}"):
                turns.append(item if isinstance(item, TurnOrFault) else _parse_turn_or_fault(item))
        return cls(turns=tuple(turns), model=model, name=name)


def load_scenario(path: str | PathLike[str]) -> Scenario:
    """Load a YAML scenario file (`{version: 1, name?, model?, turns: [...]}`)."""
    try:
        text = read_capped_text(Path(path), limit=MAX_SCENARIO_BYTES, remedy="check that it is a scenario file")
    except BadFileError as err:
        raise ScenarioError(str(err)) from None
    with _located(str(path)):
        try:
            # The cassettes' loader: plain data only, and no aliases (no alias bombs).
            document = load_yaml(text)
        except yaml.YAMLError as err:
            raise ScenarioError(f"invalid YAML ({_yaml_problem(err)}).") from None
        except RecursionError:
            raise ScenarioError("the YAML is nested too deeply to be a scenario.") from None
        return _parse_document(document, source=str(path))


# ---------------------------------------------------------------------------------------------
# Parsing the YAML shape

_TOP_KEYS: Final = ("version", "name", "model", "prompts", "settings", "session", "turns")
_TURN_KEYS: Final = ("content", "stop_reason", "usage", "match")
_MATCH_KEYS: Final = ("purpose", "last_user_contains", "has_tools", "model", "stream", "repeat")
_USAGE_KEYS: Final = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
_BLOCK_KINDS: Final = ("text", "tool_use", "thinking", "redacted_thinking")
_FAULT_KEYS: Final[Mapping[FaultKind, tuple[str, ...]]] = {
    FaultKind.HTTP_ERROR: ("fault", "status", "error_type", "message", "headers", "match"),
    FaultKind.STREAM_ERROR: ("fault", "after_events", "error_type", "message", "content", "match"),
    FaultKind.DROP_CONNECTION: ("fault", "after_events", "content", "match"),
    FaultKind.MALFORMED_EVENT: ("fault", "after_events", "content", "match"),
    FaultKind.RESET_CONNECTION: ("fault", "match"),
}


def _parse_document(document: object, *, source: str) -> Scenario:
    if document is None:
        raise ScenarioError("the scenario file is empty; expected a mapping with version and turns.")
    top = _mapping(document, "the scenario file", _TOP_KEYS, where="in the scenario file")
    version = _required(top, "version")
    if version != SCENARIO_VERSION:
        raise ScenarioError(f"unsupported version {version!r}; expected version {SCENARIO_VERSION}.")
    name = _optional_str(top, "name")
    model = _optional_str(top, "model")
    turns = _required(top, "turns")
    if not isinstance(turns, list):
        raise ScenarioError(f"'turns' must be a list, not {_type_name(turns)}.")
    prompts, settings, session = _session_fields(top, source)
    scenario = Scenario.from_list(turns, model=model, name=name)
    return dataclasses.replace(scenario, prompts=tuple(prompts), settings=dict(settings), session=dict(session))


def _session_fields(top: Mapping[str, Any], source: str) -> tuple[list[str], dict[str, Any], dict[str, Any]]:
    """The prompts, settings and session options, checked against the session schema (exact
    types, the same as session.json's); errors are raised without the file, which
    `load_scenario` puts in front."""
    try:
        validate_document(ScenarioSessionDocument, top, source=source)
        settings = dict(top.get("settings") or {})
        session = dict(top.get("session") or {})
        engine_settings_from(settings, source=source)
        session_options_from(session, source=source, prefix="session.")
    except SchemaError as err:
        raise ScenarioError(str(err).removeprefix(f"{source}: ")) from None
    prompts = list(top.get("prompts") or [])
    if not all(p.strip() for p in prompts):
        raise ScenarioError("'prompts' must be a list of non-empty strings (the prompts to submit, in order).")
    return prompts, settings, session


def _parse_turn_or_fault(item: object) -> TurnOrFault:
    if isinstance(item, Mapping) and "fault" in item:
        return _parse_fault(item)
    raw = _mapping(item, "a turn", _TURN_KEYS, where="in the turn")
    content = _parse_content(_required(raw, "content"))
    stop_reason = _optional_str(raw, "stop_reason")
    usage = raw.get("usage")
    return Turn(
        content=content,
        stop_reason=None if stop_reason is None else to_enum(StopReason, stop_reason, "stop_reason"),
        usage=None if usage is None else _parse_usage(usage),
        match=_parse_match(raw),
    )


def _parse_fault(raw: Mapping[str, Any]) -> Fault:
    kind_name = raw["fault"]
    kind = to_enum(FaultKind, kind_name, "fault")
    _check_keys(raw, _FAULT_KEYS[kind], f"in the {kind} fault")
    match = _parse_match(raw)
    if kind is FaultKind.HTTP_ERROR:
        return HttpError(
            status=_int(raw, "status"),
            error_type=to_enum(ErrorType, _str(raw, "error_type"), "error_type"),
            message=_str(raw, "message"),
            headers=_parse_headers(raw.get("headers", {})),
            match=match,
        )
    if kind is FaultKind.RESET_CONNECTION:
        return ResetConnection(match=match)
    content = _parse_content(raw.get("content", []))
    after_events = _int(raw, "after_events")
    if kind is FaultKind.STREAM_ERROR:
        return StreamError(
            content=content,
            after_events=after_events,
            error_type=to_enum(ErrorType, _str(raw, "error_type", ErrorType.OVERLOADED_ERROR.value), "error_type"),
            message=_str(raw, "message", "Overloaded"),
            match=match,
        )
    if kind is FaultKind.MALFORMED_EVENT:
        return MalformedEvent(content=content, after_events=after_events, match=match)
    return DropConnection(content=content, after_events=after_events, match=match)


def _parse_match(raw: Mapping[str, Any]) -> Match | None:
    """The turn's `match` (which requests it answers), or None: it answers the next one in order."""
    if "match" not in raw:
        return None
    match = _mapping(raw["match"], "'match'", _MATCH_KEYS, where="under match")
    purpose = match.get("purpose")
    return Match(
        purpose=None if purpose is None else to_enum(RequestPurpose, purpose, "purpose"),
        last_user_contains=match.get("last_user_contains"),
        has_tools=match.get("has_tools"),
        model=match.get("model"),
        stream=match.get("stream"),
        repeat=match.get("repeat", False),
    )


def _parse_content(raw: object) -> tuple[Block, ...]:
    if not isinstance(raw, list):
        raise ScenarioError(f"'content' must be a list of blocks, not {_type_name(raw)}.")
    blocks: list[Block] = []
    for number, item in enumerate(raw, start=1):
        with _located(f"content block {number}"):
            blocks.append(_parse_block(item))
    return tuple(blocks)


def _parse_block(item: object) -> Block:
    if not isinstance(item, Mapping):
        raise ScenarioError(f"expected a mapping with one of {', '.join(_BLOCK_KINDS)}, not {_type_name(item)}.")
    kinds = [key for key in _BLOCK_KINDS if key in item]
    if not kinds:
        key = next(iter(item), None)
        raise ScenarioError(f"unknown block {key!r}; expected one of {', '.join(_BLOCK_KINDS)}.")
    kind = kinds[0]
    if kind == "thinking":
        _check_keys(item, ("thinking", "signature"), "in the thinking block")
        return ThinkingBlock(thinking=_str(item, "thinking"), signature=_str(item, "signature"))
    _check_keys(item, (kind,), f"in the {kind} block")
    if kind == "text":
        return TextBlock(text=_str(item, "text"))
    if kind == "redacted_thinking":
        return RedactedThinkingBlock(data=_str(item, "redacted_thinking"))
    tool = _mapping(item["tool_use"], "'tool_use'", ("name", "input", "id"), where="under tool_use")
    tool_input = _required(tool, "input")
    if not isinstance(tool_input, Mapping):
        raise ScenarioError(f"tool_use 'input' must be a mapping, not {_type_name(tool_input)}.")
    return ToolUseBlock(name=_str(tool, "name"), input=dict(tool_input), id=_optional_str(tool, "id"))


def _parse_usage(raw: object) -> Usage:
    usage = _mapping(raw, "'usage'", _USAGE_KEYS, where="under usage")
    return Usage(
        input_tokens=_int(usage, "input_tokens"),
        output_tokens=_int(usage, "output_tokens"),
        cache_creation_input_tokens=_int(usage, "cache_creation_input_tokens", 0),
        cache_read_input_tokens=_int(usage, "cache_read_input_tokens", 0),
    )


def _parse_headers(raw: object) -> dict[str, str]:
    if not isinstance(raw, Mapping):
        raise ScenarioError(f"'headers' must be a mapping, not {_type_name(raw)}.")
    headers: dict[str, str] = {}
    for key, value in raw.items():
        # YAML reads `retry-after: 5` as an int; a header value is text either way.
        if not isinstance(key, str) or not (isinstance(value, str) or is_int(value)):
            raise ScenarioError(f"header {key!r} must map a name to a string or integer, not {_type_name(value)}.")
        headers[key] = str(value)
    return headers


# ---------------------------------------------------------------------------------------------
# Small validators


@contextmanager
def _located(where: str) -> Iterator[None]:
    """Prefix any ScenarioError raised inside with its location (file, turn, block)."""
    try:
        yield
    except ScenarioError as err:
        raise ScenarioError(f"{where}: {err}") from None


def _mapping(raw: object, noun: str, allowed: tuple[str, ...], *, where: str) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise ScenarioError(f"{noun} must be a mapping, not {_type_name(raw)}.")
    _check_keys(raw, allowed, where)
    return raw


def _check_keys(raw: Mapping[Any, Any], allowed: tuple[str, ...], where: str) -> None:
    for key in raw:
        if key not in allowed:
            raise ScenarioError(f"unknown key {key!r} {where}; expected keys are {', '.join(allowed)}.")


def _required(raw: Mapping[str, Any], key: str) -> Any:
    if key not in raw:
        raise ScenarioError(f"missing required key {key!r}.")
    return raw[key]


def _str(raw: Mapping[str, Any], key: str, default: str | None = None) -> str:
    value = raw.get(key, default) if default is not None else _required(raw, key)
    if not isinstance(value, str):
        raise ScenarioError(f"{key!r} must be a string, not {_type_name(value)}.")
    return value


def _optional_str(raw: Mapping[str, Any], key: str) -> str | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, str):
        raise ScenarioError(f"{key!r} must be a string, not {_type_name(value)}.")
    return value


def _int(raw: Mapping[str, Any], key: str, default: int | None = None) -> int:
    value = raw.get(key, default) if default is not None else _required(raw, key)
    if not is_int(value):
        raise ScenarioError(f"{key!r} must be an integer, not {_type_name(value)}.")
    return value


def _type_name(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _yaml_problem(err: yaml.YAMLError) -> str:
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err)
    if mark is None:
        return problem
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}"
