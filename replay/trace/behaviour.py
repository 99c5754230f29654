"""The behaviour trace: what the loop did, per prompt and per pass, in the loop's
own terms — the unit of snapshot testing.

One model, extracted from a run's engine trace events and the requests its transport saw,
with two stable renderings: readable text (the snapshot format: a reviewer reads its diff and
sees what the loop did differently) and JSON. A mermaid state diagram draws the passes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from engine import TraceEvent, TraceKind
from replay.cassette.fingerprints import route_key
from replay.cassette.normalized_text import SharedParser
from replay.cassette.sent_again import logged_pieces
from replay.cassette.transport import LoggedRequest
from replay.trace.cache_audit import AuditedRequest, CacheAudit, shaping_of
from replay.trace.request_cache import RequestCache

__all__ = [
    "TRACE_FORMAT_VERSION",
    "BehaviourTrace",
    "PassTrace",
    "PromptTrace",
    "RequestTrace",
    "TraceFormatError",
    "TraceProblem",
    "extract_trace",
    "render_mermaid",
    "render_text",
]

TRACE_FORMAT_VERSION = 1
_FINGERPRINT_CHARS = 12  # enough to tell requests apart in a review; the JSON keeps them whole
_MESSAGES_PATH = "/v1/messages"
# The API's reported usage of a pass, as the trace keeps it (the cost and the cache comparison
# read these; the rest of the usage object varies with the API's version).
_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


class TraceProblem(StrEnum):
    """Why a document is not a behaviour trace this replay reads."""

    NOT_JSON = "not_json"
    NOT_A_TRACE = "not_a_trace"
    OTHER_VERSION = "other_version"
    INCOMPLETE = "incomplete"


class TraceFormatError(ValueError):
    """A document that is not a behaviour trace this replay reads; ``detail`` says why in a
    phrase ("it is JSON but not a behaviour trace"), for the caller to put in its sentence."""

    def __init__(self, problem: TraceProblem, detail: str, *, source: str | None = None) -> None:
        super().__init__(detail if source is None else f"{source} is not a readable behaviour trace ({detail}).")
        self.problem = problem
        self.detail = detail


@dataclass(frozen=True)
class RequestTrace:
    """One HTTP request of a pass: why it was made, its fingerprint, and what the cache audit
    says of it (None for a request that is not a Messages API call)."""

    purpose: str  # "main" or "compact"
    fingerprint: str
    path: str = "/v1/messages"
    matched: bool = True
    cache: RequestCache | None = None

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "purpose": self.purpose,
            "fingerprint": self.fingerprint,
            "path": self.path,
            "matched": self.matched,
        }
        if self.cache is not None:
            document["cache"] = self.cache.to_json()
        return document

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> RequestTrace:
        data = dict(document)
        cache = data.pop("cache", None)
        return cls(**data, cache=None if cache is None else RequestCache.from_json(cache))


@dataclass
class PassTrace:
    """One pass of the loop."""

    turn: int
    transition: str | None
    attempt: int | None = None
    requests: list[RequestTrace] = field(default_factory=list)
    model_call: dict[str, Any] = field(default_factory=dict)
    compactions: list[dict[str, Any]] = field(default_factory=list)
    retries: list[dict[str, Any]] = field(default_factory=list)
    fallbacks: list[dict[str, Any]] = field(default_factory=list)
    withheld: list[str] = field(default_factory=list)
    tool_batches: list[dict[str, Any]] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    hooks: list[dict[str, Any]] = field(default_factory=list)
    token_budget: dict[str, Any] | None = None
    attachments: list[str] = field(default_factory=list)

    @property
    def fingerprint(self) -> str | None:
        """The fingerprint of the pass's main request (its last attempt)."""
        main = [r for r in self.requests if r.purpose == "main"]
        return main[-1].fingerprint if main else None

    @property
    def tombstones(self) -> int:
        return sum(int(f.get("tombstoned") or 0) for f in self.fallbacks) + sum(
            int(r.get("tombstoned") or 0) for r in self.retries
        )


@dataclass
class PromptTrace:
    """One submitted prompt: its passes and how it ended."""

    prompt: str
    passes: list[PassTrace] = field(default_factory=list)
    terminal: str | None = None
    # Events outside any pass (a manual compaction between prompts).
    before: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class BehaviourTrace:
    """A session's behaviour: one ``PromptTrace`` per submitted prompt."""

    session: str
    prompts: list[PromptTrace] = field(default_factory=list)

    def passes(self) -> Iterator[tuple[int, PassTrace]]:
        for number, prompt in enumerate(self.prompts, start=1):
            for trace in prompt.passes:
                yield number, trace

    def to_json(self) -> dict[str, Any]:
        return {
            "format_version": TRACE_FORMAT_VERSION,
            "session": self.session,
            "prompts": [
                {
                    "prompt": p.prompt,
                    "before": p.before,
                    "passes": [_pass_json(t) for t in p.passes],
                    "terminal": p.terminal,
                }
                for p in self.prompts
            ],
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2, sort_keys=False, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, document: object) -> BehaviourTrace:
        """The trace a ``to_json`` document holds; `TraceFormatError` for anything else."""
        if not isinstance(document, dict) or document.get("format_version") is None:
            raise TraceFormatError(TraceProblem.NOT_A_TRACE, "it is JSON but not a behaviour trace")
        version = document["format_version"]
        if version != TRACE_FORMAT_VERSION:
            detail = f"trace format version {version!r}; this replay reads {TRACE_FORMAT_VERSION}"
            raise TraceFormatError(TraceProblem.OTHER_VERSION, detail)
        try:
            return cls._from_document(document)
        except KeyError as exc:
            detail = f"it is a behaviour trace without its {exc.args[0]!r} field"
            raise TraceFormatError(TraceProblem.INCOMPLETE, detail) from None
        except (TypeError, AttributeError, ValueError):
            raise TraceFormatError(TraceProblem.INCOMPLETE, "it is a behaviour trace with a malformed field") from None

    @classmethod
    def _from_document(cls, document: dict[str, Any]) -> BehaviourTrace:
        prompts = []
        for p in document["prompts"]:
            passes = []
            for t in p["passes"]:
                data = dict(t)
                data.pop("fingerprint", None)
                data.pop("tombstones", None)
                data["requests"] = [RequestTrace.from_json(r) for r in data.get("requests", [])]
                passes.append(PassTrace(**data))
            prompts.append(
                PromptTrace(prompt=p["prompt"], passes=passes, terminal=p["terminal"], before=p.get("before", []))
            )
        return cls(session=document["session"], prompts=prompts)


def _pass_json(trace: PassTrace) -> dict[str, Any]:
    data = asdict(trace)
    data["requests"] = [request.to_json() for request in trace.requests]
    return {
        "turn": trace.turn,
        "transition": trace.transition,
        "fingerprint": trace.fingerprint,
        "tombstones": trace.tombstones,
        **{k: v for k, v in data.items() if k not in ("turn", "transition")},
    }


def extract_trace(
    session: str, prompts: Sequence[str], events: Sequence[TraceEvent], requests: Sequence[LoggedRequest]
) -> BehaviourTrace:
    """The behaviour trace of a run: ``events`` is the engine's trace (``QueryEngine.trace``),
    ``requests`` the transport's request log in order. Requests are matched to passes in order:
    a compaction's summary requests, then the model call's attempts. Each Messages API request
    gets its cache audit (`replay.trace.cache_audit`), from its logged body and time."""
    trace = BehaviourTrace(session=session)
    pending = list(requests)
    current: PassTrace | None = None
    # The logged bodies are parsed for the audit alone, sharing their pieces: each block is
    # written once however many requests re-send it.
    audit, reader = CacheAudit(shared_pieces=True), SharedParser()

    def take(count: int, purpose: str) -> list[RequestTrace]:
        # A request opens its prompt when it is sent before the prompt's first pass is done.
        opens_prompt = current is None or current.transition is None
        taken = [
            RequestTrace(
                purpose, r.fingerprint, r.path, r.matched, cache=_audit(audit, reader, r, purpose, opens_prompt)
            )
            for r in pending[:count]
        ]
        del pending[:count]
        return taken

    def new_prompt() -> PromptTrace:
        last = trace.prompts[-1] if trace.prompts else None
        if last is not None and not last.passes and last.terminal is None:
            return last  # opened by an event before its first pass (a manual compaction)
        number = len(trace.prompts)
        trace.prompts.append(PromptTrace(prompt=prompts[number] if number < len(prompts) else ""))
        return trace.prompts[-1]

    for event in events:
        data = dict(event.data)
        kind = event.kind
        if kind is TraceKind.PASS:
            # A pass with no transition is the first pass of a newly submitted prompt.
            owner = new_prompt() if data.get("transition") is None or not trace.prompts else trace.prompts[-1]
            current = PassTrace(turn=event.turn, transition=data.get("transition"), attempt=data.get("attempt"))
            owner.passes.append(current)
            continue
        if kind is TraceKind.TERMINAL:
            if trace.prompts:
                trace.prompts[-1].terminal = data["reason"]
            current = None
            continue
        if kind is TraceKind.COMPACTION:
            requests_made = take(int(data.pop("summary_requests", 0) or 0), "compact")
            shaping = shaping_of(data)
            if shaping is not None:
                audit.shape(shaping)
            entry = _compaction(data)
            if requests_made:
                entry["requests"] = [r.fingerprint for r in requests_made]
            if current is None:
                # Between prompts: part of the next one, its summary requests' audit with it.
                audited = [r.cache.to_json() for r in requests_made if r.cache is not None]
                if audited:
                    entry["cache"] = audited
                new_prompt().before.append(entry)
            else:
                current.requests.extend(requests_made)
                current.compactions.append(entry)
            continue
        if current is None:
            continue
        if kind is TraceKind.MODEL_CALL:
            current.requests.extend(take(int(data.get("attempts") or 1), "main"))
            current.model_call = {
                k: data[k] for k in ("model", "max_tokens", "stream", "stop_reason", "error") if data.get(k) is not None
            }
            if data.get("aborted"):
                current.model_call["aborted"] = True
            usage = data.get("usage")
            if isinstance(usage, dict) and any(usage.get(key) is not None for key in _USAGE_KEYS):
                current.model_call["usage"] = {key: usage[key] for key in _USAGE_KEYS if usage.get(key) is not None}
        elif kind is TraceKind.RETRY:
            current.retries.append(data)
        elif kind is TraceKind.FALLBACK:
            current.fallbacks.append(data)
        elif kind is TraceKind.WITHHELD:
            current.withheld.append(data["error"])
        elif kind is TraceKind.TOOL_BATCH:
            current.tool_batches.append({"tools": data["tools"], "ids": data["ids"], "concurrent": data["concurrent"]})
        elif kind is TraceKind.TOOL_CALL:
            current.tool_calls.append(data)
        elif kind is TraceKind.HOOK:
            current.hooks.append({k: data[k] for k in ("event", "hook", "outcome") if k in data})
        elif kind is TraceKind.TOKEN_BUDGET:
            current.token_budget = data
        elif kind is TraceKind.ATTACHMENT:
            current.attachments.append(data["type"])
    return trace


def _audit(
    audit: CacheAudit, reader: SharedParser, request: LoggedRequest, purpose: str, opens_prompt: bool
) -> RequestCache | None:
    """The cache audit of a logged Messages API request (None for any other request)."""
    if route_key(request.path) != _MESSAGES_PATH:
        return None
    pieces = logged_pieces(request)
    # A body read already (or scrubbed whole) is its own objects: the audit copies nothing of it.
    body = reader.parsed(pieces) if pieces is not None else request.body
    if not isinstance(body, dict):
        return None
    audited = AuditedRequest(
        body=body, at=request.at, purpose=purpose, opens_prompt=opens_prompt, answered=request.answered
    )
    return audit.audit(audited)


def _compaction(data: dict[str, Any]) -> dict[str, Any]:
    """A compaction event without what varies between runs (the boundary's uuid)."""
    entry = {k: v for k, v in data.items() if k != "boundary"}
    if "boundary" in data:
        entry["boundary"] = True
    return entry


def render_text(trace: BehaviourTrace) -> str:
    """The stable, readable text form (the snapshot format)."""
    lines = [f"session: {trace.session}"]
    for number, prompt in enumerate(trace.prompts, start=1):
        lines.append(f"prompt {number}: {_quote(prompt.prompt)}")
        for entry in prompt.before:
            lines.append(f"  {_compaction_line(entry)}")
            caches = [RequestCache.from_json(cache) for cache in entry.get("cache", [])]
            lines.extend(_cache_lines(caches, indent="    "))
        for trace_pass in prompt.passes:
            lines.extend(_pass_lines(trace_pass))
        lines.append(f"  terminal: {prompt.terminal}")
    return "\n".join(lines) + "\n"


def _pass_lines(p: PassTrace) -> list[str]:
    header = f"  pass {p.turn}: {p.transition or 'start'}"
    if p.attempt is not None:
        header += f" (attempt {p.attempt})"
    lines = [header]
    summaries = [r.cache for r in p.requests if r.purpose == "compact"]
    for entry in p.compactions:
        count = len(entry.get("requests") or [])
        lines.append(f"    {_compaction_line(entry)}")
        lines.extend(_cache_lines(summaries[:count], indent="      "))
        del summaries[:count]
    for retry in p.retries:
        status = f" {retry['status']}" if retry.get("status") else ""
        lines.append(
            f"    retry {retry['attempt']}: {retry['error']}{status}, waited {retry['delay_ms']} ms"
            + _tombstones(retry)
        )
    for fallback in p.fallbacks:
        if fallback.get("fallback") == "model":
            lines.append(f"    fallback: model {fallback['from']} -> {fallback['to']}" + _tombstones(fallback))
        elif fallback.get("fallback") == "resume":
            kept = int(fallback.get("kept") or 0)
            lines.append(
                f"    fallback: resume after {_broken_by(fallback)}, {kept} text block{'s' if kept != 1 else ''} kept"
                + _tombstones(fallback)
            )
        else:
            lines.append(f"    fallback: streaming after {_broken_by(fallback)}" + _tombstones(fallback))
    main = [r for r in p.requests if r.purpose == "main"]
    call = p.model_call
    outcome = call.get("error") or call.get("stop_reason") or ("aborted" if call.get("aborted") else "no answer")
    if main:
        fingerprints = ", ".join(_short(r) for r in main)
        mode = "" if call.get("stream", True) else " (not streamed)"
        lines.append(
            f"    request {fingerprints}: {call.get('model')} max_tokens={call.get('max_tokens')}{mode} -> {outcome}"
        )
        lines.extend(_cache_lines([r.cache for r in main], indent="      "))
    for withheld in p.withheld:
        lines.append(f"    withheld: {withheld}")
    outcomes = {c["id"]: c["outcome"] for c in p.tool_calls}
    for index, batch in enumerate(p.tool_batches, start=1):
        mode = "concurrent" if batch["concurrent"] else "serial"
        calls = ", ".join(
            f"{name} {outcomes.get(tool_id, '?')}" for name, tool_id in zip(batch["tools"], batch["ids"], strict=True)
        )
        lines.append(f"    tools batch {index} ({mode}): {calls}")
    for hook in p.hooks:
        lines.append(f"    hook {hook.get('event')} {_quote(str(hook.get('hook')))}: {hook.get('outcome')}")
    if p.token_budget is not None:
        budget = p.token_budget
        verdict = "continue" if budget.get("continue") else "stop"
        lines.append(
            f"    token budget: {budget.get('pct')}% ({budget.get('tokens')} tokens) -> {verdict}"
            f" ({budget.get('reason')})"
        )
    if p.attachments:
        lines.append(f"    attachments: {', '.join(p.attachments)}")
    return lines


def _cache_lines(caches: Sequence[RequestCache | None], *, indent: str) -> list[str]:
    """One line per audited request (its attempt named when there are several), then its break."""
    lines = []
    audited = [cache for cache in caches if cache is not None]
    for number, cache in enumerate(audited, start=1):
        which = f" (attempt {number})" if len(audited) > 1 else ""
        marks = f"{cache.marks} mark{'' if cache.marks == 1 else 's'}"
        if cache.input_tokens == 0:  # never answered: nothing read, written or billed
            lines.append(f"{indent}cache{which}: not answered ({marks})")
        else:
            lines.append(
                f"{indent}cache{which}: read {cache.read}, wrote {cache.written}, uncached {cache.uncached} ({marks})"
            )
        found = cache.cache_break
        if found is not None:
            verdict = "expected" if found.expected else "unexpected"
            lines.append(f"{indent}cache break at {found.path}: {found.cause.phrase} ({verdict})")
    return lines


def _compaction_line(entry: dict[str, Any]) -> str:
    tier = entry.get("tier")
    if "failed" in entry:
        return f"compaction {tier}: failed ({entry['failed']})"
    details = []
    if entry.get("boundary"):
        details.append(f"boundary at {entry.get('tokens_before')} tokens -> {entry.get('tokens_after')}")
    for key in ("replaced", "cleared"):
        if key in entry:
            details.append(f"{key} {len(entry[key])}")
    for key in ("removed", "tokens_freed", "drained", "staged", "media_stripped", "kept"):
        if entry.get(key):
            details.append(f"{key.replace('_', ' ')} {entry[key]}")
    if entry.get("requests"):
        details.append("summary " + ", ".join(f[:_FINGERPRINT_CHARS] for f in entry["requests"]))
    return f"compaction {tier}: " + ("; ".join(details) if details else "no change")


def _broken_by(fallback: dict[str, Any]) -> str:
    """``overloaded``, or ``harness (malformed event)`` when the event says how the stream broke."""
    stream_break = fallback.get("stream_break")
    detail = f" ({str(stream_break).replace('_', ' ')})" if stream_break else ""
    return f"{fallback.get('error')}{detail}"


def _tombstones(entry: dict[str, Any]) -> str:
    count = int(entry.get("tombstoned") or 0)
    return f", {count} tombstone{'s' if count != 1 else ''}" if count else ""


def _short(request: RequestTrace) -> str:
    return request.fingerprint[:_FINGERPRINT_CHARS] + ("" if request.matched else " (not in cassette)")


def _quote(text: str) -> str:
    single_line = " ".join(text.split())
    return json.dumps(single_line if len(single_line) <= 80 else single_line[:77] + "...", ensure_ascii=False)


def render_mermaid(trace: BehaviourTrace) -> str:
    """The passes as a mermaid state diagram, to paste into a README or a pull request."""
    lines = ["stateDiagram-v2"]
    for number, prompt in enumerate(trace.prompts, start=1):
        previous = "[*]"
        for p in prompt.passes:
            state = f"p{number}_{p.turn}_{prompt.passes.index(p)}"
            tools = ", ".join(name for b in p.tool_batches for name in b["tools"])
            outcome = p.model_call.get("error") or p.model_call.get("stop_reason") or ""
            label = f"prompt {number} pass {p.turn}: {outcome}" + (f" [{tools}]" if tools else "")
            lines.append(f'    state "{label}" as {state}')
            lines.append(f"    {previous} --> {state}: {p.transition or 'start'}")
            previous = state
        lines.append(f"    {previous} --> [*]: {prompt.terminal}")
    return "\n".join(lines) + "\n"
