"""The Edit tool: exact string replacement in a workspace file."""

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
from engine.tools.regular_files import NotARegularFileError, open_regular_file, open_regular_file_for_writing
from engine.tools.workspace import (
    backfill_path_field,
    path_permission,
    resolve_in_workspace,
)

__all__ = ["MAX_EDIT_BYTES", "MAX_EDIT_MIB", "EditTool"]

# An edit holds the whole file (twice, before and after); past this it is refused unread.
MAX_EDIT_MIB = 16
MAX_EDIT_BYTES = MAX_EDIT_MIB * 2**20


class EditTool(Tool):
    """Replaces ``old_string`` by ``new_string`` in a file: exactly once, or everywhere with
    ``replace_all``. An empty ``old_string`` creates a new file holding ``new_string``."""

    name = "Edit"
    path_fields = ("file_path",)
    description = (
        "Replaces old_string with new_string in a workspace file. old_string must match the "
        "file exactly (including indentation) and must be unique in it unless replace_all is "
        "true, in which case every occurrence is replaced. An empty old_string creates a new "
        "file whose contents are new_string."
    )
    input_schema: JsonDict = {
        "type": "object",
        "properties": {
            "file_path": {"type": "string", "description": "The file to modify."},
            "old_string": {"type": "string", "description": "The exact text to replace."},
            "new_string": {"type": "string", "description": "The text to replace it with."},
            "replace_all": {
                "type": "boolean",
                "default": False,
                "description": "Replace every occurrence of old_string (default false).",
            },
        },
        "required": ["file_path", "old_string", "new_string"],
        "additionalProperties": False,
    }
    is_read_only = False

    async def check_permissions(self, tool_input: JsonDict, ctx: ToolUseContext) -> PermissionDecision:
        """Editing outside the workspace is denied; inside it, the session's policy is asked."""
        path = tool_input["file_path"]
        return path_permission(path, ctx.workspace_root, ask=f"Edit wants to modify the file {path}.")

    async def call(self, tool_input: JsonDict, ctx: ToolUseContext) -> ToolResult:
        """Apply the replacement and confirm it, or raise a ToolError saying why it cannot apply."""
        file_path: str = tool_input["file_path"]
        old: str = tool_input["old_string"]
        new: str = tool_input["new_string"]
        replace_all: bool = tool_input.get("replace_all", False)
        path = resolve_in_workspace(file_path, ctx.workspace_root)
        if old == new:
            raise ToolError("No changes to make: old_string and new_string are exactly the same.")

        if not path.exists():
            if old:
                raise ToolError(f"File does not exist: {file_path}. Use an empty old_string (or Write) to create it.")
            _write(path, new, file_path)
            ctx.read_file_state[str(path)] = path.stat().st_mtime
            return ToolResult(f"File created successfully at: {file_path}")
        if path.is_dir():
            raise ToolError(f"Cannot edit {file_path}: it is a directory.")

        original = _read(path, file_path)
        if not old:
            if original:
                raise ToolError(
                    f"Cannot create {file_path}: it already exists and is not empty. "
                    "Give an old_string to replace, or use Write to replace the whole file."
                )
            updated, count = new, 1
        else:
            count = original.count(old)
            if count == 0:
                raise ToolError(f"String to replace not found in {file_path}. old_string must match the file exactly.")
            if count > 1 and not replace_all:
                raise ToolError(
                    f"Found {count} matches of old_string in {file_path}, but replace_all is false. "
                    "Set replace_all to true to replace every one, or add surrounding context to "
                    "old_string so it matches exactly once."
                )
            updated = original.replace(old, new)
        _write(path, updated, file_path)
        ctx.read_file_state[str(path)] = path.stat().st_mtime
        if count > 1:
            return ToolResult(f"The file {file_path} has been updated successfully ({count} replacements).")
        return ToolResult(f"The file {file_path} has been updated successfully.")

    def backfill_observable_input(self, tool_input: JsonDict, ctx: ToolUseContext) -> None:
        """Expand ``file_path`` to the absolute path inside the workspace."""
        backfill_path_field(tool_input, "file_path", ctx)


def _read(path: Path, file_path: str) -> str:
    """The file as UTF-8 text, or a ToolError naming the file and the problem.

    Only a regular file of at most ``MAX_EDIT_MIB`` is read: a FIFO would block the open, and
    an edit holds the whole file (a sparse file can claim gigabytes without costing any disk).
    """
    try:
        stream, status = open_regular_file(path)
    except NotARegularFileError as exc:
        raise ToolError(f"Cannot edit {file_path}: {exc}.") from exc
    except OSError as exc:
        raise ToolError(f"Cannot read {file_path}: {exc.strerror or exc}.") from exc
    with stream:
        if status.st_size > MAX_EDIT_BYTES:
            raise ToolError(
                f"Cannot edit {file_path}: it is {status.st_size:,} bytes; "
                f"Edit works on files up to {MAX_EDIT_MIB} MiB."
            )
        try:
            data = stream.read(MAX_EDIT_BYTES + 1) or b""
        except OSError as exc:
            raise ToolError(f"Cannot read {file_path}: {exc.strerror or exc}.") from exc
    if len(data) > MAX_EDIT_BYTES:  # it grew after the check
        raise ToolError(f"Cannot edit {file_path}: it is over {MAX_EDIT_MIB} MiB; Edit works on files up to that.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(f"Cannot edit {file_path}: it is not valid UTF-8 text.") from exc


def _write(path: Path, text: str, file_path: str) -> None:
    """Write ``text`` byte for byte (no newline translation), creating parent folders."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open_regular_file_for_writing(path) as handle:
            handle.write(text)
    except NotARegularFileError as exc:
        raise ToolError(f"Cannot write {file_path}: {exc}.") from exc
    except OSError as exc:
        raise ToolError(f"Cannot write {file_path}: {exc.strerror or exc}.") from exc
