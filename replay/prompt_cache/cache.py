"""A deterministic prompt cache with the Messages API's documented semantics.

A request's breakpoints write their prefixes; a later request reads the longest cached prefix
its breakpoints' lookback reaches (`prefixes.PrefixPlan.lookback`); an entry lives for its TTL
from its last write or read (a read refreshes it, as the API's does); a prefix shorter than the
model's minimum cacheable length is never written. Time is whatever the caller says it is: the
cache reads no clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from replay.prompt_cache.prefixes import CacheablePrefix, PrefixPlan, cacheable_prefixes

__all__ = [
    "DEFAULT_MINIMUM_CACHEABLE_TOKENS",
    "MINIMUM_CACHEABLE_TOKENS",
    "CacheUsage",
    "PromptCache",
    "minimum_cacheable_tokens",
]

# The minimum cacheable prompt length per model, from "Cache limitations" in
# https://platform.claude.com/docs/en/build-with-claude/prompt-caching (also docs/scenarios.md).
# A model id matches its longest entry here as a prefix, so dated ids (claude-haiku-4-5-20251001)
# find their family.
MINIMUM_CACHEABLE_TOKENS: Final[Mapping[str, int]] = {
    "claude-mythos-preview": 4096,
    "claude-opus-4-7": 4096,
    "claude-opus-4-6": 4096,
    "claude-opus-4-5": 4096,
    "claude-haiku-4-5": 4096,
    "claude-opus-4-8": 1024,
    "claude-opus-4-1": 1024,
    "claude-opus-4": 1024,
    "claude-sonnet-4-6": 1024,
    "claude-sonnet-4-5": 1024,
    "claude-sonnet-4": 1024,
    "claude-3-7-sonnet": 1024,
    "claude-3-5-haiku": 2048,
    "claude-3-haiku": 2048,
}
# A model the table does not name (a newer one the SDK lists): the most common floor.
DEFAULT_MINIMUM_CACHEABLE_TOKENS: Final = 1024


def minimum_cacheable_tokens(model: str) -> int:
    """The shortest prefix, in tokens, the API caches for ``model``."""
    matches = [name for name in MINIMUM_CACHEABLE_TOKENS if model.startswith(name)]
    return MINIMUM_CACHEABLE_TOKENS[max(matches, key=len)] if matches else DEFAULT_MINIMUM_CACHEABLE_TOKENS


@dataclass(frozen=True, kw_only=True)
class CacheUsage:
    """One request's input tokens by kind; the three add up to the request's total."""

    input_tokens: int
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0


@dataclass(kw_only=True)
class _Entry:
    ttl: float
    expires_at: float


class PromptCache:
    """The cache one API account would keep: entries by model and prefix digest."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str], _Entry] = {}

    def holds(self, model: str, digest: str, *, now: float) -> bool:
        """Whether the prefix with ``digest`` is cached for ``model`` and still alive at ``now``."""
        entry = self._entries.get((model, digest))
        return entry is not None and entry.expires_at > now

    def use(
        self,
        request: Mapping[str, Any],
        *,
        model: str,
        total_tokens: int,
        now: float,
        plan: PrefixPlan | None = None,
    ) -> CacheUsage:
        """Serve ``request`` (a parsed body) at time ``now`` (seconds): read what it can, write its
        breakpoints, and say how its ``total_tokens`` split into uncached, written and read.
        ``plan`` is the request's `cacheable_prefixes`, if the caller has it already."""
        self._entries = {key: entry for key, entry in self._entries.items() if entry.expires_at > now}
        plan = plan if plan is not None else cacheable_prefixes(request)
        breakpoints = plan.breakpoints
        if not breakpoints:
            return CacheUsage(input_tokens=total_tokens)
        hit = self._longest_hit(plan, model)
        read = hit.tokens if hit is not None else 0
        if hit is not None:
            # A read refreshes the entry for its own TTL, at no cost.
            entry = self._entries[(model, hit.digest)]
            entry.expires_at = max(entry.expires_at, now + entry.ttl)
        minimum = minimum_cacheable_tokens(model)
        written_to = read
        for mark in breakpoints:
            if (hit is not None and mark.position <= hit.position) or mark.tokens < minimum or mark.ttl is None:
                continue
            key = (model, mark.digest)
            expires_at = now + mark.ttl.seconds
            entry = self._entries.get(key)
            if entry is None:
                self._entries[key] = _Entry(ttl=mark.ttl.seconds, expires_at=expires_at)
            else:
                entry.ttl, entry.expires_at = max(entry.ttl, mark.ttl.seconds), max(entry.expires_at, expires_at)
            written_to = max(written_to, mark.tokens)
        # The canonical prefix is not the body: keep the three kinds within the body's total.
        read = min(read, total_tokens)
        written = min(written_to - min(read, written_to), total_tokens - read)
        return CacheUsage(
            input_tokens=total_tokens - read - written,
            cache_creation_input_tokens=written,
            cache_read_input_tokens=read,
        )

    def _longest_hit(self, plan: PrefixPlan, model: str) -> CacheablePrefix | None:
        hits = [
            prefix
            for mark in plan.breakpoints
            for prefix in plan.lookback(mark)
            if (model, prefix.digest) in self._entries
        ]
        return max(hits, key=lambda prefix: prefix.position, default=None)
