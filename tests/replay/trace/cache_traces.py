"""Hand-built behaviour traces carrying the cache audit and the reported usage, as the audit
writes them, for the tests of what reads them (summary, diff, `replay show`, `replay run`)."""

from __future__ import annotations

from typing import Any

from replay.trace.behaviour import BehaviourTrace, PassTrace, PromptTrace, RequestTrace
from replay.trace.request_cache import BreakCause, CacheBreak, RequestCache

MODEL = "claude-sonnet-4-6"


def cache(
    read: int = 0, written: int = 0, uncached: int = 0, *, at: str | None = None, cause: BreakCause | None = None
) -> RequestCache:
    found = None if at is None or cause is None else CacheBreak(path=at, cause=cause)
    prefix = read + written
    return RequestCache(marks=2, prefix=prefix, read=read, written=written, uncached=uncached, cache_break=found)


def usage(read: int = 0, written: int = 0, uncached: int = 0, output: int = 0) -> dict[str, int]:
    return {
        "input_tokens": uncached,
        "output_tokens": output,
        "cache_creation_input_tokens": written,
        "cache_read_input_tokens": read,
    }


def a_pass(
    turn: int,
    audit: RequestCache | None,
    reported: dict[str, int] | None = None,
    *,
    model: str = MODEL,
    stop_reason: str | None = "tool_use",
    compact: RequestCache | None = None,
) -> PassTrace:
    requests = []
    if compact is not None:
        requests.append(RequestTrace("compact", f"c{turn:011d}", cache=compact))
    requests.append(RequestTrace("main", f"m{turn:011d}", cache=audit))
    call: dict[str, Any] = {"model": model, "max_tokens": 1024, "stream": True}
    if stop_reason is not None:
        call["stop_reason"] = stop_reason
    else:
        call["error"] = "overloaded"
    if reported is not None:
        call["usage"] = reported
    return PassTrace(turn=turn, transition=None if turn == 1 else "next_turn", requests=requests, model_call=call)


def a_trace(*prompts: list[PassTrace]) -> BehaviourTrace:
    return BehaviourTrace(
        session="cache-session",
        prompts=[
            PromptTrace(prompt=f"prompt {number}", passes=list(passes), terminal="completed")
            for number, passes in enumerate(prompts, start=1)
        ],
    )
