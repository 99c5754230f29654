"""``LoopParams``: what one run of the loop needs, fixed for the run (its state across passes
lives in ``State``; what outlives a run lives on the ``QueryEngine`` and is reached from here)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.attachments import AttachmentSources, render_attachment_for_api
from engine.compact import ContentReplacementState, ContextCollapse
from engine.deps import QueryDeps
from engine.hooks import HookContext, Hooks
from engine.messages import Message
from engine.normalize import normalize_messages_for_api
from engine.normalize_cache import IncrementalNormalizer
from engine.orchestration import ToolRunContext
from engine.prompt_cache import PromptCacheState
from engine.settings import EngineSettings
from engine.token_budget import TokenBudgetTracker
from engine.tools.base import Tool

__all__ = ["ContextState", "LoopParams"]


@dataclass
class ContextState:
    """Context-shaping decisions that must stay the same on every later request of a session
    (so requests stay byte-stable): which tool results were replaced, which spans collapsed,
    the tools' first-rendered schemas and the latched betas and cache TTL."""

    replacements: ContentReplacementState = field(default_factory=ContentReplacementState)
    collapse: ContextCollapse = field(default_factory=ContextCollapse)
    prompt_cache: PromptCacheState = field(default_factory=PromptCacheState)


@dataclass(frozen=True, kw_only=True)
class LoopParams:
    """What one run of the loop needs."""

    deps: QueryDeps
    settings: EngineSettings
    tools: Mapping[str, Tool]
    rctx: ToolRunContext
    hooks: Hooks = field(default_factory=Hooks)
    hook_context: HookContext | None = None
    context: ContextState = field(default_factory=ContextState)
    attachments: AttachmentSources | None = None
    token_budget: TokenBudgetTracker | None = None
    # Raw stream events cost a hop through every generator layer: only pass them when asked.
    emit_stream_events: bool = False
    render_attachment: Callable[[dict[str, Any]], str | None] = render_attachment_for_api
    # The API view of the history, kept between passes (and prompts) so a pass normalizes only
    # what is new; None normalizes from scratch every time.
    normalizer: IncrementalNormalizer | None = None

    def normalize(self, messages: Sequence[Message]) -> list[dict[str, Any]]:
        """The ``messages`` of a request for ``messages``."""
        if self.normalizer is not None:
            return self.normalizer(messages)
        return normalize_messages_for_api(
            messages, thinking_enabled=self.settings.thinking is not None, render_attachment=self.render_attachment
        )

    def unmarked_prefix(self) -> Sequence[dict[str, Any]]:
        """After ``normalize``: the entries its result starts with that hold no cache mark
        (none known without a normalizer that keeps its view)."""
        return self.normalizer.unmarked_prefix if self.normalizer is not None else ()
