"""Prompt-cache breakpoints, placed as Claude Code places them, and the latches that keep the
request prefix byte-stable for the session.

The API caches the prefix tools → system → messages up to a ``cache_control`` mark; a later
request whose prefix up to one of its marks is byte-identical reads it. So:

- the system prompt goes as text blocks, the last one marked;
- exactly one message mark, on the last content block of the last message (of the
  second-to-last for a side query that must not write a cache entry of its own); marks already
  in the messages are cleared first, so placing twice gives the same body;
- marks are placed on the copy that is sent: the history and the transcript never hold one;
- more than ``MAX_CACHE_MARKS`` marks is a 400 from the API, so it is refused before sending;
- tools go sorted by name, each with the schema it had when first rendered in the session;
  betas and the cache TTL, once sent, keep being sent (``PromptCacheState``).
"""

from __future__ import annotations

import copy
import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

__all__ = [
    "MAX_CACHE_MARKS",
    "CacheTTL",
    "PromptCacheState",
    "TooManyCacheMarksError",
    "cache_mark",
    "count_cache_marks",
    "has_cache_mark",
    "place_message_breakpoint",
    "system_blocks",
]

JsonDict = dict[str, Any]

# The API's limit on ``cache_control`` marks in one request.
MAX_CACHE_MARKS = 4

# "5m" is the API's default (a mark without ``ttl``); "1h" is the extended TTL.
CacheTTL = Literal["5m", "1h"]
_UNMARKABLE = frozenset({"thinking", "redacted_thinking"})


class TooManyCacheMarksError(AssertionError):
    """A request with more ``cache_control`` marks than the API accepts: a bug in the engine."""


class _RenderableTool(Protocol):
    name: str

    def api_schema(self) -> JsonDict: ...


def cache_mark(ttl: CacheTTL | None) -> JsonDict:
    """The ``cache_control`` value: ephemeral, with ``ttl`` only when one was asked for."""
    return {"type": "ephemeral"} if ttl is None else {"type": "ephemeral", "ttl": ttl}


def system_blocks(system: str | Sequence[JsonDict] | None, ttl: CacheTTL | None) -> list[JsonDict] | None:
    """The system prompt as text blocks, the last one marked (copies; the input is unchanged)."""
    if not system:
        return None
    blocks = [{"type": "text", "text": system}] if isinstance(system, str) else [_unmarked(b) for b in system]
    blocks[-1] = {**blocks[-1], "cache_control": cache_mark(ttl)}
    return blocks


def has_cache_mark(message: JsonDict) -> bool:
    """Whether any content block of an API message carries a ``cache_control`` mark."""
    content = message.get("content")
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and "cache_control" in block:
                return True
    return False


def place_message_breakpoint(
    messages: Sequence[JsonDict],
    ttl: CacheTTL | None,
    *,
    skip_cache_write: bool = False,
    unmarked: Sequence[JsonDict] = (),
) -> list[JsonDict]:
    """``messages`` with every earlier mark cleared and one mark on the last content block of
    the last message (the second-to-last with ``skip_cache_write``; none when there is no such
    message). Messages that change are copied; ``messages`` itself is never changed.

    ``unmarked``: messages known to hold no mark. When ``messages`` starts with these very
    objects, that prefix is not walked (an equal copy, or any other start, is walked whole)."""
    placed = list(messages)
    start = 0
    known = len(unmarked)
    # map over operator.is_ compares in C: far cheaper than walking the blocks of the prefix.
    if known and known <= len(placed) and all(map(operator.is_, unmarked, placed)):
        start = known
    # Inline loops, no call per message: this runs over the whole history on every request.
    for index in range(start, len(placed)):
        message = placed[index]
        content = message.get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and "cache_control" in block:
                    cleared = [_unmarked(b) if isinstance(b, dict) else b for b in content]
                    placed[index] = {**message, "content": cleared}
                    break
    target = len(placed) - (2 if skip_cache_write else 1)
    if target < 0:
        return placed
    message = placed[target]
    content = message["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
    # The API refuses a mark on a thinking block (as Claude Code, such a message gets none).
    if not blocks or blocks[-1].get("type") in _UNMARKABLE:
        return placed
    blocks[-1] = {**blocks[-1], "cache_control": cache_mark(ttl)}
    placed[target] = {**message, "content": blocks}
    return placed


def count_cache_marks(params: JsonDict, *, unmarked: Sequence[JsonDict] = ()) -> int:
    """The ``cache_control`` marks in a request body: on tools, system blocks and message blocks.
    A message that is the very object at its position in ``unmarked`` is known to hold none
    and is not walked (``place_message_breakpoint`` returns a message unchanged only then)."""
    # Plain loops: this runs over the whole history on every request.
    marks = 0
    for tool in params.get("tools") or ():
        if "cache_control" in tool:
            marks += 1
    system = params.get("system")
    if isinstance(system, list):
        for block in system:
            if "cache_control" in block:
                marks += 1
    known = len(unmarked)
    for index, message in enumerate(params.get("messages") or ()):
        if index < known and message is unmarked[index]:
            continue
        content = message.get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and "cache_control" in block:
                    marks += 1
    return marks


def check_cache_marks(params: JsonDict, *, unmarked: Sequence[JsonDict] = ()) -> None:
    """Raise `TooManyCacheMarksError` when ``params`` has more marks than the API accepts
    (``unmarked`` as for `count_cache_marks`)."""
    marks = count_cache_marks(params, unmarked=unmarked)
    if marks > MAX_CACHE_MARKS:
        raise TooManyCacheMarksError(
            f"The request has {marks} cache_control marks; the API accepts at most {MAX_CACHE_MARKS}."
        )


@dataclass
class PromptCacheState:
    """What must not change once sent in a session: each tool's first-rendered schema, the
    betas and the cache TTL (latched: a later request that would drop them sends them still)."""

    tool_schemas: dict[str, JsonDict] = field(default_factory=dict)
    betas: tuple[str, ...] = ()
    ttl: CacheTTL | None = None

    def render_tools(self, tools: Iterable[_RenderableTool]) -> list[JsonDict]:
        """The tools' schemas sorted by name, each as first rendered in this session."""
        rendered: list[JsonDict] = []
        for tool in sorted(tools, key=lambda t: t.name):
            schema = self.tool_schemas.get(tool.name)
            if schema is None:
                # A deep copy: a tool that mutates its schema later cannot reach the frozen one.
                schema = self.tool_schemas[tool.name] = copy.deepcopy(tool.api_schema())
            rendered.append(schema)
        return rendered

    def latch(self, *, betas: Iterable[str], ttl: CacheTTL | None) -> tuple[tuple[str, ...], CacheTTL | None]:
        """The betas and TTL to send: what is asked now, plus whatever was sent before."""
        self.betas = (*self.betas, *(b for b in betas if b not in self.betas))
        if ttl is not None and self.ttl is None:
            self.ttl = ttl
        return self.betas, self.ttl


def _unmarked(block: JsonDict) -> JsonDict:
    if "cache_control" not in block:
        return block
    return {k: v for k, v in block.items() if k != "cache_control"}
