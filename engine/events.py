"""What the loop yields besides messages: request starts, trace events and its end."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from engine.state import Terminal, Transition

__all__ = ["CompactionTier", "FallbackKind", "LoopEnd", "RequestStart", "ToolOutcome", "TraceEvent", "TraceKind"]


class TraceKind(StrEnum):
    PASS = "pass"
    MODEL_CALL = "model_call"
    RETRY = "retry"
    FALLBACK = "fallback"
    WITHHELD = "withheld"
    COMPACTION = "compaction"
    # The response's calls grouped into batches, all listed before any result is handed out.
    TOOL_BATCH = "tool_batch"
    # One batch has been started and none of its results is handed out yet: the instant an
    # interrupt answers every call of the batch (``{at: tools_running}`` in a scenario).
    TOOLS_RUNNING = "tools_running"
    TOOL_CALL = "tool_call"
    HOOK = "hook"
    TOKEN_BUDGET = "token_budget"
    ATTACHMENT = "attachment"
    TERMINAL = "terminal"


class FallbackKind(StrEnum):
    MODEL = "model"
    STREAMING = "streaming"
    # mid_stream_recovery "resume": the finished text kept, the model asked to continue it.
    RESUME = "resume"


class CompactionTier(StrEnum):
    """The context-shaping tiers, cheapest first, and the reactive compact of recovery."""

    TOOL_RESULT_BUDGET = "tool_result_budget"
    SNIP = "snip"
    MICROCOMPACT = "microcompact"
    COLLAPSE = "collapse"
    AUTOCOMPACT = "autocompact"
    REACTIVE_COMPACT = "reactive_compact"
    MANUAL = "manual"


class ToolOutcome(StrEnum):
    SUCCESS = "success"
    ERROR = "error"
    UNKNOWN_TOOL = "unknown_tool"
    INVALID_INPUT = "invalid_input"
    PERMISSION_DENIED = "permission_denied"
    HOOK_DENIED = "hook_denied"
    INTERRUPTED = "interrupted"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class RequestStart:
    """``stream_request_start``: a pass is about to shape context and call the model."""

    turn: int


@dataclass(frozen=True, slots=True)
class TraceEvent:
    """One fact about what the loop did, for the harness; never sent to the API or recorded
    in the transcript."""

    kind: TraceKind
    turn: int
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        # The event's own kind and turn win over any same-named key of its data.
        data = {k: v for k, v in self.data.items() if k not in ("kind", "turn")}
        return {"kind": self.kind.value, "turn": self.turn, **data}

    @classmethod
    def pass_start(cls, turn: int, transition: Transition | None, *, attempt: int | None = None) -> TraceEvent:
        data: dict[str, Any] = {"transition": transition.value if transition else None}
        if attempt is not None:
            data["attempt"] = attempt
        return cls(TraceKind.PASS, turn, data)


@dataclass(frozen=True, slots=True)
class LoopEnd:
    """The loop's last event: why it stopped (an async generator cannot return a value)."""

    terminal: Terminal
    turn_count: int
    error: str | None = None
