"""QueryEngine: one conversation end to end, through the real SDK and the fake model."""

from __future__ import annotations

import json
from pathlib import Path

from engine import (
    AssistantMessage,
    EngineSettings,
    ResultSubtype,
    Terminal,
    TraceKind,
    Transition,
    UserMessage,
)
from engine.hooks import HookInput, Hooks
from engine.model import StreamEvent
from engine.transcript import read_transcript
from tests.engine.conftest import assert_pairing, make_session

ANALYSE = [
    {"content": [{"text": "I'll read it."}, {"tool_use": {"name": "Read", "input": {"file_path": "notes.txt"}}}]},
    {"content": [{"text": "The notes say hello."}]},
]


async def test_the_classic_session_reads_a_file_and_answers_in_two_calls(session_root: Path) -> None:
    session = make_session(session_root, ANALYSE, files={"notes.txt": "hello\n"})
    result = await session.submit("Analyse notes.txt")

    assert len(session.requests) == 2
    assert result.num_turns == 2
    assert result.terminal_reason is Terminal.COMPLETED
    assert result.subtype is ResultSubtype.SUCCESS and not result.is_error
    assert result.result == "The notes say hello."


async def test_the_second_request_carries_the_tool_result_right_after_its_tool_use(session_root: Path) -> None:
    session = make_session(session_root, ANALYSE, files={"notes.txt": "hello\n"})
    await session.submit("Analyse notes.txt")

    second = session.requests[1]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    tool_use = second[1]["content"][1]
    assert tool_use == {"type": "tool_use", "id": tool_use["id"], "name": "Read", "input": {"file_path": "notes.txt"}}
    result_block = {"type": "tool_result", "tool_use_id": tool_use["id"], "content": "     1\thello"}
    assert second[2]["content"] == [{**result_block, "cache_control": {"type": "ephemeral"}}]
    assert_pairing(second)


async def test_usage_is_summed_over_the_calls_of_a_turn(session_root: Path) -> None:
    turns = [
        {**ANALYSE[0], "usage": {"input_tokens": 100, "output_tokens": 20}},
        {**ANALYSE[1], "usage": {"input_tokens": 150, "output_tokens": 7, "cache_read_input_tokens": 90}},
    ]
    session = make_session(session_root, turns, files={"notes.txt": "hello\n"})
    result = await session.submit("Analyse notes.txt")

    assert result.usage == {
        "input_tokens": 250,
        "output_tokens": 27,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 90,
    }
    assert session.engine.total_usage == result.usage
    # claude-sonnet: $3 / $15 per million tokens, cache reads at a tenth of input.
    assert result.total_cost_usd == round((250 * 3 + 27 * 15 + 90 * 0.3) / 1_000_000, 6)


async def test_the_result_object_has_the_documented_shape(session_root: Path) -> None:
    session = make_session(session_root, ANALYSE, files={"notes.txt": "hello\n"})
    result = await session.submit("Analyse notes.txt")

    assert set(result.to_dict()) == {
        "type",
        "subtype",
        "result",
        "usage",
        "num_turns",
        "duration_ms",
        "total_cost_usd",
        "terminal_reason",
        "is_error",
        "session_id",
        "permission_denials",
    }
    assert result.to_dict()["type"] == "result"
    assert result.duration_ms >= 0


async def test_each_pass_records_its_transition_in_the_trace(session_root: Path) -> None:
    session = make_session(session_root, ANALYSE, files={"notes.txt": "hello\n"})
    await session.submit("Analyse notes.txt")

    passes = session.trace(TraceKind.PASS)
    assert [p.data["transition"] for p in passes] == [None, Transition.NEXT_TURN.value]
    assert session.trace(TraceKind.TERMINAL)[0].data["reason"] == "completed"


async def test_a_second_prompt_continues_the_same_conversation(session_root: Path) -> None:
    turns = [*ANALYSE, {"content": [{"text": "Still hello."}]}]
    session = make_session(session_root, turns, files={"notes.txt": "hello\n"})
    await session.submit("Analyse notes.txt")
    result = await session.submit("And now?")

    third = session.requests[2]["messages"]
    assert [m["role"] for m in third] == ["user", "assistant", "user", "assistant", "user"]
    assert third[-1]["content"] == [{"type": "text", "text": "And now?", "cache_control": {"type": "ephemeral"}}]
    assert result.num_turns == 1


async def test_the_user_message_is_in_the_transcript_before_the_model_is_called(session_root: Path) -> None:
    session = make_session(session_root, ANALYSE, files={"notes.txt": "hello\n"})
    transcript = session.session_dir / "transcript.jsonl"
    seen_at_first_call: list[list[dict]] = []

    def on_output(item: object, engine: object) -> None:
        if isinstance(item, UserMessage) and not seen_at_first_call:
            seen_at_first_call.append(read_transcript(transcript))

    await session.submit("Analyse notes.txt", on_output=on_output)
    first = seen_at_first_call[0]
    assert [r["type"] for r in first] == ["user"]
    assert first[0]["message"]["content"] == "Analyse notes.txt"


async def test_the_transcript_holds_every_message_in_order_with_a_parent_chain(session_root: Path) -> None:
    session = make_session(session_root, ANALYSE, files={"notes.txt": "hello\n"})
    await session.submit("Analyse notes.txt")
    session.engine.close()
    records = read_transcript(session.session_dir / "transcript.jsonl")

    assert [r["uuid"] for r in records] == [m.uuid for m in session.engine.mutable_messages]
    assert records[0].get("parent_uuid") is None
    by_uuid = {r["uuid"]: r for r in records}
    for record in records[1:]:
        assert record["parent_uuid"] in by_uuid
    tool_result = next(r for r in records if r["type"] == "user" and r.get("source_tool_assistant_uuid"))
    assert tool_result["parent_uuid"] == tool_result["source_tool_assistant_uuid"]
    assert {r["session_id"] for r in records} == {session.engine.session_id}
    last_assistant = [r for r in records if r["type"] == "assistant"][-1]
    assert last_assistant["message"]["stop_reason"] == "end_turn"


async def test_the_same_script_run_twice_writes_byte_identical_transcripts(tmp_path: Path) -> None:
    transcripts = []
    for run in ("first", "second"):
        # The same workspace folder both times: only the session folder differs.
        session = make_session(
            tmp_path / run, ANALYSE, files={"notes.txt": "hello\n"}, workspace=tmp_path / "workspace"
        )
        await session.submit("Analyse notes.txt")
        transcripts.append(session.transcript_bytes())
    assert transcripts[0] == transcripts[1]
    # user, text block, tool_use block, tool result, answer
    assert transcripts[0].count(b"\n") == 5


async def test_backfilled_paths_never_reach_the_request_or_the_transcript(tmp_path: Path) -> None:
    observed: list[dict] = []

    def remember(hook_input: HookInput) -> None:
        observed.append(hook_input.tool_input)

    bodies, transcripts = [], []
    for run in ("machine-a", "machine-b/deeper"):
        session = make_session(
            tmp_path / run, ANALYSE, files={"notes.txt": "hello\n"}, hooks=Hooks(pre_tool_use=[remember])
        )
        await session.submit("Analyse notes.txt")
        placeholder = str(session.workspace)
        bodies.append(json.dumps(session.requests).replace(placeholder, "<workspace>"))
        transcripts.append(session.transcript_bytes().decode().replace(placeholder, "<workspace>"))

    # Observers (hooks) saw the absolute path; the API and the transcript kept the model's input.
    assert observed[0]["file_path"] == str(tmp_path / "machine-a" / "workspace" / "notes.txt")
    assert observed[1]["file_path"] == str(tmp_path / "machine-b/deeper" / "workspace" / "notes.txt")
    assert bodies[0] == bodies[1]
    assert transcripts[0] == transcripts[1]
    assert '"file_path": "notes.txt"' in bodies[0]


async def test_an_api_error_is_reported_as_an_assistant_message_and_ends_the_turn(session_root: Path) -> None:
    turns = [{"fault": "http_error", "status": 529, "error_type": "overloaded_error", "message": "Overloaded"}]
    session = make_session(session_root, turns, settings=EngineSettings(max_retries=0))
    result = await session.submit("hi")

    error = [m for m in session.engine.mutable_messages if isinstance(m, AssistantMessage)][-1]
    assert error.is_api_error_message and error.error == "overloaded"
    assert "529" in error.content[0]["text"]
    assert result.terminal_reason is Terminal.COMPLETED
    assert result.is_error and result.subtype is ResultSubtype.ERROR_DURING_EXECUTION


async def test_raw_stream_events_reach_the_caller_only_when_asked_and_change_nothing_else(tmp_path: Path) -> None:
    turns = [{"content": [{"text": "Reading."}, {"tool_use": {"name": "Read", "input": {"file_path": "a.txt"}}}]}]
    turns.append({"content": [{"text": "Done."}]})
    plain = make_session(tmp_path / "plain", turns, files={"a.txt": "hello\n"})
    raw = make_session(tmp_path / "raw", turns, files={"a.txt": "hello\n"})
    raw.engine.include_stream_events = True
    await plain.submit("read a.txt")
    await raw.submit("read a.txt")

    events = [item.event.type for item in raw.outputs if isinstance(item, StreamEvent)]
    assert events.count("message_start") == 2 and events.count("content_block_stop") == 3
    assert not [item for item in plain.outputs if isinstance(item, StreamEvent)]
    assert [item for item in raw.outputs if not isinstance(item, StreamEvent)] == plain.outputs
    assert raw.requests == plain.requests
    assert raw.transcript_bytes().replace(b"/raw/", b"/plain/") == plain.transcript_bytes()
