"""The Read tool: a text file from the workspace, numbered like ``cat -n``."""

from __future__ import annotations

from pathlib import Path

from engine.tools.base import (
    JsonDict,
    PermissionDecision,
    Tool,
    ToolError,
    ToolResult,
    ToolUseContext,
)
from engine.tools.workspace import (
    backfill_path_field,
    path_permission,
    resolve_in_workspace,
)

__all__ = ["DEFAULT_LINE_LIMIT", "MAX_LINE_CHARS", "ReadTool", "format_numbered_lines"]

DEFAULT_LINE_LIMIT = 2_000
MAX_LINE_CHARS = 2_000
# How much of the head is checked for NUL bytes, the same heuristic git and grep use.
_BINARY_SNIFF_BYTES = 8_192


def format_numbered_lines(lines: list[str], first_line_number: int) -> str:
    """Lines as ``cat -n`` prints them: the number right-aligned in six columns, a tab, the line."""
    return "\n".join(f"{number:>6}\t{line}" for number, line in enumerate(lines, start=first_line_number))


class ReadTool(Tool):
    """Reads a text file in the workspace, optionally a window of it (``offset``, ``limit``)."""

    name = "Read"
    description = (
        "Reads a text file from the workspace. file_path may be relative to the workspace root "
        "or absolute inside it. By default up to 2000 lines are returned from the start of the "
        "file; use offset (1-based line number) and limit (number of lines) to read a window of "
        "a longer file. Lines are numbered like `cat -n`; lines longer than 2000 characters are "
        "truncated."
    )
    input_schema: JsonDict = {
        "type": "object",
        "properties": {
            "file_path": {"type": "string", "description": "The file to read."},
            "offset": {
                "type": "integer",
                "minimum": 0,
                "description": "The line number to start reading from (1-based; 0 means 1).",
            },
            "limit": {"type": "integer", "minimum": 1, "description": "The number of lines to read."},
        },
        "required": ["file_path"],
        "additionalProperties": False,
    }
    is_read_only = True
    max_result_size_chars = None

    async def check_permissions(self, tool_input: JsonDict, ctx: ToolUseContext) -> PermissionDecision:
        """Reading inside the workspace is allowed; outside it is denied."""
        return path_permission(tool_input["file_path"], ctx.workspace_root)

    async def call(self, tool_input: JsonDict, ctx: ToolUseContext) -> ToolResult:
        """Return the numbered lines and record the file's mtime in ``ctx.read_file_state``."""
        file_path: str = tool_input["file_path"]
        path = resolve_in_workspace(file_path, ctx.workspace_root)
        text = _read_text(path, file_path)
        mtime = path.stat().st_mtime
        lines = text.replace("\r\n", "\n").split("\n")
        if lines[-1] == "":
            lines.pop()  # a final newline ends the last line; it does not start another
        ctx.read_file_state[str(path)] = mtime

        if not lines:
            return ToolResult(
                f"<system-reminder>Warning: the file {file_path} exists but its contents are empty.</system-reminder>"
            )
        start = max(tool_input.get("offset") or 1, 1)
        if start > len(lines):
            return ToolResult(
                f"<system-reminder>Warning: the file {file_path} exists but is shorter than the "
                f"provided offset ({start}). The file has {len(lines)} lines.</system-reminder>"
            )
        limit = tool_input.get("limit") or DEFAULT_LINE_LIMIT
        window = [_clip(line) for line in lines[start - 1 : start - 1 + limit]]
        body = format_numbered_lines(window, start)
        last = start + len(window) - 1
        if last < len(lines):
            body += f"\n\n(Showing lines {start}-{last} of {len(lines)}. Use offset and limit to read the rest.)"
        return ToolResult(body)

    def backfill_observable_input(self, tool_input: JsonDict, ctx: ToolUseContext) -> None:
        """Expand ``file_path`` to the absolute path inside the workspace."""
        backfill_path_field(tool_input, "file_path", ctx)


def _clip(line: str) -> str:
    """A line cut to ``MAX_LINE_CHARS`` with a visible marker, so one line cannot flood the result."""
    if len(line) <= MAX_LINE_CHARS:
        return line
    return line[:MAX_LINE_CHARS] + " … (line truncated)"


def _read_text(path: Path, file_path: str) -> str:
    """The file's text as UTF-8, or a ToolError saying why it cannot be shown."""
    if not path.exists():
        raise ToolError(f"File does not exist: {file_path}. Check the path, or use Glob to find the file.")
    if path.is_dir():
        raise ToolError(f"{file_path} is a directory, not a file. Use Glob (or Bash `ls`) to list its contents.")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ToolError(f"Cannot read {file_path}: {exc.strerror or exc}.") from exc
    if b"\0" in data[:_BINARY_SNIFF_BYTES]:
        raise ToolError(
            f"Cannot read {file_path}: it is a binary file (it contains NUL bytes); Read shows text files only."
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(
            f"Cannot read {file_path}: it is not valid UTF-8 text (undecodable byte at offset "
            f"{exc.start}); Read shows UTF-8 text files only."
        ) from exc
