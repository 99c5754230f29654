"""What a model call does when a streamed answer breaks mid-way (``mid_stream_recovery``).

``RETRY`` is the design's streaming fallback and retry rules, unchanged: whatever the broken
attempt yielded is tombstoned and the request is sent again. ``RESUME`` is what the Claude Code
CLI does instead (docs/loop.md, "Mid-stream recovery"): text blocks that finished before the
break are kept as the answer so far, and the model is asked, in a meta user message, to go on
from where it was cut off; with no finished text, the same request is sent again without
streaming. Both happen inside the model call, like a retry: they are not loop transitions.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Final

from engine.messages import AssistantMessage

__all__ = ["MID_STREAM_RESUME_TEXT", "MidStreamRecovery", "kept_partial_answer"]


class MidStreamRecovery(StrEnum):
    """The two ways to recover from a stream that breaks after the response began."""

    # Tombstone the partial answer and send the request again (the design's rule; the default).
    RETRY = "retry"
    # Keep the finished text and ask the model to continue it, or resend without streaming.
    RESUME = "resume"


# The project's own words. The model sees its cut answer just above, so the message says only
# what happened and what to do next.
MID_STREAM_RESUME_TEXT: Final = (
    "Your previous reply broke off before it was complete; the text above is all that arrived. "
    "Carry on from its last word, without repeating any of it and without remarking on the break. "
    "If nothing useful arrived, give your full answer now."
)


def kept_partial_answer(messages: Sequence[AssistantMessage]) -> list[AssistantMessage]:
    """The messages of a broken attempt that a resume keeps: its finished text blocks.

    A finished tool_use is not kept (its call never got the response's verdict, and the CLI
    drops it too); neither is a thinking block, which may not end an assistant message. A block
    still streaming never became a message at all."""
    return [m for m in messages if m.content and all(_is_kept(block) for block in m.content)]


def _is_kept(block: dict[str, object]) -> bool:
    # The API refuses an empty text block, so a block that finished with no text is dropped too.
    text = block.get("text")
    return block.get("type") == "text" and isinstance(text, str) and bool(text.strip())
