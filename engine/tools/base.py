"""The tool protocol: what the loop needs to know about a tool to run it."""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from engine.abort import AbortController
from engine.process import ToolEnvironment

__all__ = [
    "PermissionBehavior",
    "PermissionDecision",
    "Tool",
    "ToolError",
    "ToolResult",
    "ToolUseContext",
]

JsonDict = dict[str, Any]


class PermissionBehavior(StrEnum):
    ALLOW = "allow"
    DENY = "deny"
    ASK = "ask"


@dataclass(frozen=True)
class PermissionDecision:
    """A tool's (or the session's) answer to "may this call run?"."""

    behavior: PermissionBehavior
    reason: str = ""

    @classmethod
    def allow(cls) -> PermissionDecision:
        return cls(PermissionBehavior.ALLOW)

    @classmethod
    def deny(cls, reason: str) -> PermissionDecision:
        return cls(PermissionBehavior.DENY, reason)

    @classmethod
    def ask(cls, reason: str) -> PermissionDecision:
        return cls(PermissionBehavior.ASK, reason)


@dataclass(frozen=True)
class ToolResult:
    """What a tool call produced: text (or API content blocks) and whether it is an error."""

    content: str | list[JsonDict]
    is_error: bool = False


class ToolError(Exception):
    """Raised by a tool for an expected failure; the loop turns it into an error tool_result
    carrying the message, and goes on."""


@dataclass(kw_only=True)
class ToolUseContext:
    """What a running tool may see: its workspace, where oversized output goes, the abort
    signal, the session's read-file cache, and the environment its commands get."""

    workspace_root: Path
    session_dir: Path
    abort: AbortController = field(default_factory=AbortController)
    read_file_state: dict[str, float] = field(default_factory=dict)
    bash_timeout_s: float = 120.0
    bash_max_output_chars: int = 30_000
    # What Bash's commands find in their environment (an allowlist; offline proxies in a replay).
    environment: ToolEnvironment = field(default_factory=ToolEnvironment)


class Tool(ABC):
    """Base class for tools. Subclasses set the class attributes and implement ``call``.

    The defaults are the safe ones: not read-only, not concurrency-safe, permission asked of
    the session's policy (``allow`` here; the session's permission callback decides the rest).
    """

    name: str = ""
    description: str = ""
    input_schema: JsonDict = {"type": "object"}
    is_read_only: bool = False
    # None means unlimited (Read): the result is never persisted to a file.
    max_result_size_chars: int | None = 50_000
    # Input fields that name a file or folder; their length is limited (engine.tools.input_limits).
    path_fields: tuple[str, ...] = ()

    def is_concurrency_safe(self, tool_input: JsonDict) -> bool:
        return self.is_read_only

    async def check_permissions(self, tool_input: JsonDict, ctx: ToolUseContext) -> PermissionDecision:
        return PermissionDecision.allow()

    @abstractmethod
    async def call(self, tool_input: JsonDict, ctx: ToolUseContext) -> ToolResult:
        """Run the tool on validated input. Raise ``ToolError`` for an expected failure."""

    def backfill_observable_input(self, tool_input: JsonDict, ctx: ToolUseContext) -> None:
        """Fill in derived fields (e.g. absolute paths) in place, on a copy observers see.
        The input sent back to the API is never changed by this (hash stability)."""

    def observable_input(self, tool_input: JsonDict, ctx: ToolUseContext) -> JsonDict:
        """A deep copy of ``tool_input`` with backfill applied."""
        observed = copy.deepcopy(tool_input)
        self.backfill_observable_input(observed, ctx)
        return observed

    def api_schema(self) -> JsonDict:
        """The tool as the Messages API's ``tools`` parameter wants it."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}
