"""``compact_request = conversation_prefix`` through the whole loop: reactive compaction,
autocompaction and a manual compact each send the conversation's own request with the summary
prompt appended, so the summary request reads the prompt cache the loop wrote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine import CompactRequest, EngineSettings, Terminal
from engine.compact import COMPACT_PROMPT
from replay.trace.cache_audit import AuditedRequest, audit_requests
from tests.engine.conftest import Session, make_session

JsonDict = dict[str, Any]
PREFIX = EngineSettings(compact_request=CompactRequest.CONVERSATION_PREFIX, system_prompt="You help with files.")
PTL = {
    "fault": "http_error",
    "status": 400,
    "error_type": "invalid_request_error",
    "message": "prompt is too long: 210000 tokens > 200000 maximum",
}
ROUND = {"content": [{"tool_use": {"name": "Glob", "input": {"pattern": "*"}}}]}
# A response whose usage puts the next request past the autocompact threshold.
BIG_ROUND = {**ROUND, "usage": {"input_tokens": 185_000, "output_tokens": 20}}
SUMMARY = {"content": [{"text": "<summary>The user asked for the files; one Glob ran.</summary>"}]}
DONE = {"content": [{"text": "Done."}]}
PROMPT_BLOCK = {"type": "text", "text": COMPACT_PROMPT}


def unmarked(value: Any) -> Any:
    """``value`` without its cache_control marks (they move between requests by design)."""
    if isinstance(value, dict):
        return {key: unmarked(item) for key, item in value.items() if key != "cache_control"}
    if isinstance(value, list):
        return [unmarked(item) for item in value]
    return value


def assert_extends(summary: JsonDict, conversation: JsonDict) -> None:
    """``summary`` is ``conversation``'s request (same system and tools) with the summary
    prompt joined to, or after, its messages."""
    assert (summary["system"], summary["tools"]) == (conversation["system"], conversation["tools"])
    sent, summarized = unmarked(conversation["messages"]), unmarked(summary["messages"])
    assert summarized[: len(sent) - 1] == sent[:-1]
    assert summarized[-1]["content"][-1] == PROMPT_BLOCK


def reads(session: Session, index: int, purposes: list[str]) -> int:
    pairs = zip(session.requests, purposes, strict=True)
    audited = [AuditedRequest(body=body, purpose=purpose) for body, purpose in pairs]
    return audit_requests(audited)[index].read


async def test_a_reactive_summary_request_extends_the_request_that_was_too_long(session_root: Path) -> None:
    session = make_session(session_root, [ROUND, PTL, SUMMARY, DONE], settings=PREFIX, files={"a.txt": "a"})
    result = await session.submit("list the files")

    assert (result.terminal_reason, result.result) == (Terminal.COMPLETED, "Done.")
    too_long, summary = session.requests[1], session.requests[2]
    assert_extends(summary, too_long)
    assert unmarked(summary["messages"][:-1]) == unmarked(too_long["messages"][:-1])
    assert summary["max_tokens"] == PREFIX.summary_max_output_tokens


async def test_the_summary_request_reads_the_prefix_the_first_request_cached(session_root: Path) -> None:
    session = make_session(session_root, [ROUND, PTL, SUMMARY, DONE], settings=PREFIX, files={"a.txt": "a"})
    await session.submit("list the files")

    assert reads(session, 2, ["main", "main", "compact", "main"]) > 0


async def test_an_own_prompt_summary_request_reads_nothing(session_root: Path) -> None:
    session = make_session(session_root, [ROUND, PTL, SUMMARY, DONE], files={"a.txt": "a"})
    await session.submit("list the files")

    assert "tools" not in session.requests[2]
    assert reads(session, 2, ["main", "main", "compact", "main"]) == 0


async def test_an_autocompact_summary_request_extends_the_last_request(session_root: Path) -> None:
    session = make_session(session_root, [BIG_ROUND, SUMMARY, DONE], settings=PREFIX, files={"a.txt": "a"})
    result = await session.submit("list the files")

    assert result.result == "Done."
    first, summary = session.requests[0], session.requests[1]
    assert_extends(summary, first)
    assert reads(session, 1, ["main", "compact", "main"]) > 0


async def test_a_manual_compact_summary_request_extends_the_conversation(session_root: Path) -> None:
    session = make_session(session_root, [DONE, SUMMARY], settings=PREFIX)
    await session.submit("hello")
    await session.engine.compact()

    first, summary = session.requests
    assert_extends(summary, first)
    assert summary["messages"][-1] == {"role": "user", "content": [PROMPT_BLOCK]}
