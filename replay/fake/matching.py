"""Which scripted turn answers a Messages API request: a request's purpose and last user message,
read from its body alone, and whether a turn's `Match` accepts it (docs/scenarios.md, "How
turns are played")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from replay.fake.blocks import Match, RequestPurpose

__all__ = ["accepts", "describe_turns", "last_user_text", "purpose_of", "unanswered_message"]

# A summary request's instruction says both, in the engine's words (engine/compact) and in
# Claude Code's, whether it summarizes the whole conversation or its recent part.
_COMPACT_MARKERS: Final = ("detailed summary", "conversation")


def purpose_of(request: Mapping[str, Any]) -> RequestPurpose:
    """`RequestPurpose.COMPACT` when a text of the last user message asks for a detailed summary of
    the conversation (tools or not: Claude Code keeps them), else `RequestPurpose.SIDE` when the request
    offers no tools, else `RequestPurpose.MAIN`."""
    if any(all(marker in text.lower() for marker in _COMPACT_MARKERS) for text in _last_user_texts(request)):
        return RequestPurpose.COMPACT
    return RequestPurpose.MAIN if _has_tools(request) else RequestPurpose.SIDE


def accepts(match: Match, request: Mapping[str, Any]) -> bool:
    """Whether every predicate of ``match`` holds for ``request``."""
    if match.purpose is not None and purpose_of(request) is not match.purpose:
        return False
    if match.last_user_contains is not None and match.last_user_contains not in last_user_text(request):
        return False
    if match.has_tools is not None and _has_tools(request) is not match.has_tools:
        return False
    model = request.get("model")
    if match.model is not None and not (isinstance(model, str) and model.startswith(match.model)):
        return False
    return match.stream is None or (request.get("stream") is True) is match.stream


def last_user_text(request: Mapping[str, Any], *, limit: int | None = None) -> str:
    """The text of the request's last user message (tool results as ``[tool_result ID] text``),
    cut to ``limit`` characters with an ellipsis; a placeholder in parentheses when there is none."""
    message = _last_user_message(request)
    if message is None:
        return "(no messages)" if not isinstance(request.get("messages"), list) else "(no user message)"
    text = _content_text(message.get("content"))
    if limit is not None and len(text) > limit:
        return text[:limit] + "…"
    return text


def describe_turns(turns: tuple[tuple[int, str], ...]) -> str:
    """(number, match) pairs as ``turn 2 (match: purpose: compact) and turn 5 (match: ...)``."""
    named = [f"turn {number} (match: {match})" for number, match in turns]
    return named[0] if len(named) == 1 else ", ".join(named[:-1]) + f" and {named[-1]}"


def unanswered_message(
    script: str, *, count: int, request: str, last_user_message: str, turns_left: tuple[tuple[int, str], ...]
) -> str:
    """The exhausted script's sentence: ``script`` has ``count`` turns and none for ``request``
    (with the matched turns left, when there are any)."""
    has = f"{script} has {count} turn{'' if count == 1 else 's'}"
    last = f"last user message: {last_user_message!r}"
    if turns_left:
        return (
            f"{has}, but no turn left accepts {request} ({last}): the turns left are "
            f"{describe_turns(turns_left)}; add a turn for it or change a match."
        )
    return f"{has}, but {request} had no scripted turn ({last}); add a turn to the scenario for it."


def _has_tools(request: Mapping[str, Any]) -> bool:
    tools = request.get("tools")
    return isinstance(tools, list) and len(tools) > 0


def _last_user_message(request: Mapping[str, Any]) -> dict[str, Any] | None:
    messages = request.get("messages")
    if not isinstance(messages, list):
        return None
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return message
    return None


def _last_user_texts(request: Mapping[str, Any]) -> list[str]:
    """The last user message's text blocks (its content when that is a string)."""
    message = _last_user_message(request)
    content = None if message is None else message.get("content")
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        block["text"]
        for block in content
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
    ]


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "tool_result":
            parts.append(f"[tool_result {block.get('tool_use_id')}] {_content_text(block.get('content'))}".rstrip())
        else:
            parts.append(f"[{block.get('type')}]")
    return " ".join(parts)
