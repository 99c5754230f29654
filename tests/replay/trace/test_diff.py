"""Differences between two runs, told in the loop's terms."""

from __future__ import annotations

import json
from typing import Any

from replay.cassette.jsondiff import differing_paths
from replay.trace.behaviour import BehaviourTrace, PassTrace, PromptTrace, RequestTrace
from replay.trace.diff import diff_traces, diff_transcripts, explain_fingerprint_change
from replay.trace.request_cache import BreakCause, CacheBreak, RequestCache

FP = {name: name * 64 for name in "abcdef"}  # fingerprints easy to read back: "aaaaaaaaaaaa..."


def a_pass(
    turn: int,
    transition: str | None = None,
    *,
    fingerprint: str = FP["a"],
    stop_reason: str = "end_turn",
    **fields: Any,
) -> PassTrace:
    return PassTrace(
        turn=turn,
        transition=transition,
        requests=[RequestTrace("main", fingerprint)],
        model_call={"model": "claude-sonnet-4-6", "max_tokens": 8000, "stream": True, "stop_reason": stop_reason},
        **fields,
    )


def a_trace(*passes: PassTrace, terminal: str = "completed", prompt: str = "fix the bug") -> BehaviourTrace:
    return BehaviourTrace(session="s", prompts=[PromptTrace(prompt=prompt, passes=list(passes), terminal=terminal)])


def boundary(tokens_before: int, tokens_after: int = 40) -> dict[str, Any]:
    return {"tier": "autocompact", "trigger": "auto", "tokens_before": tokens_before, "tokens_after": tokens_after}


def with_boundary(entry: dict[str, Any]) -> dict[str, Any]:
    return {**entry, "boundary": True}


def batch(*calls: tuple[str, str, str], concurrent: bool = True) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A tool batch and its calls from (name, id, outcome) triples."""
    return (
        {"tools": [c[0] for c in calls], "ids": [c[1] for c in calls], "concurrent": concurrent},
        [{"id": c[1], "name": c[0], "outcome": c[2]} for c in calls],
    )


def test_equal_traces_have_no_differences() -> None:
    trace = a_trace(a_pass(1, stop_reason="tool_use"), a_pass(2, "next_turn", fingerprint=FP["b"]))
    assert diff_traces(trace, trace) == []


def test_the_session_name_does_not_count_as_a_difference() -> None:
    one, other = a_trace(a_pass(1)), a_trace(a_pass(1))
    other.session = "moved-elsewhere"
    assert diff_traces(one, other) == []


def test_a_transition_that_no_longer_fires_is_named_with_its_pass() -> None:
    before = a_trace(a_pass(1), a_pass(1, "reactive_compact_retry", fingerprint=FP["b"]), terminal="completed")
    after = a_trace(a_pass(1), terminal="prompt_too_long")

    lines = diff_traces(before, after)

    assert "transition reactive_compact_retry no longer fires (prompt 1 pass 2 (turn 1))." in lines
    assert "prompt 1 runs fewer passes: 2 → 1." in lines
    assert "prompt 1 terminal changed: completed → prompt_too_long." in lines


def test_a_new_transition_is_named_with_its_pass() -> None:
    before = a_trace(a_pass(1))
    after = a_trace(a_pass(1), a_pass(1, "stop_hook_blocking", fingerprint=FP["b"]))
    assert "transition stop_hook_blocking now fires (prompt 1 pass 2 (turn 1))." in diff_traces(before, after)


def test_a_transition_that_changes_at_a_pass_says_from_what_to_what() -> None:
    before = a_trace(a_pass(1), a_pass(2, "next_turn"), a_pass(2, "max_output_tokens_escalate"))
    after = a_trace(a_pass(1), a_pass(1, "max_output_tokens_escalate"), a_pass(2, "next_turn"))

    lines = diff_traces(before, after)

    assert "prompt 1 pass 2 (turn 1): transition next_turn → max_output_tokens_escalate." in lines
    assert "prompt 1 pass 3 (turn 2): transition max_output_tokens_escalate → next_turn." in lines


def test_a_transition_firing_a_different_number_of_times_is_counted() -> None:
    before = a_trace(a_pass(1), a_pass(2, "next_turn"), a_pass(3, "next_turn"))
    after = a_trace(a_pass(1), a_pass(2, "next_turn"))
    assert "transition next_turn fires 1 time instead of 2 (prompt 1)." in diff_traces(before, after)


def test_a_compaction_boundary_that_moved_names_both_places_and_sizes() -> None:
    moved = with_boundary(boundary(7012))
    before = a_trace(a_pass(1), a_pass(2, "next_turn"), a_pass(3, "next_turn", compactions=[moved]))
    after = a_trace(
        a_pass(1),
        a_pass(2, "next_turn"),
        a_pass(3, "next_turn"),
        a_pass(4, "next_turn"),
        a_pass(5, "next_turn", compactions=[with_boundary(boundary(9400))]),
    )
    assert (
        "autocompact boundary moved: before prompt 1 pass 3 at 7,012 tokens → before pass 5 at 9,400 tokens."
        in diff_traces(before, after)
    )


def test_a_compaction_boundary_that_no_longer_happens_says_where_it_was() -> None:
    before = a_trace(a_pass(1), a_pass(2, "next_turn", compactions=[with_boundary(boundary(7012))]))
    after = a_trace(a_pass(1), a_pass(2, "next_turn"))
    assert diff_traces(before, after) == [
        "autocompact boundary no longer happens (was before prompt 1 pass 2 at 7,012 tokens)."
    ]


def test_a_new_boundary_and_a_boundary_whose_result_changed_are_told_apart() -> None:
    before = a_trace(a_pass(1), a_pass(2, "next_turn", compactions=[with_boundary(boundary(7012, 39))]))
    after = a_trace(a_pass(1, compactions=[{"tier": "microcompact", "cleared": ["t1", "t2"]}]), a_pass(2, "next_turn"))
    after.prompts[0].passes[1].compactions.append(with_boundary(boundary(7012, 52)))

    lines = diff_traces(before, after)

    assert "microcompact compaction now happens before prompt 1 pass 1." in lines
    assert "autocompact boundary before prompt 1 pass 2 changed: tokens after 39 → 52." in lines


def test_a_changed_fingerprint_is_shown_short_with_what_explains_it() -> None:
    before = a_trace(a_pass(1, fingerprint=FP["a"]))
    after = a_trace(a_pass(1, fingerprint=FP["b"]))
    after.prompts[0].passes[0].requests[0] = RequestTrace("main", FP["b"], matched=False)

    plain = diff_traces(before, after)
    explained = diff_traces(before, after, explain=lambda a, b: ["messages[3].content[0].text", "max_tokens"])

    assert plain == ["prompt 1 pass 1: request fingerprint changed aaaaaaaaaaaa → bbbbbbbbbbbb (not in the cassette)."]
    assert explained == [
        "prompt 1 pass 1: request fingerprint changed aaaaaaaaaaaa → bbbbbbbbbbbb (not in the cassette) "
        "because messages[3].content[0].text, max_tokens changed."
    ]


def test_fingerprints_changed_by_an_earlier_change_are_summarized() -> None:
    before = a_trace(*(a_pass(n, "next_turn" if n > 1 else None, fingerprint=FP["a"]) for n in range(1, 7)))
    after = a_trace(*(a_pass(n, "next_turn" if n > 1 else None, fingerprint=FP["b"]) for n in range(1, 7)))

    lines = diff_traces(before, after)

    assert len([line for line in lines if "request fingerprint changed" in line]) == 3
    assert lines[-1] == "prompt 1: the request fingerprints of passes 4–6 changed as well."


def test_tool_calls_are_compared_by_name_by_batching_and_by_outcome() -> None:
    reads, read_calls = batch(("Read", "t1", "success"), ("Grep", "t2", "success"))
    write, write_calls = batch(("Write", "t3", "success"), concurrent=False)
    base = a_pass(1, stop_reason="tool_use", tool_batches=[reads, write], tool_calls=read_calls + write_calls)

    other_names = a_pass(1, stop_reason="tool_use", tool_batches=[reads], tool_calls=read_calls)
    split, split_calls = batch(("Read", "t1", "success"), concurrent=False)
    grep, grep_calls = batch(("Grep", "t2", "success"), concurrent=False)
    other_batching = a_pass(
        1, stop_reason="tool_use", tool_batches=[split, grep, write], tool_calls=split_calls + grep_calls + write_calls
    )
    denied = [*read_calls, {"id": "t3", "name": "Write", "outcome": "permission_denied"}]
    other_outcome = a_pass(1, stop_reason="tool_use", tool_batches=[reads, write], tool_calls=denied)

    assert diff_traces(a_trace(base), a_trace(other_names)) == [
        "prompt 1 pass 1: tool calls changed: [Read success, Grep success] concurrent; [Write success] serial"
        " → [Read success, Grep success] concurrent."
    ]
    assert diff_traces(a_trace(base), a_trace(other_batching))[0].startswith("prompt 1 pass 1: tool batching changed:")
    assert diff_traces(a_trace(base), a_trace(other_outcome)) == [
        "prompt 1 pass 1: tool outcomes changed: [Read success, Grep success] concurrent; [Write success] serial"
        " → [Read success, Grep success] concurrent; [Write permission_denied] serial."
    ]


def test_retries_fallbacks_tombstones_and_the_model_call_are_compared() -> None:
    retry = {"attempt": 1, "error": "overloaded", "status": 529, "delay_ms": 512, "tombstoned": 1}
    fallback = {"fallback": "streaming", "error": "connection_dropped", "tombstoned": 2}
    before = a_trace(a_pass(1, retries=[retry, {**retry, "attempt": 2}], fallbacks=[fallback]))
    after = a_trace(a_pass(1, retries=[retry], stop_reason="max_tokens"))

    lines = diff_traces(before, after)

    assert "prompt 1 pass 1: model call changed: answer end_turn → max_tokens." in lines
    assert (
        "prompt 1 pass 1: retries changed: overloaded 529 (waited 512 ms), overloaded 529 (waited 512 ms)"
        " → overloaded 529 (waited 512 ms)." in lines
    )
    assert "prompt 1 pass 1: fallbacks changed: streaming after connection_dropped → none." in lines
    assert "prompt 1 pass 1: tombstones 4 → 1." in lines


def cached(cache: RequestCache | None) -> PassTrace:
    trace = a_pass(1)
    trace.requests = [RequestTrace("main", FP["a"], cache=cache)]
    return trace


def test_a_changed_prompt_cache_says_what_it_read_wrote_and_where_it_now_breaks() -> None:
    hit = RequestCache(marks=2, prefix=1200, read=1150, written=50, uncached=17)
    broken = RequestCache(
        marks=2,
        prefix=1200,
        read=0,
        written=1200,
        uncached=17,
        cache_break=CacheBreak(path="system[0].text", cause=BreakCause.SYSTEM_PROMPT_CHANGED),
    )

    assert diff_traces(a_trace(cached(hit)), a_trace(cached(broken)))[0] == (
        "prompt 1 pass 1: cache break at system[0].text (system prompt changed, unexpected) — cost +680%."
    )
    moved = RequestCache(marks=3, prefix=1200, read=1146, written=50, uncached=21)
    assert diff_traces(a_trace(cached(hit)), a_trace(cached(moved)))[0] == (
        "prompt 1 pass 1: cache reads 1,150 → 1,146 tokens, uncached 17 → 21 tokens, marks 2 → 3 — cost +2%."
    )
    # A trace written before the audit has no cache to compare: nothing is said.
    assert diff_traces(a_trace(cached(None)), a_trace(cached(broken))) == []


def test_prompts_added_removed_and_reworded_are_named() -> None:
    one = a_trace(a_pass(1), prompt="fix the bug")
    two = a_trace(a_pass(1), prompt="fix both bugs")
    two.prompts.append(PromptTrace(prompt="and test it", passes=[a_pass(1)], terminal="completed"))

    assert diff_traces(one, two) == [
        "1 prompt → 2 submitted.",
        'prompt 1 text changed: "fix the bug" → "fix both bugs".',
        'prompt 2 ("and test it") is new: 1 pass, terminal completed.',
    ]
    assert diff_traces(two, one)[-1] == 'prompt 2 ("and test it") is no longer submitted.'


def test_equal_transcripts_have_no_diff() -> None:
    assert diff_transcripts('{"a": 1}\n', '{"a": 1}\n') == []


def test_a_transcript_diff_points_at_the_changed_field() -> None:
    old = json.dumps({"type": "user", "message": {"content": "list the files", "role": "user"}}) + "\n"
    new = json.dumps({"type": "user", "message": {"content": "list all files", "role": "user"}}) + "\n"

    lines = diff_transcripts(old, new)

    assert lines[0] == "transcript differs (recorded → replayed):"
    assert '-  "content": "list the files",' in lines
    assert '+  "content": "list all files",' in lines


def test_a_long_transcript_diff_is_cut_at_about_forty_lines_with_a_note() -> None:
    old = "".join(json.dumps({"n": n, "text": f"line {n}"}) + "\n" for n in range(100))
    new = "".join(json.dumps({"n": n, "text": f"LINE {n}"}) + "\n" for n in range(100))

    lines = diff_transcripts(old, new)

    assert len(lines) == 42
    assert lines[-1].startswith("... (") and lines[-1].endswith(" more diff lines)")


def test_explaining_a_fingerprint_change_names_the_request_fields() -> None:
    body = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 8000,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "list the files"}]}],
    }
    changed = {**body, "max_tokens": 64000, "messages": [{"role": "user", "content": [{"type": "text", "text": "x"}]}]}

    assert explain_fingerprint_change(body, changed) == ["max_tokens", "messages[0].content[0].text"]
    assert explain_fingerprint_change(body, body) == []


def test_explaining_ignores_what_the_fingerprint_normalizes_away() -> None:
    one = {"messages": [{"role": "user", "content": "at 2026-01-01T00:00:00Z, 123e4567-e89b-12d3-a456-426614174000"}]}
    other = {"messages": [{"role": "user", "content": "at 2027-05-05T10:00:00Z, 00000000-0000-4000-8000-000000000000"}]}
    assert explain_fingerprint_change(one, other) == []


def test_differing_paths_is_the_one_the_cassette_miss_message_uses() -> None:
    from replay.cassette import transport

    assert transport.differing_paths is differing_paths
    assert differing_paths({"a": [1, 2], "b": 1}, {"a": [1, 3], "c": 1}) == ["a[1]", "b", "c"]
    assert differing_paths({"a": 1}, {"a": 2, "b": 3}, limit=1) == ["a"]


def test_a_resume_fallback_is_compared_with_the_text_blocks_it_kept() -> None:
    resume = {"fallback": "resume", "error": "overloaded", "kept": 1, "tombstoned": 0}
    before = a_trace(a_pass(1, fallbacks=[resume]))
    after = a_trace(a_pass(1, fallbacks=[{**resume, "kept": 2}]))

    assert diff_traces(before, after) == [
        "prompt 1 pass 1: fallbacks changed: resume after overloaded, 1 kept → resume after overloaded, 2 kept."
    ]
