"""Step 3 of a pass: one model call, with everything that happens inside it.

Retries (with backoff from the injected sleep and seeded RNG), model fallback after repeated
overloads, the streaming fallback when a stream breaks, and (with ``mid_stream_recovery``
"resume") the resume of a broken answer are not transitions: they happen here and show up as
their own trace events. A resume is one more attempt at the same answer, so it belongs here
with the retries, not among the loop's seven transitions (those start a new pass: a new
turn, a recovery from an answer that ended). Recoverable errors (prompt too long, media too
large, max output tokens) are withheld: prepared but not yielded, for the loop's recovery
chains to decide on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from engine.abort import AbortedError
from engine.events import FallbackKind, ToolOutcome, TraceEvent, TraceKind
from engine.messages import (
    AssistantMessage,
    Message,
    SystemLevel,
    SystemMessage,
    SystemSubtype,
    TombstoneMessage,
    UserMessage,
)
from engine.mid_stream import MID_STREAM_RESUME_TEXT, MidStreamRecovery, kept_partial_answer
from engine.model import (
    BlockComplete,
    ModelError,
    ModelErrorKind,
    ModelRequest,
    ResponseEnd,
    StreamBreak,
    StreamEvent,
)
from engine.orchestration import StreamingToolExecutor, ToolRun
from engine.params import LoopParams
from engine.retry import (
    RetryState,
    fallback_warning_text,
    is_retryable,
    retry_delay_s,
    retry_message_text,
    should_fall_back,
    strip_thinking_signatures,
)

__all__ = ["ModelCall", "Withheld", "build_request"]

JsonDict = dict[str, Any]
MAX_TOKENS_STOP_REASONS = frozenset({"max_tokens", "model_context_window_exceeded"})
_WITHHELD_KINDS = frozenset({ModelErrorKind.PROMPT_TOO_LONG, ModelErrorKind.MEDIA_TOO_LARGE})
STREAMING_FALLBACK_RESULT = "Streaming fallback - tool execution discarded"
MODEL_FALLBACK_RESULT = "Model fallback triggered"


@dataclass(frozen=True)
class Withheld:
    """A recoverable error kept back from the caller until recovery gives up."""

    kind: ModelErrorKind
    message: AssistantMessage


def build_request(working: Sequence[Message], params: LoopParams, *, model: str, max_tokens: int) -> ModelRequest:
    """The Messages API request for ``working``, with the user context prepended; tools sorted
    and frozen, betas and cache TTL latched for the session (``engine.prompt_cache``)."""
    settings = params.settings
    cache = params.context.prompt_cache
    betas, ttl = cache.latch(betas=settings.betas, ttl=settings.prompt_cache_ttl)
    api_messages = params.normalize(working)
    unmarked = params.unmarked_prefix()
    if settings.user_context:
        context = {"type": "text", "text": f"<system-reminder>\n{settings.user_context}\n</system-reminder>"}
        if api_messages and api_messages[0]["role"] == "user":
            # A new first entry: the normalized view is shared and must not change.
            first = api_messages[0]
            api_messages = [{"role": "user", "content": [context, *first["content"]]}, *api_messages[1:]]
            # The context block holds no mark: the new entry is unmarked if the old one was.
            unmarked = [api_messages[0], *unmarked[1:]] if unmarked else ()
        else:
            api_messages.insert(0, {"role": "user", "content": [context]})
            unmarked = [api_messages[0], *unmarked]
    return ModelRequest(
        model=model,
        messages=api_messages,
        max_tokens=max_tokens,
        system=settings.system_prompt,
        tools=cache.render_tools(params.tools.values()),
        thinking=settings.thinking,
        betas=betas,
        cache_ttl=ttl,
        raw_events=params.emit_stream_events,
        unmarked=unmarked,
    )


class ModelCall:
    """One model call of a pass: attempts, until an answer, an abort, or giving up."""

    def __init__(self, params: LoopParams, *, model: str, working: Sequence[Message], max_tokens: int) -> None:
        self.params = params
        self.model = model
        self.working = list(working)
        self.max_tokens = max_tokens
        self.request = build_request(self.working, params, model=model, max_tokens=max_tokens)
        self.executor = StreamingToolExecutor(params.rctx)
        self._stream_tools = params.settings.streaming_tool_execution
        self.assistant_messages: list[AssistantMessage] = []
        self.tool_blocks: list[JsonDict] = []
        self._tool_owner: dict[str, AssistantMessage] = {}
        self.stop_reason: str | None = None
        self.usage: JsonDict = {}
        self.aborted = False
        self.failure: ModelError | None = None
        self.api_error: ModelError | None = None
        self.withheld: Withheld | None = None
        self.error_text: str | None = None
        self._attempt_error: ModelError | None = None
        self.attempts = 0
        self.resumes = 0
        self.executors: list[StreamingToolExecutor] = [self.executor]

    @property
    def has_tool_use(self) -> bool:
        return bool(self.tool_blocks)

    async def run(self, turn: int) -> AsyncIterator[Message | StreamEvent | TraceEvent]:
        """Attempt the request until it is answered, aborted, or the error is final."""
        deps, settings = self.params.deps, self.params.settings
        retry = RetryState()
        while True:
            self.attempts += 1
            async for item in self._attempt():
                yield item
            if self.aborted or self.failure is not None:
                return
            error = self._attempt_error
            if error is None:
                break
            partial_ids = [m.uuid for m in self.assistant_messages]
            if self._resumes_broken_stream(error):
                kept = kept_partial_answer(self.assistant_messages)
                if kept:
                    for item in self._resume(error, kept, turn):
                        yield item
                    continue
                if error.stream_break is not StreamBreak.DROPPED:
                    # Nothing worth keeping: the same request, answered whole this time. A
                    # dropped connection is left to the streaming fallback below, as under RETRY.
                    for item in self._resend_without_streaming(error, turn, mid_stream_recovery=True):
                        yield item
                    continue
            if self._is_broken_stream(error):
                for item in self._resend_without_streaming(error, turn):
                    yield item
                continue
            retry = retry.next(error)
            if should_fall_back(
                retry,
                threshold=settings.overloaded_before_fallback,
                fallback_model=settings.fallback_model,
                current_model=self.model,
            ):
                assert settings.fallback_model is not None
                previous, self.model = self.model, settings.fallback_model
                # As the design has it: the attempt's open tool_use blocks are answered
                # ("Model fallback triggered") rather than withdrawn.
                for run in await self.settle_tools(MODEL_FALLBACK_RESULT, ToolOutcome.CANCELLED):
                    yield run.message
                self._reset_attempt()
                # Thinking signatures are bound to the model that wrote them.
                self.working = strip_thinking_signatures(self.working)
                self.request = build_request(self.working, self.params, model=self.model, max_tokens=self.max_tokens)
                retry = RetryState()
                yield TraceEvent(
                    TraceKind.FALLBACK,
                    turn,
                    {
                        "fallback": FallbackKind.MODEL.value,
                        "from": previous,
                        "to": self.model,
                        "tombstoned": len(partial_ids),
                    },
                )
                yield SystemMessage.create(
                    deps, SystemSubtype.WARNING, fallback_warning_text(self.model, previous), level=SystemLevel.WARNING
                )
                continue
            if is_retryable(error) and retry.attempt <= settings.max_retries:
                delay = retry_delay_s(
                    retry.attempt,
                    error=error,
                    rng=deps.rng,
                    base_s=settings.retry_base_delay_s,
                    max_s=settings.retry_max_delay_s,
                    jitter=settings.retry_jitter,
                )
                for item in self._abandon_attempt(f"API error: {error}"):
                    yield item
                yield TraceEvent(
                    TraceKind.RETRY,
                    turn,
                    {
                        "attempt": retry.attempt,
                        "error": error.kind.value,
                        "status": error.status,
                        "delay_ms": round(delay * 1000),
                        "tombstoned": len(partial_ids),
                    },
                )
                yield SystemMessage.create(
                    deps,
                    SystemSubtype.API_ERROR,
                    retry_message_text(error, retry.attempt, settings.max_retries, delay),
                    level=SystemLevel.ERROR,
                    data={
                        "attempt": retry.attempt,
                        "max_retries": settings.max_retries,
                        "retry_in_ms": round(delay * 1000),
                        "status": error.status,
                        "error": error.kind.value,
                    },
                )
                await deps.sleep(delay)
                continue
            async for item in self._give_up(error, turn):
                yield item
            return
        if self.stop_reason in MAX_TOKENS_STOP_REASONS:
            text = (
                f"Claude's response exceeded the {self.request.max_tokens} output token maximum. "
                "To configure this behavior, set max_output_tokens in the engine settings."
            )
            self.withheld = Withheld(
                ModelErrorKind.MAX_OUTPUT_TOKENS, self._error_message(text, ModelErrorKind.MAX_OUTPUT_TOKENS)
            )
            yield TraceEvent(TraceKind.WITHHELD, turn, {"error": ModelErrorKind.MAX_OUTPUT_TOKENS.value})

    async def _attempt(self) -> AsyncIterator[Message | StreamEvent]:
        self._attempt_error: ModelError | None = None
        abort = self.params.rctx.abort
        events = self.params.deps.call_model.stream(self.request).__aiter__()
        try:
            while True:
                try:
                    event = await abort.run(events.__anext__())
                except StopAsyncIteration:
                    break
                if isinstance(event, StreamEvent):
                    if self.params.emit_stream_events:
                        yield event
                elif isinstance(event, BlockComplete):
                    yield self._on_block(event)
                elif isinstance(event, ResponseEnd):
                    self._on_end(event)
        except AbortedError:
            self.aborted = True
        except ModelError as error:
            if error.kind is ModelErrorKind.HARNESS and not self._resumes_broken_stream(error):
                self.failure = error
            else:
                self._attempt_error = error
        finally:
            await events.aclose()

    def _is_broken_stream(self, error: ModelError) -> bool:
        return (
            error.kind is ModelErrorKind.CONNECTION_DROPPED
            and self.request.stream
            and self.params.settings.streaming_fallback
        )

    def _resumes_broken_stream(self, error: ModelError) -> bool:
        """Whether ``mid_stream_recovery`` "resume" takes this failure: a streamed request whose
        answer broke (an error event, a malformed event, a dropped connection). Resumes are
        bounded by ``max_retries``, so a stream that breaks every time cannot loop forever."""
        settings = self.params.settings
        return (
            settings.mid_stream_recovery is MidStreamRecovery.RESUME
            and error.stream_break is not None
            and self.request.stream
            and self.resumes < settings.max_retries
        )

    def _resend_without_streaming(
        self, error: ModelError, turn: int, *, mid_stream_recovery: bool = False
    ) -> list[Message | TraceEvent]:
        """The streaming fallback: the partial answer withdrawn, the same request sent again,
        answered as one JSON message. Taken for ``mid_stream_recovery`` "resume", the trace
        event also says how the stream broke (a malformed event's kind alone reads "harness")."""
        data: JsonDict = {
            "fallback": FallbackKind.STREAMING.value,
            "error": error.kind.value,
            "tombstoned": len(self.assistant_messages),
        }
        if mid_stream_recovery and error.stream_break is not None:
            data["stream_break"] = error.stream_break.value
        event = TraceEvent(TraceKind.FALLBACK, turn, data)
        items: list[Message | TraceEvent] = [event, *self._abandon_attempt(STREAMING_FALLBACK_RESULT)]
        self.request = dataclasses.replace(self.request, stream=False)
        return items

    def _resume(self, error: ModelError, kept: list[AssistantMessage], turn: int) -> list[Message | TraceEvent]:
        """Keep the finished text of a broken answer, withdraw the rest, and ask the model to
        continue: the next request is the history, the text kept and a meta user message."""
        self.resumes += 1
        event = TraceEvent(
            TraceKind.FALLBACK,
            turn,
            {
                "fallback": FallbackKind.RESUME.value,
                "error": error.kind.value,
                "stream_break": error.stream_break.value if error.stream_break else None,
                "kept": len(kept),
                "tombstoned": len(self.assistant_messages) - len(kept),
            },
        )
        items: list[Message | TraceEvent] = [event, *self._abandon_attempt(STREAMING_FALLBACK_RESULT, keep=kept)]
        resume = UserMessage.create(self.params.deps, MID_STREAM_RESUME_TEXT, is_meta=True)
        items.append(resume)
        self.working = [*self.working, *kept, resume]
        self.request = build_request(self.working, self.params, model=self.model, max_tokens=self.max_tokens)
        return items

    def _abandon_attempt(self, reason: str, *, keep: Sequence[AssistantMessage] = ()) -> list[Message]:
        """Withdraw what a failed attempt yielded: a tombstone per partial message (but those in
        ``keep``), and a fresh executor (the old one's tools are answered with ``reason`` and
        never reported)."""
        deps = self.params.deps
        kept = {m.uuid for m in keep}
        tombstones: list[Message] = [
            TombstoneMessage(uuid=deps.uuid(), timestamp=deps.now(), target_uuid=m.uuid)
            for m in self.assistant_messages
            if m.uuid not in kept
        ]
        self.executor.discard(reason)
        self._reset_attempt()
        return tombstones

    def _reset_attempt(self) -> None:
        """A clean slate for the next attempt: a fresh executor and nothing received yet."""
        self.executor = StreamingToolExecutor(self.params.rctx)
        self._stream_tools = self.params.settings.streaming_tool_execution
        self.executors.append(self.executor)
        self.assistant_messages, self.tool_blocks, self._tool_owner = [], [], {}
        self.stop_reason, self.usage = None, {}

    async def _give_up(self, error: ModelError, turn: int) -> AsyncIterator[Message | TraceEvent]:
        message_text = _api_error_text(error)
        if error.kind in _WITHHELD_KINDS and not self.tool_blocks:
            self.withheld = Withheld(error.kind, self._error_message(message_text, error.kind))
            yield TraceEvent(TraceKind.WITHHELD, turn, {"error": error.kind.value})
            return
        self.api_error, self.error_text = error, message_text
        # The partial response's tools are discarded (their results say so).
        for run in await self.settle_tools(f"API error: {error}", ToolOutcome.CANCELLED):
            yield run.message
        message = self._error_message(message_text, error.kind)
        self.assistant_messages.append(message)
        yield message

    def _error_message(self, text: str, kind: ModelErrorKind) -> AssistantMessage:
        return AssistantMessage.api_error(self.params.deps, text, error=kind.value)

    def _on_block(self, event: BlockComplete) -> AssistantMessage:
        deps = self.params.deps
        message = AssistantMessage(
            uuid=deps.uuid(),
            timestamp=deps.now(),
            request_id=event.request_id,
            message={
                "id": event.message_id,
                "type": "message",
                "role": "assistant",
                "model": event.model,
                "content": [event.block],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": event.usage,
            },
        )
        self.assistant_messages.append(message)
        if event.block["type"] == "tool_use":
            self.tool_blocks.append(event.block)
            self._tool_owner[event.block["id"]] = message
            if self._stream_tools:
                self.executor.add_tool(event.block, message)
        return message

    def _on_end(self, event: ResponseEnd) -> None:
        # The stop reason and final usage arrive after the blocks: they belong on the last
        # message of the response, as the API's own stream assembles it.
        self.stop_reason = event.stop_reason
        self.usage = event.usage
        if self.assistant_messages:
            last = self.assistant_messages[-1].message
            last["stop_reason"] = event.stop_reason
            last["stop_sequence"] = event.stop_sequence
            last["usage"] = event.usage

    def start_tools(self) -> None:
        """Hand the response's tool calls to the executor if streaming did not already."""
        if not self._stream_tools:
            for block in self.tool_blocks:
                self.executor.add_tool(block, self._tool_owner[block["id"]])
            self._stream_tools = True

    def tool_results(self) -> AsyncIterator[ToolRun]:
        return self.executor.results()

    async def settle_tools(self, reason: str, outcome: ToolOutcome) -> list[ToolRun]:
        """Results for every tool call of this response when it will not run normally: each is
        answered with ``reason``, even one whose tool already finished while the model streamed
        (whether it had is a matter of timing; none of them was handed out)."""
        self.executor.discard(reason, outcome=outcome)
        self.start_tools()  # calls not handed over yet are answered at once, never started
        return [run async for run in self.executor.results()]

    def trace_event(self, turn: int) -> TraceEvent:
        request = self.request
        data: JsonDict = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": len(request.messages),
            "query_source": request.query_source.value,
            "stream": request.stream,
            "attempts": self.attempts,
            "stop_reason": self.stop_reason,
            "usage": self.usage,
        }
        error = self.api_error or self.failure or (self.withheld and self.withheld.kind)
        if isinstance(error, ModelError):
            data["error"] = error.kind.value
        elif error is not None:
            data["error"] = error.value
        if self.aborted:
            data["aborted"] = True
        return TraceEvent(TraceKind.MODEL_CALL, turn, data)


def _api_error_text(error: ModelError) -> str:
    if error.kind is ModelErrorKind.PROMPT_TOO_LONG:
        return "Prompt is too long"
    if error.status is not None:
        return f"API Error: {error.status} {error.error_type or 'error'}: {error.message}"
    return f"API Error: {error.message}"
