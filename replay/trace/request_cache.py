"""What the cache audit says about one request: its cache marks, its cacheable prefix, the
tokens it read, wrote and left uncached, and where its prefix broke from the one an earlier
request cached, with the cause in the loop's terms.

The audit (`cache_audit`) computes these from request bodies alone, so a live cassette gets the
same audit as a fake one; the behaviour trace carries one per request (`RequestTrace.cache`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

__all__ = ["BreakCause", "CacheBreak", "RequestCache"]


class BreakCause(StrEnum):
    """Why a request's prefix no longer starts with the prefix an earlier request cached."""

    # Expected: the loop meant to change the history or the cache could not have held.
    COMPACTION = "compaction"  # a compact boundary replaced the history
    MICROCOMPACT = "microcompact"  # a context-shaping tier cleared or replaced earlier content
    MODEL_CHANGED = "model_changed"  # a fallback model: each model has its own cache
    IDLE_EXPIRED = "idle_expired"  # the user was away between prompts longer than the TTL
    # Unexpected: the loop re-sent a byte-different prefix, or let the TTL run out mid-turn.
    BACKFILL_LEAK = "backfill_leak"  # a tool_use input re-sent with fields the model never produced
    TOOLS_REORDERED = "tools_reordered"
    TOOLS_CHANGED = "tools_changed"
    SCHEMA_RERENDERED = "schema_rerendered"
    SYSTEM_PROMPT_CHANGED = "system_prompt_changed"
    HISTORY_REWRITTEN = "history_rewritten"  # an earlier message changed with no tier to explain it
    TTL_EXPIRED = "ttl_expired"  # the TTL ran out between two passes of one prompt

    @property
    def expected(self) -> bool:
        return self in _EXPECTED

    @property
    def phrase(self) -> str:
        """The cause as a trace line says it ("system prompt changed")."""
        return self.value.replace("_", " ")


_EXPECTED = frozenset(
    {BreakCause.COMPACTION, BreakCause.MICROCOMPACT, BreakCause.MODEL_CHANGED, BreakCause.IDLE_EXPIRED}
)


@dataclass(frozen=True, kw_only=True)
class CacheBreak:
    """Where this request's prefix leaves the one an earlier request cached: ``path`` is the first
    JSON path that differs (``system[0].text``, ``tools[3].input_schema``,
    ``messages[4].content[1].input``; for an expiry, the last block of the expired prefix)."""

    path: str
    cause: BreakCause

    @property
    def expected(self) -> bool:
        return self.cause.expected

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "cause": self.cause.value, "expected": self.expected}

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> CacheBreak:
        return cls(path=str(document["path"]), cause=BreakCause(document["cause"]))


@dataclass(frozen=True, kw_only=True)
class RequestCache:
    """One request as the audit sees it. ``marks`` counts its ``cache_control`` marks; ``prefix``
    is the estimated tokens up to its last breakpoint; ``read + written + uncached`` is the
    request's estimated input, zero for a request the model never began answering (an HTTP
    error, a failed connection: nothing cached, nothing billed)."""

    marks: int
    prefix: int
    read: int
    written: int
    uncached: int
    cache_break: CacheBreak | None = None

    @property
    def input_tokens(self) -> int:
        return self.read + self.written + self.uncached

    def to_json(self) -> dict[str, Any]:
        return {
            "marks": self.marks,
            "prefix": self.prefix,
            "read": self.read,
            "written": self.written,
            "uncached": self.uncached,
            "break": None if self.cache_break is None else self.cache_break.to_json(),
        }

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> RequestCache:
        found = document.get("break")
        return cls(
            marks=int(document["marks"]),
            prefix=int(document["prefix"]),
            read=int(document["read"]),
            written=int(document["written"]),
            uncached=int(document["uncached"]),
            cache_break=None if found is None else CacheBreak.from_json(found),
        )
