"""The engine's settings: immutable for a session, every number overridable.

The defaults are the numbers Claude Code uses (docs/loop.md describes what each one does).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from engine.mid_stream import MidStreamRecovery
from engine.prompt_cache import CacheTTL

__all__ = ["DEFAULT_MODEL", "CompactRequest", "EngineSettings", "MidStreamRecovery"]

# From the SDK's own model list, and not marked deprecated there.
DEFAULT_MODEL = "claude-sonnet-4-6"


class CompactRequest(StrEnum):
    """How a compaction's summary request is built (docs/loop.md, context shaping)."""

    # A request of its own: the summarizer's system prompt, no tools (the seeds' loop).
    OWN_PROMPT = "own_prompt"
    # The conversation's own request (system, tools, messages) with the instruction appended
    # as the last user turn, so it reads the prompt cache the loop wrote (today's Claude Code).
    CONVERSATION_PREFIX = "conversation_prefix"


@dataclass(frozen=True, kw_only=True)
class EngineSettings:
    """How a session talks to the model, runs its tools and keeps its context in bounds."""

    model: str = DEFAULT_MODEL
    system_prompt: str | None = None
    max_turns: int | None = None
    thinking: dict[str, Any] | None = None
    # Text placed before the conversation as a meta user turn (project notes, the date, ...).
    user_context: str | None = None
    # Sent as the anthropic-beta header; latched for the session once sent.
    betas: tuple[str, ...] = ()
    # The prompt-cache TTL put on the cache_control marks; None is the API's default (5 minutes).
    prompt_cache_ttl: CacheTTL | None = None

    # Output tokens. None means: 8,000 while escalation is on (so escalating has room), else 32,000.
    max_output_tokens: int | None = None
    max_output_tokens_escalation: bool = True
    escalated_max_output_tokens: int = 64_000
    max_output_tokens_recovery_limit: int = 3

    # Retries inside the model call.
    max_retries: int = 10
    retry_base_delay_s: float = 0.5
    retry_max_delay_s: float = 32.0
    retry_jitter: float = 0.25
    fallback_model: str | None = None
    overloaded_before_fallback: int = 3
    streaming_fallback: bool = True

    # A stream that breaks after its answer began: RETRY tombstones the partial answer and sends
    # the request again (the design's streaming fallback); RESUME keeps the finished text and asks
    # the model to continue it, as the Claude Code CLI does (engine.mid_stream, docs/loop.md).
    mid_stream_recovery: MidStreamRecovery = MidStreamRecovery.RETRY

    # Context shaping.
    context_window: int = 200_000
    tool_result_budget_chars: int = 200_000
    snip_threshold_tokens: int | None = None
    snip_keep_rounds: int = 10
    microcompact_gap_minutes: float = 60.0
    microcompact_keep_recent: int = 5
    context_collapse: bool = False
    collapse_keep_rounds: int = 4
    autocompact: bool = True
    autocompact_buffer_tokens: int = 13_000
    blocking_buffer_tokens: int = 3_000
    summary_max_output_tokens: int = 20_000
    autocompact_max_failures: int = 3
    compact_prompt_too_long_retries: int = 3
    compact_keep_recent_messages: int = 0
    compact_request: CompactRequest = CompactRequest.OWN_PROMPT
    reactive_compact: bool = True

    # Memory files read in the background at loop entry and attached once (globs, in the workspace).
    memory_paths: tuple[str, ...] = ("CLAUDE.md",)

    # Tools and hooks.
    max_tool_concurrency: int = 10
    streaming_tool_execution: bool = True
    bash_timeout_s: float = 120.0
    bash_max_output_chars: int = 30_000
    hook_timeout_s: float = 60.0

    def __post_init__(self) -> None:
        if self.max_output_tokens is not None and self.max_output_tokens < 1:
            raise ValueError(f"max_output_tokens must be at least 1, not {self.max_output_tokens}.")
        if self.max_turns is not None and self.max_turns < 1:
            raise ValueError(f"max_turns must be at least 1 (or None for no limit), not {self.max_turns}.")
        if self.max_tool_concurrency < 1:
            raise ValueError(f"max_tool_concurrency must be at least 1, not {self.max_tool_concurrency}.")
        if self.prompt_cache_ttl not in (None, "5m", "1h"):
            raise ValueError(f"prompt_cache_ttl must be '5m' or '1h' (or None), not {self.prompt_cache_ttl!r}.")
        if self.max_retries < 0:
            raise ValueError(f"max_retries cannot be negative, not {self.max_retries}.")
        # A named choice is written as plain text in a scenario or session.json; stored as the enum.
        for name, choices in (("mid_stream_recovery", MidStreamRecovery), ("compact_request", CompactRequest)):
            value = getattr(self, name)
            if value not in tuple(choices):
                listed = " or ".join(repr(choice.value) for choice in choices)
                raise ValueError(f"{name} must be {listed}, not {value!r}.")
            object.__setattr__(self, name, choices(value))

    @property
    def default_max_output_tokens(self) -> int:
        """The max_tokens of a normal request."""
        if self.max_output_tokens is not None:
            return self.max_output_tokens
        return 8_000 if self.max_output_tokens_escalation else 32_000

    @property
    def effective_context_window(self) -> int:
        """The window minus the room the summary's own answer needs."""
        return self.context_window - min(self.default_max_output_tokens, self.summary_max_output_tokens)

    @property
    def autocompact_threshold(self) -> int:
        return self.effective_context_window - self.autocompact_buffer_tokens

    @property
    def blocking_limit(self) -> int:
        return self.effective_context_window - self.blocking_buffer_tokens
