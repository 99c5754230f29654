"""The Grep tool: a regular-expression search over workspace files, in pure Python."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from engine.tools.base import (
    JsonDict,
    PermissionDecision,
    Tool,
    ToolError,
    ToolResult,
    ToolUseContext,
)
from engine.tools.glob import compile_glob
from engine.tools.regular_files import NotARegularFileError, open_regular_file
from engine.tools.workspace import (
    backfill_path_field,
    display_path,
    iter_workspace_files,
    path_permission,
    resolve_in_workspace,
)

__all__ = ["MAX_SEARCH_BYTES", "MAX_SEARCH_MIB", "OUTPUT_MODES", "GrepTool"]

OUTPUT_MODES = ("files_with_matches", "content", "count")
_BINARY_SNIFF_BYTES = 8_192
# A search holds one file's text at a time; past this much of a file (a log of gigabytes, a
# sparse file) it stops, and the result says which files were cut.
MAX_SEARCH_MIB = 16
MAX_SEARCH_BYTES = MAX_SEARCH_MIB * 2**20
# How many cut files the note names.
_MAX_NAMED_CUT_FILES = 5


@dataclass(frozen=True)
class _FileMatches:
    """The matching lines of one file: (line number, line) pairs."""

    path: str
    lines: list[tuple[int, str]]


@dataclass(frozen=True)
class _SearchResult:
    """The files with matches, and the files searched in their first ``MAX_SEARCH_BYTES`` only."""

    found: list[_FileMatches]
    cut: list[str]


class GrepTool(Tool):
    """Searches file contents line by line with a Python regular expression."""

    name = "Grep"
    path_fields = ("path",)
    description = (
        "Searches the contents of workspace files for a regular expression (Python `re` syntax), "
        "line by line. `path` is a file or directory to search (default: the workspace root); "
        "`glob` filters files (e.g. '*.py', or 'src/**/*.ts' with a slash to match the path). "
        "output_mode: 'files_with_matches' (default) lists matching files, 'content' shows "
        "matching lines as path:line:text, 'count' shows matching lines per file. Set -i for a "
        "case-insensitive search. Binary files are skipped; paths are relative to the workspace."
    )
    input_schema: JsonDict = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "minLength": 1, "description": "The regular expression."},
            "path": {"type": "string", "description": "File or directory to search in."},
            "glob": {
                "type": "string",
                "minLength": 1,
                "description": "Only search files matching this glob.",
            },
            "output_mode": {"type": "string", "enum": list(OUTPUT_MODES), "default": "files_with_matches"},
            "-i": {"type": "boolean", "description": "Case-insensitive search."},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }
    is_read_only = True
    max_result_size_chars = 20_000

    async def check_permissions(self, tool_input: JsonDict, ctx: ToolUseContext) -> PermissionDecision:
        """Searching inside the workspace is allowed; outside it is denied."""
        return path_permission(tool_input.get("path") or ".", ctx.workspace_root)

    async def call(self, tool_input: JsonDict, ctx: ToolUseContext) -> ToolResult:
        """Return the matches in the requested output mode, files in sorted path order."""
        pattern: str = tool_input["pattern"]
        try:
            regex = re.compile(pattern, re.IGNORECASE if tool_input.get("-i") else 0)
        except re.error as exc:
            raise ToolError(f"Invalid regular expression {pattern!r}: {exc}. Grep uses Python `re` syntax.") from exc
        base = resolve_in_workspace(tool_input.get("path") or ".", ctx.workspace_root)
        if not base.exists():
            raise ToolError(f"Path does not exist: {tool_input.get('path')}.")
        file_filter = _file_filter(tool_input.get("glob"))
        searched = await asyncio.to_thread(_search, regex, base, file_filter, ctx.workspace_root)
        text = _render(searched.found, tool_input.get("output_mode", "files_with_matches"))
        return ToolResult(text + _cut_note(searched.cut))

    def backfill_observable_input(self, tool_input: JsonDict, ctx: ToolUseContext) -> None:
        """Expand ``path`` to the absolute path inside the workspace."""
        backfill_path_field(tool_input, "path", ctx)


def _file_filter(glob: str | None) -> tuple[re.Pattern[str], bool] | None:
    """The compiled glob and whether it matches whole relative paths (it has a ``/``) or, like
    ripgrep's ``--glob``, just file names."""
    if glob is None:
        return None
    return compile_glob(glob.removeprefix("./")), "/" in glob


def _search(
    regex: re.Pattern[str], base: Path, file_filter: tuple[re.Pattern[str], bool] | None, root: Path
) -> _SearchResult:
    """Every searched file with at least one matching line, sorted by workspace-relative path."""
    results: list[_FileMatches] = []
    cut: list[str] = []
    for file in iter_workspace_files(base, root):
        if file_filter is not None and file != base:
            glob, whole_path = file_filter
            subject = file.relative_to(base).as_posix() if whole_path else file.name
            if not glob.match(subject):
                continue
        contents = _text_of(file)
        if contents is None:
            continue
        text, was_cut = contents
        if was_cut:
            cut.append(display_path(file, root))
        lines = [
            (number, line.rstrip("\r"))
            for number, line in enumerate(text.split("\n"), start=1)
            if regex.search(line.rstrip("\r"))
        ]
        if lines:
            results.append(_FileMatches(display_path(file, root), lines))
    return _SearchResult(sorted(results, key=lambda found: found.path), sorted(cut))


def _text_of(file: Path) -> tuple[str, bool] | None:
    """A file's text (at most its first ``MAX_SEARCH_BYTES``) and whether it was cut there, or
    None for a binary, special or unreadable file (those are skipped, like rg does)."""
    try:
        # Opened without blocking and checked on the open descriptor: a FIFO swapped in after
        # the walk looked at the path is skipped, not waited on.
        stream, _ = open_regular_file(file)
    except (NotARegularFileError, OSError):
        return None
    try:
        with stream:
            head = stream.read(_BINARY_SNIFF_BYTES) or b""
            if b"\0" in head:
                return None
            data = head + _read_up_to(stream, MAX_SEARCH_BYTES + 1 - len(head))
    except OSError:
        return None
    was_cut = len(data) > MAX_SEARCH_BYTES
    # Not every text file is UTF-8; a stray byte must not hide the file's other matches.
    text = data[:MAX_SEARCH_BYTES].decode("utf-8", errors="replace").removesuffix("\n")
    return text, was_cut


def _read_up_to(stream: BinaryIO, size: int) -> bytes:
    """Up to ``size`` bytes of ``stream``; fewer only at its end."""
    parts: list[bytes] = []
    while size > 0 and (part := stream.read(size)):
        parts.append(part)
        size -= len(part)
    return b"".join(parts)


def _cut_note(cut: list[str]) -> str:
    """The note naming the files a search did not read to the end, or nothing."""
    if not cut:
        return ""
    named = ", ".join(cut[:_MAX_NAMED_CUT_FILES])
    more = f" and {len(cut) - _MAX_NAMED_CUT_FILES} more" if len(cut) > _MAX_NAMED_CUT_FILES else ""
    return (
        f"\n\n(Files over {MAX_SEARCH_MIB} MiB were searched in their first {MAX_SEARCH_MIB} MiB only: {named}{more}.)"
    )


def _render(found: list[_FileMatches], output_mode: str) -> str:
    """The result text for one output mode."""
    if output_mode == "content":
        if not found:
            return "No matches found"
        return "\n".join(f"{f.path}:{number}:{line}" for f in found for number, line in f.lines)
    if not found:
        return "No files found"
    if output_mode == "count":
        total = sum(len(f.lines) for f in found)
        counts = "\n".join(f"{f.path}:{len(f.lines)}" for f in found)
        files = len(found)
        return f"{counts}\n\nFound {total} matching {_plural(total, 'line')} across {files} {_plural(files, 'file')}."
    return f"Found {len(found)} {_plural(len(found), 'file')}\n" + "\n".join(f.path for f in found)


def _plural(count: int, noun: str) -> str:
    """``noun`` with an ``s`` unless ``count`` is one."""
    return noun if count == 1 else f"{noun}s"
