"""Small helpers the context-shaping passes share: reading content blocks, and rewriting a
message's content as a copy (the input message and its dicts are never touched)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from engine.messages import AssistantMessage, Message, UserMessage, tool_use_blocks

JsonDict = dict[str, Any]
_M = TypeVar("_M", UserMessage, AssistantMessage)
MEDIA_BLOCK_TYPES = frozenset({"image", "document"})


def blocks_of(content: object) -> list[JsonDict]:
    """``content`` as a list of blocks (a string is one text block); the list is new, the
    blocks are the originals (read them, copy before changing)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [block for block in content if isinstance(block, dict)]
    return []


def with_content(message: _M, content: str | list[JsonDict]) -> _M:
    """A copy of ``message`` (same uuid) whose API content is ``content``."""
    return dataclasses.replace(message, message={**message.message, "content": content})


def tool_result_text(block: JsonDict) -> str:
    """The text a tool_result carries (its text blocks joined when its content is a list)."""
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def tool_names_by_id(messages: Iterable[Message]) -> dict[str, str]:
    """The tool name of every tool_use in ``messages``, by tool_use id."""
    return {block["id"]: block.get("name", "") for message in messages for block in tool_use_blocks(message)}


def replace_media(messages: Iterable[Message], placeholder: Callable[[str], str]) -> tuple[list[Message], int]:
    """``messages`` with every image and document block in user content (tool results'
    content included) replaced by a text block ``placeholder(block_type)``; and how many."""
    out: list[Message] = []
    replaced = 0
    for message in messages:
        if isinstance(message, UserMessage) and isinstance(message.content, list):
            content, count = _replace_media_blocks(message.content, placeholder)
            if count:
                message = with_content(message, content)
                replaced += count
        out.append(message)
    return out, replaced


def _replace_media_blocks(blocks: list[JsonDict], placeholder: Callable[[str], str]) -> tuple[list[JsonDict], int]:
    out: list[JsonDict] = []
    replaced = 0
    for block in blocks:
        kind = block.get("type")
        if kind in MEDIA_BLOCK_TYPES:
            block = {"type": "text", "text": placeholder(kind)}
            replaced += 1
        elif kind == "tool_result" and isinstance(block.get("content"), list):
            inner, count = _replace_media_blocks(block["content"], placeholder)
            if count:
                block = {**block, "content": inner}
                replaced += count
        out.append(block)
    return out, replaced
