"""Tool results in one order: a client that runs tools concurrently may send a turn's results in
the order the tools finished, which changes from run to run. The API pairs a result with its call
by ``tool_use_id``, not by position, so a request whose results come in another order asks the
same thing; a cassette player falls back to this order-free reading when a request misses."""

from __future__ import annotations

from typing import Any

__all__ = ["tool_results_by_id"]


def tool_results_by_id(body: Any) -> Any:
    """``body`` with each message's ``tool_result`` blocks in ``tool_use_id`` order, every other
    block where it was; ``body`` itself when no message has two results."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list):
        return body
    reordered = [_reordered(message) for message in messages]
    if all(new is old for new, old in zip(reordered, messages, strict=True)):
        return body
    return {**body, "messages": reordered}


def _reordered(message: Any) -> Any:
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return message
    slots = [i for i, block in enumerate(content) if isinstance(block, dict) and block.get("type") == "tool_result"]
    if len(slots) < 2:
        return message
    results = sorted((content[i] for i in slots), key=lambda block: str(block.get("tool_use_id", "")))
    if [content[i] for i in slots] == results:
        return message
    blocks = list(content)
    for slot, block in zip(slots, results, strict=True):
        blocks[slot] = block
    return {**message, "content": blocks}
