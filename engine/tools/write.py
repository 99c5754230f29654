"""The Write tool: create or overwrite a file in the workspace."""

from __future__ import annotations

from engine.tools.base import (
    JsonDict,
    PermissionDecision,
    Tool,
    ToolError,
    ToolResult,
    ToolUseContext,
)
from engine.tools.regular_files import NotARegularFileError, open_regular_file_for_writing
from engine.tools.workspace import (
    backfill_path_field,
    path_permission,
    resolve_in_workspace,
)

__all__ = ["WriteTool"]


class WriteTool(Tool):
    """Writes ``content`` to ``file_path``, creating missing parent folders inside the workspace."""

    name = "Write"
    path_fields = ("file_path",)
    description = (
        "Writes a file in the workspace, replacing it if it exists. file_path may be relative to "
        "the workspace root or absolute inside it; missing parent directories are created. "
        "Prefer Edit for changing part of an existing file."
    )
    input_schema: JsonDict = {
        "type": "object",
        "properties": {
            "file_path": {"type": "string", "description": "The file to write."},
            "content": {"type": "string", "description": "The complete new contents of the file."},
        },
        "required": ["file_path", "content"],
        "additionalProperties": False,
    }
    is_read_only = False

    async def check_permissions(self, tool_input: JsonDict, ctx: ToolUseContext) -> PermissionDecision:
        """Writing outside the workspace is denied; inside it, the session's policy is asked."""
        path = tool_input["file_path"]
        return path_permission(path, ctx.workspace_root, ask=f"Write wants to write the file {path}.")

    async def call(self, tool_input: JsonDict, ctx: ToolUseContext) -> ToolResult:
        """Write the file and say whether it was created or overwritten."""
        file_path: str = tool_input["file_path"]
        path = resolve_in_workspace(file_path, ctx.workspace_root)
        if path.is_dir():
            raise ToolError(f"Cannot write {file_path}: it is a directory.")
        existed = path.exists()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Never blocks on, or writes into, a FIFO or device; writes the content byte for byte.
            with open_regular_file_for_writing(path) as handle:
                handle.write(tool_input["content"])
        except NotARegularFileError as exc:
            raise ToolError(f"Cannot write {file_path}: {exc}.") from exc
        except OSError as exc:
            raise ToolError(f"Cannot write {file_path}: {exc.strerror or exc}.") from exc
        # The model knows the file's contents now, as if it had read them.
        ctx.read_file_state[str(path)] = path.stat().st_mtime
        if existed:
            return ToolResult(f"The file {file_path} has been overwritten successfully.")
        return ToolResult(f"File created successfully at: {file_path}")

    def backfill_observable_input(self, tool_input: JsonDict, ctx: ToolUseContext) -> None:
        """Expand ``file_path`` to the absolute path inside the workspace."""
        backfill_path_field(tool_input, "file_path", ctx)
