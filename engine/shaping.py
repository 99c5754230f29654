"""Step 1 of a pass, context shaping, and the reactive compact of recovery.

Tiers run cheapest first: tool-result budget → snip → microcompact → context collapse →
autocompact. Each is a projection of the working messages; only a compaction yields messages
(its boundary and summary), and every tier that acts records a ``compaction`` trace event.
A compaction's summary request may extend the loop's own request (``conversation_request``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence
from typing import Any

from engine.compact import (
    SINGLE_EXCHANGE_TEXT,
    CompactionError,
    CompactionResult,
    CompactTrigger,
    ConversationRequest,
    apply_tool_result_budget,
    compact_conversation,
    is_single_exchange,
    microcompact,
    should_autocompact,
    snip_old_rounds,
)
from engine.compact import (
    strip_media as strip_media_blocks,
)
from engine.events import CompactionTier, TraceEvent, TraceKind
from engine.messages import Message
from engine.model import ModelError, ModelErrorKind, ModelRequest
from engine.model_call import build_request
from engine.params import LoopParams
from engine.state import State
from engine.tokens import token_count_with_estimation

__all__ = ["ContextShaping", "ReactiveCompact", "conversation_request", "harness_failure", "shape_context"]


def conversation_request(params: LoopParams, *, model: str) -> ConversationRequest:
    """The loop's own request for some messages (``build_request``: system, tools, user context,
    latched betas and TTL), for a summary request to extend. It normalizes from scratch, which
    gives the same view: what is summarized may not extend the history the normalizer keeps."""
    scratch = dataclasses.replace(params, normalizer=None)
    max_tokens = params.settings.default_max_output_tokens

    def build(messages: Sequence[Message]) -> ModelRequest:
        return build_request(messages, scratch, model=model, max_tokens=max_tokens)

    return build


class ContextShaping:
    """One pass's shaping: run it, then read ``working``, ``tracking`` and ``compacted``."""

    def __init__(self, working: list[Message], state: State, params: LoopParams, *, turn: int, model: str) -> None:
        self.working = working
        self.tracking = state.auto_compact_tracking
        self.compacted = False
        # A failure that is not the API's (a cassette miss during the summary call).
        self.failure: ModelError | None = None
        self._params, self._turn, self._model = params, turn, model
        self._tokens: int | None = None
        # The count starts from the last response's usage, which still includes what snip and
        # microcompact removed since: later checks subtract it.
        self._freed = 0

    def token_count(self) -> int:
        if self._tokens is None:
            self._tokens = max(0, token_count_with_estimation(self.working) - self._freed)
        return self._tokens

    def _set(self, messages: list[Message]) -> None:
        self.working = messages
        self._tokens = None

    def _event(self, tier: CompactionTier, **data: Any) -> TraceEvent:
        return TraceEvent(TraceKind.COMPACTION, self._turn, {"tier": tier.value, **data})

    async def run(self) -> AsyncIterator[Message | TraceEvent]:
        params, settings, deps = self._params, self._params.settings, self._params.deps
        budget = apply_tool_result_budget(
            self.working,
            params.context.replacements,
            limit_chars=settings.tool_result_budget_chars,
            ctx=params.rctx.tool_ctx,
        )
        if budget.replaced_ids:
            yield self._event(CompactionTier.TOOL_RESULT_BUDGET, replaced=list(budget.replaced_ids))
        self._set(list(budget.messages))

        if settings.snip_threshold_tokens is not None:
            snip = snip_old_rounds(
                self.working, threshold_tokens=settings.snip_threshold_tokens, keep_rounds=settings.snip_keep_rounds
            )
            if snip.removed_uuids:
                yield self._event(CompactionTier.SNIP, removed=len(snip.removed_uuids), tokens_freed=snip.tokens_freed)
                self._set(list(snip.messages))
                self._freed += snip.tokens_freed

        cleared = microcompact(
            self.working,
            now=deps.clock(),
            gap_minutes=settings.microcompact_gap_minutes,
            keep_recent=settings.microcompact_keep_recent,
        )
        if cleared.cleared_ids:
            yield self._event(
                CompactionTier.MICROCOMPACT, cleared=list(cleared.cleared_ids), tokens_freed=cleared.tokens_freed
            )
            self._set(list(cleared.messages))
            self._freed += cleared.tokens_freed

        if settings.context_collapse:
            collapse = params.context.collapse
            staged = collapse.stage(
                self.working,
                token_count=self.token_count(),
                threshold=settings.autocompact_threshold,
                keep_rounds=settings.collapse_keep_rounds,
            )
            projected = collapse.project(self.working)
            if staged or len(projected) != len(self.working):
                yield self._event(
                    CompactionTier.COLLAPSE,
                    staged=staged,
                    messages_before=len(self.working),
                    messages_after=len(projected),
                )
            self._set(list(projected))

        tokens = self.token_count()
        if should_autocompact(tokens, settings, self.tracking):
            try:
                result = await compact_conversation(
                    self.working,
                    deps=deps,
                    settings=settings,
                    model=self._model,
                    trigger=CompactTrigger.AUTO,
                    keep_recent_messages=settings.compact_keep_recent_messages,
                    conversation_request=conversation_request(params, model=self._model),
                )
            except CompactionError as exc:
                if harness_failure(exc) is not None:
                    self.failure = harness_failure(exc)
                    return
                self.tracking = self.tracking.failed()
                yield self._event(
                    CompactionTier.AUTOCOMPACT,
                    failed=str(exc),
                    consecutive_failures=self.tracking.consecutive_failures,
                    summary_requests=exc.summary_requests,
                )
                return
            for message in result.messages:
                yield message
            yield self._event(CompactionTier.AUTOCOMPACT, **_compaction_data(result))
            self.tracking = self.tracking.succeeded()
            self.compacted = True
            self._freed = 0
            self._set(list(result.messages))


def shape_context(working: list[Message], state: State, params: LoopParams, *, turn: int, model: str) -> ContextShaping:
    """The shaping of one pass, ready to ``run()``."""
    return ContextShaping(working, state, params, turn=turn, model=model)


class ReactiveCompact:
    """Recovery's compaction: (optionally strip oversized media, then) summarize. A single
    exchange is not compacted for a prompt too long: there is nothing before the prompt to
    summarize. After ``run()``, ``messages`` holds the rebuilt history (empty when it failed or
    did not run) and ``failure`` a harness failure that must end the loop."""

    def __init__(
        self, working: Sequence[Message], params: LoopParams, *, turn: int, model: str, strip_media: bool = False
    ) -> None:
        self.messages: list[Message] = []
        self.failure: ModelError | None = None
        self._working, self._params = list(working), params
        self._turn, self._model, self._strip_media = turn, model, strip_media

    async def run(self) -> AsyncIterator[Message | TraceEvent]:
        messages = self._working
        data: dict[str, Any] = {"tier": CompactionTier.REACTIVE_COMPACT.value}
        if self._strip_media:
            stripped = strip_media_blocks(messages)
            data["media_stripped"] = stripped.stripped
            if not stripped.stripped:
                yield TraceEvent(TraceKind.COMPACTION, self._turn, {**data, "failed": "no media to strip"})
                return
            messages = list(stripped.messages)
        elif is_single_exchange(messages):
            yield TraceEvent(
                TraceKind.COMPACTION, self._turn, {**data, "failed": SINGLE_EXCHANGE_TEXT, "summary_requests": 0}
            )
            return
        try:
            result = await compact_conversation(
                messages,
                deps=self._params.deps,
                settings=self._params.settings,
                model=self._model,
                trigger=CompactTrigger.AUTO,
                keep_recent_messages=self._params.settings.compact_keep_recent_messages,
                conversation_request=conversation_request(self._params, model=self._model),
            )
        except CompactionError as exc:
            self.failure = harness_failure(exc)
            yield TraceEvent(
                TraceKind.COMPACTION,
                self._turn,
                {**data, "failed": str(exc), "summary_requests": exc.summary_requests},
            )
            return
        for message in result.messages:
            yield message
        yield TraceEvent(TraceKind.COMPACTION, self._turn, {**data, **_compaction_data(result)})
        self.messages = list(result.messages)


def harness_failure(exc: CompactionError) -> ModelError | None:
    """The harness failure (a cassette miss) behind a failed compaction, if that is what it was:
    it must reach the user as itself, not be counted as the summary failing."""
    cause = exc.cause
    return cause if isinstance(cause, ModelError) and cause.kind is ModelErrorKind.HARNESS else None


def _compaction_data(result: CompactionResult) -> dict[str, Any]:
    return {
        "boundary": result.boundary.uuid,
        "trigger": result.boundary.compact_metadata["trigger"] if result.boundary.compact_metadata else None,
        "tokens_before": result.pre_tokens,
        "tokens_after": result.post_tokens,
        "summary_requests": result.summary_requests,
        "kept": len(result.kept),
    }
