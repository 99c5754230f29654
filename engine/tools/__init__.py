"""The tool protocol, the six built-in tools, and the helpers the loop runs them with."""

from __future__ import annotations

from collections.abc import Iterable

from engine.tools.base import (
    PermissionBehavior,
    PermissionDecision,
    Tool,
    ToolError,
    ToolResult,
    ToolUseContext,
)
from engine.tools.bash import BashTool
from engine.tools.edit import EditTool
from engine.tools.glob import GlobTool
from engine.tools.grep import GrepTool
from engine.tools.permissions import PermissionPolicy, RulePolicy, allow_all, deny_all
from engine.tools.read import ReadTool
from engine.tools.result_storage import apply_result_size_limit, empty_result_text
from engine.tools.workspace import WorkspaceEscapeError, resolve_in_workspace
from engine.tools.write import WriteTool

__all__ = [
    "BashTool",
    "EditTool",
    "GlobTool",
    "GrepTool",
    "PermissionBehavior",
    "PermissionDecision",
    "PermissionPolicy",
    "ReadTool",
    "RulePolicy",
    "Tool",
    "ToolError",
    "ToolResult",
    "ToolUseContext",
    "WorkspaceEscapeError",
    "WriteTool",
    "allow_all",
    "apply_result_size_limit",
    "default_tools",
    "deny_all",
    "empty_result_text",
    "resolve_in_workspace",
    "tools_by_name",
]


def default_tools() -> list[Tool]:
    """Fresh instances of the built-ins, in the order they are offered to the model."""
    return [ReadTool(), WriteTool(), EditTool(), BashTool(), GlobTool(), GrepTool()]


def tools_by_name(tools: Iterable[Tool]) -> dict[str, Tool]:
    """The tools keyed by name; two tools with one name are a configuration error."""
    by_name: dict[str, Tool] = {}
    for tool in tools:
        if tool.name in by_name:
            raise ValueError(f"Two tools are named {tool.name!r}; tool names must be unique within a session.")
        by_name[tool.name] = tool
    return by_name
