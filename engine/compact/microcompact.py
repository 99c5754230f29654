"""Time-based microcompact.

After a long pause the server's prompt cache has expired, so the next request pays for the
whole history anyway: that is the cheap moment to shed old tool output. When the gap since the
last response exceeds ``gap_minutes`` (of the session clock), the content of every tool result
answering a compactable tool (Read, Bash, Grep, Glob, Edit, Write) is replaced by
``CLEARED_TOOL_RESULT``, except the ``keep_recent`` most recent ones. A result already cleared
counts as cleared, never as one of the recent ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from engine.compact._content import JsonDict, blocks_of, tool_names_by_id, with_content
from engine.messages import AssistantMessage, Message, UserMessage
from engine.tokens import estimate_block_tokens

__all__ = ["CLEARED_TOOL_RESULT", "COMPACTABLE_TOOLS", "MicrocompactResult", "microcompact"]

CLEARED_TOOL_RESULT = "[Old tool result content cleared]"
COMPACTABLE_TOOLS = frozenset({"Read", "Bash", "Grep", "Glob", "Edit", "Write"})


@dataclass(frozen=True)
class MicrocompactResult:
    """The messages, the tool_use ids whose results this call cleared, and the tokens freed."""

    messages: list[Message]
    cleared_ids: list[str]
    tokens_freed: int


def microcompact(
    messages: Sequence[Message], *, now: datetime, gap_minutes: float, keep_recent: int
) -> MicrocompactResult:
    """Clear old compactable tool results when the last response is more than ``gap_minutes``
    before ``now``; otherwise return the messages unchanged."""
    if keep_recent < 0:
        raise ValueError(f"keep_recent cannot be negative, not {keep_recent}.")
    unchanged = MicrocompactResult(messages=list(messages), cleared_ids=[], tokens_freed=0)
    last = _last_response_time(messages)
    if last is None or now - last <= timedelta(minutes=gap_minutes):
        return unchanged
    names = tool_names_by_id(messages)
    live = [
        block["tool_use_id"]
        for message in messages
        if isinstance(message, UserMessage)
        for block in blocks_of(message.content)
        if _is_compactable_result(block, names) and block.get("content") != CLEARED_TOOL_RESULT
    ]
    to_clear = set(live[: len(live) - keep_recent] if keep_recent else live)
    if not to_clear:
        return unchanged
    out: list[Message] = []
    freed = 0
    for message in messages:
        if isinstance(message, UserMessage) and isinstance(message.content, list):
            new_content, message_freed = _clear(message.content, to_clear)
            if message_freed is not None:
                message = with_content(message, new_content)
                freed += message_freed
        out.append(message)
    return MicrocompactResult(messages=out, cleared_ids=[i for i in live if i in to_clear], tokens_freed=freed)


def _last_response_time(messages: Sequence[Message]) -> datetime | None:
    """When the last real response arrived (an API error wrote no cache, so it does not count)."""
    for message in reversed(messages):
        if isinstance(message, AssistantMessage) and not message.is_api_error_message:
            moment = datetime.fromisoformat(message.timestamp)
            return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return None


def _is_compactable_result(block: JsonDict, names: dict[str, str]) -> bool:
    return block.get("type") == "tool_result" and names.get(block.get("tool_use_id", "")) in COMPACTABLE_TOOLS


def _clear(content: list[JsonDict], to_clear: set[str]) -> tuple[list[JsonDict], int | None]:
    """The content with the chosen results cleared, and the tokens that freed (None: untouched)."""
    new_content: list[JsonDict] = []
    freed: int | None = None
    for block in content:
        if block.get("type") == "tool_result" and block.get("tool_use_id") in to_clear:
            cleared = {**block, "content": CLEARED_TOOL_RESULT}
            freed = (freed or 0) + estimate_block_tokens(block) - estimate_block_tokens(cleared)
            block = cleared
        new_content.append(block)
    return new_content, freed
