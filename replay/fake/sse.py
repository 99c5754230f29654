"""Render scripted turns as the Messages API renders them: SSE event sequences and Message JSON.

Rendering is a pure function of its inputs, so the same turn always gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any

from replay.fake.blocks import (
    Block,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Turn,
    Usage,
    block_deltas,
    compact_json,
)
from replay.prompt_cache.cache import CacheUsage

__all__ = [
    "Event",
    "SseEvent",
    "encode_sse",
    "error_body",
    "render_message_events",
    "render_message_json",
    "resolve_usage",
]

Event = tuple[str, dict[str, Any]]


class SseEvent(StrEnum):
    """The `event:` names of a Messages API stream."""

    MESSAGE_START = "message_start"
    CONTENT_BLOCK_START = "content_block_start"
    PING = "ping"
    CONTENT_BLOCK_DELTA = "content_block_delta"
    CONTENT_BLOCK_STOP = "content_block_stop"
    MESSAGE_DELTA = "message_delta"
    MESSAGE_STOP = "message_stop"
    ERROR = "error"


def encode_sse(event: str, data: Mapping[str, Any]) -> bytes:
    """One SSE frame; the `event:` line is always written because the SDK drops events without it."""
    return f"event: {event}\ndata: {compact_json(data, ascii_only=False)}\n\n".encode()


def error_body(error_type: str, message: str) -> dict[str, Any]:
    """The API's error object: `{"type": "error", "error": {"type": ..., "message": ...}}`."""
    return {"type": "error", "error": {"type": str(error_type), "message": message}}


def render_message_events(
    turn: Turn, *, message_id: str, model: str, input_tokens: int, cached: CacheUsage | None = None
) -> list[Event]:
    """The full event sequence of a streamed turn; `input_tokens` (or `cached`, the prompt cache's
    split of them) is used when the turn scripts no usage."""
    usage = resolve_usage(turn, input_tokens=input_tokens, cached=cached)
    start_usage = _usage_json(usage) | {"output_tokens": 1}
    message = _message_json(turn, message_id=message_id, model=model, content=[], usage=start_usage)
    message["stop_reason"] = None
    events: list[Event] = [(SseEvent.MESSAGE_START, {"type": "message_start", "message": message})]
    for index, block in enumerate(turn.content):
        events.append(
            (
                SseEvent.CONTENT_BLOCK_START,
                {"type": "content_block_start", "index": index, "content_block": _block_start_json(block)},
            )
        )
        if index == 0:
            events.append(_ping())
        for delta in block_deltas(block):
            events.append(
                (SseEvent.CONTENT_BLOCK_DELTA, {"type": "content_block_delta", "index": index, "delta": delta})
            )
        events.append((SseEvent.CONTENT_BLOCK_STOP, {"type": "content_block_stop", "index": index}))
    if not turn.content:
        # The API pings once per stream; with no blocks it comes right after message_start.
        events.append(_ping())
    events.append(
        (
            SseEvent.MESSAGE_DELTA,
            {
                "type": "message_delta",
                "delta": {"stop_reason": turn.effective_stop_reason.value, "stop_sequence": None},
                "usage": {"output_tokens": usage.output_tokens},
            },
        )
    )
    events.append((SseEvent.MESSAGE_STOP, {"type": "message_stop"}))
    return events


def render_message_json(
    turn: Turn, *, message_id: str, model: str, input_tokens: int, cached: CacheUsage | None = None
) -> dict[str, Any]:
    """The complete Message object of a non-streamed turn."""
    usage = resolve_usage(turn, input_tokens=input_tokens, cached=cached)
    content = [_block_json(block) for block in turn.content]
    return _message_json(turn, message_id=message_id, model=model, content=content, usage=_usage_json(usage))


def resolve_usage(turn: Turn, *, input_tokens: int, cached: CacheUsage | None = None) -> Usage:
    """The turn's scripted usage, else an estimate of about four characters per token: all of
    ``input_tokens`` uncached, or split as ``cached`` says when the prompt cache read or wrote."""
    if turn.usage is not None:
        return turn.usage
    output_tokens = max(1, _content_chars(turn.content) // 4)
    if cached is None or not (cached.cache_creation_input_tokens or cached.cache_read_input_tokens):
        return Usage(input_tokens=max(1, input_tokens), output_tokens=output_tokens)
    return Usage(
        input_tokens=cached.input_tokens,
        output_tokens=output_tokens,
        cache_creation_input_tokens=cached.cache_creation_input_tokens,
        cache_read_input_tokens=cached.cache_read_input_tokens,
    )


def _message_json(
    turn: Turn, *, message_id: str, model: str, content: list[dict[str, Any]], usage: dict[str, int]
) -> dict[str, Any]:
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": turn.effective_stop_reason.value,
        "stop_sequence": None,
        "usage": usage,
    }


def _usage_json(usage: Usage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "output_tokens": usage.output_tokens,
    }


def _block_json(block: Block) -> dict[str, Any]:
    match block:
        case TextBlock(text=text):
            return {"type": "text", "text": text}
        case ToolUseBlock(name=name, input=tool_input):
            return {"type": "tool_use", "id": _tool_use_id(block), "name": name, "input": dict(tool_input)}
        case ThinkingBlock(thinking=thinking, signature=signature):
            return {"type": "thinking", "thinking": thinking, "signature": signature}
        case RedactedThinkingBlock(data=data):
            return {"type": "redacted_thinking", "data": data}
    raise TypeError(f"not a content block: {block!r}")


def _block_start_json(block: Block) -> dict[str, Any]:
    match block:
        case TextBlock():
            return {"type": "text", "text": ""}
        case ToolUseBlock(name=name):
            return {"type": "tool_use", "id": _tool_use_id(block), "name": name, "input": {}}
        case ThinkingBlock():
            return {"type": "thinking", "thinking": "", "signature": ""}
        case RedactedThinkingBlock(data=data):
            # Redacted thinking is opaque: it arrives whole in its start event, with no deltas.
            return {"type": "redacted_thinking", "data": data}
    raise TypeError(f"not a content block: {block!r}")


def _tool_use_id(block: ToolUseBlock) -> str:
    if block.id is None:
        raise ValueError(f"tool_use block {block.name!r} has no id; the fake model assigns ids before rendering.")
    return block.id


def _content_chars(content: Sequence[Block]) -> int:
    total = 0
    for block in content:
        match block:
            case TextBlock(text=text):
                total += len(text)
            case ToolUseBlock(name=name, input=tool_input):
                total += len(name) + len(compact_json(tool_input, ascii_only=True))
            case ThinkingBlock(thinking=thinking):
                total += len(thinking)
            case RedactedThinkingBlock(data=data):
                total += len(data)
    return total


def _ping() -> Event:
    return (SseEvent.PING, {"type": "ping"})
