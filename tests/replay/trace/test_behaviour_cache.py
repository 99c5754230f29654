"""The cache audit in the behaviour trace: one line per request under it in the text form (its
attempt named when a pass made several, a break on its own line), the ``cache`` field per request
in the JSON form, and traces written before the audit still read, without it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from replay.cassette.normalized_text import SharedParser
from replay.cassette.sent_again import logged_pieces
from replay.session.bundle import load_bundle
from replay.session.session_run import replay_bundle
from replay.trace.behaviour import BehaviourTrace, PassTrace, PromptTrace, RequestTrace, render_text
from replay.trace.cache_audit import AuditedRequest, CacheAudit
from replay.trace.request_cache import BreakCause, CacheBreak, RequestCache

LIBRARY = Path(__file__).resolve().parents[3] / "cassettes"
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


@pytest.mark.parametrize(
    "name",
    [
        "long-session-crosses-autocompact-twice",
        "cache-break-from-changed-system-prompt",
        "summary-request-reads-the-cache",
        "context-collapse-drain-retry",
        "microcompact-after-an-hour",
    ],
)
def test_the_audit_of_bodies_read_a_piece_at_a_time_is_the_audit_of_each_body_parsed_whole(name: str) -> None:
    """The trace reads the logged bodies' pieces, each parsed once for the whole session, and
    writes each block once (`PrefixPlanner`); a body already read is its own objects. Either way,
    the same trace, and the same audit as each body on its own gives."""
    path = LIBRARY / name
    bundle = load_bundle(path)
    run = asyncio.run(replay_bundle(bundle))
    from_pieces = run.behaviour(name, bundle.spec.prompts).dumps()
    requests = [r for r in run.requests if r.path.startswith("/v1/messages")]
    reader = SharedParser()
    shared = [AuditedRequest(body=reader.parsed(logged_pieces(r)), at=r.at, answered=r.answered) for r in requests]
    for request in run.requests:
        assert request.body is not None  # each read whole: the trace reads it so from now on
    assert all(logged_pieces(request) is None for request in run.requests)
    assert run.behaviour(name, bundle.spec.prompts).dumps() == from_pieces
    whole = [AuditedRequest(body=r.body, at=r.at, answered=r.answered) for r in requests]
    planned, plain = CacheAudit(shared_pieces=True), CacheAudit()
    assert [planned.audit(r) for r in shared] == [plain.audit(r) for r in whole]
