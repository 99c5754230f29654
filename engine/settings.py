"""The engine's settings: immutable for a session, every number overridable."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["DEFAULT_MODEL", "EngineSettings"]

# From the SDK's own model list, and not marked deprecated there.
DEFAULT_MODEL = "claude-sonnet-4-6"


@dataclass(frozen=True, kw_only=True)
class EngineSettings:
    """How a session talks to the model and runs its tools."""

    model: str = DEFAULT_MODEL
    system_prompt: str | None = None
    max_output_tokens: int = 32_000
    max_turns: int | None = None
    thinking: dict[str, Any] | None = None
    # Text placed before the conversation as a meta user turn (project notes, the date, ...).
    user_context: str | None = None
    max_tool_concurrency: int = 10
    streaming_tool_execution: bool = True
    bash_timeout_s: float = 120.0
    bash_max_output_chars: int = 30_000

    def __post_init__(self) -> None:
        if self.max_output_tokens < 1:
            raise ValueError(f"max_output_tokens must be at least 1, not {self.max_output_tokens}.")
        if self.max_turns is not None and self.max_turns < 1:
            raise ValueError(f"max_turns must be at least 1 (or None for no limit), not {self.max_turns}.")
        if self.max_tool_concurrency < 1:
            raise ValueError(f"max_tool_concurrency must be at least 1, not {self.max_tool_concurrency}.")
