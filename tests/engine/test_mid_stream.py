"""``mid_stream_recovery``: what a model call does when a streamed answer breaks mid-way, under
"retry" (the default: tombstone and send again) and "resume" (keep the finished text and ask
the model to continue it, or resend without streaming), through the real SDK and a fake model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine import (
    AssistantMessage,
    EngineSettings,
    MidStreamRecovery,
    Terminal,
    TombstoneMessage,
    TraceKind,
    UserMessage,
)
from engine.mid_stream import MID_STREAM_RESUME_TEXT, kept_partial_answer
from tests.engine.conftest import Session, make_session

RESUME = EngineSettings(mid_stream_recovery=MidStreamRecovery.RESUME)
DONE = {"content": [{"text": "Done."}]}
FIRST = "The first block finished."  # one delta (24 characters per delta, 25 here: two)
SECOND = "The second block never finishes, it is cut off."

# Events are counted as the fake model counts them: message_start, the first block's start,
# ping, its deltas (24 characters each), its stop; then the next block's start and deltas.
AFTER_FIRST_BLOCK = 3 + 2 + 1 + 2  # the second block started and one delta in


def error_event(
    after_events: int, content: list[dict[str, Any]], error_type: str = "overloaded_error"
) -> dict[str, Any]:
    return {
        "fault": "stream_error",
        "after_events": after_events,
        "error_type": error_type,
        "message": "Oops",
        "content": content,
    }


def malformed(after_events: int, content: list[dict[str, Any]]) -> dict[str, Any]:
    return {"fault": "malformed_event", "after_events": after_events, "content": content}


def dropped(after_events: int, content: list[dict[str, Any]]) -> dict[str, Any]:
    return {"fault": "drop_connection", "after_events": after_events, "content": content}


TWO_BLOCKS = [{"text": FIRST}, {"text": SECOND}]
TOOL = {"tool_use": {"name": "Write", "input": {"file_path": "x.txt", "content": "written by the broken stream"}}}


def streamed(session: Session) -> list[bool]:
    return [body.get("stream") is True for body in session.requests]


def shapes(body: dict[str, Any]) -> list[tuple[str, list[str]]]:
    return [(m["role"], [b["type"] for b in m["content"]]) for m in body["messages"]]


def fallbacks(session: Session) -> list[str]:
    return [e.data["fallback"] for e in session.trace(TraceKind.FALLBACK)]


# --- "resume": finished text is kept ------------------------------------------------------------


@pytest.mark.parametrize(
    "fault",
    [
        error_event(AFTER_FIRST_BLOCK, TWO_BLOCKS),
        error_event(AFTER_FIRST_BLOCK, TWO_BLOCKS, error_type="api_error"),
        malformed(AFTER_FIRST_BLOCK, TWO_BLOCKS),
        dropped(AFTER_FIRST_BLOCK, TWO_BLOCKS),
    ],
    ids=["overloaded event", "api_error event", "malformed event", "dropped connection"],
)
async def test_resume_keeps_the_finished_text_and_asks_the_model_to_continue(
    session_root: Path, fault: dict[str, Any]
) -> None:
    session = make_session(session_root, [fault, DONE], settings=RESUME)
    result = await session.submit("go")

    assert result.terminal_reason is Terminal.COMPLETED and result.result == "Done."
    assert streamed(session) == [True, True]
    resumed = session.requests[1]["messages"]
    assert [m["role"] for m in resumed] == ["user", "assistant", "user"]
    assert resumed[1]["content"] == [{"type": "text", "text": FIRST}]
    assert resumed[2]["content"][-1]["text"] == MID_STREAM_RESUME_TEXT
    assert fallbacks(session) == ["resume"]
    assert session.trace(TraceKind.RETRY) == []


async def test_resume_keeps_the_answer_so_far_in_the_history_with_a_meta_resume_message(session_root: Path) -> None:
    session = make_session(session_root, [error_event(AFTER_FIRST_BLOCK, TWO_BLOCKS), DONE], settings=RESUME)
    await session.submit("go")

    history = session.engine.mutable_messages
    texts = [(type(m).__name__, m.is_meta) for m in history]
    assert texts == [
        ("UserMessage", False),
        ("AssistantMessage", False),
        ("UserMessage", True),
        ("AssistantMessage", False),
    ]
    assert [o for o in session.outputs if isinstance(o, TombstoneMessage)] == []
    (event,) = session.trace(TraceKind.FALLBACK)
    assert event.data == {
        "fallback": "resume",
        "error": "overloaded",
        "stream_break": "error_event",
        "kept": 1,
        "tombstoned": 0,
    }
    (call,) = session.trace(TraceKind.MODEL_CALL)
    assert (call.data["attempts"], call.data["messages"], call.data["stream"]) == (2, 3, True)


async def test_resume_keeps_every_finished_text_block_as_one_assistant_message(session_root: Path) -> None:
    three = [{"text": FIRST}, {"text": "Short."}, {"text": SECOND}]
    after_two_blocks = 3 + 2 + 1 + 1 + 1 + 1 + 1  # ..., second start, delta, stop, third start, delta
    session = make_session(session_root, [error_event(after_two_blocks, three), DONE], settings=RESUME)
    await session.submit("go")

    assert shapes(session.requests[1]) == [("user", ["text"]), ("assistant", ["text", "text"]), ("user", ["text"])]


async def test_resume_withdraws_a_finished_tool_call_and_keeps_only_the_text(session_root: Path) -> None:
    # text (2 deltas, stop), then the Write call finished (start, 3 deltas, stop), then a cut.
    content = [{"text": FIRST}, TOOL, {"text": SECOND}]
    after_tool = 3 + 2 + 1 + 1 + 3 + 1 + 1
    session = make_session(session_root, [error_event(after_tool, content), DONE], settings=RESUME)
    await session.submit("go")

    assert shapes(session.requests[1]) == [("user", ["text"]), ("assistant", ["text"]), ("user", ["text"])]
    tombstoned = {o.target_uuid for o in session.outputs if isinstance(o, TombstoneMessage)}
    tool_messages = [o for o in session.outputs if isinstance(o, AssistantMessage) and "tool_use" in str(o.content)]
    assert tombstoned == {m.uuid for m in tool_messages} and tool_messages
    assert session.trace(TraceKind.FALLBACK)[0].data["tombstoned"] == 1
    assert session.tool_results() == {}


async def test_resume_is_bounded_by_max_retries(session_root: Path) -> None:
    settings = EngineSettings(mid_stream_recovery=MidStreamRecovery.RESUME, max_retries=2)
    breaks = [error_event(AFTER_FIRST_BLOCK, TWO_BLOCKS) for _ in range(3)]
    session = make_session(session_root, [*breaks, DONE], settings=settings)
    result = await session.submit("go")

    # Two resumes, then the third break is an ordinary overloaded error (its retry is the third).
    assert fallbacks(session) == ["resume", "resume"]
    assert [e.data["error"] for e in session.trace(TraceKind.RETRY)] == ["overloaded"]
    assert result.result == "Done."


# --- "resume": nothing finished, so the request is sent again without streaming ---------------


@pytest.mark.parametrize(
    "fault",
    [
        error_event(4, TWO_BLOCKS),
        error_event(4, TWO_BLOCKS, error_type="api_error"),
        malformed(3, TWO_BLOCKS),
        malformed(4, TWO_BLOCKS),
        error_event(5, [TOOL]),
        error_event(3 + 3 + 1, [TOOL, {"text": SECOND}]),
    ],
    ids=[
        "overloaded event",
        "api_error event",
        "malformed event",
        "malformed after text",
        "partial tool_use",
        "finished tool_use",
    ],
)
async def test_resume_with_no_finished_text_resends_the_request_without_streaming(
    session_root: Path, fault: dict[str, Any]
) -> None:
    session = make_session(session_root, [fault, DONE], settings=RESUME)
    result = await session.submit("go")

    assert result.terminal_reason is Terminal.COMPLETED and result.result == "Done."
    assert streamed(session) == [True, False]
    assert session.requests[1]["messages"] == session.requests[0]["messages"]
    assert fallbacks(session) == ["streaming"]
    assert session.tool_results() == {}


async def test_resume_leaves_a_dropped_connection_with_no_finished_text_to_the_streaming_fallback(
    session_root: Path,
) -> None:
    session = make_session(session_root, [dropped(4, TWO_BLOCKS), DONE], settings=RESUME)
    await session.submit("go")

    assert streamed(session) == [True, False]
    assert fallbacks(session) == ["streaming"]


async def test_resume_with_streaming_fallback_off_retries_a_dropped_connection_streamed(session_root: Path) -> None:
    settings = EngineSettings(mid_stream_recovery=MidStreamRecovery.RESUME, streaming_fallback=False)
    session = make_session(session_root, [dropped(4, TWO_BLOCKS), DONE], settings=settings)
    await session.submit("go")

    assert streamed(session) == [True, True]
    assert [e.data["error"] for e in session.trace(TraceKind.RETRY)] == ["connection_dropped"]


# --- "retry", the default: unchanged --------------------------------------------------------


def test_retry_is_the_default() -> None:
    assert EngineSettings().mid_stream_recovery is MidStreamRecovery.RETRY


async def test_retry_tombstones_finished_text_and_retries_an_error_event_streamed(session_root: Path) -> None:
    session = make_session(session_root, [error_event(AFTER_FIRST_BLOCK, TWO_BLOCKS), DONE])
    result = await session.submit("go")

    assert result.result == "Done."
    assert streamed(session) == [True, True]
    assert session.requests[1]["messages"] == session.requests[0]["messages"]
    assert len([o for o in session.outputs if isinstance(o, TombstoneMessage)]) == 1
    assert [e.data["error"] for e in session.trace(TraceKind.RETRY)] == ["overloaded"]
    assert fallbacks(session) == []


async def test_retry_ends_a_malformed_event_in_model_error(session_root: Path) -> None:
    session = make_session(session_root, [malformed(AFTER_FIRST_BLOCK, TWO_BLOCKS)])
    result = await session.submit("go")

    assert result.terminal_reason is Terminal.MODEL_ERROR
    assert len(session.requests) == 1


async def test_retry_answers_a_dropped_connection_with_the_streaming_fallback(session_root: Path) -> None:
    session = make_session(session_root, [dropped(AFTER_FIRST_BLOCK, TWO_BLOCKS), DONE])
    await session.submit("go")

    assert streamed(session) == [True, False]
    assert fallbacks(session) == ["streaming"]


async def test_retry_withdraws_a_finished_tool_call(session_root: Path) -> None:
    session = make_session(session_root, [error_event(3 + 3 + 1, [TOOL, {"text": SECOND}]), DONE])
    await session.submit("go")

    assert streamed(session) == [True, True]
    assert all("tool_use" not in str(r["messages"]) for r in session.requests)
    assert not any(isinstance(m, UserMessage) and m.is_meta for m in session.engine.mutable_messages)


# --- the pieces -------------------------------------------------------------------------------


def _assistant(*blocks: dict[str, Any]) -> AssistantMessage:
    uuid = str(len(blocks)) + str(blocks)
    return AssistantMessage(uuid=uuid, timestamp="2026-01-01T00:00:00.000Z", message={"content": list(blocks)})


def test_only_messages_of_non_blank_text_are_kept() -> None:
    text = _assistant({"type": "text", "text": "kept"})
    blank = _assistant({"type": "text", "text": "  "})
    tool = _assistant({"type": "tool_use", "id": "t", "name": "Read", "input": {}})
    thinking = _assistant({"type": "thinking", "thinking": "hm", "signature": "s"})

    assert kept_partial_answer([thinking, text, blank, tool]) == [text]


def test_a_setting_written_as_a_string_becomes_the_enum() -> None:
    settings = EngineSettings(mid_stream_recovery="resume")  # type: ignore[arg-type]

    assert settings.mid_stream_recovery is MidStreamRecovery.RESUME


def test_an_unknown_recovery_is_refused_in_one_sentence() -> None:
    with pytest.raises(ValueError) as caught:
        EngineSettings(mid_stream_recovery="continue")  # type: ignore[arg-type]

    assert str(caught.value) == "mid_stream_recovery must be 'retry' or 'resume', not 'continue'."
