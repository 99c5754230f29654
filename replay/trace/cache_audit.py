"""The cache audit: what each Messages API request of a session read from the prompt cache,
wrote to it and left uncached, and where its prefix broke from the one cached before it.

It reads request bodies alone (normalized as fingerprints are, so a replay in another folder
gives the same numbers) and simulates the cache the fake model keeps (`replay.prompt_cache`), on
the session clock when the requests carry times. A break is judged per purpose — a main request
against the previous main request, a compaction summary request against the previous one, unless
it offers the main request's tools (it extends the conversation's own request:
``compact_request: conversation_prefix``), then against the previous main request — when that
request cached its prefix and this one does not start with it (or it expired on the clock); its
cause is told in the loop's terms from the first JSON path where they differ and from the
context-shaping the loop did in between.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

from engine import CompactionTier
from replay.cassette.jsondiff import differing_paths
from replay.prompt_cache.cache import PromptCache, minimum_cacheable_tokens
from replay.prompt_cache.planner import PrefixPlanner, RequestPrefixes, plain_request_prefixes
from replay.prompt_cache.prefixes import CacheableBlock, CacheablePrefix, cacheable_blocks, count_block_marks
from replay.trace.request_cache import BreakCause, CacheBreak, RequestCache

__all__ = [
    "AuditedRequest",
    "CacheAudit",
    "Shaping",
    "audit_requests",
    "count_cache_marks",
    "shaping_of",
]

# The tiers that put a compact boundary (or a collapsed view) in place of the history, and the
# ones that replace or clear parts of it in place.
_BOUNDARY_TIERS: Final = frozenset(
    {CompactionTier.AUTOCOMPACT, CompactionTier.REACTIVE_COMPACT, CompactionTier.MANUAL, CompactionTier.COLLAPSE}
)
_IN_PLACE_TIERS: Final = frozenset(
    {CompactionTier.TOOL_RESULT_BUDGET, CompactionTier.SNIP, CompactionTier.MICROCOMPACT}
)
_SECTIONS: Final = {"tools": 0, "system": 1, "messages": 2}
_MAIN: Final = "main"
_COMPACT: Final = "compact"
_INDEX = re.compile(r"\[(\d+)\]")


class Shaping(StrEnum):
    """What a compaction did to the history the next requests re-send."""

    BOUNDARY = "boundary"  # replaced it by a summary (or a collapsed view)
    IN_PLACE = "in_place"  # replaced or cleared some of its content


def shaping_of(compaction: Mapping[str, Any]) -> Shaping | None:
    """What a COMPACTION trace event's data says was done to the history (None: nothing, as
    for a compaction that failed)."""
    if "failed" in compaction:
        return None
    try:
        tier = CompactionTier(compaction.get("tier"))
    except ValueError:
        return None
    if tier in _BOUNDARY_TIERS:
        return Shaping.BOUNDARY
    return Shaping.IN_PLACE if tier in _IN_PLACE_TIERS else None


@dataclass(frozen=True, kw_only=True)
class AuditedRequest:
    """One Messages API request as the audit reads it: its normalized body, its time on the
    session clock (None: as soon as the one before), its purpose ("main" or "compact"), whether
    it opens a prompt (the first pass, or a compaction before it), what the loop did to the
    history since the request before it (any purpose), and whether it was answered."""

    body: Mapping[str, Any]
    at: float | None = None
    purpose: str = "main"
    opens_prompt: bool = False
    shaped: frozenset[Shaping] = frozenset()
    # A request the model never began answering (an HTTP error, a failed connection) neither
    # reads nor writes the cache, and is not billed: it counts zero tokens of every kind.
    answered: bool = True


def count_cache_marks(body: Mapping[str, Any]) -> int:
    """The ``cache_control`` marks of a body: top level, tools, system blocks, message blocks."""
    return _top_level_marks(body) + count_block_marks(body)


def _top_level_marks(body: Mapping[str, Any]) -> int:
    return int(isinstance(body.get("cache_control"), dict))


@dataclass
class _Cached:
    """The last request of one purpose that cached its prefix."""

    body: Mapping[str, Any]
    model: str
    mark: CacheablePrefix
    shaped: set[Shaping] = field(default_factory=set)


class CacheAudit:
    """The audit of one session, request by request in the order they were sent. With
    ``shared_pieces``, the bodies share the objects of the pieces they have in common and none
    changes once audited (`replay.cassette.normalized_text.SharedParser`): each block is then
    written once (`PrefixPlanner`), not once per request that re-sends it."""

    def __init__(self, *, shared_pieces: bool = False) -> None:
        self._prefixes: Callable[[Mapping[str, Any]], RequestPrefixes] = (
            PrefixPlanner().plan if shared_pieces else plain_request_prefixes
        )
        self._cache = PromptCache()
        self._now = 0.0
        self._last: dict[str, _Cached | None] = {}

    def shape(self, shaping: Shaping) -> None:
        """The loop shaped the history after the last request (a compaction event)."""
        for cached in self._last.values():
            if cached is not None:
                cached.shaped.add(shaping)

    def audit(self, request: AuditedRequest) -> RequestCache:
        body = request.body
        for shaping in request.shaped:
            self.shape(shaping)
        if request.at is not None:
            self._now = max(self._now, request.at)
        model = body.get("model") if isinstance(body.get("model"), str) else ""
        plan, block_marks, total_tokens = self._prefixes(body)
        marks = plan.breakpoints
        last = marks[-1] if marks else None
        prefix = last.tokens if last is not None else 0
        cache_marks = _top_level_marks(body) + block_marks  # `count_cache_marks`, its blocks' counted already
        if not request.answered:
            return RequestCache(marks=cache_marks, prefix=prefix, read=0, written=0, uncached=0)
        previous = self._baseline(request.purpose, body)
        cache_break = None
        if previous is not None:
            cache_break = self._break(previous, body, model, plan.prefixes, opens_prompt=request.opens_prompt)
        usage = self._cache.use(body, model=model, total_tokens=total_tokens, now=self._now, plan=plan)
        cached = last is not None and last.tokens >= minimum_cacheable_tokens(model)
        self._last[request.purpose] = _Cached(body=body, model=model, mark=last) if cached and last else None
        return RequestCache(
            marks=cache_marks,
            prefix=prefix,
            read=usage.cache_read_input_tokens,
            written=usage.cache_creation_input_tokens,
            uncached=usage.input_tokens,
            cache_break=cache_break,
        )

    def _baseline(self, purpose: str, body: Mapping[str, Any]) -> _Cached | None:
        """The earlier request whose cached prefix this one should start with: the last of its
        purpose, or for a summary request that offers the main request's tools, the last main one."""
        main, tools = self._last.get(_MAIN), body.get("tools")
        if purpose == _COMPACT and main is not None and tools and tools == main.body.get("tools"):
            return main
        return self._last.get(purpose)

    def _break(
        self,
        previous: _Cached,
        body: Mapping[str, Any],
        model: str,
        prefixes: Sequence[CacheablePrefix],
        *,
        opens_prompt: bool,
    ) -> CacheBreak | None:
        if model != previous.model:
            return CacheBreak(path="model", cause=BreakCause.MODEL_CHANGED)
        mark = previous.mark
        if len(prefixes) >= mark.position and prefixes[mark.position - 1].digest == mark.digest:
            if self._cache.holds(model, mark.digest, now=self._now):
                return None
            cause = BreakCause.IDLE_EXPIRED if opens_prompt else BreakCause.TTL_EXPIRED
            return CacheBreak(path=mark.path, cause=cause)
        path, old, new = _first_difference(cacheable_blocks(previous.body)[: mark.position], cacheable_blocks(body))
        return CacheBreak(path=path, cause=_cause(path, old, new, previous, body))


def audit_requests(requests: Sequence[AuditedRequest]) -> list[RequestCache]:
    """The audit of ``requests``, in the order they were sent."""
    audit = CacheAudit()
    return [audit.audit(request) for request in requests]


def _first_difference(
    old: Sequence[CacheableBlock], new: Sequence[CacheableBlock]
) -> tuple[str, CacheableBlock | None, CacheableBlock | None]:
    """The first JSON path where ``new`` leaves the cached blocks ``old``, and the two blocks
    there (None for the side that lacks it)."""
    for index, before in enumerate(old):
        after = new[index] if index < len(new) else None
        if after is None:
            return before.path, before, None
        if after.path != before.path:
            # A block missing on one side: the one that comes first in the API's order.
            if _order(before.path) < _order(after.path):
                return before.path, before, None
            return after.path, None, after
        if after.place != before.place:
            return f"{_message_path(before.path)}.role", before, after
        if after.unmarked != before.unmarked:
            found = differing_paths(before.unmarked, after.unmarked, limit=1, prefix=before.path)
            return (found[0] if found else before.path), before, after
    # Equal blocks with another digest cannot happen; name the end of the old prefix.
    return old[-1].path, old[-1], None


def _order(path: str) -> tuple[int, ...]:
    section = path.split("[", 1)[0].split(".", 1)[0]
    indexes = [int(number) for number in _INDEX.findall(path)]
    # A string content (``messages[2].content``) comes before its would-be blocks.
    if path.endswith(".content"):
        indexes.append(-1)
    return (_SECTIONS.get(section, len(_SECTIONS)), *indexes)


def _message_path(path: str) -> str:
    return path.split(".content", 1)[0]


def _cause(
    path: str, old: CacheableBlock | None, new: CacheableBlock | None, previous: _Cached, body: Mapping[str, Any]
) -> BreakCause:
    if path.startswith("tools"):
        return _tools_cause(path, previous.body, body)
    if path.startswith("system"):
        return BreakCause.SYSTEM_PROMPT_CHANGED
    if Shaping.BOUNDARY in previous.shaped:
        return BreakCause.COMPACTION
    if Shaping.IN_PLACE in previous.shaped:
        return BreakCause.MICROCOMPACT
    if old is not None and new is not None and _in_tool_input(path, old, new):
        return BreakCause.BACKFILL_LEAK
    return BreakCause.HISTORY_REWRITTEN


def _tools_cause(path: str, old_body: Mapping[str, Any], new_body: Mapping[str, Any]) -> BreakCause:
    old_names, new_names = _tool_names(old_body), _tool_names(new_body)
    if old_names != new_names and sorted(old_names) == sorted(new_names):
        return BreakCause.TOOLS_REORDERED
    match = re.match(r"tools\[(\d+)\]\.input_schema", path)
    if match is not None:
        index = int(match.group(1))
        if index < min(len(old_names), len(new_names)) and old_names[index] == new_names[index]:
            return BreakCause.SCHEMA_RERENDERED
    return BreakCause.TOOLS_CHANGED


def _tool_names(body: Mapping[str, Any]) -> list[str]:
    tools = body.get("tools")
    if not isinstance(tools, list):
        return []
    return [str(tool.get("name")) for tool in tools if isinstance(tool, dict)]


def _in_tool_input(path: str, old: CacheableBlock, new: CacheableBlock) -> bool:
    """Whether ``path`` lies in the ``input`` of a tool_use block both sides have."""
    both_tool_use = old.block.get("type") == new.block.get("type") == "tool_use"
    return both_tool_use and (path == f"{old.path}.input" or path.startswith(f"{old.path}.input."))
