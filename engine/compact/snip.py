"""Snip: drop whole old API rounds when the context is over a threshold.

The cheapest way to free room that still sends a valid request: rounds (see
``engine.compact.rounds``) are removed oldest first, whole, so no tool_use loses its
tool_result. The messages before the first response (the original prompt) and the last
``keep_rounds`` rounds always stay. ``tokens_freed`` is the estimate of what was dropped; the
later checks subtract it, since the last response's usage still counts the dropped rounds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.compact.rounds import split_rounds
from engine.messages import Message
from engine.tokens import estimate_message_tokens, token_count_with_estimation

__all__ = ["SnipResult", "snip_old_rounds"]


@dataclass(frozen=True)
class SnipResult:
    """The remaining messages, the uuids dropped (in order) and the tokens that freed."""

    messages: list[Message]
    removed_uuids: list[str]
    tokens_freed: int


def snip_old_rounds(messages: Sequence[Message], *, threshold_tokens: int | None, keep_rounds: int) -> SnipResult:
    """Drop old rounds, oldest first, until the count is at most ``threshold_tokens`` or only
    the last ``keep_rounds`` rounds are left. ``threshold_tokens=None`` turns snip off."""
    if keep_rounds < 1:
        raise ValueError(f"keep_rounds must be at least 1 (the round the model is answering), not {keep_rounds}.")
    unchanged = SnipResult(messages=list(messages), removed_uuids=[], tokens_freed=0)
    if threshold_tokens is None:
        return unchanged
    count = token_count_with_estimation(messages)
    if count <= threshold_tokens:
        return unchanged
    split = split_rounds(messages)
    droppable = split.rounds[: max(len(split.rounds) - keep_rounds, 0)]
    dropped_rounds = 0
    freed = 0
    while dropped_rounds < len(droppable) and count - freed > threshold_tokens:
        freed += estimate_message_tokens(droppable[dropped_rounds])
        dropped_rounds += 1
    if dropped_rounds == 0:
        return unchanged
    dropped = [m for round_ in split.rounds[:dropped_rounds] for m in round_]
    remaining = [m for round_ in split.rounds[dropped_rounds:] for m in round_]
    return SnipResult(
        messages=[*split.head, *remaining],
        removed_uuids=[m.uuid for m in dropped],
        tokens_freed=freed,
    )
