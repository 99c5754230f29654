"""``QueryEngine``: one conversation around ``query_loop``.

It owns the history across turns (``mutable_messages``), the transcript, usage, permission
denials and the abort controller. ``submit_message`` writes the user's message to the
transcript before the model is called, drives the loop to its end, and yields one
``QueryResult`` last.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from engine.abort import AbortController
from engine.attachments import AttachmentSources, render_attachment_for_api
from engine.compact import CompactionResult, CompactTrigger, compact_conversation
from engine.cost import SessionCost, usage_cost
from engine.deps import QueryDeps
from engine.events import CompactionTier, LoopEnd, RequestStart, TraceEvent, TraceKind
from engine.hooks import HookContext, Hooks
from engine.loop import LoopItem, messages_after_compact_boundary, query
from engine.messages import (
    AssistantMessage,
    Message,
    ProgressMessage,
    SystemMessage,
    SystemSubtype,
    TombstoneMessage,
    UserMessage,
)
from engine.model import StreamEvent
from engine.normalize_cache import IncrementalNormalizer
from engine.orchestration import PermissionCallback, PermissionDenial, ToolRunContext
from engine.params import ContextState, LoopParams
from engine.process import ToolEnvironment
from engine.settings import EngineSettings
from engine.shaping import conversation_request
from engine.state import Terminal
from engine.token_budget import TokenBudgetTracker, parse_token_budget
from engine.tools import default_tools
from engine.tools.base import Tool, ToolUseContext
from engine.tools.permissions import allow_all
from engine.transcript import TranscriptWriter

__all__ = ["EngineOutput", "QueryEngine", "QueryResult", "ResultSubtype"]

JsonDict = dict[str, Any]
_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


class ResultSubtype(StrEnum):
    SUCCESS = "success"
    ERROR_MAX_TURNS = "error_max_turns"
    ERROR_DURING_EXECUTION = "error_during_execution"


# A hook that stops the loop on purpose ends it as its author asked: a success whose
# terminal_reason says why, as Claude Code's own result reports it, not an error.
_SUCCESSFUL_ENDS = frozenset({Terminal.COMPLETED, Terminal.HOOK_STOPPED, Terminal.STOP_HOOK_PREVENTED})


@dataclass(frozen=True, kw_only=True)
class QueryResult:
    """The last thing ``submit_message`` yields: how the turn ended and what it cost."""

    type: str = "result"
    subtype: ResultSubtype
    result: str
    usage: dict[str, int]
    num_turns: int
    duration_ms: int
    total_cost_usd: float
    terminal_reason: Terminal
    is_error: bool
    session_id: str
    permission_denials: tuple[PermissionDenial, ...] = field(default_factory=tuple)

    def to_dict(self) -> JsonDict:
        return {
            "type": self.type,
            "subtype": self.subtype.value,
            "result": self.result,
            "usage": dict(self.usage),
            "num_turns": self.num_turns,
            "duration_ms": self.duration_ms,
            "total_cost_usd": self.total_cost_usd,
            "terminal_reason": self.terminal_reason.value,
            "is_error": self.is_error,
            "session_id": self.session_id,
            "permission_denials": [d.__dict__ for d in self.permission_denials],
        }


EngineOutput = Message | TraceEvent | StreamEvent | QueryResult


class QueryEngine:
    """One conversation: submit prompts, get messages, trace events and a result per prompt.

    ``tool_environment`` is what the Bash tool's and command hooks' commands find in their
    environment: by default the allowlisted variables and the network allowed; a replay passes
    ``NetworkPolicy.OFFLINE``."""

    def __init__(
        self,
        *,
        deps: QueryDeps,
        workspace: Path,
        session_dir: Path,
        settings: EngineSettings | None = None,
        tools: Sequence[Tool] | None = None,
        can_use_tool: PermissionCallback = allow_all,
        hooks: Hooks | None = None,
        transcript_path: Path | None = None,
        session_id: str | None = None,
        include_stream_events: bool = False,
        tool_environment: ToolEnvironment | None = None,
    ) -> None:
        self.deps = deps
        self.settings = settings or EngineSettings()
        self.workspace = workspace
        self.session_id = session_id or deps.uuid()
        self.tools = {tool.name: tool for tool in (tools if tools is not None else default_tools())}
        self.abort_controller = AbortController()
        self.mutable_messages: list[Message] = []
        self.permission_denials: list[PermissionDenial] = []
        self.total_usage: dict[str, int] = dict.fromkeys(_USAGE_KEYS, 0)
        self.trace: list[TraceEvent] = []
        self.include_stream_events = include_stream_events
        self.tool_context = ToolUseContext(
            workspace_root=workspace,
            session_dir=session_dir,
            abort=self.abort_controller,
            bash_timeout_s=self.settings.bash_timeout_s,
            bash_max_output_chars=self.settings.bash_max_output_chars,
            environment=tool_environment or ToolEnvironment(),
        )
        self._can_use_tool = can_use_tool
        self._hooks = hooks or Hooks()
        self.transcript = TranscriptWriter(transcript_path or session_dir / "transcript.jsonl")
        self._last_recorded_uuid: str | None = None
        self._recorded: set[str] = set()
        # What outlives one prompt: frozen context-shaping decisions and attachment sources.
        self.context_state = ContextState()
        self.attachment_sources = AttachmentSources()
        self._normalizer = IncrementalNormalizer(
            thinking_enabled=self.settings.thinking is not None, render_attachment=render_attachment_for_api
        )

    def queue_command(self, text: str) -> None:
        """Queue a user command; the loop attaches it after the next round of tool results."""
        self.attachment_sources.queue_command(text)

    @property
    def read_file_state(self) -> dict[str, float]:
        return self.tool_context.read_file_state

    def abort(self, reason: str = "user") -> None:
        """Interrupt the running turn (streaming or tools); the loop answers what is open."""
        self.abort_controller.abort(reason)

    async def submit_message(self, prompt: str | list[JsonDict]) -> AsyncIterator[EngineOutput]:
        """Run one user turn to its end. Yields the user message, what the loop produces, and
        one ``QueryResult`` last."""
        if self.abort_controller.aborted:
            # A new turn starts with a fresh controller; the tools share it through the context.
            self.abort_controller = AbortController()
            self.tool_context.abort = self.abort_controller
        started = self.deps.clock()
        user = UserMessage.create(self.deps, prompt)
        self._record(user)
        self.transcript.flush()  # durable before the model is called: a crash leaves a resumable session
        self.mutable_messages.append(user)
        yield user

        tally = _TurnTally()
        budget_target = parse_token_budget(prompt) if isinstance(prompt, str) else None
        params = self._loop_params(TokenBudgetTracker(budget_target) if budget_target else None)
        try:
            async with aclosing(query(list(self.mutable_messages), params)) as items:
                async for item in items:
                    if self._observe(item, tally):
                        yield item
        finally:
            self.transcript.flush()
        end = tally.end
        assert end is not None, "query_loop ended without a LoopEnd"
        terminal_event = TraceEvent(TraceKind.TERMINAL, end.turn_count, {"reason": end.terminal.value})
        self.trace.append(terminal_event)
        yield terminal_event
        _add_usage(self.total_usage, tally.usage)
        yield self._result(end, tally, started)

    def _observe(self, item: LoopItem, tally: _TurnTally) -> bool:
        """Take in one item from the loop; True when the caller should see it."""
        if isinstance(item, StreamEvent):
            return self.include_stream_events
        if isinstance(item, RequestStart):
            self.transcript.flush()  # what the last pass produced is on disk before the next call
            return False
        if isinstance(item, LoopEnd):
            tally.end = item
            return False
        if isinstance(item, TraceEvent):
            self.trace.append(item)
            if item.kind is TraceKind.MODEL_CALL:
                usage = item.data.get("usage") or {}
                _add_usage(tally.usage, usage)
                # Priced call by call: a fallback changes the model, a long prompt the band.
                tally.cost = tally.cost + usage_cost(str(item.data.get("model") or self.settings.model), usage)
            return True
        self._accept(item)
        tally.note_response(item)
        return True

    async def compact(self) -> CompactionResult:
        """Summarize the conversation now (a ``manual`` compact boundary); the summary request
        goes through the same model client. Raises ``CompactionError`` if it fails, with the
        history unchanged."""
        working = messages_after_compact_boundary(self.mutable_messages)
        result = await compact_conversation(
            working,
            deps=self.deps,
            settings=self.settings,
            model=self.settings.model,
            trigger=CompactTrigger.MANUAL,
            keep_recent_messages=self.settings.compact_keep_recent_messages,
            conversation_request=conversation_request(self._loop_params(), model=self.settings.model),
        )
        for message in result.messages:
            self._accept(message)
        self.trace.append(
            TraceEvent(
                TraceKind.COMPACTION,
                0,
                {
                    "tier": CompactionTier.MANUAL.value,
                    "boundary": result.boundary.uuid,
                    "tokens_before": result.pre_tokens,
                    "tokens_after": result.post_tokens,
                    "summary_requests": result.summary_requests,
                },
            )
        )
        self.transcript.flush()
        return result

    def _loop_params(self, token_budget: TokenBudgetTracker | None = None) -> LoopParams:
        """What a run of the loop (or a manual compaction's summary request) works with."""
        return LoopParams(
            deps=self.deps,
            settings=self.settings,
            tools=self.tools,
            rctx=ToolRunContext(
                tools=self.tools,
                tool_ctx=self.tool_context,
                deps=self.deps,
                can_use_tool=self._can_use_tool,
                hooks=self._hooks,
                hook_context=self._hook_context(),
                denials=self.permission_denials,
                max_concurrency=self.settings.max_tool_concurrency,
            ),
            hooks=self._hooks,
            hook_context=self._hook_context(),
            context=self.context_state,
            attachments=self.attachment_sources,
            token_budget=token_budget,
            normalizer=self._normalizer,
            emit_stream_events=self.include_stream_events,
        )

    def _hook_context(self) -> HookContext:
        return HookContext(
            cwd=self.workspace,
            session_id=self.session_id,
            transcript_path=self.transcript.path,
            timeout_s=self.settings.hook_timeout_s,
            environment=self.tool_context.environment,
        )

    def _accept(self, message: Message) -> None:
        """A message from the loop joins the history and the transcript (progress excepted).
        A tombstone withdraws its target from the history; the transcript keeps both."""
        if isinstance(message, ProgressMessage):
            return
        if isinstance(message, TombstoneMessage):
            self.mutable_messages = [m for m in self.mutable_messages if m.uuid != message.target_uuid]
            self._record(message)
            return
        if isinstance(message, SystemMessage) and message.subtype is SystemSubtype.COMPACT_BOUNDARY:
            self.mutable_messages.clear()
        self.mutable_messages.append(message)
        if message.uuid not in self._recorded:  # messages kept across a compaction are on file already
            self._record(message)

    def _record(self, message: Message) -> None:
        # The transcript is a chain: each message points at the one before it, a tool result
        # at the assistant message that asked for it, a compact boundary at nothing. A
        # tombstone stands outside the chain (it names its target instead).
        if not isinstance(message, TombstoneMessage):
            message.parent_uuid = self._chain_parent(message)
            self._last_recorded_uuid = message.uuid
        self._recorded.add(message.uuid)
        session_id, cwd = self.session_id, str(self.workspace)
        self.transcript.enqueue(lambda: {**message.to_record(), "session_id": session_id, "cwd": cwd})

    def _chain_parent(self, message: Message) -> str | None:
        if isinstance(message, SystemMessage) and message.subtype is SystemSubtype.COMPACT_BOUNDARY:
            return None
        if isinstance(message, UserMessage) and message.source_tool_assistant_uuid:
            return message.source_tool_assistant_uuid
        return self._last_recorded_uuid

    def _result(self, end: LoopEnd, tally: _TurnTally, started: datetime) -> QueryResult:
        text = tally.final_text()
        usage = tally.usage
        if end.terminal is Terminal.MAX_TURNS:
            subtype = ResultSubtype.ERROR_MAX_TURNS
        elif end.terminal in _SUCCESSFUL_ENDS and end.error is None:
            subtype = ResultSubtype.SUCCESS
        else:
            subtype = ResultSubtype.ERROR_DURING_EXECUTION
        elapsed = self.deps.clock() - started
        return QueryResult(
            subtype=subtype,
            result=text if subtype is ResultSubtype.SUCCESS else (end.error or text),
            usage=usage,
            num_turns=end.turn_count,
            duration_ms=int(elapsed.total_seconds() * 1000),
            total_cost_usd=round(tally.cost.usd, 6),
            terminal_reason=end.terminal,
            is_error=subtype is not ResultSubtype.SUCCESS,
            session_id=self.session_id,
            permission_denials=tuple(self.permission_denials),
        )

    def close(self) -> None:
        """Write what is queued and close the transcript."""
        self.transcript.close()


@dataclass
class _TurnTally:
    """What a turn adds up to while it runs: usage, the last response's blocks, the end."""

    usage: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_USAGE_KEYS, 0))
    cost: SessionCost = field(default_factory=SessionCost)
    last_response: list[AssistantMessage] = field(default_factory=list)
    end: LoopEnd | None = None

    def note_response(self, message: Message) -> None:
        if not isinstance(message, AssistantMessage) or message.is_api_error_message:
            return
        if self.last_response and self.last_response[-1].message["id"] != message.message["id"]:
            self.last_response = []
        self.last_response.append(message)

    def final_text(self) -> str:
        return "".join(b.get("text", "") for m in self.last_response for b in m.content if b.get("type") == "text")


def _add_usage(total: dict[str, int], usage: JsonDict) -> None:
    for key in _USAGE_KEYS:
        value = usage.get(key)
        if isinstance(value, int):
            total[key] = total.get(key, 0) + value
