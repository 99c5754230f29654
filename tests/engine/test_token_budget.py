"""Token budget: which prompts set one, and when the loop keeps the model working."""

from __future__ import annotations

import pytest

from engine.token_budget import (
    BudgetDecision,
    BudgetReason,
    TokenBudgetTracker,
    parse_token_budget,
)


@pytest.mark.parametrize(
    ("prompt", "target"),
    [
        ("+500k", 500_000),
        ("+2M", 2_000_000),
        ("+1.5m", 1_500_000),
        ("+500K tokens", 500_000),
        ("  +300k refactor the parser", 300_000),
        ("refactor the parser +300k", 300_000),
        ("refactor the parser +300k.", 300_000),
        ("refactor the parser\n+1m tokens!", 1_000_000),
        ("please use 2M tokens on this", 2_000_000),
        ("Spend 300k tokens refactoring", 300_000),
        ("USE 1M TOKEN", 1_000_000),
        ("budget: 800k", 800_000),
        ("Token budget: 1.25m tokens. Go.", 1_250_000),
        ("budget:2m", 2_000_000),
    ],
)
def test_a_budget_directive_sets_the_target(prompt: str, target: int) -> None:
    assert parse_token_budget(prompt) == target


@pytest.mark.parametrize(
    "prompt",
    [
        "",
        "c++",
        "port this to c++ and add +5 points",
        "+5 points",
        "+500",  # no unit
        "500k users",
        "+500kb file",  # the unit must end the word
        "revenue grew +500k this year",  # shorthand only as the prompt's first or last word
        "x+500k",
        "use 2M rows",  # the verbose form needs the word tokens
        "spend 300k",
        "budget 800k",  # the budget form needs a colon
        "+0k",  # no tokens is no budget
    ],
)
def test_ordinary_text_sets_no_budget(prompt: str) -> None:
    assert parse_token_budget(prompt) is None


def test_below_ninety_percent_the_model_is_nudged_with_the_percentage_and_counts() -> None:
    decision = TokenBudgetTracker(500_000).record(100_000)
    assert decision == BudgetDecision(
        continue_=True,
        reason=BudgetReason.BELOW_TARGET,
        pct=20,
        tokens=100_000,
        target=500_000,
        continuations=1,
        nudge_text=(
            "Token budget: 20% used (100000 / 500000 tokens). Keep working — do not summarize or stop early; "
            "continue with the next part of the task."
        ),
    )


def test_reaching_ninety_percent_stops() -> None:
    tracker = TokenBudgetTracker(500_000)
    assert tracker.record(449_999).continue_ is True
    decision = tracker.record(450_000)
    assert (decision.continue_, decision.reason, decision.pct, decision.nudge_text) == (
        False,
        BudgetReason.REACHED_TARGET,
        90,
        "",
    )


def test_continuations_are_counted() -> None:
    tracker = TokenBudgetTracker(1_000_000)
    assert [tracker.record(tokens).continuations for tokens in (100_000, 200_000, 300_000)] == [1, 2, 3]


def test_after_three_continuations_two_small_deltas_in_a_row_stop_as_diminishing_returns() -> None:
    tracker = TokenBudgetTracker(1_000_000)
    for tokens in (100_000, 200_000, 300_000):
        assert tracker.record(tokens).continue_
    # One small delta after a big one is not yet a trend.
    assert tracker.record(300_100).continue_
    decision = tracker.record(300_200)
    assert (decision.continue_, decision.reason, decision.continuations) == (
        False,
        BudgetReason.DIMINISHING_RETURNS,
        4,
    )


def test_small_deltas_before_three_continuations_do_not_count_as_diminishing() -> None:
    tracker = TokenBudgetTracker(1_000_000)
    assert [tracker.record(tokens).continue_ for tokens in (1_000, 1_100, 1_200, 1_300)] == [True, True, True, False]


def test_the_same_sequence_gives_the_same_decisions() -> None:
    sequence = (50_000, 120_000, 120_300, 120_400, 130_000)
    first, second = TokenBudgetTracker(400_000), TokenBudgetTracker(400_000)
    assert [first.record(t) for t in sequence] == [second.record(t) for t in sequence]


def test_percentages_round_half_up() -> None:
    assert TokenBudgetTracker(1_000).record(5).pct == 1  # 0.5 %


def test_output_tokens_that_shrink_are_refused() -> None:
    tracker = TokenBudgetTracker(10_000)
    tracker.record(2_000)
    with pytest.raises(ValueError, match="only grow"):
        tracker.record(1_000)


def test_a_target_below_one_token_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1 token"):
        TokenBudgetTracker(0)
