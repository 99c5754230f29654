"""Limits on what a tool call may carry, checked before its schema and before it runs.

A model (or a cassette) can send a tool input of any size; past these limits the call is refused
with a short error that states sizes and never echoes the input, so one huge input cannot flood
the transcript, the next request, or an error message.
"""

from __future__ import annotations

import json
from typing import Any, Final

from engine.tools.base import Tool

__all__ = [
    "MAX_PATH_BYTES",
    "MAX_TOOL_INPUT_BYTES",
    "MAX_VALIDATION_MESSAGE_CHARS",
    "brief_message",
    "input_limit_problem",
    "path_length_problem",
]

# The whole input as compact JSON, in UTF-8 bytes.
MAX_TOOL_INPUT_BYTES: Final = 2**20
# A path, in UTF-8 bytes: Linux's PATH_MAX, which no real path can exceed anyway.
MAX_PATH_BYTES: Final = 4_096
# A schema error quotes the offending value; past this it is cut.
MAX_VALIDATION_MESSAGE_CHARS: Final = 300
_CUT_MARKER: Final = "… (message cut)"


# What ``json.dumps`` with these options would build on every call.
_COMPACT_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def input_limit_problem(tool: Tool, tool_input: Any) -> str | None:
    """Why ``tool_input`` is over a limit (a sentence without the input in it), or None."""
    size = _utf8_length(_COMPACT_JSON.encode(tool_input))
    if size > MAX_TOOL_INPUT_BYTES:
        return (
            f"the input is {size:,} bytes of JSON; tool inputs are limited to "
            f"{MAX_TOOL_INPUT_BYTES:,} bytes ({MAX_TOOL_INPUT_BYTES // 2**20} MiB)."
        )
    if isinstance(tool_input, dict):
        for field in tool.path_fields:
            value = tool_input.get(field)
            if isinstance(value, str) and (problem := path_length_problem(value, name=field)) is not None:
                return problem
    return None


def path_length_problem(path: str, *, name: str) -> str | None:
    """Why ``path`` is too long to be a path (``name`` is how the sentence calls it), or None."""
    size = _utf8_length(path)
    if size > MAX_PATH_BYTES:
        return f"{name} is {size:,} bytes long; paths are limited to {MAX_PATH_BYTES:,} bytes."
    return None


def brief_message(message: str) -> str:
    """``message`` cut to ``MAX_VALIDATION_MESSAGE_CHARS`` with a marker, for a schema error that
    quotes a long value."""
    if len(message) <= MAX_VALIDATION_MESSAGE_CHARS:
        return message
    return message[:MAX_VALIDATION_MESSAGE_CHARS] + _CUT_MARKER


def _utf8_length(text: str) -> int:
    # A JSON string may hold a lone surrogate; it counts as the three bytes it would take.
    return len(text.encode("utf-8", errors="surrogatepass"))
