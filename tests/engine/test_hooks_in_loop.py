"""Shell-command hooks inside a running loop: what they can change, and that a hook that hangs,
crashes or prints nonsense is reported in the trace while the loop goes on."""

from __future__ import annotations

from pathlib import Path

from engine import EngineSettings, ResultSubtype, Terminal, TraceKind
from engine.hooks import CommandHook, Hooks
from tests.engine.conftest import make_session

DONE = {"content": [{"text": "Done."}]}
WRITE = {
    "content": [{"tool_use": {"name": "Write", "input": {"file_path": "out.txt", "content": "x"}, "id": "toolu_w"}}]
}


def hook_events(session: object) -> list[dict]:
    return [e.data for e in session.trace(TraceKind.HOOK)]  # type: ignore[attr-defined]


async def test_a_stop_hook_that_hangs_times_out_and_the_turn_completes(tmp_path: Path) -> None:
    settings = EngineSettings(hook_timeout_s=0.3)
    hook = CommandHook("sleep 30; touch finished")
    session = make_session(tmp_path, [DONE], settings=settings, hooks=Hooks(stop=[hook]))
    result = await session.submit("go")

    assert not (session.workspace / "finished").exists()  # killed at the timeout, not waited for
    (event,) = hook_events(session)
    assert event["outcome"] == "timeout" and "timed out after 0.3" in event["message"]
    assert result.terminal_reason is Terminal.COMPLETED and result.result == "Done."


async def test_a_stop_hook_that_crashes_is_reported_and_does_not_block(tmp_path: Path) -> None:
    hook = CommandHook("echo 'boom' >&2; exit 1")
    session = make_session(tmp_path, [DONE], hooks=Hooks(stop=[hook]))
    result = await session.submit("go")

    (event,) = hook_events(session)
    assert event["outcome"] == "non_blocking_error" and "boom" in event["message"]
    assert result.terminal_reason is Terminal.COMPLETED


async def test_a_stop_hook_that_prints_invalid_json_is_reported_and_does_not_block(tmp_path: Path) -> None:
    hook = CommandHook('echo \'{"decision": "block", \'')
    session = make_session(tmp_path, [DONE], hooks=Hooks(stop=[hook]))
    result = await session.submit("go")

    (event,) = hook_events(session)
    assert event["outcome"] == "invalid_output" and "JSON" in event["message"]
    assert result.terminal_reason is Terminal.COMPLETED


async def test_a_stop_hook_exiting_2_blocks_with_its_stderr_as_feedback(tmp_path: Path) -> None:
    # Blocks only while the loop has not been blocked yet (stop_hook_active is false).
    script = "grep -q '\"stop_hook_active\": *false' && { echo 'lint first' >&2; exit 2; }; exit 0"
    session = make_session(tmp_path, [DONE, DONE], hooks=Hooks(stop=[CommandHook(script)]))
    result = await session.submit("go")

    assert [e.data["transition"] for e in session.trace(TraceKind.PASS)] == [None, "stop_hook_blocking"]
    assert session.requests[1]["messages"][-1]["content"][-1]["text"] == "Stop hook feedback:\nlint first"
    assert result.terminal_reason is Terminal.COMPLETED


async def test_a_stop_hook_answering_continue_false_prevents_continuation(tmp_path: Path) -> None:
    hook = CommandHook('echo \'{"continue": false, "stopReason": "Quota reached"}\'')
    session = make_session(tmp_path, [DONE], hooks=Hooks(stop=[hook]))
    result = await session.submit("go")
    assert result.terminal_reason is Terminal.STOP_HOOK_PREVENTED
    # The hook's author asked for the stop: a success that says why, not an error.
    assert not result.is_error and result.subtype is ResultSubtype.SUCCESS
    assert result.result == "Done."


async def test_a_pre_tool_command_hook_exiting_2_denies_the_call(tmp_path: Path) -> None:
    hook = CommandHook("echo 'no writes on Fridays' >&2; exit 2", matcher="Write")
    session = make_session(tmp_path, [WRITE, DONE], hooks=Hooks(pre_tool_use=[hook]))
    result = await session.submit("go")

    assert not (session.workspace / "out.txt").exists()
    assert "no writes on Fridays" in session.tool_results()["toolu_w"]["content"]
    assert result.result == "Done."


async def test_a_pre_tool_command_hook_can_stop_the_loop(tmp_path: Path) -> None:
    hook = CommandHook('echo \'{"continue": false, "stopReason": "Review needed"}\'')
    session = make_session(tmp_path, [WRITE, DONE], hooks=Hooks(pre_tool_use=[hook]))
    result = await session.submit("go")
    assert result.terminal_reason is Terminal.HOOK_STOPPED
    assert not result.is_error and result.subtype is ResultSubtype.SUCCESS


async def test_a_pre_tool_hook_that_hangs_times_out_and_the_tool_still_runs(tmp_path: Path) -> None:
    hook = CommandHook("sleep 5", timeout_s=0.3)
    session = make_session(tmp_path, [WRITE, DONE], hooks=Hooks(pre_tool_use=[hook]))
    result = await session.submit("go")

    assert (session.workspace / "out.txt").read_text() == "x"
    assert hook_events(session)[0]["outcome"] == "timeout"
    assert result.result == "Done."
