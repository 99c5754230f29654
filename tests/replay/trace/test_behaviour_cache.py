"""The cache audit in the behaviour trace: one line per request under it in the text form (its
attempt named when a pass made several, a break on its own line), the ``cache`` field per request
in the JSON form, and traces written before the audit still read, without it."""

from __future__ import annotations

import json

from replay.trace.behaviour import BehaviourTrace, PassTrace, PromptTrace, RequestTrace, render_text
from replay.trace.request_cache import BreakCause, CacheBreak, RequestCache

NOT_ANSWERED = RequestCache(marks=2, prefix=1200, read=0, written=0, uncached=0)
WROTE = RequestCache(marks=2, prefix=1200, read=0, written=1200, uncached=17)
BROKEN = RequestCache(
    marks=2,
    prefix=1210,
    read=0,
    written=1210,
    uncached=9,
    cache_break=CacheBreak(path="system[0].text", cause=BreakCause.SYSTEM_PROMPT_CHANGED),
)


def trace(*passes: PassTrace) -> BehaviourTrace:
    return BehaviourTrace(session="s", prompts=[PromptTrace(prompt="hi", passes=list(passes), terminal="completed")])


def one_pass(*caches: RequestCache | None) -> PassTrace:
    requests = [RequestTrace("main", f"{n:064x}", cache=cache) for n, cache in enumerate(caches)]
    return PassTrace(turn=1, transition=None, requests=requests, model_call={"model": "m", "stop_reason": "end_turn"})


def test_each_request_has_one_cache_line_and_a_break_has_its_own() -> None:
    text = render_text(trace(one_pass(BROKEN)))
    assert "      cache: read 0, wrote 1210, uncached 9 (2 marks)\n" in text
    assert "      cache break at system[0].text: system prompt changed (unexpected)\n" in text


def test_the_attempts_of_a_pass_are_numbered_and_one_never_answered_says_so() -> None:
    lines = render_text(trace(one_pass(NOT_ANSWERED, WROTE))).splitlines()
    assert "      cache (attempt 1): not answered (2 marks)" in lines
    assert "      cache (attempt 2): read 0, wrote 1200, uncached 17 (2 marks)" in lines


def test_the_json_form_carries_the_cache_per_request_and_reads_back() -> None:
    written = trace(one_pass(BROKEN))
    document = json.loads(written.dumps())
    cache = document["prompts"][0]["passes"][0]["requests"][0]["cache"]
    assert cache == {
        "marks": 2,
        "prefix": 1210,
        "read": 0,
        "written": 1210,
        "uncached": 9,
        "break": {"path": "system[0].text", "cause": "system_prompt_changed", "expected": False},
    }
    assert BehaviourTrace.from_json(document).dumps() == written.dumps()


def test_a_trace_written_before_the_audit_still_reads_and_renders_without_cache_lines() -> None:
    document = json.loads(trace(one_pass(None)).dumps())
    assert "cache" not in document["prompts"][0]["passes"][0]["requests"][0]
    read = BehaviourTrace.from_json(document)
    assert next(read.passes())[1].requests[0].cache is None
    assert "cache" not in render_text(read)
