"""``normalize_messages_for_api``: the loop's envelopes → the ``messages`` the API accepts.

The API's iron rule is that every ``tool_use`` is answered by a ``tool_result`` with its id in
the very next user message. Everything here exists to send a valid request whatever the history
went through (aborts, partial streams, dropped results).

Thinking rules: thinking blocks need thinking enabled, so without it they are
removed; the last turn, when it is the assistant's, never ends with one; an assistant turn with
nothing but thinking is dropped; otherwise a thinking block is sent exactly as produced
(signature included) and stays with its trajectory, e.g. before the tool_use it led to.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from engine.messages import (
    MISSING_TOOL_RESULT,
    AssistantMessage,
    AttachmentMessage,
    Message,
    UserMessage,
    tool_result_block,
)

__all__ = ["AttachmentRenderer", "normalize_messages_for_api"]

JsonDict = dict[str, Any]
# Renders an attachment's payload as the text the model reads, or None (or "") to leave it out.
AttachmentRenderer = Callable[[JsonDict], str | None]
_THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})


def normalize_messages_for_api(
    messages: Sequence[Message],
    *,
    thinking_enabled: bool = True,
    render_attachment: AttachmentRenderer | None = None,
) -> list[JsonDict]:
    """The API view of ``messages``: only user and assistant turns, one response per assistant
    message, consecutive user content merged, tool_use/tool_result pairing repaired, and
    thinking-only, whitespace-only and trailing-thinking content removed (all thinking when
    ``thinking_enabled`` is false). With ``render_attachment``, each attachment it renders to
    non-blank text becomes a user text block merged with the user content around it; without
    it, attachments are left out."""
    api: list[JsonDict] = []
    for role, content, response_id in _turns(messages, thinking_enabled, render_attachment):
        if api and api[-1]["role"] == role and (role == "user" or _same_response(api[-1], response_id)):
            api[-1]["content"].extend(content)
        else:
            entry: JsonDict = {"role": role, "content": list(content)}
            if role == "assistant":
                entry["_id"] = response_id
            api.append(entry)
    api = [m for m in api if m["role"] == "user" or _has_substance(m["content"])]
    api = _repair_pairing(_merge_adjacent(api))
    # After the repair, which may drop a last user turn of orphaned results: the assistant
    # turn before it becomes the last, and must not end with thinking either.
    if api and api[-1]["role"] == "assistant":
        _strip_trailing_thinking(api[-1])
    for entry in api:
        entry.pop("_id", None)
        if entry["role"] == "user":
            entry["content"] = _tool_results_first(entry["content"])
    return api


def _turns(
    messages: Iterable[Message], thinking_enabled: bool, render_attachment: AttachmentRenderer | None
) -> Iterable[tuple[str, list[JsonDict], str | None]]:
    """(role, content blocks, response id) of every message the API sees, in order."""
    for message in messages:
        if isinstance(message, UserMessage):
            yield "user", _as_blocks(message.message["content"]), None
        elif isinstance(message, AssistantMessage) and not message.is_api_error_message:
            content = _as_blocks(message.message["content"])
            if not thinking_enabled:
                content = [b for b in content if b.get("type") not in _THINKING_TYPES]
            yield "assistant", content, message.message.get("id")
        elif isinstance(message, AttachmentMessage) and render_attachment is not None:
            text = render_attachment(message.attachment)
            # The API refuses an empty or blank text block: such a rendering says nothing anyway.
            if text is not None and text.strip():
                yield "user", [{"type": "text", "text": text}], None


def _as_blocks(content: str | list[JsonDict]) -> list[JsonDict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content)


def _same_response(entry: JsonDict, response_id: str | None) -> bool:
    # The stream yields one message per content block; blocks of one response share its id.
    return entry.get("_id") is not None and entry["_id"] == response_id


def _has_substance(blocks: list[JsonDict]) -> bool:
    """False for thinking-only or whitespace-only assistant content."""
    for block in blocks:
        kind = block.get("type")
        if kind in _THINKING_TYPES:
            continue
        if kind == "text" and not block.get("text", "").strip():
            continue
        return True
    return False


def _merge_adjacent(api: list[JsonDict]) -> list[JsonDict]:
    merged: list[JsonDict] = []
    for entry in api:
        if merged and merged[-1]["role"] == entry["role"]:
            merged[-1]["content"].extend(entry["content"])
        else:
            merged.append(entry)
    return merged


def _strip_trailing_thinking(entry: JsonDict) -> None:
    content = entry["content"]
    while content and content[-1].get("type") in _THINKING_TYPES:
        content.pop()


def _repair_pairing(api: list[JsonDict]) -> list[JsonDict]:
    """Answer every unanswered tool_use with an error result; drop results with no tool_use."""
    repaired: list[JsonDict] = []
    for index, entry in enumerate(api):
        if entry["role"] == "user":
            previous = next((m for m in reversed(repaired) if m["role"] == "assistant"), None)
            expected = _tool_use_ids(previous) if previous and previous["role"] == "assistant" else set()
            entry["content"] = [
                b for b in entry["content"] if b.get("type") != "tool_result" or b.get("tool_use_id") in expected
            ]
            if not entry["content"]:
                continue
            if repaired and repaired[-1]["role"] == "user":
                repaired[-1]["content"].extend(entry["content"])
                continue
            repaired.append(entry)
            continue
        repaired.append(entry)
        ids = _tool_use_ids(entry)
        if not ids:
            continue
        following = api[index + 1] if index + 1 < len(api) else None
        answered = _tool_result_ids(following) if following and following["role"] == "user" else set()
        missing = [
            tool_result_block(block["id"], MISSING_TOOL_RESULT, is_error=True)
            for block in entry["content"]
            if block.get("type") == "tool_use" and block["id"] not in answered
        ]
        if missing:
            repaired.append({"role": "user", "content": missing})
    return _merge_adjacent(repaired)


def _tool_use_ids(entry: JsonDict) -> set[str]:
    return {b["id"] for b in entry["content"] if b.get("type") == "tool_use"}


def _tool_result_ids(entry: JsonDict) -> set[str]:
    return {b["tool_use_id"] for b in entry["content"] if b.get("type") == "tool_result"}


def _tool_results_first(blocks: list[JsonDict]) -> list[JsonDict]:
    # The API wants a user message's tool_result blocks before any other content.
    results = [b for b in blocks if b.get("type") == "tool_result"]
    if not results or len(results) == len(blocks):
        return blocks
    return results + [b for b in blocks if b.get("type") != "tool_result"]
