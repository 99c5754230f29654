"""A model turn's content: the block types, the turn and its usage, and how each block streams.

The scenario (which reads and writes these) and the SSE renderer (which streams them) both
import this module; how many events a block streams as lives here, so a scenario can check a
fault's reach without importing the renderer.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, TypeVar

__all__ = [
    "DELTA_CHARS",
    "MAX_DELTAS_PER_STRING",
    "Block",
    "Match",
    "RedactedThinkingBlock",
    "RequestPurpose",
    "ScenarioError",
    "StopReason",
    "TextBlock",
    "ThinkingBlock",
    "ToolUseBlock",
    "Turn",
    "Usage",
    "block_deltas",
    "check_match",
    "compact_json",
    "count_message_events",
    "is_int",
    "to_enum",
]

# Small pieces make every block span several deltas, which is what the SDK's accumulator
# and the engine's streaming code must cope with on the real wire.
DELTA_CHARS: Final = 24
# A longer string gets longer pieces instead of more of them: events cost far more than
# characters (in the cassette, and for the SDK, which re-parses a tool's whole partial JSON on
# every delta), so a stream's size must grow with its content, not with its piece count.
MAX_DELTAS_PER_STRING: Final = 64

_E = TypeVar("_E", bound=StrEnum)


class ScenarioError(ValueError):
    """A scenario script is malformed; the message names the file, the turn and the problem."""


class StopReason(StrEnum):
    """Why the model stopped, as the Messages API reports it."""

    END_TURN = "end_turn"
    TOOL_USE = "tool_use"
    MAX_TOKENS = "max_tokens"
    STOP_SEQUENCE = "stop_sequence"
    PAUSE_TURN = "pause_turn"
    REFUSAL = "refusal"
    MODEL_CONTEXT_WINDOW_EXCEEDED = "model_context_window_exceeded"


@dataclass(frozen=True, kw_only=True)
class TextBlock:
    """A `text` content block."""

    text: str


@dataclass(frozen=True, kw_only=True)
class ToolUseBlock:
    """A `tool_use` content block; `id=None` lets the fake model assign a deterministic id."""

    name: str
    input: Mapping[str, Any]
    id: str | None = None


@dataclass(frozen=True, kw_only=True)
class ThinkingBlock:
    """A `thinking` content block with its signature."""

    thinking: str
    signature: str


@dataclass(frozen=True, kw_only=True)
class RedactedThinkingBlock:
    """A `redacted_thinking` content block (opaque data)."""

    data: str


Block = TextBlock | ToolUseBlock | ThinkingBlock | RedactedThinkingBlock


@dataclass(frozen=True, kw_only=True)
class Usage:
    """Token usage reported for a turn."""

    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def __post_init__(self) -> None:
        for item in dataclasses.fields(self):
            value = getattr(self, item.name)
            if not is_int(value) or value < 0:
                raise ScenarioError(f"usage {item.name!r} must be a non-negative integer, not {value!r}.")


class RequestPurpose(StrEnum):
    """What a Messages API request is for, read from its body alone (``replay.fake.matching``)."""

    MAIN = "main"  # the conversation's own request: it offers tools
    COMPACT = "compact"  # a summary request: its last user message asks for a summary of the conversation
    SIDE = "side"  # any other request without tools: a title, a topic or a quota query


@dataclass(frozen=True, kw_only=True)
class Match:
    """Which requests a scripted turn answers: every predicate given must hold (None: any).
    ``model`` is a prefix of the requested model; ``repeat`` keeps the turn for every request
    it accepts instead of playing it once."""

    purpose: RequestPurpose | None = None
    last_user_contains: str | None = None
    has_tools: bool | None = None
    model: str | None = None
    stream: bool | None = None
    repeat: bool = False

    def __post_init__(self) -> None:
        if self.purpose is not None:
            object.__setattr__(self, "purpose", to_enum(RequestPurpose, self.purpose, "purpose"))
        for name in ("last_user_contains", "model"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value):
                raise ScenarioError(f"match {name!r} must be a non-empty string, not {value!r}.")
        for name in ("has_tools", "stream", "repeat"):
            value = getattr(self, name)
            if (value is not None or name == "repeat") and not isinstance(value, bool):
                raise ScenarioError(f"match {name!r} must be true or false, not {value!r}.")
        if not self.predicates():
            names = ", ".join(name for name, _ in _MATCH_PREDICATES)
            raise ScenarioError(f"'match' needs at least one of {names}; a turn for any request needs no match.")

    def predicates(self) -> list[tuple[str, str | bool]]:
        """The predicates given, as (key, value) in the order of the YAML keys."""
        values = ((name, getattr(self, name)) for name, _ in _MATCH_PREDICATES)
        return [(name, value) for name, value in values if value is not None]

    def describe(self) -> str:
        """The match as it reads in a scenario file: ``purpose: compact, repeat: true``."""
        parts = [f"{name}: {_yaml_scalar(value)}" for name, value in self.predicates()]
        return ", ".join([*parts, "repeat: true"] if self.repeat else parts)


# The predicate keys of `match`, in the order the docs and error messages list them.
_MATCH_PREDICATES: Final = (
    ("purpose", RequestPurpose),
    ("last_user_contains", str),
    ("has_tools", bool),
    ("model", str),
    ("stream", bool),
)


def _yaml_scalar(value: str | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, RequestPurpose):
        return value.value
    return json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True, kw_only=True)
class Turn:
    """One scripted model answer; None fields are derived (stop reason from content, usage
    estimated). A turn without ``match`` answers the next request in order; with one, the
    requests it accepts (docs/scenarios.md, "How turns are played")."""

    content: tuple[Block, ...]
    stop_reason: StopReason | None = None
    usage: Usage | None = None
    match: Match | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "content", tuple(self.content))
        check_match(self.match)
        if self.stop_reason is not None:
            object.__setattr__(self, "stop_reason", to_enum(StopReason, self.stop_reason, "stop_reason"))

    @property
    def effective_stop_reason(self) -> StopReason:
        """The scripted stop reason, else `tool_use` when a tool is called, else `end_turn`."""
        if self.stop_reason is not None:
            return self.stop_reason
        if any(isinstance(block, ToolUseBlock) for block in self.content):
            return StopReason.TOOL_USE
        return StopReason.END_TURN


def count_message_events(content: Sequence[Block]) -> int:
    """How many events `render_message_events` produces for this content (message_start to message_stop)."""
    per_block = sum(2 + len(block_deltas(block)) for block in content)
    return 4 + per_block  # message_start, ping, message_delta, message_stop


def block_deltas(block: Block) -> list[dict[str, Any]]:
    match block:
        case TextBlock(text=text):
            return [{"type": "text_delta", "text": piece} for piece in _pieces(text)]
        case ToolUseBlock(input=tool_input):
            json_text = compact_json(tool_input, ascii_only=True)
            return [{"type": "input_json_delta", "partial_json": piece} for piece in _pieces(json_text)]
        case ThinkingBlock(thinking=thinking, signature=signature):
            deltas = [{"type": "thinking_delta", "thinking": piece} for piece in _pieces(thinking)]
            return [*deltas, {"type": "signature_delta", "signature": signature}]
        case RedactedThinkingBlock():
            return []
    raise TypeError(f"not a content block: {block!r}")


def _pieces(text: str) -> list[str]:
    """``text`` in pieces of 24 characters, or of ``len / 64`` (rounded up) when that is longer."""
    size = max(DELTA_CHARS, -(-len(text) // MAX_DELTAS_PER_STRING))
    return [text[start : start + size] for start in range(0, len(text), size)]


def compact_json(data: Mapping[str, Any], *, ascii_only: bool) -> str:
    """``data`` as JSON without spaces: how the API streams a tool's input."""
    return json.dumps(data, separators=(",", ":"), ensure_ascii=ascii_only)


def check_match(match: object) -> None:
    """A turn's or a fault's ``match`` is a `Match` or None."""
    if match is not None and not isinstance(match, Match):
        raise ScenarioError(f"'match' must be a mapping of predicates, not {type(match).__name__}.")


def is_int(value: object) -> bool:
    # bool is a subclass of int, but `status: true` is a mistake, not a status.
    return isinstance(value, int) and not isinstance(value, bool)


def to_enum(enum: type[_E], value: object, key: str) -> _E:
    try:
        return enum(value)
    except ValueError:
        choices = ", ".join(member.value for member in enum)
        raise ScenarioError(f"unknown {key} {value!r}; expected one of {choices}.") from None
