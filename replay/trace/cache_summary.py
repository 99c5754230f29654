"""What a trace's prompt cache did and what the session cost: per request and for the session,
the tokens read from the cache, written to it and left uncached (the audit's estimate, from the
request bodies), the hit ratio, the cost in US dollars, the unexpected cache breaks, and where
the audit and the API's reported usage disagree.

The cost of a pass comes from the usage the API reported for it (``model_call["usage"]``); a pass
answered without reported usage is priced from the audit's numbers instead, and said to be.
Reported and simulated token counts are never compared exactly (the audit estimates bytes / 4,
the API uses its tokenizer): only whether each side read, or wrote, anything at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from engine.cost import SessionCost, usage_cost
from replay.trace.behaviour import BehaviourTrace, PassTrace, RequestTrace
from replay.trace.request_cache import CacheBreak, RequestCache

__all__ = [
    "BreakReport",
    "CacheKind",
    "CacheSummary",
    "CostSource",
    "Disagreement",
    "RequestSummary",
    "summarize_cache",
    "unexpected_breaks",
]


_DISAGREEMENTS_SHOWN = 5  # the text summary stays short; the JSON lists every one


class CostSource(StrEnum):
    """Where a request's cost comes from."""

    REPORTED = "reported"  # the usage the API reported for the pass
    SIMULATED = "simulated"  # the audit's estimate: no usage was recorded for it
    UNANSWERED = "unanswered"  # no answer came back (an error, a retried attempt): not billed


class CacheKind(StrEnum):
    READ = "read"
    WRITE = "write"


@dataclass(frozen=True)
class RequestSummary:
    """One request of the trace: where it is (``prompt 1 pass 3``, as `replay show` numbers
    passes), what the audit says of it and what it cost."""

    where: str
    prompt: int
    pass_index: int  # the pass's place in its prompt, from 1 (`where` names its turn)
    purpose: str
    cache: RequestCache | None
    model: str | None
    cost: SessionCost
    source: CostSource
    reported: Mapping[str, Any] | None = None  # the pass's reported usage, on its answered request

    def to_json(self) -> dict[str, Any]:
        return {"where": self.where, "purpose": self.purpose, "cost": self.cost.to_json(), "source": self.source.value}


@dataclass(frozen=True)
class BreakReport:
    """A cache break and where it happened."""

    where: str
    cache_break: CacheBreak

    @property
    def line(self) -> str:
        """``prompt 1 pass 3: cache break at system[0].text (system prompt changed)``."""
        return f"{self.where}: cache break at {self.cache_break.path} ({self.cache_break.cause.phrase})"

    def to_json(self) -> dict[str, Any]:
        return {"where": self.where, **self.cache_break.to_json()}


@dataclass(frozen=True)
class Disagreement:
    """A request where the audit and the API's reported usage disagree on whether the cache was
    read (or written) at all."""

    where: str
    kind: CacheKind
    simulated: int
    reported: int

    @property
    def phrase(self) -> str:
        """``read 1,158 (audit) vs 0 (API)``."""
        noun = "read" if self.kind is CacheKind.READ else "written"
        return f"{noun} {self.simulated:,} (audit) vs {self.reported:,} (API)"

    def to_json(self) -> dict[str, Any]:
        return {"where": self.where, "kind": self.kind.value, "simulated": self.simulated, "reported": self.reported}


@dataclass(frozen=True)
class CacheSummary:
    """A trace's cache and cost, request by request and in total."""

    requests: tuple[RequestSummary, ...]
    disagreements: tuple[Disagreement, ...]
    breaks: tuple[BreakReport, ...]

    @property
    def audited(self) -> tuple[RequestSummary, ...]:
        """The requests the cache audit describes (none in a trace recorded before it)."""
        return tuple(r for r in self.requests if r.cache is not None)

    @property
    def read(self) -> int:
        return sum(r.cache.read for r in self.audited if r.cache is not None)

    @property
    def written(self) -> int:
        return sum(r.cache.written for r in self.audited if r.cache is not None)

    @property
    def uncached(self) -> int:
        return sum(r.cache.uncached for r in self.audited if r.cache is not None)

    @property
    def hit_ratio(self) -> float | None:
        """Tokens read from the cache over all input tokens; None with no input at all."""
        total = self.read + self.written + self.uncached
        return self.read / total if total else None

    @property
    def cost(self) -> SessionCost:
        total = SessionCost()
        for request in self.requests:
            total = total + request.cost
        return total

    @property
    def simulated(self) -> tuple[str, ...]:
        """The requests priced from the audit's estimate rather than reported usage."""
        return tuple(r.where for r in self.requests if r.source is CostSource.SIMULATED)

    @property
    def unexpected(self) -> tuple[BreakReport, ...]:
        return tuple(b for b in self.breaks if not b.cache_break.expected)

    def to_json(self) -> dict[str, Any]:
        ratio = self.hit_ratio
        return {
            "cache": {
                "read": self.read,
                "written": self.written,
                "uncached": self.uncached,
                "hit_ratio": None if ratio is None else round(ratio, 4),
                "requests": len(self.audited),
            },
            "cost": {**self.cost.to_json(), "simulated": list(self.simulated)},
            "requests": [r.to_json() for r in self.requests],
            "breaks": [b.to_json() for b in self.breaks],
            "unexpected_breaks": len(self.unexpected),
            "disagreements": [d.to_json() for d in self.disagreements],
        }

    def render_text(self, *, disagreements: bool = True) -> str:
        """The session summary `replay show` prints after the trace: a few lines (without the
        disagreements with the reported usage, unless ``disagreements``)."""
        lines = []
        if self.audited:
            ratio = self.hit_ratio
            hit = "no input" if ratio is None else f"hit ratio {ratio:.0%}"
            lines.append(
                f"cache: {self.read:,} read, {self.written:,} written, {self.uncached:,} uncached tokens ({hit})"
            )
        else:
            lines.append("cache: not audited (the trace was recorded before the cache audit)")
        lines.append(_cost_line(self))
        if self.audited:
            unexpected = self.unexpected
            lines.append(f"unexpected cache breaks: {len(unexpected)}")
            lines.extend(f"  {b.line}" for b in unexpected)
        if disagreements:
            lines.extend(_disagreement_lines(self.disagreements))
        return "\n".join(lines) + "\n"


def summarize_cache(trace: BehaviourTrace) -> CacheSummary:
    """The cache and cost summary of ``trace``."""
    requests: list[RequestSummary] = []
    disagreements: list[Disagreement] = []
    breaks: list[BreakReport] = []
    model: str | None = None
    for number, prompt in enumerate(trace.prompts, start=1):
        # A compaction between prompts (the user's /compact) made its summary requests outside
        # any pass; the trace keeps their audit on the compaction entry.
        between = PassTrace(turn=0, transition=None)
        for entry in prompt.before:
            fingerprints = list(entry.get("requests") or [])
            for place, document in enumerate(entry.get("cache") or []):
                fingerprint = fingerprints[place] if place < len(fingerprints) else ""
                request = RequestTrace("compact", fingerprint, cache=RequestCache.from_json(document))
                label = f"prompt {number} compact"
                requests.append(_request_summary((label, number, 0), request, between, model, answered=False))
                if request.cache is not None and request.cache.cache_break is not None:
                    breaks.append(BreakReport(label, request.cache.cache_break))
        for index, trace_pass in enumerate(prompt.passes, start=1):
            where = f"prompt {number} pass {trace_pass.turn}"
            model = trace_pass.model_call.get("model") or model
            answered = _answered_request(trace_pass)
            for request in trace_pass.requests:
                label = where if request.purpose == "main" else f"{where} {request.purpose}"
                summary = _request_summary(
                    (label, number, index), request, trace_pass, model, answered=request is answered
                )
                requests.append(summary)
                if request.cache is not None and request.cache.cache_break is not None:
                    breaks.append(BreakReport(label, request.cache.cache_break))
                if summary.reported is not None and request.cache is not None:
                    disagreements.extend(_disagreements(label, request.cache, summary.reported))
    return CacheSummary(tuple(requests), tuple(disagreements), tuple(breaks))


def unexpected_breaks(trace: BehaviourTrace) -> list[BreakReport]:
    """Every cache break in ``trace`` whose cause is not one the loop means (a changed system
    prompt, a reordered tool list, a leaked backfill, a TTL that ran out mid-turn...), in order."""
    return list(summarize_cache(trace).unexpected)


def _answered_request(trace_pass: PassTrace) -> RequestTrace | None:
    """The request whose answer the pass's model call reports: its last main attempt."""
    main = [r for r in trace_pass.requests if r.purpose == "main"]
    return main[-1] if main else None


def _request_summary(
    place: tuple[str, int, int], request: RequestTrace, trace_pass: PassTrace, model: str | None, *, answered: bool
) -> RequestSummary:
    where, prompt, index = place

    def summary(cost: SessionCost, source: CostSource, reported: Mapping[str, Any] | None = None) -> RequestSummary:
        return RequestSummary(where, prompt, index, request.purpose, request.cache, model, cost, source, reported)

    call = trace_pass.model_call
    usage = call.get("usage")
    if answered and isinstance(usage, Mapping):
        return summary(_priced(model, usage), CostSource.REPORTED, usage)
    # A summary request (compaction) is answered though its usage is not in the trace.
    got_answer = call.get("stop_reason") is not None if answered else request.purpose != "main"
    if got_answer and request.cache is not None:
        estimate = {
            "input_tokens": request.cache.uncached,
            "cache_creation_input_tokens": request.cache.written,
            "cache_read_input_tokens": request.cache.read,
        }
        return summary(_priced(model, estimate), CostSource.SIMULATED)
    return summary(SessionCost(), CostSource.UNANSWERED)


def _priced(model: str | None, usage: Mapping[str, Any]) -> SessionCost:
    return usage_cost(model or "an unnamed model", usage)


def _disagreements(where: str, cache: RequestCache, reported: Mapping[str, Any]) -> list[Disagreement]:
    found = []
    for kind, simulated, key in (
        (CacheKind.READ, cache.read, "cache_read_input_tokens"),
        (CacheKind.WRITE, cache.written, "cache_creation_input_tokens"),
    ):
        actual = int(reported.get(key) or 0)
        if (simulated > 0) != (actual > 0):
            found.append(Disagreement(where, kind, simulated, actual))
    return found


def _disagreement_lines(disagreements: Sequence[Disagreement]) -> list[str]:
    """One line per request where the audit and the API disagree, the first few of them."""
    by_request: dict[str, list[str]] = {}
    for found in disagreements:
        by_request.setdefault(found.where, []).append(found.phrase)
    if not by_request:
        return []
    lines = [f"disagreements with the reported usage: {_count(len(by_request), 'request')}"]
    shown = list(by_request.items())[:_DISAGREEMENTS_SHOWN]
    lines.extend(f"  {where}: {', '.join(phrases)}" for where, phrases in shown)
    if len(by_request) > len(shown):
        lines.append(f"  ... and {len(by_request) - len(shown)} more (--format json lists them all)")
    return lines


def _count(number: int, noun: str) -> str:
    """``1 request``, ``3 requests``."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _cost_line(summary: CacheSummary) -> str:
    cost = summary.cost
    priced = [r for r in summary.requests if r.source is not CostSource.UNANSWERED]
    if not priced:
        return "cost: unknown (no usage was recorded and there is no cache audit to estimate it from)"
    simulated = summary.simulated
    if not simulated:
        source = "from the reported usage"
    elif len(simulated) == len(priced):
        source = "estimated from the cache audit, input only: no usage was recorded"
    else:
        shown = ", ".join(simulated[:3]) + (f" and {len(simulated) - 3} more" if len(simulated) > 3 else "")
        source = f"from the reported usage; estimated from the cache audit, input only, for {shown}"
    line = f"cost: ${cost.usd:.4f} ({source})"
    if cost.unpriced_models:
        line += f"; not priced: {', '.join(cost.unpriced_models)} (not in the price table)"
    return line
