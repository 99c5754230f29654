"""Recovery compaction: what the loop does when a request came back too large.

``reactive_compact`` answers a prompt-too-long error by compacting right away (trigger
``auto``), once per turn, unless the conversation is a single exchange: with no response before
the pending prompt there is nothing to summarize, and a summary request would carry the same
too-long prompt. ``strip_media`` answers a media-too-large error: every image and document is
replaced by a text block saying it was removed, so the retry can go through.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from engine.compact._content import replace_media
from engine.compact.autocompact import CompactionError, CompactionResult, ConversationRequest, compact_conversation
from engine.compact.boundary import CompactTrigger
from engine.compact.rounds import split_rounds
from engine.deps import QueryDeps
from engine.messages import Message
from engine.settings import EngineSettings

__all__ = [
    "SINGLE_EXCHANGE_TEXT",
    "MediaKind",
    "MediaStripResult",
    "is_single_exchange",
    "reactive_compact",
    "removed_media_text",
    "strip_media",
]

SINGLE_EXCHANGE_TEXT = "a single exchange cannot be compacted: no response before the prompt to summarize"


class MediaKind(StrEnum):
    """The content blocks that carry media."""

    IMAGE = "image"
    DOCUMENT = "document"


def removed_media_text(kind: MediaKind | str) -> str:
    """The text that stands where a media block was removed."""
    return f"[{MediaKind(kind).value} removed: too large for the API]"


@dataclass(frozen=True)
class MediaStripResult:
    """The messages without media, and how many blocks were replaced."""

    messages: list[Message]
    stripped: int


def strip_media(messages: Sequence[Message]) -> MediaStripResult:
    """Replace every image and document block (inside tool results too) with a text block
    such as ``[image removed: too large for the API]``."""
    out, stripped = replace_media(messages, removed_media_text)
    return MediaStripResult(messages=out, stripped=stripped)


def is_single_exchange(messages: Sequence[Message]) -> bool:
    """True when no model response precedes the pending prompt (no API round): compacting
    cannot free anything, since the summary request must itself carry that prompt."""
    return not split_rounds(messages).rounds


async def reactive_compact(
    messages: Sequence[Message],
    *,
    deps: QueryDeps,
    settings: EngineSettings,
    model: str,
    conversation_request: ConversationRequest | None = None,
) -> CompactionResult:
    """Compact now because the request was too long (``compact_conversation``, trigger
    ``auto``, keeping ``settings.compact_keep_recent_messages``). Raises ``CompactionError``,
    without a summary request for a single exchange."""
    if is_single_exchange(messages):
        raise CompactionError(f"The conversation was not compacted: {SINGLE_EXCHANGE_TEXT}.")
    return await compact_conversation(
        messages,
        deps=deps,
        settings=settings,
        model=model,
        trigger=CompactTrigger.AUTO,
        keep_recent_messages=settings.compact_keep_recent_messages,
        conversation_request=conversation_request,
    )
