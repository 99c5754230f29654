"""`replay diff` tells cache and cost changes between two runs in the loop's terms: a break that
appeared, went away or moved, reads, writes and marks that moved (exactly: the audit is
deterministic), each with the pass's cost change,
and the session's hit ratio and cost; nothing when nothing differs."""

from __future__ import annotations

from replay.trace.behaviour import BehaviourTrace
from replay.trace.diff import diff_traces
from replay.trace.request_cache import BreakCause
from tests.replay.trace.cache_traces import a_pass, a_trace, cache, usage

SYSTEM = {"at": "system[0].text", "cause": BreakCause.SYSTEM_PROMPT_CHANGED}


def _run(third: tuple[int, int], reported: tuple[int, int], **broken: object) -> BehaviourTrace:
    """Three passes; the third reads/writes ``third`` (audit) and ``reported`` (API usage)."""
    return a_trace(
        [
            a_pass(1, cache(written=6_000, uncached=100), usage(written=6_000, uncached=100, output=50)),
            a_pass(2, cache(read=6_000, written=400), usage(read=6_000, written=400, output=50)),
            a_pass(
                3,
                cache(read=third[0], written=third[1], uncached=100, **broken),  # type: ignore[arg-type]
                usage(read=reported[0], written=reported[1], uncached=100, output=50),
            ),
        ]
    )


HEALTHY = _run((6_400, 300), (6_400, 300))
BROKEN = _run((0, 6_700), (0, 6_700), **SYSTEM)


def test_the_same_cache_behaviour_is_no_difference() -> None:
    assert diff_traces(HEALTHY, _run((6_400, 300), (6_400, 300))) == []


def test_a_new_unexpected_break_is_told_with_its_cost() -> None:
    # Pass 3, in millionths of a dollar: before 6,400 read x 0.30 + 300 written x 3.75 + 100 x 3
    # + 50 output x 15 = 4,095; after 6,700 written x 3.75 + 300 + 750 = 26,175 (+539%).
    # The session: 23,550 + 4,050 + 4,095 = 31,695 → 53,775 (+70%); 12,400 → 6,000 of 19,300 read.
    assert diff_traces(HEALTHY, BROKEN) == [
        "prompt 1 pass 3: cache break at system[0].text (system prompt changed, unexpected) — cost +539%.",
        "session: cache hit ratio 64% → 31%, cost $0.0317 → $0.0538 (+70%).",
    ]


def test_a_break_that_went_away_is_told() -> None:
    assert diff_traces(BROKEN, HEALTHY)[0] == (
        "prompt 1 pass 3: no cache break any more (was at system[0].text, system prompt changed) — cost -84%."
    )


def test_a_break_that_moved_is_told_with_both_places() -> None:
    moved = _run((0, 6_700), (0, 6_700), at="tools[2].input_schema", cause=BreakCause.SCHEMA_RERENDERED)
    assert diff_traces(BROKEN, moved)[0] == (
        "prompt 1 pass 3: cache break at tools[2].input_schema (schema rerendered, unexpected)"
        " instead of system[0].text (system prompt changed)."
    )


def test_reads_and_writes_that_shift_without_a_break_are_told() -> None:
    cold = _run((0, 6_700), (0, 6_700))
    assert diff_traces(HEALTHY, cold)[0] == (
        "prompt 1 pass 3: cache reads 6,400 → 0 tokens, writes 300 → 6,700 tokens — cost +539%."
    )


def test_even_a_small_shift_is_told_exactly() -> None:
    # The audit is deterministic: a few tokens more is a request that changed, or a clock.
    grown = _run((6_450, 320), (6_400, 300))
    assert (
        diff_traces(HEALTHY, grown)[0] == "prompt 1 pass 3: cache reads 6,400 → 6,450 tokens, writes 300 → 320 tokens."
    )


def test_a_trace_without_the_audit_is_not_compared_for_cache() -> None:
    old = _run((6_400, 300), (6_400, 300))
    for trace_pass in old.prompts[0].passes:
        trace_pass.requests = [type(r)(r.purpose, r.fingerprint) for r in trace_pass.requests]
        trace_pass.model_call.pop("usage")
    assert diff_traces(old, BROKEN) == []


def test_a_changed_request_tells_only_its_break_not_the_counts_that_moved_with_it() -> None:
    # Another request reads and writes other counts as a matter of course; its fingerprint line
    # already says it changed. A break that appears is still news.
    reworded, broken = _run((6_450, 320), (6_400, 300)), _run((0, 6_700), (0, 6_700), **SYSTEM)
    for changed in (reworded, broken):
        third = changed.prompts[0].passes[2]
        third.requests = [type(r)(r.purpose, "f" * 12, cache=r.cache) for r in third.requests]
    assert not any("cache reads" in line for line in diff_traces(HEALTHY, reworded))
    assert diff_traces(HEALTHY, broken)[1].startswith("prompt 1 pass 3: cache break at system[0].text")
