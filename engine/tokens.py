"""Token accounting for context shaping, without a tokenizer.

The three counts, from cheapest to most faithful:

- ``rough_token_count(text)``: ``ceil(len(text) / 4)``, the classic estimator (about four
  characters a token for English and code). Any non-empty text counts at least 1.
- ``estimate_message_tokens(messages)``: the rough count of everything the API would see —
  text, a tool_use's name plus its JSON input, tool_result content, thinking (and redacted
  thinking's data) — with a flat ``MEDIA_BLOCK_TOKENS`` (2,000) for each image or document.
  Envelope fields, and messages that never reach the API (system, attachment, progress,
  tombstone, synthetic API-error messages), count nothing.
- ``token_count_with_estimation(messages)``: the API's own count where it gave one. The usage
  of the last response with real usage — ``input_tokens + cache_creation_input_tokens +
  cache_read_input_tokens + output_tokens``, i.e. what the context held right after that
  response — plus the estimate of every message after it. With no usage anywhere it is the
  estimate of all.

The loop yields one assistant message per content block, all sharing the response's
``message["id"]``; the last one carries the final usage, and that usage already covers every
block of the response. So the count is anchored at the response's *first* block: messages
interleaved between its blocks (tool results of streamed tools) are estimated, the response's
own blocks are not counted twice. API-error messages carry zero usage and are skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from engine.messages import AssistantMessage, Message, UserMessage

__all__ = [
    "MEDIA_BLOCK_TOKENS",
    "estimate_block_tokens",
    "estimate_message_tokens",
    "rough_token_count",
    "token_count_with_estimation",
    "usage_token_total",
]

JsonDict = dict[str, Any]

# An image or document costs roughly this much whatever its size (the API scales images down).
MEDIA_BLOCK_TOKENS = 2_000
_MEDIA_TYPES = frozenset({"image", "document"})
_USAGE_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")


def rough_token_count(text: str) -> int:
    """``ceil(len(text) / 4)``: 0 for empty text, at least 1 otherwise."""
    return -(-len(text) // 4)


def estimate_block_tokens(block: JsonDict) -> int:
    """The rough count of one content block as the API sees it."""
    kind = block.get("type")
    if kind == "text":
        return rough_token_count(block.get("text", ""))
    if kind == "tool_use":
        return rough_token_count(block.get("name", "") + json.dumps(block.get("input", {}), ensure_ascii=False))
    if kind == "tool_result":
        return _content_tokens(block.get("content"))
    if kind == "thinking":
        return rough_token_count(block.get("thinking", ""))
    if kind == "redacted_thinking":
        return rough_token_count(block.get("data", ""))
    if kind in _MEDIA_TYPES:
        return MEDIA_BLOCK_TOKENS
    # A block type this module does not know: its JSON is what travels.
    return rough_token_count(json.dumps(block, ensure_ascii=False, sort_keys=True))


def estimate_message_tokens(messages: Iterable[Message]) -> int:
    """The rough count of the API-visible content of ``messages``."""
    total = 0
    for message in messages:
        if isinstance(message, UserMessage) or (
            isinstance(message, AssistantMessage) and not message.is_api_error_message
        ):
            total += _content_tokens(message.message.get("content"))
    return total


def usage_token_total(message: Message) -> int | None:
    """What the context held after the response ``message`` belongs to, from its usage; None
    when the message carries no real usage (not a response, an API error, or all zeros)."""
    if not isinstance(message, AssistantMessage) or message.is_api_error_message:
        return None
    usage = message.message.get("usage")
    if not isinstance(usage, dict):
        return None
    total = sum(value for key in _USAGE_KEYS if isinstance(value := usage.get(key), int))
    return total or None


def token_count_with_estimation(messages: Sequence[Message]) -> int:
    """The last real usage plus the estimate of what came after it (see the module docstring)."""
    for index in range(len(messages) - 1, -1, -1):
        total = usage_token_total(messages[index])
        if total is None:
            continue
        response_id = _response_id(messages[index])
        first = _first_block_of_response(messages, index, response_id)
        after = [m for m in messages[first + 1 :] if response_id is None or _response_id(m) != response_id]
        return total + estimate_message_tokens(after)
    return estimate_message_tokens(messages)


def _content_tokens(content: object) -> int:
    if isinstance(content, str):
        return rough_token_count(content)
    if isinstance(content, list):
        return sum(estimate_block_tokens(block) for block in content if isinstance(block, dict))
    return 0


def _response_id(message: Message) -> str | None:
    if isinstance(message, AssistantMessage) and not message.is_api_error_message:
        value = message.message.get("id")
        return value if isinstance(value, str) else None
    return None


def _first_block_of_response(messages: Sequence[Message], index: int, response_id: str | None) -> int:
    """Walk back over the response's earlier blocks (and anything interleaved between them),
    stopping at another response."""
    if response_id is None:
        return index
    first = index
    for earlier in range(index - 1, -1, -1):
        other = _response_id(messages[earlier])
        if other == response_id:
            first = earlier
        elif other is not None:
            break
    return first
