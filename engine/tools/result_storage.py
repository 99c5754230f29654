"""Oversized tool results go to a file in the session folder; the model sees a preview (§3.4)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from engine.tools.base import Tool, ToolError, ToolUseContext

__all__ = ["PREVIEW_CHARS", "RESULTS_DIRNAME", "apply_result_size_limit", "empty_result_text", "persist_result"]

RESULTS_DIRNAME = "tool-results"
PREVIEW_CHARS = 2_000


def empty_result_text(tool_name: str) -> str:
    """The text that stands in for a tool result with no output."""
    return f"({tool_name} completed with no output)"


def apply_result_size_limit(tool: Tool, tool_use_id: str, content: str, ctx: ToolUseContext) -> str:
    """``content`` itself if it fits ``tool.max_result_size_chars``; otherwise save it under the
    session folder and return a preview that names the saved file."""
    limit = tool.max_result_size_chars
    if limit is None or len(content) <= limit:
        return content
    return persist_result(tool_use_id, content, ctx)


def persist_result(tool_use_id: str, content: str, ctx: ToolUseContext) -> str:
    """Save ``content`` as ``tool-results/<tool_use_id>.txt`` in the session folder and return
    the preview that replaces it."""
    _check_tool_use_id(tool_use_id)
    filename = f"{tool_use_id}.txt"
    _write_atomically(ctx.session_dir / RESULTS_DIRNAME / filename, content)
    # Named relative to the session folder, so the preview (which is sent to the model) reads
    # the same on every machine and the next request's hash does not depend on where we run.
    saved_as = f"{RESULTS_DIRNAME}/{filename}"
    preview = _preview(content)
    return (
        f"Output too large ({len(content):,} characters); the full output was saved to "
        f"{saved_as} in the session folder.\n"
        f"Preview (first {len(preview):,} characters):\n"
        f"{preview}\n"
        f"... {len(content) - len(preview):,} more characters are in {saved_as}."
    )


def _check_tool_use_id(tool_use_id: str) -> None:
    """The id becomes a file name: refuse anything that could name a file elsewhere."""
    forbidden = {"/", "\\", "..", "\0", os.sep, os.altsep or "/"}
    if not tool_use_id or any(part in tool_use_id for part in forbidden):
        raise ToolError(
            f"Cannot save the result of tool_use {tool_use_id!r}: the id is empty or contains a path "
            "separator or '..', so it cannot be used as a file name."
        )


def _preview(content: str) -> str:
    """The first ``PREVIEW_CHARS`` characters, cut at a line end when one is reasonably close."""
    head = content[:PREVIEW_CHARS]
    last_newline = head.rfind("\n")
    return head[:last_newline] if last_newline > PREVIEW_CHARS // 2 else head


def _write_atomically(target: Path, content: str) -> None:
    """Write via a temporary file in the same folder and ``os.replace``: readers never see half."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(content)
        os.replace(temp_name, target)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
