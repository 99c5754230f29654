"""The cache and cost summary of a trace: tokens by kind and the hit ratio from the audit, the
cost from the reported usage (the audit's estimate where none was recorded, and said so), the
models that could not be priced, the unexpected breaks, and the requests where the audit and the
API disagree on whether the cache was read or written at all."""

from __future__ import annotations

import pytest

from replay.trace.behaviour import BehaviourTrace, PassTrace, PromptTrace, RequestTrace
from replay.trace.cache_summary import CacheKind, CostSource, summarize_cache, unexpected_breaks
from replay.trace.request_cache import BreakCause
from tests.replay.trace.cache_traces import a_pass, a_trace, cache, usage

# claude-sonnet-4-6, per token: $3 input, $3.75 5-minute write, $0.30 read, $15 output (per million).
SONNET = {"input": 3e-6, "write": 3.75e-6, "read": 0.3e-6, "output": 15e-6}


def test_tokens_by_kind_and_the_hit_ratio_come_from_the_audit() -> None:
    trace = a_trace(
        [a_pass(1, cache(written=6_000, uncached=1_000)), a_pass(2, cache(read=6_000, written=2_000, uncached=1_000))]
    )
    summary = summarize_cache(trace)
    assert (summary.read, summary.written, summary.uncached) == (6_000, 8_000, 2_000)
    assert summary.hit_ratio == pytest.approx(6_000 / 16_000)
    assert summary.to_json()["cache"] == {
        "read": 6_000,
        "written": 8_000,
        "uncached": 2_000,
        "hit_ratio": 0.375,
        "requests": 2,
    }


def test_the_cost_is_the_reported_usage_of_each_pass() -> None:
    trace = a_trace(
        [
            a_pass(1, cache(written=6_000), usage(written=5_800, uncached=12, output=100)),
            a_pass(2, cache(read=6_000, uncached=40), usage(read=5_800, uncached=50, output=20)),
        ]
    )
    summary = summarize_cache(trace)
    expected = (5_800 * SONNET["write"] + 12 * SONNET["input"] + 100 * SONNET["output"]) + (
        5_800 * SONNET["read"] + 50 * SONNET["input"] + 20 * SONNET["output"]
    )
    assert summary.cost.usd == pytest.approx(expected)
    assert [r.source for r in summary.requests] == [CostSource.REPORTED, CostSource.REPORTED]
    assert "from the reported usage)" in summary.render_text()


def test_a_pass_answered_without_reported_usage_is_priced_from_the_audit_and_named() -> None:
    trace = a_trace([a_pass(1, cache(written=1_000, uncached=10), usage(written=1_000)), a_pass(2, cache(read=1_000))])
    summary = summarize_cache(trace)
    assert summary.simulated == ("prompt 1 pass 2",)
    assert summary.requests[1].cost.usd == pytest.approx(1_000 * SONNET["read"])
    assert "estimated from the cache audit, input only, for prompt 1 pass 2" in summary.render_text()


def test_a_call_that_got_no_answer_costs_nothing() -> None:
    summary = summarize_cache(a_trace([a_pass(1, cache(uncached=500), stop_reason=None)]))
    assert summary.requests[0].source is CostSource.UNANSWERED
    assert summary.cost.usd == 0.0


def test_a_compaction_summary_request_is_priced_from_the_audit() -> None:
    trace = a_trace([a_pass(1, cache(written=100), usage(written=100), compact=cache(read=2_000, uncached=300))])
    summary = summarize_cache(trace)
    assert [(r.where, r.source) for r in summary.requests] == [
        ("prompt 1 pass 1 compact", CostSource.SIMULATED),
        ("prompt 1 pass 1", CostSource.REPORTED),
    ]


def test_a_model_the_price_table_does_not_know_is_named_not_counted_at_zero() -> None:
    trace = a_trace([a_pass(1, cache(uncached=10), usage(uncached=10), model="claude-unknown-9")])
    summary = summarize_cache(trace)
    assert summary.cost.unpriced_models == ("claude-unknown-9",)
    assert "not priced: claude-unknown-9" in summary.render_text()
    assert summary.to_json()["cost"]["unpriced_models"] == ["claude-unknown-9"]


def test_unexpected_breaks_are_listed_in_order_and_expected_ones_are_not() -> None:
    trace = a_trace(
        [
            a_pass(1, cache(written=100)),
            a_pass(2, cache(written=120, at="system[0].text", cause=BreakCause.SYSTEM_PROMPT_CHANGED)),
        ],
        [a_pass(1, cache(written=90, at="messages[0].content[0].text", cause=BreakCause.COMPACTION))],
    )
    found = unexpected_breaks(trace)
    assert [b.line for b in found] == ["prompt 1 pass 2: cache break at system[0].text (system prompt changed)"]
    summary = summarize_cache(trace)
    assert len(summary.breaks) == 2
    assert summary.to_json()["unexpected_breaks"] == 1
    assert "unexpected cache breaks: 1\n  prompt 1 pass 2: cache break at system[0].text" in summary.render_text()


def test_a_request_where_the_audit_and_the_api_disagree_is_named() -> None:
    trace = a_trace(
        [
            a_pass(1, cache(written=6_000), usage(written=5_800)),  # agree
            a_pass(2, cache(read=6_000, written=10), usage(written=6_100)),  # the API read nothing
            a_pass(3, cache(uncached=7_000), usage(read=6_000, uncached=900)),  # the audit expects no read
        ]
    )
    summary = summarize_cache(trace)
    assert [(d.where, d.kind) for d in summary.disagreements] == [
        ("prompt 1 pass 2", CacheKind.READ),
        ("prompt 1 pass 3", CacheKind.READ),
    ]
    assert summary.render_text().splitlines()[-3:] == [
        "disagreements with the reported usage: 2 requests",
        "  prompt 1 pass 2: read 6,000 (audit) vs 0 (API)",
        "  prompt 1 pass 3: read 0 (audit) vs 6,000 (API)",
    ]


def test_the_text_names_the_first_few_disagreeing_requests_and_counts_the_rest() -> None:
    # A scenario that pins its usage reports no cache at all: every request disagrees.
    trace = a_trace([a_pass(turn, cache(read=1_000, written=60), usage(uncached=1_060)) for turn in range(1, 9)])
    lines = summarize_cache(trace).render_text().splitlines()
    assert lines[lines.index("disagreements with the reported usage: 8 requests") + 1 :] == [
        "  prompt 1 pass 1: read 1,000 (audit) vs 0 (API), written 60 (audit) vs 0 (API)",
        "  prompt 1 pass 2: read 1,000 (audit) vs 0 (API), written 60 (audit) vs 0 (API)",
        "  prompt 1 pass 3: read 1,000 (audit) vs 0 (API), written 60 (audit) vs 0 (API)",
        "  prompt 1 pass 4: read 1,000 (audit) vs 0 (API), written 60 (audit) vs 0 (API)",
        "  prompt 1 pass 5: read 1,000 (audit) vs 0 (API), written 60 (audit) vs 0 (API)",
        "  ... and 3 more (--format json lists them all)",
    ]
    assert len(summarize_cache(trace).to_json()["disagreements"]) == 16


def test_exact_token_counts_are_not_compared() -> None:
    trace = a_trace([a_pass(1, cache(read=6_000, written=300), usage(read=5_100, written=420))])
    assert summarize_cache(trace).disagreements == ()


def test_a_trace_recorded_before_the_audit_says_so() -> None:
    old = BehaviourTrace(
        session="old",
        prompts=[
            PromptTrace(
                prompt="p",
                passes=[PassTrace(turn=1, transition=None, requests=[RequestTrace("main", "f" * 64)])],
                terminal="completed",
            )
        ],
    )
    text = summarize_cache(old).render_text()
    assert text.splitlines() == [
        "cache: not audited (the trace was recorded before the cache audit)",
        "cost: unknown (no usage was recorded and there is no cache audit to estimate it from)",
    ]
    assert summarize_cache(old).hit_ratio is None


def test_the_text_summary_is_a_few_lines() -> None:
    trace = a_trace([a_pass(1, cache(written=6_000, uncached=2_000), usage(written=6_000, uncached=2_000))])
    assert summarize_cache(trace).render_text().splitlines() == [
        "cache: 0 read, 6,000 written, 2,000 uncached tokens (hit ratio 0%)",
        "cost: $0.0285 (from the reported usage)",
        "unexpected cache breaks: 0",
    ]


def test_a_compaction_between_prompts_counts_its_summary_request() -> None:
    # The user's /compact before prompt 2 asks for its summary outside any pass: the trace keeps
    # that request's audit on the compaction entry, and the summary counts and prices it.
    trace = a_trace(
        [a_pass(1, cache(written=6_000, uncached=100), usage(written=6_000, uncached=100, output=50))],
        [a_pass(1, cache(written=900, uncached=50), usage(written=900, uncached=50, output=20))],
    )
    summary_request = cache(read=0, written=0, uncached=6_200)
    trace.prompts[1].before.append(
        {"tier": "manual", "boundary": True, "requests": ["c" * 64], "cache": [summary_request.to_json()]}
    )

    summary = summarize_cache(trace)

    compact = [r for r in summary.requests if r.purpose == "compact"]
    assert [(r.where, r.source, r.cache) for r in compact] == [
        ("prompt 2 compact", CostSource.SIMULATED, summary_request)
    ]
    assert summary.uncached == 100 + 6_200 + 50
    assert compact[0].cost.usd > 0
