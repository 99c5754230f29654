"""Token budget: a prompt can ask the model to spend a number of output tokens,
and the loop keeps it working until it has spent most of them.

What counts as a budget in a prompt, chosen so ordinary text does not set one by accident:

- ``+500k``, ``+2M``, ``+1.5m`` (optionally followed by ``tokens``), but only as the first or
  the last word of the prompt, where a user types a directive: "+500k refactor the parser" and
  "refactor the parser +500k." set a budget, "revenue grew +500k this year" does not;
- ``use 2M tokens``, ``spend 300k tokens`` anywhere: the verb and the word ``tokens`` are both
  required, so "use 2M rows" sets nothing;
- ``budget: 800k`` anywhere (the colon is required; ``tokens`` may follow).

The number needs a ``k`` (1,000) or ``m`` (1,000,000) suffix right after it, ending at a word
boundary, case-insensitive: "c++", "+5 points", "500k users" and "+500kb" set nothing. A
budget that rounds to zero tokens is no budget.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from enum import StrEnum

__all__ = [
    "COMPLETION_THRESHOLD_PCT",
    "DIMINISHING_AFTER_CONTINUATIONS",
    "DIMINISHING_DELTA_TOKENS",
    "BudgetDecision",
    "BudgetReason",
    "TokenBudgetTracker",
    "budget_nudge_text",
    "parse_token_budget",
]

COMPLETION_THRESHOLD_PCT = 90
DIMINISHING_AFTER_CONTINUATIONS = 3
DIMINISHING_DELTA_TOKENS = 500

_AMOUNT = r"(?P<number>\d+(?:\.\d+)?)(?P<unit>[km])\b"
_TOKENS = r"(?:\s+tokens?\b)?"
_PATTERNS = (
    re.compile(rf"^\s*\+{_AMOUNT}{_TOKENS}", re.IGNORECASE),
    re.compile(rf"(?:^|\s)\+{_AMOUNT}{_TOKENS}[\s.!?]*$", re.IGNORECASE),
    re.compile(rf"\b(?:use|spend)\s+{_AMOUNT}\s+tokens?\b", re.IGNORECASE),
    re.compile(rf"\bbudget\s*:\s*{_AMOUNT}{_TOKENS}", re.IGNORECASE),
)
_UNITS = {"k": 1_000, "m": 1_000_000}


def parse_token_budget(prompt: str) -> int | None:
    """The output-token target a prompt asks for, or None when it asks for none."""
    for pattern in _PATTERNS:
        match = pattern.search(prompt)
        if match is None:
            continue
        amount = Decimal(match["number"]) * _UNITS[match["unit"].lower()]
        tokens = int(amount.to_integral_value(rounding=ROUND_HALF_UP))
        return tokens if tokens > 0 else None
    return None


class BudgetReason(StrEnum):
    BELOW_TARGET = "below_target"
    REACHED_TARGET = "reached_target"
    DIMINISHING_RETURNS = "diminishing_returns"


@dataclass(frozen=True, kw_only=True)
class BudgetDecision:
    """Whether the loop continues (``token_budget_continuation``) and, if so, the meta message
    that tells the model why. ``continuations`` counts the continuations so far, this one
    included."""

    continue_: bool
    reason: BudgetReason
    pct: int
    tokens: int
    target: int
    continuations: int
    nudge_text: str = ""


def budget_nudge_text(pct: int, tokens: int, target: int) -> str:
    """The meta user message that asks the model to keep spending its budget."""
    return (
        f"Token budget: {pct}% used ({tokens} / {target} tokens). Keep working — do not summarize "
        "or stop early; continue with the next part of the task."
    )


class TokenBudgetTracker:
    """Decides, each time the model stops without tool use, whether one user turn has spent
    its budget. Pure bookkeeping: no clock, no I/O."""

    def __init__(self, target: int) -> None:
        if target < 1:
            raise ValueError(f"A token budget must be at least 1 token, not {target}.")
        self.target = target
        self.continuations = 0
        self._last_tokens = 0
        self._last_delta = 0

    def record(self, turn_output_tokens: int) -> BudgetDecision:
        """Take the output tokens of the user's turn so far (cumulative) and decide: continue
        while below 90 % of the target, unless the last two continuations each added fewer
        than 500 tokens after at least three of them (diminishing returns)."""
        if turn_output_tokens < self._last_tokens:
            raise ValueError(f"Output tokens of a turn only grow: got {turn_output_tokens} after {self._last_tokens}.")
        tokens, target = turn_output_tokens, self.target
        pct = (200 * tokens + target) // (2 * target)  # tokens/target as a percentage, rounded half up
        delta = tokens - self._last_tokens
        diminishing = (
            self.continuations >= DIMINISHING_AFTER_CONTINUATIONS
            and delta < DIMINISHING_DELTA_TOKENS
            and self._last_delta < DIMINISHING_DELTA_TOKENS
        )
        below = 100 * tokens < COMPLETION_THRESHOLD_PCT * target
        if below and not diminishing:
            self.continuations += 1
            self._last_tokens, self._last_delta = tokens, delta
            return BudgetDecision(
                continue_=True,
                reason=BudgetReason.BELOW_TARGET,
                pct=pct,
                tokens=tokens,
                target=target,
                continuations=self.continuations,
                nudge_text=budget_nudge_text(pct, tokens, target),
            )
        return BudgetDecision(
            continue_=False,
            reason=BudgetReason.REACHED_TARGET if not below else BudgetReason.DIMINISHING_RETURNS,
            pct=pct,
            tokens=tokens,
            target=target,
            continuations=self.continuations,
        )
