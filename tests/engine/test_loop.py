"""query_loop's transitions and terminals, each reached for real through the SDK."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx2

from engine import (
    AssistantMessage,
    AttachmentMessage,
    EngineSettings,
    HookDecision,
    HookResult,
    Hooks,
    ResultSubtype,
    Terminal,
    TraceKind,
    Transition,
    UserMessage,
    default_tools,
)
from engine.hooks import HookInput
from replay.fake.model import FakeModel
from tests.engine.conftest import (
    assert_next_request_valid,
    assert_pairing,
    make_session,
)
from tests.engine.probe_tools import Journal, ProbeTool, probe

DONE = {"content": [{"text": "Done."}]}


def test_there_are_exactly_the_seven_transitions_and_ten_terminals_of_the_design() -> None:
    assert [t.value for t in Transition] == [
        "next_turn",
        "collapse_drain_retry",
        "reactive_compact_retry",
        "max_output_tokens_escalate",
        "max_output_tokens_recovery",
        "stop_hook_blocking",
        "token_budget_continuation",
    ]
    assert [t.value for t in Terminal] == [
        "completed",
        "aborted_streaming",
        "aborted_tools",
        "prompt_too_long",
        "model_error",
        "image_error",
        "blocking_limit",
        "stop_hook_prevented",
        "hook_stopped",
        "max_turns",
    ]


async def test_max_turns_stops_before_the_turn_that_would_exceed_it(session_root: Path) -> None:
    journal = Journal()
    turns = [{"content": [probe("one")]}, {"content": [probe("two")]}, DONE]
    session = make_session(session_root, turns, tools=[ProbeTool(journal)], settings=EngineSettings(max_turns=2))
    result = await session.submit("go")

    assert result.terminal_reason is Terminal.MAX_TURNS
    assert result.subtype is ResultSubtype.ERROR_MAX_TURNS and result.num_turns == 2
    assert len(session.requests) == 2
    attachment = session.engine.mutable_messages[-1]
    assert isinstance(attachment, AttachmentMessage)
    assert attachment.attachment == {"type": "max_turns_reached", "max_turns": 2, "turn_count": 3}
    assert_next_request_valid(session)


async def test_a_script_that_runs_out_ends_in_model_error_naming_the_cause(session_root: Path) -> None:
    journal = Journal()
    session = make_session(session_root, [{"content": [probe("only")]}], tools=[ProbeTool(journal)])
    result = await session.submit("go")

    assert result.terminal_reason is Terminal.MODEL_ERROR
    assert result.is_error and "no scripted turn" in result.result
    assert "Connection error" not in result.result
    assert_next_request_valid(session)


async def test_a_pre_tool_hook_that_stops_continuation_ends_in_hook_stopped(session_root: Path) -> None:
    journal = Journal()

    def stop_after_this(hook_input: HookInput) -> HookResult:
        return HookResult(prevent_continuation=True, stop_reason="Policy: one probe per session.")

    session = make_session(
        session_root,
        [{"content": [probe("one")]}, DONE],
        tools=[ProbeTool(journal)],
        hooks=Hooks(pre_tool_use=[stop_after_this]),
    )
    result = await session.submit("go")

    assert result.terminal_reason is Terminal.HOOK_STOPPED
    assert ("end", "one") in journal.entries  # the tool still ran; only the loop stopped
    assert len(session.requests) == 1
    stop = session.engine.mutable_messages[-1]
    assert isinstance(stop, AttachmentMessage)
    assert stop.attachment["type"] == "hook_stopped_continuation"
    assert stop.attachment["message"] == "Policy: one probe per session."


async def test_a_pre_tool_hook_can_deny_a_call_and_the_loop_goes_on(session_root: Path) -> None:
    journal = Journal()

    def deny(hook_input: HookInput) -> HookResult:
        return HookResult(decision=HookDecision.DENY, reason="not today")

    session = make_session(
        session_root,
        [{"content": [probe("one")]}, DONE],
        tools=[ProbeTool(journal)],
        hooks=Hooks(pre_tool_use=[deny]),
    )
    result = await session.submit("go")

    assert journal.entries == []
    (block,) = session.tool_results().values()
    assert block["is_error"] and "not today" in block["content"]
    assert result.terminal_reason is Terminal.COMPLETED


async def test_a_pre_tool_hook_can_rewrite_the_input_without_changing_what_is_recorded(session_root: Path) -> None:
    journal = Journal()

    def rename(hook_input: HookInput) -> HookResult:
        return HookResult(updated_input={**hook_input.tool_input, "label": "renamed"})

    session = make_session(
        session_root,
        [{"content": [probe("original")]}, DONE],
        tools=[ProbeTool(journal)],
        hooks=Hooks(pre_tool_use=[rename]),
    )
    await session.submit("go")

    assert journal.entries == [("start", "renamed"), ("end", "renamed")]
    sent_tool_use = session.requests[1]["messages"][1]["content"][0]
    assert sent_tool_use["input"] == {"label": "original"}


async def test_abort_while_streaming_answers_every_tool_use_and_ends_aborted_streaming(session_root: Path) -> None:
    journal = Journal()
    turn = {"content": [probe("first", wait_for="never"), {"text": "more text that never arrives"}]}
    session = make_session(session_root, [turn, DONE], tools=[ProbeTool(journal)])

    def abort_on_first_tool_use(item: Any, engine: Any) -> None:
        if isinstance(item, AssistantMessage) and item.content[0]["type"] == "tool_use":
            engine.abort()

    result = await session.submit("go", on_output=abort_on_first_tool_use)

    assert result.terminal_reason is Terminal.ABORTED_STREAMING
    (block,) = session.tool_results().values()
    assert block["is_error"] and block["content"] == "Interrupted by user"
    last = session.engine.mutable_messages[-1]
    assert isinstance(last, UserMessage) and last.content[0]["text"] == "[Request interrupted by user]"
    # No text block after the tool_use was taken: the stream stopped where the abort came.
    texts = [
        b
        for m in session.engine.mutable_messages
        if isinstance(m, AssistantMessage)
        for b in m.content
        if b["type"] == "text"
    ]
    assert texts == []
    assert_next_request_valid(session)


async def test_abort_interrupts_a_stream_that_is_blocked_waiting_for_bytes(session_root: Path) -> None:
    gate = asyncio.Event()

    class StallingTransport(httpx2.AsyncBaseTransport):
        """Sends the first three events, then waits for bytes that never come."""

        def __init__(self, fake: FakeModel) -> None:
            self.fake = fake

        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            answer = self.fake.respond(request.method, request.url.path, {}, await request.aread())

            async def stream() -> Any:
                for chunk in answer.chunks[:3]:
                    yield chunk
                await gate.wait()

            return httpx2.Response(answer.status, headers=answer.headers, content=stream())

    session = make_session(session_root, [{"content": [{"text": "hello " * 30}]}])
    session.engine.deps.call_model.client._client._transport = StallingTransport(session.fake)

    async def interrupt_soon() -> None:
        for _ in range(20):
            await asyncio.sleep(0)
        session.engine.abort()

    interrupter = asyncio.create_task(interrupt_soon())
    result = await asyncio.wait_for(session.submit("go"), timeout=5)
    await interrupter

    assert result.terminal_reason is Terminal.ABORTED_STREAMING
    assert not gate.is_set()


async def test_abort_while_tools_run_answers_every_tool_use_and_ends_aborted_tools(session_root: Path) -> None:
    journal = Journal()
    turn = {"content": [probe("quick"), probe("stuck", wait_for="never"), probe("queued", name="Mutate")]}
    tools = [ProbeTool(journal), ProbeTool(journal, name="Mutate", read_only=False)]
    session = make_session(session_root, [turn, DONE], tools=tools)

    def abort_after_first_result(item: Any, engine: Any) -> None:
        if getattr(item, "kind", None) is TraceKind.TOOL_CALL:
            engine.abort()

    result = await session.submit("go", on_output=abort_after_first_result)

    assert result.terminal_reason is Terminal.ABORTED_TOOLS
    contents = [b["content"] for b in session.tool_results().values()]
    assert contents == ["Probe quick done", "Interrupted by user", "Interrupted by user"]
    assert ("start", "queued") not in journal.entries
    last = session.engine.mutable_messages[-1]
    assert isinstance(last, UserMessage)
    assert last.content[0]["text"] == "[Request interrupted by user for tool use]"
    assert_next_request_valid(session)


async def test_after_an_abort_the_next_prompt_sends_a_valid_request(session_root: Path) -> None:
    journal = Journal()
    turn = {"content": [probe("stuck", wait_for="never")]}
    session = make_session(session_root, [turn, {"content": [{"text": "Recovered."}]}], tools=[ProbeTool(journal)])

    def abort_when_tools_run(item: Any, engine: Any) -> None:
        if getattr(item, "kind", None) is TraceKind.TOOL_BATCH:
            engine.abort()

    await session.submit("go", on_output=abort_when_tools_run)
    result = await session.submit("try again")

    assert result.result == "Recovered." and result.terminal_reason is Terminal.COMPLETED
    assert_pairing(session.requests[-1]["messages"])


async def test_a_mid_stream_error_after_a_tool_use_leaves_no_tool_use_unanswered(session_root: Path) -> None:
    journal = Journal()
    turn = {
        "fault": "stream_error",
        "after_events": 6,
        "error_type": "overloaded_error",
        "message": "Overloaded",
        "content": [{"tool_use": {"name": "Probe", "input": {"label": "x"}}}, {"text": "never"}],
    }
    session = make_session(session_root, [turn], tools=[ProbeTool(journal)], settings=EngineSettings(max_retries=0))
    result = await session.submit("go")

    assert result.terminal_reason is Terminal.COMPLETED and result.is_error
    error = [m for m in session.engine.mutable_messages if isinstance(m, AssistantMessage)][-1]
    assert error.is_api_error_message and error.error == "overloaded"
    assert_next_request_valid(session)


async def test_max_tokens_with_recovery_off_is_reported_after_the_partial_answer(session_root: Path) -> None:
    turn = {"content": [{"text": "a long answer that gets cut"}], "stop_reason": "max_tokens"}
    settings = EngineSettings(
        max_output_tokens=50, max_output_tokens_escalation=False, max_output_tokens_recovery_limit=0
    )
    session = make_session(session_root, [turn], settings=settings)
    result = await session.submit("go")

    messages = [m for m in session.engine.mutable_messages if isinstance(m, AssistantMessage)]
    assert messages[0].content[0]["text"] == "a long answer that gets cut"
    assert messages[-1].error == "max_output_tokens" and "50 output token maximum" in messages[-1].content[0]["text"]
    assert result.terminal_reason is Terminal.COMPLETED and result.is_error


async def test_stopping_iteration_early_cancels_running_tools(session_root: Path) -> None:
    journal = Journal()
    turn = {"content": [probe("stuck", wait_for="never")]}
    session = make_session(session_root, [turn, DONE], tools=[ProbeTool(journal)])

    stream = session.engine.submit_message("go")
    async for item in stream:
        if getattr(item, "kind", None) is TraceKind.TOOL_BATCH:
            break
    await stream.aclose()
    await asyncio.sleep(0)
    running = [t for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()]
    assert running == []
    assert default_tools()  # the engine stays usable; nothing leaked into module state


async def test_a_response_the_sdk_cannot_parse_ends_in_model_error(session_root: Path) -> None:
    turn = {"fault": "malformed_event", "after_events": 3, "content": [{"text": "hello there"}]}
    session = make_session(session_root, [turn])
    result = await session.submit("go")

    assert result.terminal_reason is Terminal.MODEL_ERROR
    assert "JSONDecodeError" in result.result
    assert session.trace(TraceKind.RETRY) == []
