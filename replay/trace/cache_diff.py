"""The prompt cache and the cost of two behaviour traces compared, pass by pass (aligned by
their place in each prompt, as the trace diff aligns them): a cache break that appeared, went
away or moved, reads and writes that shifted, each with the pass's cost change, then the
session's hit ratio and cost. Part of the trace diff (`replay.trace.diff`).

Only traces that both carry the cache audit are compared: a trace recorded before it has no
cache to compare, and reporting every pass as changed would hide what really did.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from engine.cost import SessionCost
from replay.trace.behaviour import BehaviourTrace, PassTrace
from replay.trace.cache_summary import CacheSummary, RequestSummary, summarize_cache
from replay.trace.request_cache import CacheBreak, RequestCache

__all__ = ["cache_differences"]

_COST_CHANGE = 0.01  # the session cost line: a change under 1% is rounding, not behaviour


def cache_differences(a: BehaviourTrace, b: BehaviourTrace) -> list[str]:
    """The cache and cost differences from ``a`` (before) to ``b`` (after), one sentence each;
    empty when either trace has no cache audit or nothing differs."""
    summary_a, summary_b = summarize_cache(a), summarize_cache(b)
    if not summary_a.audited or not summary_b.audited:
        return []
    passes_a, passes_b = _by_pass(summary_a), _by_pass(summary_b)
    lines: list[str] = []
    for number, (prompt_a, prompt_b) in enumerate(zip(a.prompts, b.prompts, strict=False), start=1):
        for index, after in enumerate(prompt_b.passes[: len(prompt_a.passes)], start=1):
            # A request that changed (its fingerprint line says so) reads and writes other
            # counts as a matter of course; only a break that appeared, went or moved is news.
            same_request = prompt_a.passes[index - 1].fingerprint == after.fingerprint
            change = _pass_change(
                passes_a.get((number, index), []), passes_b.get((number, index), []), counts=same_request
            )
            if change:
                lines.append(f"{_where(number, index, after)}: {change}.")
    session = _session_change(summary_a, summary_b, force=bool(lines))
    if session:
        lines.append(f"session: {session}.")
    return lines


def _by_pass(summary: CacheSummary) -> dict[tuple[int, int], list[RequestSummary]]:
    grouped: dict[tuple[int, int], list[RequestSummary]] = defaultdict(list)
    for request in summary.requests:
        grouped[(request.prompt, request.pass_index)].append(request)
    return grouped


def _pass_change(before: Sequence[RequestSummary], after: Sequence[RequestSummary], *, counts: bool) -> str | None:
    cache_a, cache_b = _main_cache(before), _main_cache(after)
    if cache_a is None or cache_b is None:
        return None
    change = _break_change(cache_a.cache_break, cache_b.cache_break)
    if change is None and counts:
        change = _shift(cache_a, cache_b)
    if change is None:
        return None
    return change + _percent(_cost(before), _cost(after), prefix=" — cost ")


def _main_cache(requests: Sequence[RequestSummary]) -> RequestCache | None:
    main = [r.cache for r in requests if r.purpose == "main" and r.cache is not None]
    return main[-1] if main else None


def _break_change(was: CacheBreak | None, now: CacheBreak | None) -> str | None:
    if was == now:
        return None
    if was is None:
        assert now is not None
        return f"cache break at {_break(now)}"
    if now is None:
        return f"no cache break any more (was at {was.path}, {was.cause.phrase})"
    return f"cache break at {_break(now)} instead of {was.path} ({was.cause.phrase})"


def _break(found: CacheBreak) -> str:
    return f"{found.path} ({found.cause.phrase}, {'expected' if found.expected else 'unexpected'})"


def _shift(a: RequestCache, b: RequestCache) -> str | None:
    """Every count that moved, exactly: the audit is deterministic, so any move is the request
    (or the clock) behaving differently, however small."""
    parts = [
        f"{noun} {was:,} → {now:,}{unit}"
        for noun, was, now, unit in (
            ("reads", a.read, b.read, " tokens"),
            ("writes", a.written, b.written, " tokens"),
            ("uncached", a.uncached, b.uncached, " tokens"),
            ("marks", a.marks, b.marks, ""),
        )
        if was != now
    ]
    return "cache " + ", ".join(parts) if parts else None


def _cost(requests: Sequence[RequestSummary]) -> SessionCost:
    total = SessionCost()
    for request in requests:
        total = total + request.cost
    return total


def _percent(was: SessionCost, now: SessionCost, *, prefix: str) -> str:
    """``" — cost +23%"``, or nothing when either side has no known cost."""
    if was.usd <= 0 or now.usd <= 0 or was.unpriced_models or now.unpriced_models:
        return ""
    change = round((now.usd - was.usd) / was.usd * 100)
    return f"{prefix}{change:+d}%" if change else ""


def _session_change(a: CacheSummary, b: CacheSummary, *, force: bool) -> str | None:
    """The session's hit ratio and cost, when they moved (``force``: a pass changed, so any cost
    change is worth saying)."""
    parts = []
    ratio_a, ratio_b = a.hit_ratio, b.hit_ratio
    if ratio_a is not None and ratio_b is not None and round(ratio_a * 100) != round(ratio_b * 100):
        parts.append(f"cache hit ratio {ratio_a:.0%} → {ratio_b:.0%}")
    cost_a, cost_b = a.cost, b.cost
    moved = cost_a.usd > 0 and abs(cost_b.usd - cost_a.usd) > _COST_CHANGE * cost_a.usd
    if (force or moved) and f"{cost_a.usd:.4f}" != f"{cost_b.usd:.4f}":
        percent = _percent(cost_a, cost_b, prefix="")
        parts.append(f"cost ${cost_a.usd:.4f} → ${cost_b.usd:.4f}" + (f" ({percent})" if percent else ""))
    if cost_a.unpriced_models != cost_b.unpriced_models:
        parts.append(f"unpriced models {_names(cost_a)} → {_names(cost_b)}")
    return ", ".join(parts) if parts else None


def _names(cost: SessionCost) -> str:
    return ", ".join(cost.unpriced_models) or "none"


def _where(prompt: int, index: int, trace: PassTrace) -> str:
    turn = f" (turn {trace.turn})" if trace.turn != index else ""
    return f"prompt {prompt} pass {index}{turn}"
