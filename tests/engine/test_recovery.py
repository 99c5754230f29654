"""Recovery chains, retries and fallbacks: each transition and terminal reached through the real
SDK by a fake-model script, asserting the exact sequence of transitions of the run."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from engine import (
    AssistantMessage,
    EngineSettings,
    SystemMessage,
    Terminal,
    TombstoneMessage,
    TraceKind,
    UserMessage,
)
from engine.compact import SINGLE_EXCHANGE_TEXT
from engine.continuation import MAX_OUTPUT_TOKENS_RECOVERY_TEXT
from engine.hooks import Hooks, StopHookInput, StopHookResult
from tests.engine.conftest import Session, assert_pairing, make_session

PTL = {
    "fault": "http_error",
    "status": 400,
    "error_type": "invalid_request_error",
    "message": "prompt is too long: 210000 tokens > 200000 maximum",
}
OVERLOADED = {"fault": "http_error", "status": 529, "error_type": "overloaded_error", "message": "Overloaded"}
SUMMARY = {"content": [{"text": "Summary: the user asked for help and we discussed it."}]}
# A tool round before the error: something before the pending request to summarize.
ROUND = {"content": [{"tool_use": {"name": "Glob", "input": {"pattern": "*"}}}]}
DONE = {"content": [{"text": "Done."}]}


def transitions(session: Session) -> list[Any]:
    return [e.data["transition"] for e in session.trace(TraceKind.PASS)]


def assert_every_request_valid(session: Session) -> None:
    for body in session.requests:
        assert_pairing(body["messages"])


def cut(text: str = "partial") -> dict[str, Any]:
    return {"content": [{"text": text}], "stop_reason": "max_tokens"}


async def test_max_tokens_five_times_escalates_then_recovers_three_times_then_surfaces(session_root: Path) -> None:
    session = make_session(session_root, [cut("a"), cut("b"), cut("c"), cut("d"), cut("e")])
    result = await session.submit("write a lot")

    assert transitions(session) == [
        None,
        "max_output_tokens_escalate",
        "max_output_tokens_recovery",
        "max_output_tokens_recovery",
        "max_output_tokens_recovery",
    ]
    attempts = [e.data.get("attempt") for e in session.trace(TraceKind.PASS)]
    assert attempts == [None, None, 1, 2, 3]
    assert [r["max_tokens"] for r in session.requests] == [8_000, 64_000, 64_000, 64_000, 64_000]
    assert result.terminal_reason is Terminal.COMPLETED and result.is_error
    assert "output token maximum" in result.result
    assert_every_request_valid(session)


async def test_escalation_resends_the_same_request_and_withdraws_the_cut_answer(session_root: Path) -> None:
    session = make_session(session_root, [cut("cut short"), {"content": [{"text": "the whole answer"}]}])
    result = await session.submit("write")

    first, second = session.requests
    assert first["messages"] == second["messages"]
    assert (first["max_tokens"], second["max_tokens"]) == (8_000, 64_000)
    tombstones = [o for o in session.outputs if isinstance(o, TombstoneMessage)]
    assert len(tombstones) == 1
    assert result.result == "the whole answer"
    texts = [b["text"] for m in session.engine.mutable_messages if isinstance(m, AssistantMessage) for b in m.content]
    assert texts == ["the whole answer"]


async def test_recovery_keeps_the_partial_answer_and_asks_to_resume(session_root: Path) -> None:
    session = make_session(session_root, [cut("one"), cut("two"), {"content": [{"text": "three"}]}])
    result = await session.submit("write")

    third = session.requests[2]["messages"]
    assert third[-2] == {"role": "assistant", "content": [{"type": "text", "text": "two"}]}
    resume = {"type": "text", "text": MAX_OUTPUT_TOKENS_RECOVERY_TEXT, "cache_control": {"type": "ephemeral"}}
    assert third[-1] == {"role": "user", "content": [resume]}
    assert result.result == "three" and transitions(session)[-1] == "max_output_tokens_recovery"


async def test_prompt_too_long_compacts_reactively_once_and_retries(session_root: Path) -> None:
    session = make_session(session_root, [ROUND, PTL, SUMMARY, DONE])
    result = await session.submit("hello")

    assert transitions(session) == [None, "next_turn", "reactive_compact_retry"]
    assert result.result == "Done." and result.terminal_reason is Terminal.COMPLETED
    summary_request = session.requests[2]
    assert "tools" not in summary_request
    retried = session.requests[3]["messages"]
    assert "Summary: the user asked for help" in retried[0]["content"][0]["text"]
    boundary = session.engine.mutable_messages[0]
    assert isinstance(boundary, SystemMessage) and boundary.subtype.value == "compact_boundary"
    compactions = session.trace(TraceKind.COMPACTION)
    assert [c.data["tier"] for c in compactions] == ["reactive_compact"]
    assert_every_request_valid(session)


async def test_prompt_too_long_again_after_reactive_compact_ends_prompt_too_long(session_root: Path) -> None:
    session = make_session(session_root, [ROUND, PTL, SUMMARY, PTL])
    result = await session.submit("hello")

    assert transitions(session) == [None, "next_turn", "reactive_compact_retry"]
    assert result.terminal_reason is Terminal.PROMPT_TOO_LONG
    error = session.engine.mutable_messages[-1]
    assert isinstance(error, AssistantMessage) and error.content[0]["text"] == "Prompt is too long"


async def test_prompt_too_long_on_a_single_exchange_ends_without_a_summary_request(session_root: Path) -> None:
    # Only the pending prompt: a summary request would carry that same too-long prompt.
    calls: list[StopHookInput] = []
    session = make_session(session_root, [PTL], hooks=Hooks(stop=[calls.append]))
    result = await session.submit("hello")

    assert result.terminal_reason is Terminal.PROMPT_TOO_LONG
    assert len(session.requests) == 1 and transitions(session) == [None]
    assert calls == []
    error = session.engine.mutable_messages[-1]
    assert isinstance(error, AssistantMessage) and error.content[0]["text"] == "Prompt is too long"
    (compaction,) = session.trace(TraceKind.COMPACTION)
    assert compaction.data == {"tier": "reactive_compact", "failed": SINGLE_EXCHANGE_TEXT, "summary_requests": 0}


async def test_prompt_too_long_after_a_completed_exchange_compacts_reactively(session_root: Path) -> None:
    session = make_session(session_root, [DONE, PTL, SUMMARY, {"content": [{"text": "Second."}]}])
    await session.submit("first")
    result = await session.submit("second")

    assert result.result == "Second." and result.terminal_reason is Terminal.COMPLETED
    assert transitions(session) == [None, None, "reactive_compact_retry"]
    summary_request = str(session.requests[2]["messages"])
    assert "first" in summary_request and "Done." in summary_request and "second" in summary_request


async def test_prompt_too_long_without_reactive_compact_ends_at_once_without_stop_hooks(session_root: Path) -> None:
    calls: list[StopHookInput] = []

    def stop_hook(hook_input: StopHookInput) -> None:
        calls.append(hook_input)

    session = make_session(
        session_root, [PTL], settings=EngineSettings(reactive_compact=False), hooks=Hooks(stop=[stop_hook])
    )
    result = await session.submit("hello")

    assert result.terminal_reason is Terminal.PROMPT_TOO_LONG
    assert calls == []


async def test_a_withheld_error_is_not_yielded_while_recovery_can_still_act(session_root: Path) -> None:
    seen: list[Any] = []
    session = make_session(session_root, [ROUND, PTL, SUMMARY, DONE])
    await session.submit("hello", on_output=lambda item, engine: seen.append(item))

    errors = [m for m in seen if isinstance(m, AssistantMessage) and m.is_api_error_message]
    assert errors == []
    withheld = session.trace(TraceKind.WITHHELD)
    assert [w.data["error"] for w in withheld] == ["prompt_too_long"]


async def test_collapse_drains_once_before_reactive_compact(session_root: Path) -> None:
    rounds = [
        {
            "content": [{"text": f"step {i}"}, {"tool_use": {"name": "Glob", "input": {"pattern": "*"}}}],
            "usage": {"input_tokens": 100 + 3_000 * i, "output_tokens": 10},
        }
        for i in range(1, 5)
    ]
    settings = EngineSettings(
        context_collapse=True,
        collapse_keep_rounds=1,
        context_window=20_000,
        max_output_tokens=1_000,
        autocompact_buffer_tokens=9_000,
    )
    session = make_session(session_root, [*rounds, PTL, DONE], settings=settings, files={"a.txt": "a"})
    result = await session.submit("work")

    assert transitions(session) == [None, "next_turn", "next_turn", "next_turn", "next_turn", "collapse_drain_retry"]
    assert result.result == "Done."
    before, after = session.requests[-2]["messages"], session.requests[-1]["messages"]
    assert len(after) < len(before)
    assert "Collapsed" in str(after)
    assert_every_request_valid(session)


async def test_collapse_with_nothing_to_drain_falls_through_to_reactive_compact(session_root: Path) -> None:
    session = make_session(session_root, [ROUND, PTL, SUMMARY, DONE], settings=EngineSettings(context_collapse=True))
    result = await session.submit("hello")

    assert transitions(session) == [None, "next_turn", "reactive_compact_retry"]
    assert result.result == "Done."


async def test_media_too_large_strips_the_media_and_retries_through_reactive_compact(session_root: Path) -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    media_error = {
        "fault": "http_error",
        "status": 400,
        "error_type": "invalid_request_error",
        "message": "messages.0.content.1.image.source.base64: image exceeds 5 MB maximum",
    }
    session = make_session(session_root, [media_error, SUMMARY, DONE])
    result = await _submit_blocks(session, [{"type": "text", "text": "look"}, image])

    assert transitions(session) == [None, "reactive_compact_retry"]
    assert result.result == "Done."
    summary_request = str(session.requests[1]["messages"])
    assert "image removed" in summary_request and "iVBORw0KGgo=" not in summary_request
    compaction = session.trace(TraceKind.COMPACTION)[0].data
    assert compaction["tier"] == "reactive_compact" and compaction["media_stripped"] == 1


async def test_media_too_large_with_no_media_to_strip_ends_image_error(session_root: Path) -> None:
    media_error = {
        "fault": "http_error",
        "status": 400,
        "error_type": "invalid_request_error",
        "message": "image exceeds 5 MB maximum",
    }
    session = make_session(session_root, [media_error])
    result = await session.submit("hello")

    assert result.terminal_reason is Terminal.IMAGE_ERROR
    assert transitions(session) == [None]


async def _submit_blocks(session: Session, blocks: list[dict[str, Any]]) -> Any:
    async for item in session.engine.submit_message(blocks):
        session.outputs.append(item)
    return session.outputs[-1]


async def test_a_stop_hook_that_blocks_twice_then_allows(session_root: Path) -> None:
    seen_active: list[bool] = []

    def stop_hook(hook_input: StopHookInput) -> StopHookResult:
        seen_active.append(hook_input.stop_hook_active)
        if len(seen_active) <= 2:
            return StopHookResult(block=True, reason=f"Run the tests first ({len(seen_active)})")
        return StopHookResult()

    turns = [{"content": [{"text": f"answer {i}"}]} for i in range(3)]
    session = make_session(session_root, turns, hooks=Hooks(stop=[stop_hook]))
    result = await session.submit("fix it")

    assert transitions(session) == [None, "stop_hook_blocking", "stop_hook_blocking"]
    assert seen_active == [False, True, True]
    assert result.terminal_reason is Terminal.COMPLETED and result.result == "answer 2"
    feedback = session.requests[1]["messages"][-1]["content"][-1]["text"]
    assert feedback == "Stop hook feedback:\nRun the tests first (1)"
    hooks = session.trace(TraceKind.HOOK)
    assert [h.data["outcome"] for h in hooks] == ["blocking", "blocking", "success"]


async def test_a_stop_hook_that_prevents_continuation_ends_stop_hook_prevented(session_root: Path) -> None:
    def stop_hook(hook_input: StopHookInput) -> StopHookResult:
        return StopHookResult(prevent_continuation=True, stop_reason="Budget exhausted for today.")

    session = make_session(session_root, [DONE], hooks=Hooks(stop=[stop_hook]))
    result = await session.submit("go")

    assert result.terminal_reason is Terminal.STOP_HOOK_PREVENTED
    warning = session.engine.mutable_messages[-1]
    assert isinstance(warning, SystemMessage) and warning.content == "Budget exhausted for today."


async def test_the_reactive_compact_flag_survives_a_stop_hook_block(session_root: Path) -> None:
    def stop_hook(hook_input: StopHookInput) -> StopHookResult:
        return StopHookResult(block=True, reason="again") if not hook_input.stop_hook_active else StopHookResult()

    # PTL → compact → answer → hook blocks → PTL again: no second reactive compact this turn.
    session = make_session(session_root, [ROUND, PTL, SUMMARY, DONE, PTL], hooks=Hooks(stop=[stop_hook]))
    result = await session.submit("go")

    assert transitions(session) == [None, "next_turn", "reactive_compact_retry", "stop_hook_blocking"]
    assert result.terminal_reason is Terminal.PROMPT_TOO_LONG


async def test_a_token_budget_continues_below_target_and_stops_on_diminishing_returns(session_root: Path) -> None:
    outputs = [100_000, 100_200, 100_300, 100_400, 100_450]
    turns = [
        {"content": [{"text": f"part {i}"}], "usage": {"input_tokens": 10, "output_tokens": o - p}}
        for i, (o, p) in enumerate(zip(outputs, [0, *outputs[:-1]], strict=True))
    ]
    session = make_session(session_root, turns)
    result = await session.submit("Refactor the module. +500k")

    assert transitions(session) == [None, *["token_budget_continuation"] * 3]
    nudge = session.requests[1]["messages"][-1]["content"][-1]["text"]
    assert "20%" in nudge and "100000 / 500000" in nudge
    budget = session.trace(TraceKind.TOKEN_BUDGET)
    assert budget[-1].data["reason"] == "diminishing_returns" and not budget[-1].data["continue"]
    assert result.terminal_reason is Terminal.COMPLETED


async def test_the_blocking_limit_stops_before_the_call_when_nothing_owns_overflow(session_root: Path) -> None:
    settings = EngineSettings(reactive_compact=False, autocompact=False, context_window=10_000, max_output_tokens=1_000)
    big = {
        "content": [{"text": "reading"}, {"tool_use": {"name": "Glob", "input": {"pattern": "*"}}}],
        "usage": {"input_tokens": 9_500, "output_tokens": 10},
    }
    session = make_session(session_root, [big, DONE], settings=settings, files={"a.txt": "a"})
    result = await session.submit("go")

    assert result.terminal_reason is Terminal.BLOCKING_LIMIT
    assert len(session.requests) == 1
    error = session.engine.mutable_messages[-1]
    assert isinstance(error, AssistantMessage) and error.content[0]["text"] == "Prompt is too long"


async def test_a_429_is_retried_after_its_retry_after_with_an_api_error_message(session_root: Path) -> None:
    limited = {
        "fault": "http_error",
        "status": 429,
        "error_type": "rate_limit_error",
        "message": "Slow down",
        "headers": {"retry-after": "7"},
    }
    session = make_session(session_root, [limited, DONE])
    result = await session.submit("go")

    assert result.result == "Done."
    assert session.engine.deps.clock.slept == [7.0]
    retries = [m for m in session.outputs if isinstance(m, SystemMessage) and m.subtype.value == "api_error"]
    assert len(retries) == 1 and retries[0].data["retry_in_ms"] == 7_000
    assert [e.data["attempt"] for e in session.trace(TraceKind.RETRY)] == [1]
    assert transitions(session) == [None]  # a retry is not a transition


async def test_ten_retries_wait_on_the_session_clock_and_never_sleep_for_real(
    session_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server_error = {"fault": "http_error", "status": 500, "error_type": "api_error", "message": "Internal"}
    session = make_session(session_root, [*[server_error] * 10, DONE])
    real_sleeps: list[float] = []
    original_sleep = asyncio.sleep

    async def watched_sleep(delay: float, *args: Any, **kwargs: Any) -> Any:
        if delay > 0:
            real_sleeps.append(delay)
        return await original_sleep(delay, *args, **kwargs)

    monkeypatch.setattr(asyncio, "sleep", watched_sleep)
    result = await session.submit("go")

    assert result.result == "Done."
    slept = session.engine.deps.clock.slept
    assert len(slept) == 10 and sum(slept) > 60  # backoff doubled up to the 32 s cap, on the session clock
    assert real_sleeps == []


async def test_retries_give_up_after_max_retries_and_surface_the_error(session_root: Path) -> None:
    server_error = {"fault": "http_error", "status": 500, "error_type": "api_error", "message": "Internal"}
    session = make_session(session_root, [server_error] * 3, settings=EngineSettings(max_retries=2))
    result = await session.submit("go")

    assert len(session.requests) == 3
    assert result.terminal_reason is Terminal.COMPLETED and result.is_error
    assert "500" in result.result


async def test_three_overloads_switch_to_the_fallback_model(session_root: Path) -> None:
    settings = EngineSettings(fallback_model="claude-haiku-4-5")
    session = make_session(session_root, [OVERLOADED, OVERLOADED, OVERLOADED, DONE], settings=settings)
    result = await session.submit("go")

    assert [r["model"] for r in session.requests] == ["claude-sonnet-4-6"] * 3 + ["claude-haiku-4-5"]
    warning = next(m for m in session.outputs if isinstance(m, SystemMessage) and m.subtype.value == "warning")
    assert warning.content == "Switched to claude-haiku-4-5 due to high demand for claude-sonnet-4-6"
    fallback = session.trace(TraceKind.FALLBACK)[0].data
    assert fallback["fallback"] == "model" and fallback["to"] == "claude-haiku-4-5"
    assert result.result == "Done."


async def test_model_fallback_strips_thinking_signatures_from_the_history(session_root: Path) -> None:
    thinking = {
        "content": [
            {"thinking": "Let me look.", "signature": "sig-for-sonnet"},
            {"tool_use": {"name": "Glob", "input": {"pattern": "*"}}},
        ]
    }
    settings = EngineSettings(fallback_model="claude-haiku-4-5", thinking={"type": "enabled", "budget_tokens": 2_000})
    session = make_session(
        session_root, [thinking, OVERLOADED, OVERLOADED, OVERLOADED, DONE], settings=settings, files={"a.txt": "a"}
    )
    await session.submit("go")

    assert "sig-for-sonnet" in str(session.requests[1]["messages"])
    assert "sig-for-sonnet" not in str(session.requests[-1]["messages"])
    assert_every_request_valid(session)


async def test_a_dropped_stream_tombstones_the_partial_answer_and_retries_without_streaming(
    session_root: Path,
) -> None:
    # message_start, block start, ping, two deltas, block stop: the first block is complete.
    dropped = {
        "fault": "drop_connection",
        "after_events": 7,
        "content": [{"text": "a partial answer that is cut"}, {"text": "never"}],
    }
    session = make_session(session_root, [dropped, DONE])
    result = await session.submit("go")

    assert [r.get("stream") for r in session.requests] == [True, None]
    tombstones = [o for o in session.outputs if isinstance(o, TombstoneMessage)]
    partial = [o for o in session.outputs if isinstance(o, AssistantMessage) and "partial" in str(o.content)]
    assert [t.target_uuid for t in tombstones] == [m.uuid for m in partial] and partial
    assert result.result == "Done."
    assert session.trace(TraceKind.FALLBACK)[0].data["fallback"] == "streaming"
    assert all(m.uuid not in {t.target_uuid for t in tombstones} for m in session.engine.mutable_messages)


async def test_a_streaming_fallback_discards_tools_started_by_the_broken_stream(session_root: Path) -> None:
    dropped = {
        "fault": "drop_connection",
        "after_events": 8,
        "content": [
            {"tool_use": {"name": "Write", "input": {"file_path": "x.txt", "content": "x"}}},
            {"text": "and then the stream breaks"},
        ],
    }
    session = make_session(session_root, [dropped, DONE])
    result = await session.submit("go")

    assert result.result == "Done."
    assert_every_request_valid(session)
    assert all("tool_use" not in str(r["messages"]) for r in session.requests)


async def test_a_mid_stream_overloaded_event_is_retried(session_root: Path) -> None:
    event = {
        "fault": "stream_error",
        "after_events": 4,
        "error_type": "overloaded_error",
        "message": "Overloaded",
        "content": [{"text": "partial"}],
    }
    session = make_session(session_root, [event, DONE])
    result = await session.submit("go")

    assert result.result == "Done."
    assert [e.data["error"] for e in session.trace(TraceKind.RETRY)] == ["overloaded"]


async def test_a_harness_failure_is_never_retried(session_root: Path) -> None:
    session = make_session(session_root, [])
    result = await session.submit("go")

    assert result.terminal_reason is Terminal.MODEL_ERROR
    assert len(session.requests) == 1
    assert session.trace(TraceKind.RETRY) == []


async def test_meta_messages_of_recovery_are_marked_meta(session_root: Path) -> None:
    session = make_session(session_root, [cut("a"), cut("b"), DONE])
    await session.submit("go")
    resumes = [m for m in session.engine.mutable_messages if isinstance(m, UserMessage) and m.is_meta]
    assert [m.content for m in resumes] == [MAX_OUTPUT_TOKENS_RECOVERY_TEXT]


async def test_model_fallback_answers_the_open_tool_use_of_the_failed_attempt(session_root: Path) -> None:
    overloaded_after_tool_use = {
        "fault": "stream_error",
        "after_events": 8,
        "error_type": "overloaded_error",
        "message": "Overloaded",
        "content": [{"tool_use": {"name": "Glob", "input": {"pattern": "*"}, "id": "toolu_open"}}, {"text": "x"}],
    }
    settings = EngineSettings(fallback_model="claude-haiku-4-5")
    session = make_session(
        session_root, [OVERLOADED, OVERLOADED, overloaded_after_tool_use, DONE], settings=settings, files={"a.txt": "a"}
    )
    result = await session.submit("go")

    answered = [o for o in session.outputs if isinstance(o, UserMessage) and "toolu_open" in str(o.content)]
    assert answered and answered[0].content[0]["content"] == "Model fallback triggered"
    assert result.result == "Done." and session.requests[-1]["model"] == "claude-haiku-4-5"
    assert "toolu_open" not in str(session.requests[-1]["messages"])  # the retried request never had it
