"""The loop's state machine vocabulary: ``State``, ``Transition``, ``Terminal``."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from engine.compact.autocompact import AutoCompactTracking
from engine.messages import Message

__all__ = ["State", "Terminal", "Transition"]


class Transition(StrEnum):
    """Why the loop ``continue``d into this pass (exactly seven)."""

    NEXT_TURN = "next_turn"
    COLLAPSE_DRAIN_RETRY = "collapse_drain_retry"
    REACTIVE_COMPACT_RETRY = "reactive_compact_retry"
    MAX_OUTPUT_TOKENS_ESCALATE = "max_output_tokens_escalate"
    MAX_OUTPUT_TOKENS_RECOVERY = "max_output_tokens_recovery"
    STOP_HOOK_BLOCKING = "stop_hook_blocking"
    TOKEN_BUDGET_CONTINUATION = "token_budget_continuation"


class Terminal(StrEnum):
    """Why the loop returned (exactly ten)."""

    COMPLETED = "completed"
    ABORTED_STREAMING = "aborted_streaming"
    ABORTED_TOOLS = "aborted_tools"
    PROMPT_TOO_LONG = "prompt_too_long"
    MODEL_ERROR = "model_error"
    IMAGE_ERROR = "image_error"
    BLOCKING_LIMIT = "blocking_limit"
    STOP_HOOK_PREVENTED = "stop_hook_prevented"
    HOOK_STOPPED = "hook_stopped"
    MAX_TURNS = "max_turns"


@dataclass(frozen=True, kw_only=True)
class State:
    """Everything that changes between passes. Replaced whole at every ``continue``, never
    mutated, so each pass starts from one consistent snapshot."""

    messages: tuple[Message, ...]
    turn_count: int = 1
    transition: Transition | None = None
    max_output_tokens_recovery_count: int = 0
    has_attempted_reactive_compact: bool = False
    max_output_tokens_override: int | None = None
    stop_hook_active: bool = False
    auto_compact_tracking: AutoCompactTracking = field(default_factory=AutoCompactTracking)
