"""Context shaping inside the loop: each tier acting on a real session, where the boundary falls,
what the rebuilt history holds, and that the transcript chain stays intact."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from engine import EngineSettings, SystemMessage, Terminal, TraceKind, UserMessage
from engine.compact import CLEARED_TOOL_RESULT, COMPACT_SYSTEM_PROMPT
from engine.transcript import read_transcript
from tests.engine.conftest import Session, make_session

DONE = {"content": [{"text": "Done."}]}
SUMMARY = {"content": [{"text": "Summary: we listed the files."}]}
# effective window 19,000 (20,000 − 1,000 output); autocompact at 6,000; blocking at 16,000.
SMALL = {"context_window": 20_000, "max_output_tokens": 1_000}


def without_mark(block: dict[str, Any]) -> dict[str, Any]:
    """``block`` as the history holds it: the request's cache mark is only on the sent copy."""
    return {k: v for k, v in block.items() if k != "cache_control"}


def glob_turn(input_tokens: int, text: str = "looking") -> dict[str, Any]:
    return {
        "content": [{"text": text}, {"tool_use": {"name": "Glob", "input": {"pattern": "*"}}}],
        "usage": {"input_tokens": input_tokens, "output_tokens": 10},
    }


def compactions(session: Session) -> list[dict[str, Any]]:
    return [e.data for e in session.trace(TraceKind.COMPACTION)]


async def test_autocompact_summarizes_through_the_transport_when_the_threshold_is_reached(tmp_path: Path) -> None:
    session = make_session(
        tmp_path, [glob_turn(7_000), SUMMARY, DONE], settings=EngineSettings(**SMALL), files={"a.txt": "a"}
    )
    result = await session.submit("list the files")

    assert result.result == "Done."
    summary_request = session.requests[1]
    assert summary_request["system"][0]["text"] == COMPACT_SYSTEM_PROMPT and "tools" not in summary_request
    assert summary_request["max_tokens"] == 20_000
    (event,) = compactions(session)
    assert event["tier"] == "autocompact" and event["trigger"] == "auto"
    assert event["tokens_before"] >= 7_000 > event["tokens_after"]
    after = session.requests[2]["messages"]
    assert len(after) == 1 and "Summary: we listed the files." in after[0]["content"][0]["text"]


async def test_the_compact_boundary_starts_the_history_and_carries_its_logical_parent(tmp_path: Path) -> None:
    session = make_session(
        tmp_path, [glob_turn(7_000), SUMMARY, DONE], settings=EngineSettings(**SMALL), files={"a.txt": "a"}
    )
    await session.submit("list the files")

    history = session.engine.mutable_messages
    boundary, summary = history[0], history[1]
    assert isinstance(boundary, SystemMessage) and boundary.subtype.value == "compact_boundary"
    assert boundary.compact_metadata == {"trigger": "auto", "pre_tokens": compactions(session)[0]["tokens_before"]}
    assert isinstance(summary, UserMessage) and summary.is_compact_summary
    records = read_transcript(session.session_dir / "transcript.jsonl") if session.transcript_bytes() else []
    by_uuid = {r["uuid"]: r for r in records}
    boundary_record = by_uuid[boundary.uuid]
    assert boundary_record.get("parent_uuid") is None
    before_boundary = records[records.index(boundary_record) - 1]
    assert boundary_record["logical_parent_uuid"] == before_boundary["uuid"]
    assert by_uuid[summary.uuid]["parent_uuid"] == boundary.uuid
    for record in records:
        if record["type"] != "tombstone" and record.get("parent_uuid") is not None:
            assert record["parent_uuid"] in by_uuid


async def test_the_old_messages_stay_in_the_transcript_after_compaction(tmp_path: Path) -> None:
    session = make_session(
        tmp_path, [glob_turn(7_000), SUMMARY, DONE], settings=EngineSettings(**SMALL), files={"a.txt": "a"}
    )
    await session.submit("list the files")
    session.transcript_bytes()
    records = read_transcript(session.session_dir / "transcript.jsonl")
    assert records[0]["message"]["content"] == "list the files"
    assert len(records) > len(session.engine.mutable_messages)


async def test_autocompact_stops_trying_after_three_failures_in_a_row(tmp_path: Path) -> None:
    failure = {"fault": "http_error", "status": 400, "error_type": "invalid_request_error", "message": "bad summary"}
    turns = [glob_turn(7_000), failure, glob_turn(7_100), failure, glob_turn(7_200), failure, glob_turn(7_300), DONE]
    session = make_session(tmp_path, turns, settings=EngineSettings(**SMALL), files={"a.txt": "a"})
    result = await session.submit("list the files")

    failed = [c for c in compactions(session) if "failed" in c]
    assert [c["consecutive_failures"] for c in failed] == [1, 2, 3]
    assert result.result == "Done." and len(session.requests) == 8


async def test_microcompact_clears_old_tool_results_after_an_hour_of_silence(tmp_path: Path) -> None:
    reads = [{"content": [{"tool_use": {"name": "Read", "input": {"file_path": f"f{i}.txt"}}}]} for i in range(3)]
    settings = EngineSettings(microcompact_keep_recent=1)
    files = {f"f{i}.txt": f"content {i}" for i in range(3)}
    session = make_session(tmp_path, [*reads, DONE, DONE], settings=settings, files=files)
    await session.submit("read them")
    session.engine.deps.clock.advance(timedelta(minutes=61).total_seconds())
    await session.submit("and now?")

    last = str(session.requests[-1]["messages"])
    assert last.count(CLEARED_TOOL_RESULT) == 2 and "content 2" in last
    assert [c["tier"] for c in compactions(session)] == ["microcompact"]


async def test_microcompact_leaves_a_recent_conversation_alone(tmp_path: Path) -> None:
    session = make_session(
        tmp_path,
        [{"content": [{"tool_use": {"name": "Read", "input": {"file_path": "f.txt"}}}]}, DONE, DONE],
        files={"f.txt": "content"},
    )
    await session.submit("read")
    await session.submit("again")
    assert CLEARED_TOOL_RESULT not in str(session.requests[-1]["messages"])


async def test_the_tool_result_budget_replaces_the_largest_results_and_keeps_the_decision(tmp_path: Path) -> None:
    files = {"big.txt": ("x" * 79 + "\n") * 80, "small.txt": ("y" * 79 + "\n") * 40}
    turn = {
        "content": [
            {"tool_use": {"name": "Read", "input": {"file_path": "big.txt"}, "id": "toolu_big"}},
            {"tool_use": {"name": "Read", "input": {"file_path": "small.txt"}, "id": "toolu_small"}},
        ]
    }
    settings = EngineSettings(tool_result_budget_chars=8_000)
    session = make_session(tmp_path, [turn, DONE, DONE], settings=settings, files=files)
    await session.submit("read both")
    await session.submit("again")

    second, third = session.requests[1]["messages"], session.requests[2]["messages"]
    results = {b["tool_use_id"]: b["content"] for b in second[2]["content"]}
    assert "tool-results/toolu_big.txt" in results["toolu_big"] and "y" * 79 in results["toolu_small"]
    # The same bytes on every later request (the cache mark moved on to the newest message).
    assert third[2] == {**second[2], "content": [*second[2]["content"][:-1], without_mark(second[2]["content"][-1])]}
    assert (session.session_dir / "tool-results" / "toolu_big.txt").read_text().startswith("     1\txxx")
    assert compactions(session)[0] == {"tier": "tool_result_budget", "replaced": ["toolu_big"]}


async def test_snip_drops_old_rounds_and_reports_the_tokens_freed(tmp_path: Path) -> None:
    turns = [glob_turn(1_000 + 500 * i, text=f"round {i}") for i in range(4)] + [DONE]
    settings = EngineSettings(snip_threshold_tokens=2_000, snip_keep_rounds=1, autocompact=False)
    session = make_session(tmp_path, turns, settings=settings, files={"a.txt": "a"})
    result = await session.submit("go")

    assert result.result == "Done."
    snips = [c for c in compactions(session) if c["tier"] == "snip"]
    assert snips and all(c["tokens_freed"] > 0 for c in snips)
    last = str(session.requests[-1]["messages"])
    assert "round 0" not in last and "round 3" in last and "'go'" in last


async def test_a_queued_command_is_attached_after_the_tool_results(tmp_path: Path) -> None:
    session = make_session(tmp_path, [glob_turn(100), DONE], files={"a.txt": "a"})
    session.engine.queue_command("Also check the tests folder.")
    await session.submit("go")

    second = session.requests[1]["messages"]
    assert second[-1]["content"][0]["type"] == "tool_result"
    assert without_mark(second[-1]["content"][-1]) == {"type": "text", "text": "Also check the tests folder."}
    assert [e.data["type"] for e in session.trace(TraceKind.ATTACHMENT)] == ["queued_command"]


async def test_a_file_changed_after_it_was_read_is_noticed_once(tmp_path: Path) -> None:
    turns = [
        {"content": [{"tool_use": {"name": "Read", "input": {"file_path": "notes.txt"}}}]},
        {"content": [{"tool_use": {"name": "Bash", "input": {"command": "sleep 0.01; echo changed >> notes.txt"}}}]},
        glob_turn(100),
        DONE,
    ]
    session = make_session(tmp_path, turns, files={"notes.txt": "original\n"})
    await session.submit("go")

    notices = [e for e in session.trace(TraceKind.ATTACHMENT) if e.data["type"] == "changed_file"]
    assert len(notices) == 1
    assert "notes.txt was modified" in str(session.requests[2]["messages"])


async def test_project_memory_is_attached_once(tmp_path: Path) -> None:
    turns = [glob_turn(100), glob_turn(200), DONE]
    session = make_session(tmp_path, turns, files={"CLAUDE.md": "Always run the linter.", "a.txt": "a"})
    result = await session.submit("go")

    memory = [e for e in session.trace(TraceKind.ATTACHMENT) if e.data["type"] == "memory"]
    assert len(memory) == 1
    assert str(session.requests[2]["messages"]).count("Always run the linter.") == 1
    assert result.terminal_reason is Terminal.COMPLETED


async def test_a_manual_compaction_puts_a_manual_boundary_before_the_next_prompt(tmp_path: Path) -> None:
    session = make_session(tmp_path, [DONE, SUMMARY, {"content": [{"text": "Continuing."}]}])
    await session.submit("first")
    result = await session.engine.compact()
    await session.submit("second")

    assert result.boundary.compact_metadata["trigger"] == "manual"
    assert session.engine.mutable_messages[0] is result.boundary
    last = session.requests[-1]["messages"]
    assert "Summary: we listed the files." in last[0]["content"][0]["text"]
    assert last[-1]["content"][-1]["text"] == "second"
