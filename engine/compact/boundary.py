"""The two messages a compaction starts the new history with: the boundary, a
system message that marks where the old history ends, and the summary, a user message that
carries what the model wrote about the old history."""

from __future__ import annotations

import re
from enum import StrEnum

from engine.deps import QueryDeps
from engine.messages import SystemMessage, SystemSubtype, UserMessage

__all__ = [
    "COMPACT_BOUNDARY_CONTENT",
    "SUMMARY_PREAMBLE",
    "CompactTrigger",
    "compact_boundary",
    "format_summary",
    "summary_message",
]

COMPACT_BOUNDARY_CONTENT = "Conversation compacted"
SUMMARY_PREAMBLE = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The conversation is summarized below:\n"
)

_ANALYSIS = re.compile(r"<analysis>.*?</analysis>", re.DOTALL)
_SUMMARY = re.compile(r"<summary>(.*?)</summary>", re.DOTALL)
_BLANK_LINES = re.compile(r"\n{3,}")


class CompactTrigger(StrEnum):
    """Who asked for the compaction: the engine (a threshold, a too-long prompt) or the user."""

    AUTO = "auto"
    MANUAL = "manual"


def compact_boundary(
    deps: QueryDeps, *, trigger: CompactTrigger, pre_tokens: int, logical_parent_uuid: str | None
) -> SystemMessage:
    """The boundary: its chain starts fresh (no parent); ``logical_parent_uuid`` names the last
    message before the compaction, so the transcript can still be followed across it."""
    return SystemMessage(
        uuid=deps.uuid(),
        timestamp=deps.now(),
        parent_uuid=None,
        subtype=SystemSubtype.COMPACT_BOUNDARY,
        content=COMPACT_BOUNDARY_CONTENT,
        compact_metadata={"trigger": CompactTrigger(trigger).value, "pre_tokens": pre_tokens},
        logical_parent_uuid=logical_parent_uuid,
    )


def format_summary(summary_text: str) -> str:
    """The model's answer as the new history shows it: the ``<analysis>`` scratchpad dropped,
    ``<summary>`` tags turned into a ``Summary:`` heading."""
    text = _ANALYSIS.sub("", summary_text)
    text = _SUMMARY.sub(lambda match: f"Summary:\n{match.group(1).strip()}", text)
    return _BLANK_LINES.sub("\n\n", text).strip()


def summary_message(deps: QueryDeps, summary_text: str) -> UserMessage:
    """The user message that opens the compacted history (marked as a compact summary)."""
    return UserMessage.create(
        deps,
        SUMMARY_PREAMBLE + format_summary(summary_text),
        is_meta=False,
        is_compact_summary=True,
    )
