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
from engine.tools.regular_files import FileKind, NotARegularFileError, open_regular_file
from engine.tools.text_window import (
    MAX_LINE_CHARS,
    MAX_SCAN_MIB,
    BinaryContentError,
    LineWindow,
    UndecodableTextError,
    read_line_window,
)
from engine.tools.workspace import (
    backfill_path_field,
    path_permission,
    resolve_in_workspace,
)

__all__ = ["DEFAULT_LINE_LIMIT", "MAX_LINE_CHARS", "ReadTool", "format_numbered_lines"]

DEFAULT_LINE_LIMIT = 2_000


def format_numbered_lines(lines: list[str], first_line_number: int) -> str:
    """Lines as ``cat -n`` prints them: the number right-aligned in six columns, a tab, the line."""
    return "\n".join(f"{number:>6}\t{line}" for number, line in enumerate(lines, start=first_line_number))


class ReadTool(Tool):
    """Reads a text file in the workspace, optionally a window of it (``offset``, ``limit``)."""

    name = "Read"
    path_fields = ("file_path",)
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
        start = max(tool_input.get("offset") or 1, 1)
        limit = tool_input.get("limit") or DEFAULT_LINE_LIMIT
        window, mtime = _read_window(path, file_path, first_line=start, max_lines=limit)
        ctx.read_file_state[str(path)] = mtime

        if window.reached_end and window.lines_seen == 0:
            return ToolResult(
                f"<system-reminder>Warning: the file {file_path} exists but its contents are empty.</system-reminder>"
            )
        if not window.lines:
            if not window.reached_end:
                raise ToolError(
                    f"Cannot read {file_path} from line {start}: Read looks at the first {MAX_SCAN_MIB} MiB "
                    "of a file only, and that line lies beyond them. Use Bash (e.g. `tail -c`) to see that part."
                )
            return ToolResult(
                f"<system-reminder>Warning: the file {file_path} exists but is shorter than the "
                f"provided offset ({start}). The file has {window.lines_seen} lines.</system-reminder>"
            )
        body = format_numbered_lines(window.lines, start)
        last = start + len(window.lines) - 1
        if not window.reached_end:
            body += (
                f"\n\n(Showing lines {start}-{last}; Read looks at the first {MAX_SCAN_MIB} MiB of a file only, "
                "and this one goes on past it. Use Bash (e.g. `tail -c`) to see the rest.)"
            )
        elif last < window.lines_seen:
            body += f"\n\n(Showing lines {start}-{last} of {window.lines_seen}. Use offset and limit to read the rest.)"
        return ToolResult(body)

    def backfill_observable_input(self, tool_input: JsonDict, ctx: ToolUseContext) -> None:
        """Expand ``file_path`` to the absolute path inside the workspace."""
        backfill_path_field(tool_input, "file_path", ctx)


def _read_window(path: Path, file_path: str, *, first_line: int, max_lines: int) -> tuple[LineWindow, float]:
    """The window of the file and its mtime, or a ToolError saying why it cannot be shown.

    Only a regular file is read: a FIFO, socket or device is refused without a blocking open.
    """
    try:
        stream, status = open_regular_file(path)
    except FileNotFoundError as exc:
        raise ToolError(f"File does not exist: {file_path}. Check the path, or use Glob to find the file.") from exc
    except NotARegularFileError as exc:
        if exc.kind is FileKind.DIRECTORY:
            raise ToolError(
                f"{file_path} is a directory, not a file. Use Glob (or Bash `ls`) to list its contents."
            ) from exc
        raise ToolError(f"Cannot read {file_path}: {exc}; Read shows regular files only.") from exc
    except OSError as exc:
        raise ToolError(f"Cannot read {file_path}: {exc.strerror or type(exc).__name__}.") from exc
    with stream:
        try:
            window = read_line_window(stream, first_line=first_line, max_lines=max_lines)
        except BinaryContentError as exc:
            raise ToolError(
                f"Cannot read {file_path}: it is a binary file (it contains NUL bytes); Read shows text files only."
            ) from exc
        except UndecodableTextError as exc:
            raise ToolError(
                f"Cannot read {file_path}: it is not valid UTF-8 text (undecodable byte at offset "
                f"{exc.offset}); Read shows UTF-8 text files only."
            ) from exc
        except OSError as exc:
            raise ToolError(f"Cannot read {file_path}: {exc.strerror or type(exc).__name__}.") from exc
    return window, status.st_mtime
