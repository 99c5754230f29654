"""The real Claude Code CLI against a scenario: a copy of a workspace (with the settings and
``CLAUDE.md`` a test gives), the scenario served by the fake model on loopback, one run of the
pinned CLI against it, and what it did — its result, every request it sent, and a summary of
those requests in the loop's terms (purpose, model, ``max_tokens``, streaming).

What the CLI sends is Anthropic's text: it is kept in memory and in the run's own folder (a
temp folder the caller gives), never written anywhere else.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Unpack

from replay.claude_code.run import ClaudeCodeResult, ClaudeRunOptions, run_claude
from replay.fake.blocks import RequestPurpose
from replay.fake.matching import purpose_of
from replay.fake.model import FakeModel, ReceivedRequest
from replay.fake.scenario import Scenario
from replay.fake.server import FakeModelServer

__all__ = [
    "ClaudeCodeRun",
    "RequestSummary",
    "ToolResult",
    "WorkspaceError",
    "completed_run",
    "prepare_workspace",
    "run_scenario",
]

_MESSAGES_ROUTE = "/v1/messages"


class WorkspaceError(ValueError):
    """The workspace to copy is not a folder; the message says so in one sentence."""


@dataclass(frozen=True, kw_only=True)
class RequestSummary:
    """One Messages request of a run, as a behaviour trace would tell it."""

    purpose: RequestPurpose
    model: str | None
    max_tokens: int | None
    stream: bool
    messages: int
    tools: int

    @classmethod
    def of(cls, body: Mapping[str, Any]) -> RequestSummary:
        model, max_tokens = body.get("model"), body.get("max_tokens")
        messages, tools = body.get("messages"), body.get("tools")
        return cls(
            purpose=purpose_of(body),
            model=model if isinstance(model, str) else None,
            max_tokens=max_tokens if isinstance(max_tokens, int) else None,
            stream=body.get("stream") is True,
            messages=len(messages) if isinstance(messages, list) else 0,
            tools=len(tools) if isinstance(tools, list) else 0,
        )

    def line(self) -> str:
        """``main claude-sonnet-4-6 max_tokens=32000 stream messages=3 tools=12``."""
        streaming = "stream" if self.stream else "no-stream"
        return (
            f"{self.purpose.value} {self.model or '(no model)'} max_tokens={self.max_tokens} {streaming} "
            f"messages={self.messages} tools={self.tools}"
        )


@dataclass(frozen=True, kw_only=True)
class ToolResult:
    """A tool result the CLI sent back to the model: the outcome of a call the scenario made."""

    tool_use_id: str
    is_error: bool
    text: str


@dataclass(frozen=True, kw_only=True)
class ClaudeCodeRun(ClaudeCodeResult):
    """A run's result (the `ClaudeCodeResult` fields), the requests it sent to the fake model
    (every one, ``count_tokens`` included), a summary of its Messages requests, and the workspace
    copy it ran in (to check its files, or a hook's log)."""

    requests: tuple[ReceivedRequest, ...]
    summary: tuple[RequestSummary, ...]
    workspace: Path
    # A run through replay proxy: the cassette's diagnosis of each request it could not answer.
    misses: tuple[str, ...] = ()

    @property
    def purposes(self) -> tuple[RequestPurpose, ...]:
        return tuple(request.purpose for request in self.summary)

    @property
    def models(self) -> tuple[str | None, ...]:
        return tuple(request.model for request in self.summary)

    @property
    def tool_results(self) -> tuple[ToolResult, ...]:
        """Every tool result the CLI sent, in order: each request's new ones (its last message)."""
        found: list[ToolResult] = []
        for request in self.requests:
            messages = request.json.get("messages") if isinstance(request.json, dict) else None
            last = messages[-1] if isinstance(messages, list) and messages else None
            content = last.get("content") if isinstance(last, dict) and last.get("role") == "user" else None
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    found.append(
                        ToolResult(
                            tool_use_id=str(block.get("tool_use_id", "")),
                            is_error=block.get("is_error") is True,
                            text=_text(block.get("content")),
                        )
                    )
        return tuple(found)

    def trace(self) -> str:
        """The summary, one numbered line per Messages request, and the terminal reason."""
        lines = [f"{number}. {request.line()}" for number, request in enumerate(self.summary, start=1)]
        return "\n".join([*lines, f"terminal: {self.terminal_reason}"])


def prepare_workspace(
    target: Path,
    *,
    source: Path | None = None,
    settings: Mapping[str, Any] | None = None,
    claude_md: str | None = None,
) -> Path:
    """``target`` made a workspace: a copy of ``source`` (empty without one), with ``settings``
    written to its ``.claude/settings.json`` (replacing a copied one) and ``claude_md`` to its
    ``CLAUDE.md``."""
    if source is not None:
        if not source.is_dir():
            raise WorkspaceError(f"The workspace {source} is not a folder.")
        shutil.copytree(source, target, symlinks=True)
    else:
        target.mkdir(parents=True)
    if settings is not None:
        (target / ".claude").mkdir(exist_ok=True)
        (target / ".claude" / "settings.json").write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    if claude_md is not None:
        (target / "CLAUDE.md").write_text(claude_md, encoding="utf-8")
    return target


def run_scenario(
    claude: Path, prompt: str, scenario: Scenario, *, workspace: Path, **options: Unpack[ClaudeRunOptions]
) -> ClaudeCodeRun:
    """Serve ``scenario`` on loopback and run ``claude -p PROMPT`` in ``workspace`` against it,
    with `run_claude`'s ``options``."""
    fake = FakeModel(scenario)
    with FakeModelServer(fake) as server:
        result = run_claude(claude, prompt, base_url=server.url, workspace=workspace, **options)
    return completed_run(result, tuple(fake.requests), workspace=workspace)


def completed_run(
    result: ClaudeCodeResult,
    requests: tuple[ReceivedRequest, ...],
    *,
    workspace: Path,
    misses: tuple[str, ...] = (),
) -> ClaudeCodeRun:
    """A run's result with the requests it sent, summarized."""
    summary = tuple(
        RequestSummary.of(request.json)
        for request in requests
        if request.path.split("?", 1)[0] == _MESSAGES_ROUTE and isinstance(request.json, dict)
    )
    fields = {name: getattr(result, name) for name in ClaudeCodeResult.__dataclass_fields__}
    return ClaudeCodeRun(**fields, requests=requests, summary=summary, workspace=workspace, misses=misses)


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(block.get("text", "")) for block in content if isinstance(block, dict) and block.get("type") == "text"
        )
    return ""
