"""What changed between two runs, in the loop's terms: a transition that no longer fires, a
compaction boundary that moved, a request fingerprint that changed and which field of the
request changed it, tools called or batched differently, a different terminal, a prompt-cache
break that appeared or went away and what it did to the cost (`cache_diff`).

Every difference is one sentence. ``diff_traces`` compares two behaviour traces,
``diff_transcripts`` two transcripts (a short unified diff), and ``explain_fingerprint_change``
names the fields that differ between two request bodies. Comparing two recorded bundles, which
explains each changed fingerprint from their cassettes, is `replay.session.bundle_diff`.
"""

from __future__ import annotations

import difflib
import json
from collections import Counter
from collections.abc import Callable, Sequence
from itertools import zip_longest
from typing import Any

from replay.cassette.fingerprints import Normalizer
from replay.cassette.jsondiff import differing_paths
from replay.trace.behaviour import BehaviourTrace, PassTrace, PromptTrace
from replay.trace.cache_diff import cache_differences
from replay.trace.compaction_diff import compaction_differences

__all__ = [
    "Explain",
    "diff_traces",
    "diff_transcripts",
    "explain_fingerprint_change",
]

# Why a fingerprint changed: the fields of the request that differ, from two full fingerprints.
Explain = Callable[[str, str], list[str]]

_SHORT = 12  # fingerprint characters shown, as in the trace text
_FINGERPRINT_LINES_PER_PROMPT = 3  # later passes re-send the changed history: summarized
_TRANSCRIPT_DIFF_LINES = 40
_LINE_CHARS = 200


def diff_traces(a: BehaviourTrace, b: BehaviourTrace, *, explain: Explain | None = None) -> list[str]:
    """The differences from ``a`` (before) to ``b`` (after), one sentence each; empty when the
    two traces describe the same behaviour. Passes are aligned by their index in each prompt.
    ``explain`` (optional) names the request fields behind a changed fingerprint."""
    lines: list[str] = []
    if len(a.prompts) != len(b.prompts):
        lines.append(f"{_count(len(a.prompts), 'prompt')} → {len(b.prompts)} submitted.")
    lines.extend(compaction_differences(a, b))
    for number, (before, after) in enumerate(zip_longest(a.prompts, b.prompts), start=1):
        if after is None:
            lines.append(f"prompt {number} ({_quote(before.prompt)}) is no longer submitted.")
        elif before is None:
            lines.append(
                f"prompt {number} ({_quote(after.prompt)}) is new: {_count(len(after.passes), 'pass')}, "
                f"terminal {after.terminal}."
            )
        else:
            lines.extend(_prompt_differences(number, before, after, explain))
    lines.extend(cache_differences(a, b))
    return lines


def diff_transcripts(a_text: str, b_text: str, *, a_name: str = "recorded", b_name: str = "replayed") -> list[str]:
    """A short unified diff of two transcripts (JSONL), each record shown as indented JSON so
    the diff points at the field that changed; at most ~40 lines, with a note when cut."""
    if a_text == b_text:
        return []
    diff = list(
        difflib.unified_diff(
            _transcript_lines(a_text), _transcript_lines(b_text), fromfile=a_name, tofile=b_name, lineterm="", n=1
        )
    )
    if not diff:  # the records are equal once pretty-printed: only their layout differs
        return ["transcript text differs (same records, different layout)."]
    shown = [_cut(line) for line in diff[:_TRANSCRIPT_DIFF_LINES]]
    if len(diff) > _TRANSCRIPT_DIFF_LINES:
        shown.append(f"... ({len(diff) - _TRANSCRIPT_DIFF_LINES} more diff lines)")
    return [f"transcript differs ({a_name} → {b_name}):", *shown]


def explain_fingerprint_change(
    body_a: Any,
    body_b: Any,
    *,
    normalizer_a: Normalizer | None = None,
    normalizer_b: Normalizer | None = None,
    limit: int = 6,
) -> list[str]:
    """The JSON fields of a request body that differ once normalized (what the fingerprint
    sees), e.g. ``["messages[3].content[0].text", "max_tokens"]``."""
    return differing_paths(_normalized(body_a, normalizer_a), _normalized(body_b, normalizer_b), limit=limit)


# --- prompts and passes ------------------------------------------------------------------------


def _prompt_differences(number: int, a: PromptTrace, b: PromptTrace, explain: Explain | None) -> list[str]:
    lines: list[str] = []
    if a.prompt != b.prompt:
        lines.append(f"prompt {number} text changed: {_quote(a.prompt)} → {_quote(b.prompt)}.")
    if len(a.passes) != len(b.passes):
        more = "more" if len(b.passes) > len(a.passes) else "fewer"
        lines.append(f"prompt {number} runs {more} passes: {len(a.passes)} → {len(b.passes)}.")
    lines.extend(_transition_differences(number, a.passes, b.passes))
    lines.extend(_fingerprint_differences(number, a.passes, b.passes, explain))
    for index, (before, after) in enumerate(zip(a.passes, b.passes, strict=False), start=1):
        lines.extend(f"{_where(number, index, after)}: {line}" for line in _pass_differences(before, after))
    if a.terminal != b.terminal:
        lines.append(f"prompt {number} terminal changed: {a.terminal} → {b.terminal}.")
    return lines


def _transition_differences(number: int, a: Sequence[PassTrace], b: Sequence[PassTrace]) -> list[str]:
    counts_a = Counter(p.transition for p in a if p.transition)
    counts_b = Counter(p.transition for p in b if p.transition)
    lines: list[str] = []
    reported: set[str] = set()

    def gone(transition: str, where: str) -> None:
        if transition not in reported:
            reported.add(transition)
            lines.append(f"transition {transition} no longer fires ({where}).")

    def new(transition: str, where: str) -> None:
        if transition not in reported:
            reported.add(transition)
            lines.append(f"transition {transition} now fires ({where}).")

    for index, (before, after) in enumerate(zip_longest(a, b), start=1):
        was = before.transition if before is not None else None
        now = after.transition if after is not None else None
        if was == now:
            continue
        where = _where(number, index, before if after is None else after)
        explained = False
        if was and was not in counts_b:
            gone(was, where)
            explained = True
        if now and now not in counts_a:
            new(now, where)
            explained = True
        if not explained and before is not None and after is not None:
            lines.append(f"{where}: transition {was or 'start'} → {now or 'start'}.")
    for transition in sorted(set(counts_a) & set(counts_b)):
        if counts_a[transition] != counts_b[transition]:
            lines.append(
                f"transition {transition} fires {_count(counts_b[transition], 'time')} instead of "
                f"{counts_a[transition]} (prompt {number})."
            )
    return lines


def _fingerprint_differences(
    number: int, a: Sequence[PassTrace], b: Sequence[PassTrace], explain: Explain | None
) -> list[str]:
    lines: list[str] = []
    more: list[int] = []
    for index, (before, after) in enumerate(zip(a, b, strict=False), start=1):
        was, now = before.fingerprint, after.fingerprint
        if was == now:
            continue
        if len(lines) >= _FINGERPRINT_LINES_PER_PROMPT:
            more.append(index)
            continue
        where = _where(number, index, after)
        if was is None:
            lines.append(f"{where}: a request is made now ({now[:_SHORT]}).")
        elif now is None:
            lines.append(f"{where}: no request is made any more (was {was[:_SHORT]}).")
        else:
            missing = "" if all(r.matched for r in after.requests if r.purpose == "main") else " (not in the cassette)"
            fields = explain(was, now) if explain is not None else []
            because = f" because {', '.join(fields)} changed" if fields else ""
            lines.append(f"{where}: request fingerprint changed {was[:_SHORT]} → {now[:_SHORT]}{missing}{because}.")
    if more:
        span = f"pass {more[0]}" if len(more) == 1 else f"passes {more[0]}–{more[-1]}"
        lines.append(f"prompt {number}: the request fingerprints of {span} changed as well.")
    return lines


def _pass_differences(a: PassTrace, b: PassTrace) -> list[str]:
    """What differs inside two aligned passes (transitions and fingerprints are told apart)."""
    lines: list[str] = []
    summaries_a = [r.fingerprint[:_SHORT] for r in a.requests if r.purpose == "compact"]
    summaries_b = [r.fingerprint[:_SHORT] for r in b.requests if r.purpose == "compact"]
    if summaries_a and summaries_b and summaries_a != summaries_b:
        lines.append(f"compaction summary request changed {', '.join(summaries_a)} → {', '.join(summaries_b)}.")
    call = _model_call_changes(a.model_call, b.model_call)
    if call:
        lines.append(f"model call changed: {'; '.join(call)}.")
    tools = _tool_change(a, b)
    if tools:
        lines.append(tools)
    for label, items_a, items_b in (
        ("retries", [_retry(r) for r in a.retries], [_retry(r) for r in b.retries]),
        ("fallbacks", [_fallback(f) for f in a.fallbacks], [_fallback(f) for f in b.fallbacks]),
        ("withheld errors", a.withheld, b.withheld),
        ("hook decisions", [_hook(h) for h in a.hooks], [_hook(h) for h in b.hooks]),
        ("attachments", a.attachments, b.attachments),
    ):
        if items_a != items_b:
            lines.append(f"{label} changed: {_listing(items_a)} → {_listing(items_b)}.")
    if a.tombstones != b.tombstones:
        lines.append(f"tombstones {a.tombstones} → {b.tombstones}.")
    if a.token_budget != b.token_budget:
        lines.append(f"token budget decision changed: {_budget(a.token_budget)} → {_budget(b.token_budget)}.")
    return lines


def _model_call_changes(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    changes = []
    outcome_a, outcome_b = _outcome(a), _outcome(b)
    if outcome_a != outcome_b:
        changes.append(f"answer {outcome_a} → {outcome_b}")
    for key in ("model", "max_tokens"):
        if a.get(key) != b.get(key) and a and b:
            changes.append(f"{key} {a.get(key)} → {b.get(key)}")
    if a.get("stream", True) != b.get("stream", True):
        changes.append("streamed → not streamed" if a.get("stream", True) else "not streamed → streamed")
    return changes


def _outcome(call: dict[str, Any]) -> str:
    if call.get("aborted"):
        return "aborted"
    return str(call.get("error") or call.get("stop_reason") or "none")


def _tool_change(a: PassTrace, b: PassTrace) -> str | None:
    batches_a, batches_b = _batches(a), _batches(b)
    if batches_a == batches_b:
        return None
    names_a = [name for batch in a.tool_batches for name in batch["tools"]]
    names_b = [name for batch in b.tool_batches for name in batch["tools"]]
    if names_a != names_b:
        what = "tool calls changed"
    elif [batch["tools"] for batch in a.tool_batches] != [batch["tools"] for batch in b.tool_batches] or [
        batch["concurrent"] for batch in a.tool_batches
    ] != [batch["concurrent"] for batch in b.tool_batches]:
        what = "tool batching changed"
    else:
        what = "tool outcomes changed"
    return f"{what}: {_listing(batches_a, separator='; ')} → {_listing(batches_b, separator='; ')}."


def _batches(trace: PassTrace) -> list[str]:
    outcomes = {call["id"]: call["outcome"] for call in trace.tool_calls}
    described = []
    for batch in trace.tool_batches:
        calls = ", ".join(
            f"{name} {outcomes.get(tool_id, '?')}" for name, tool_id in zip(batch["tools"], batch["ids"], strict=False)
        )
        described.append(f"[{calls}] {'concurrent' if batch['concurrent'] else 'serial'}")
    return described


def _retry(retry: dict[str, Any]) -> str:
    status = f" {retry['status']}" if retry.get("status") else ""
    return f"{retry.get('error')}{status} (waited {retry.get('delay_ms')} ms)"


def _fallback(fallback: dict[str, Any]) -> str:
    if fallback.get("fallback") == "model":
        return f"model {fallback.get('from')} → {fallback.get('to')}"
    if fallback.get("fallback") == "resume":
        return f"resume after {fallback.get('error')}, {fallback.get('kept')} kept"
    return f"streaming after {fallback.get('error')}"


def _hook(hook: dict[str, Any]) -> str:
    return f"{hook.get('event')} {hook.get('hook')}: {hook.get('outcome')}"


def _budget(budget: dict[str, Any] | None) -> str:
    if budget is None:
        return "none"
    return f"{'continue' if budget.get('continue') else 'stop'} at {budget.get('pct')}%"


# --- request bodies ----------------------------------------------------------------------------


def _normalized(body: Any, normalizer: Normalizer | None) -> Any:
    text = (normalizer or Normalizer()).body(body)
    try:
        return json.loads(text) if text else None
    except ValueError:
        return text


# --- text helpers ------------------------------------------------------------------------------


def _transcript_lines(text: str) -> list[str]:
    lines = []
    for line in text.splitlines():
        try:
            lines.extend(json.dumps(json.loads(line), indent=1, sort_keys=True, ensure_ascii=False).splitlines())
        except ValueError:
            lines.append(line)
    return lines


def _where(prompt: int, index: int, trace: PassTrace | None) -> str:
    turn = f" (turn {trace.turn})" if trace is not None and trace.turn != index else ""
    return f"prompt {prompt} pass {index}{turn}"


def _listing(items: Sequence[str], *, separator: str = ", ") -> str:
    return separator.join(items) if items else "none"


def _count(number: int, noun: str) -> str:
    plural = "es" if noun.endswith("s") else "s"
    return f"{number} {noun}{'' if number == 1 else plural}"


def _quote(text: str) -> str:
    flat = " ".join(text.split())
    return json.dumps(flat if len(flat) <= 60 else flat[:57] + "...", ensure_ascii=False)


def _cut(line: str) -> str:
    return line if len(line) <= _LINE_CHARS else line[: _LINE_CHARS - 3] + "..."
