"""``query_loop``: the agent loop as a ``while True`` state machine (DESIGN §3.2–§3.3).

Each pass calls the model once, runs the tools it asked for and either ends with a
``Terminal`` (yielded last, in a ``LoopEnd``) or replaces the whole ``State`` and continues
with a named ``Transition``. It never recurses.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

from engine.abort import AbortedError
from engine.deps import QueryDeps
from engine.events import LoopEnd, RequestStart, ToolOutcome, TraceEvent, TraceKind
from engine.messages import (
    INTERRUPT_MESSAGE,
    INTERRUPT_MESSAGE_FOR_TOOL_USE,
    AssistantMessage,
    AttachmentMessage,
    AttachmentType,
    Message,
    SystemMessage,
    SystemSubtype,
    UserMessage,
)
from engine.model import BlockComplete, ModelError, ModelErrorKind, ModelRequest, ResponseEnd, StreamEvent
from engine.normalize import normalize_messages_for_api
from engine.orchestration import (
    INTERRUPTED_TOOL_RESULT,
    StreamingToolExecutor,
    ToolRun,
    ToolRunContext,
)
from engine.settings import EngineSettings
from engine.state import State, Terminal, Transition
from engine.tools.base import Tool

__all__ = ["LoopItem", "LoopParams", "messages_after_compact_boundary", "query", "query_loop"]

JsonDict = dict[str, Any]
LoopItem = Message | StreamEvent | RequestStart | TraceEvent | LoopEnd

_MAX_TOKENS_STOP_REASONS = frozenset({"max_tokens", "model_context_window_exceeded"})


@dataclass(frozen=True, kw_only=True)
class LoopParams:
    """What one run of the loop needs; fixed for the run."""

    deps: QueryDeps
    settings: EngineSettings
    tools: Mapping[str, Tool]
    rctx: ToolRunContext
    # Raw stream events cost a hop through every generator layer: only pass them when asked.
    emit_stream_events: bool = False


def messages_after_compact_boundary(messages: Sequence[Message]) -> list[Message]:
    """The messages from the last compact boundary on (the history the model still sees)."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, SystemMessage) and message.subtype is SystemSubtype.COMPACT_BOUNDARY:
            return list(messages[index:])
    return list(messages)


async def query(messages: Sequence[Message], params: LoopParams) -> AsyncIterator[LoopItem]:
    """``query_loop`` plus clean-up on every exit path: tools still running when the caller
    stops listening (or the loop fails) are cancelled, never leaked."""
    executors: list[StreamingToolExecutor] = []
    try:
        async with aclosing(query_loop(messages, params, _executors=executors)) as items:
            async for item in items:
                yield item
    finally:
        for executor in executors:
            if executor.running:
                executor.discard("Tool execution cancelled: the query ended")
            await executor.wait_closed()


async def query_loop(
    messages: Sequence[Message], params: LoopParams, *, _executors: list[StreamingToolExecutor] | None = None
) -> AsyncIterator[LoopItem]:
    """The loop. Yields stream events, messages and trace events; the last item is a
    ``LoopEnd`` carrying the ``Terminal``."""
    deps, settings, rctx = params.deps, params.settings, params.rctx
    abort = rctx.abort
    state = State(messages=tuple(messages))

    while True:
        turn = state.turn_count
        yield RequestStart(turn)
        yield TraceEvent.pass_start(turn, state.transition)
        working = messages_after_compact_boundary(state.messages)

        request = _build_request(working, params, state)
        call = _ModelCall(params)
        if _executors is not None:
            _executors.append(call.executor)
        async with aclosing(call.run(request)) as model_items:
            async for item in model_items:
                yield item
        yield call.trace_event(turn, request)

        # 4. Interrupted while streaming: answer every tool_use, then stop.
        if call.aborted:
            for run in await call.settle_tools(INTERRUPTED_TOOL_RESULT, ToolOutcome.INTERRUPTED):
                yield run.message
            yield UserMessage.create(deps, [{"type": "text", "text": INTERRUPT_MESSAGE}])
            yield _end(Terminal.ABORTED_STREAMING, turn)
            return

        if call.failure is not None:
            # A failure that is not the API's answer (a cassette miss, a harness bug): answer
            # any tool_use already yielded so the history stays valid, report, and stop.
            for run in await call.settle_tools(f"Tool execution skipped: {call.failure}", ToolOutcome.CANCELLED):
                yield run.message
            yield AssistantMessage.api_error(deps, f"Error: {call.failure}", error=ModelErrorKind.HARNESS.value)
            yield _end(Terminal.MODEL_ERROR, turn, error=str(call.failure))
            return

        # 5. No tool use, or the API answered with an error: the turn is over (an API error
        # ends without stop hooks; its partial tool calls were answered above).
        if not call.tool_blocks or call.api_error is not None:
            yield _end(Terminal.COMPLETED, turn, error=call.api_error_text)
            return

        # 6. Run the tools (already running if the executor streamed them).
        call.start_tools()
        for batch in call.executor.batches():
            yield TraceEvent(
                TraceKind.TOOL_BATCH,
                turn,
                {
                    "tools": [b["name"] for b in batch.blocks],
                    "ids": [b["id"] for b in batch.blocks],
                    "concurrent": batch.concurrent,
                },
            )
        runs: list[ToolRun] = []
        async for run in call.tool_results():
            runs.append(run)
            yield run.message
            yield TraceEvent(
                TraceKind.TOOL_CALL, turn, {"id": run.tool_use_id, "name": run.tool_name, "outcome": run.outcome.value}
            )

        if abort.aborted:
            yield UserMessage.create(deps, [{"type": "text", "text": INTERRUPT_MESSAGE_FOR_TOOL_USE}])
            yield _end(Terminal.ABORTED_TOOLS, turn)
            return

        stopped = next((run for run in runs if run.prevent_continuation), None)
        if stopped is not None:
            yield AttachmentMessage.create(
                deps,
                AttachmentType.HOOK_STOPPED_CONTINUATION,
                tool_use_id=stopped.tool_use_id,
                message=stopped.stop_reason or "A hook stopped the loop.",
            )
            yield _end(Terminal.HOOK_STOPPED, turn)
            return

        # 7. Attachments, the turn limit, and on to the next turn.
        if settings.max_turns is not None and turn + 1 > settings.max_turns:
            yield AttachmentMessage.create(deps, AttachmentType.MAX_TURNS_REACHED, max_turns=settings.max_turns,
                                           turn_count=turn + 1)
            yield _end(Terminal.MAX_TURNS, turn)
            return

        state = State(
            messages=(*working, *call.assistant_messages, *(run.message for run in runs)),
            turn_count=turn + 1,
            transition=Transition.NEXT_TURN,
            auto_compact_tracking=state.auto_compact_tracking,
        )


def _end(terminal: Terminal, turn: int, *, error: str | None = None) -> LoopEnd:
    return LoopEnd(terminal=terminal, turn_count=turn, error=error)


def _build_request(working: Sequence[Message], params: LoopParams, state: State) -> ModelRequest:
    settings = params.settings
    api_messages = normalize_messages_for_api(working)
    if settings.user_context:
        context = {"type": "text", "text": f"<system-reminder>\n{settings.user_context}\n</system-reminder>"}
        if api_messages and api_messages[0]["role"] == "user":
            api_messages[0]["content"].insert(0, context)
        else:
            api_messages.insert(0, {"role": "user", "content": [context]})
    return ModelRequest(
        model=settings.model,
        messages=api_messages,
        max_tokens=state.max_output_tokens_override or settings.default_max_output_tokens,
        system=settings.system_prompt,
        tools=[tool.api_schema() for tool in params.tools.values()],
        thinking=settings.thinking,
    )


class _ModelCall:
    """Step 3 of a pass: stream one response, wrap its blocks in assistant messages, hand
    tool_use blocks to the executor as they complete, and classify how it ended."""

    def __init__(self, params: LoopParams) -> None:
        self.params = params
        self.executor = StreamingToolExecutor(params.rctx)
        # Without streaming execution, tools are handed over only once the response is done.
        self._stream_tools = params.settings.streaming_tool_execution
        self.assistant_messages: list[AssistantMessage] = []
        self.tool_blocks: list[JsonDict] = []
        self._tool_owner: dict[str, AssistantMessage] = {}
        self.stop_reason: str | None = None
        self.usage: JsonDict = {}
        self.aborted = False
        self.failure: ModelError | None = None
        self.api_error: ModelError | None = None
        self.api_error_text: str | None = None

    async def run(self, request: ModelRequest) -> AsyncIterator[Message | StreamEvent]:
        deps = self.params.deps
        abort = self.params.rctx.abort
        events = deps.call_model.stream(request).__aiter__()
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
            if error.kind is ModelErrorKind.HARNESS:
                self.failure = error
            else:
                self.api_error = error
        finally:
            await events.aclose()
        if self.aborted or self.failure is not None:
            return
        if self.api_error is not None:
            # The API answered with an error: the partial response's tools are discarded
            # (their results say so) and the error is reported as an assistant message.
            for run in await self.settle_tools(f"API error: {self.api_error}", ToolOutcome.CANCELLED):
                yield run.message
            self.api_error_text = _api_error_text(self.api_error)
            yield self._api_error_message(self.api_error_text, self.api_error.kind)
        elif self.stop_reason in _MAX_TOKENS_STOP_REASONS:
            self.api_error_text = (
                f"Claude's response exceeded the {request.max_tokens} output token maximum. "
                "To configure this behavior, set max_output_tokens in the engine settings."
            )
            yield self._api_error_message(self.api_error_text, ModelErrorKind.MAX_OUTPUT_TOKENS)

    def _api_error_message(self, text: str, kind: ModelErrorKind) -> AssistantMessage:
        message = AssistantMessage.api_error(self.params.deps, text, error=kind.value)
        self.assistant_messages.append(message)
        return message

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
        """Results for every tool call of this response when it will not run normally: what
        already finished keeps its real result, the rest are answered with ``reason``."""
        self.executor.discard(reason, outcome=outcome)
        self.start_tools()  # calls not handed over yet are answered at once, never started
        return [run async for run in self.executor.results()]

    def trace_event(self, turn: int, request: ModelRequest) -> TraceEvent:
        data: JsonDict = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": len(request.messages),
            "query_source": request.query_source.value,
            "stop_reason": self.stop_reason,
            "usage": self.usage,
        }
        error = self.api_error or self.failure
        if error is not None:
            data["error"] = error.kind.value
        if self.aborted:
            data["aborted"] = True
        return TraceEvent(TraceKind.MODEL_CALL, turn, data)


def _api_error_text(error: ModelError) -> str:
    if error.kind is ModelErrorKind.PROMPT_TOO_LONG:
        return "Prompt is too long"
    if error.status is not None:
        return f"API Error: {error.status} {error.error_type or 'error'}: {error.message}"
    return f"API Error: {error.message}"
