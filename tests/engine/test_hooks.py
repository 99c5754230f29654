"""Hooks: Python callables and shell commands (Claude Code's protocol) around tool calls and
when the model stops. Every protocol path runs a real ``bash -c`` command in a temp workspace."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest

from engine.hooks import (
    CommandHook,
    HookContext,
    HookDecision,
    HookEvent,
    HookInput,
    HookOutcome,
    HookResult,
    HookRun,
    Hooks,
    StopHookInput,
    StopHookResult,
    post_tool_feedback_text,
    run_stop_hooks,
    run_tool_hooks,
    stop_hook_feedback_text,
)
from engine.process import NetworkPolicy, ToolEnvironment
from engine.tools import BashTool, ToolUseContext


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    return root


def context(workspace: Path, *, timeout_s: float = 10.0) -> HookContext:
    transcript = workspace.parent / "transcript.jsonl"
    return HookContext(cwd=workspace, session_id="session-1", transcript_path=transcript, timeout_s=timeout_s)


def pre_tool(tool_name: str = "Bash", tool_input: dict[str, Any] | None = None) -> HookInput:
    return HookInput(
        event=HookEvent.PRE_TOOL_USE,
        tool_name=tool_name,
        tool_use_id="toolu_1",
        tool_input=tool_input if tool_input is not None else {"command": "ls"},
    )


def post_tool(response: str = "a.txt") -> HookInput:
    return HookInput(
        event=HookEvent.POST_TOOL_USE,
        tool_name="Bash",
        tool_use_id="toolu_1",
        tool_input={"command": "ls"},
        tool_response=response,
    )


STOP = StopHookInput(stop_hook_active=True, last_assistant_text="All done.")


def prints(obj: dict[str, Any]) -> CommandHook:
    """A command hook that exits 0 printing ``obj`` as JSON."""
    return CommandHook(f"printf '%s' '{json.dumps(obj)}'")


# --- The Hooks record -------------------------------------------------------------------------


def test_hooks_default_to_no_hooks_for_every_event_and_are_frozen() -> None:
    hooks = Hooks()
    assert (tuple(hooks.pre_tool_use), tuple(hooks.post_tool_use), tuple(hooks.stop)) == ((), (), ())
    with pytest.raises(dataclasses.FrozenInstanceError):
        hooks.stop = ()  # type: ignore[misc]


# --- What a command hook receives ---------------------------------------------------------------


async def test_a_pre_tool_command_gets_the_event_session_and_tool_as_json_on_stdin(workspace: Path) -> None:
    await run_tool_hooks(
        [CommandHook("cat > seen.json")], pre_tool(tool_input={"command": "ls -la"}), ctx=context(workspace)
    )
    assert json.loads((workspace / "seen.json").read_text()) == {
        "hook_event_name": "PreToolUse",
        "session_id": "session-1",
        "cwd": str(workspace),
        "transcript_path": str(workspace.parent / "transcript.jsonl"),
        "tool_name": "Bash",
        "tool_input": {"command": "ls -la"},
        "tool_use_id": "toolu_1",
    }


async def test_a_post_tool_command_also_gets_the_tool_response(workspace: Path) -> None:
    await run_tool_hooks([CommandHook("cat > seen.json")], post_tool("a.txt\nb.txt"), ctx=context(workspace))
    seen = json.loads((workspace / "seen.json").read_text())
    assert (seen["hook_event_name"], seen["tool_response"]) == ("PostToolUse", "a.txt\nb.txt")


async def test_a_stop_command_gets_stop_hook_active_and_the_last_assistant_text(workspace: Path) -> None:
    await run_stop_hooks([CommandHook("cat > seen.json")], STOP, ctx=context(workspace))
    seen = json.loads((workspace / "seen.json").read_text())
    assert {k: seen[k] for k in ("hook_event_name", "stop_hook_active", "last_assistant_message")} == {
        "hook_event_name": "Stop",
        "stop_hook_active": True,
        "last_assistant_message": "All done.",
    }
    assert "tool_name" not in seen


async def test_a_command_runs_in_the_workspace(workspace: Path) -> None:
    await run_tool_hooks([CommandHook("pwd > where.txt")], pre_tool(), ctx=context(workspace))
    assert (workspace / "where.txt").read_text().strip() == os.path.realpath(workspace)


async def test_a_command_does_not_see_credentials_in_its_environment(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("MY_ANTHROPIC_CREDENTIAL", "sk-ant-unlisted")
    await run_tool_hooks([CommandHook("env > env.txt")], pre_tool(), ctx=context(workspace))
    environment = (workspace / "env.txt").read_text()
    assert "ANTHROPIC_API_KEY" not in environment and "sk-ant-secret" not in environment
    assert "MY_ANTHROPIC_CREDENTIAL" not in environment and "sk-ant-unlisted" not in environment


async def test_a_command_sees_the_same_environment_as_the_bash_tool(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_ANTHROPIC_CREDENTIAL", "sk-ant-unlisted")
    monkeypatch.setenv("HARMLESS_SETTING", "not on the list either")
    environment = ToolEnvironment(variables={"APP_MODE": "test"}, network=NetworkPolicy.OFFLINE)
    ctx = dataclasses.replace(context(workspace), environment=environment)
    await run_tool_hooks([CommandHook("env -0 > hook-env.txt")], pre_tool(), ctx=ctx)
    tool_ctx = ToolUseContext(
        workspace_root=workspace, session_dir=workspace.parent / "session", environment=environment
    )
    bash = await BashTool().call({"command": "env -0"}, tool_ctx)

    def names(listing: str) -> set[str]:
        return {entry.split("=", 1)[0] for entry in listing.split("\0") if entry} - {"PWD", "OLDPWD", "SHLVL", "_"}

    hook_env = (workspace / "hook-env.txt").read_text()
    assert isinstance(bash.content, str)
    assert names(hook_env) == names(bash.content) == set(environment.build(workspace=workspace))
    assert "APP_MODE=test" in hook_env.split("\0") and "http_proxy=http://127.0.0.1:9" in hook_env.split("\0")


# --- Exit 0: success, and the JSON answers --------------------------------------------------------


async def test_exit_zero_with_plain_text_is_a_success_with_no_effect(workspace: Path) -> None:
    result = await run_tool_hooks([CommandHook("echo checked")], pre_tool(), ctx=context(workspace))
    assert (result.denied, result.allowed, result.updated_input, result.prevent_continuation) == (
        False,
        False,
        None,
        False,
    )
    assert [run.outcome for run in result.runs] == [HookOutcome.SUCCESS]


async def test_json_decision_block_denies_a_tool_call_with_its_reason(workspace: Path) -> None:
    result = await run_tool_hooks(
        [prints({"decision": "block", "reason": "no rm today"})], pre_tool(), ctx=context(workspace)
    )
    assert (result.denied, result.reason) == (True, "no rm today")
    assert result.runs[0].outcome is HookOutcome.BLOCKING


async def test_permission_decision_deny_denies_a_tool_call_with_its_reason(workspace: Path) -> None:
    answer = {"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "outside policy"}}
    result = await run_tool_hooks([prints(answer)], pre_tool(), ctx=context(workspace))
    assert (result.denied, result.reason) == (True, "outside policy")


async def test_permission_decision_allow_allows_a_tool_call(workspace: Path) -> None:
    answer = {"hookSpecificOutput": {"permissionDecision": "allow", "permissionDecisionReason": "safe"}}
    result = await run_tool_hooks([prints(answer)], pre_tool(), ctx=context(workspace))
    assert (result.allowed, result.denied) == (True, False)


async def test_a_deny_from_any_hook_outweighs_an_allow(workspace: Path) -> None:
    allow = prints({"hookSpecificOutput": {"permissionDecision": "allow"}})
    deny = prints({"decision": "block", "reason": "no"})
    result = await run_tool_hooks([allow, deny], pre_tool(), ctx=context(workspace))
    assert (result.allowed, result.denied) == (False, True)


async def test_updated_input_rewrites_the_call_and_the_next_hook_sees_the_rewrite(workspace: Path) -> None:
    rewrite = prints({"hookSpecificOutput": {"updatedInput": {"command": "ls -1"}}})
    result = await run_tool_hooks([rewrite, CommandHook("cat > seen.json")], pre_tool(), ctx=context(workspace))
    assert result.updated_input == {"command": "ls -1"}
    assert json.loads((workspace / "seen.json").read_text())["tool_input"] == {"command": "ls -1"}


async def test_continue_false_stops_the_loop_with_the_stop_reason(workspace: Path) -> None:
    result = await run_tool_hooks(
        [prints({"continue": False, "stopReason": "quota reached"})], pre_tool(), ctx=context(workspace)
    )
    assert (result.prevent_continuation, result.stop_reason, result.denied) == (True, "quota reached", False)


async def test_a_stop_command_blocks_with_json_decision_block(workspace: Path) -> None:
    outcome = await run_stop_hooks(
        [prints({"decision": "block", "reason": "tests still fail"})], STOP, ctx=context(workspace)
    )
    assert (outcome.blocking_reasons, outcome.prevent_continuation) == (("tests still fail",), False)


async def test_a_stop_command_prevents_continuation_with_continue_false(workspace: Path) -> None:
    outcome = await run_stop_hooks(
        [prints({"continue": False, "stopReason": "budget spent"})], STOP, ctx=context(workspace)
    )
    assert (outcome.prevent_continuation, outcome.stop_reason, outcome.blocking_reasons) == (True, "budget spent", ())


# --- Exit 2: blocking, the reason on stderr ---------------------------------------------------------


async def test_exit_two_denies_a_tool_call_with_stderr_as_the_reason(workspace: Path) -> None:
    result = await run_tool_hooks(
        [CommandHook("echo 'rm is not allowed' >&2; exit 2")], pre_tool(), ctx=context(workspace)
    )
    assert (result.denied, result.reason) == (True, "rm is not allowed")
    assert result.runs[0].outcome is HookOutcome.BLOCKING


async def test_exit_two_after_a_tool_call_is_feedback_only(workspace: Path) -> None:
    result = await run_tool_hooks([CommandHook("echo 'lint failed' >&2; exit 2")], post_tool(), ctx=context(workspace))
    assert (result.denied, result.feedback) == (False, ("lint failed",))


async def test_exit_two_blocks_a_stop_with_stderr_as_the_reason(workspace: Path) -> None:
    outcome = await run_stop_hooks([CommandHook("echo 'keep going' >&2; exit 2")], STOP, ctx=context(workspace))
    assert outcome.blocking_reasons == ("keep going",)


async def test_several_blocking_stop_hooks_give_every_reason_in_order(workspace: Path) -> None:
    hooks = [CommandHook("echo first >&2; exit 2"), CommandHook("echo second >&2; exit 2")]
    outcome = await run_stop_hooks(hooks, STOP, ctx=context(workspace))
    assert outcome.blocking_reasons == ("first", "second")


# --- Other failures: reported, never blocking ------------------------------------------------------


async def test_another_non_zero_exit_is_a_non_blocking_error_naming_the_hook(workspace: Path) -> None:
    result = await run_tool_hooks([CommandHook("echo oops >&2; exit 1")], pre_tool(), ctx=context(workspace))
    assert result.denied is False
    assert result.runs == (
        HookRun(
            HookEvent.PRE_TOOL_USE,
            "echo oops >&2; exit 1",
            HookOutcome.NON_BLOCKING_ERROR,
            "Hook `echo oops >&2; exit 1` failed with exit code 1: oops",
        ),
    )


async def test_a_failing_stop_hook_does_not_block_the_stop(workspace: Path) -> None:
    outcome = await run_stop_hooks([CommandHook("exit 1")], STOP, ctx=context(workspace))
    assert (outcome.blocking_reasons, outcome.prevent_continuation) == ((), False)


async def test_stdout_that_looks_like_json_but_is_not_is_invalid_output_naming_the_problem(workspace: Path) -> None:
    command = """echo '{"decision": block}'"""
    result = await run_tool_hooks([CommandHook(command)], pre_tool(), ctx=context(workspace))
    run = result.runs[0]
    assert run.outcome is HookOutcome.INVALID_OUTPUT
    assert run.message.startswith(f"Hook `{command}` output was ignored: its stdout is not valid JSON (")
    assert result.denied is False


async def test_json_with_a_wrongly_typed_field_is_invalid_output_and_has_no_effect(workspace: Path) -> None:
    result = await run_tool_hooks([prints({"continue": "no"})], pre_tool(), ctx=context(workspace))
    assert result.runs[0].outcome is HookOutcome.INVALID_OUTPUT
    assert '"continue" must be a JSON boolean' in result.runs[0].message
    assert result.prevent_continuation is False


async def test_a_command_past_its_timeout_is_killed_and_reported(workspace: Path) -> None:
    # Killed, not waited for: had the hook been left to run, it would have created "finished".
    command = "sleep 30; touch finished"
    result = await run_tool_hooks([CommandHook(command, timeout_s=0.3)], pre_tool(), ctx=context(workspace))
    assert (result.runs[0].outcome, result.runs[0].message) == (
        HookOutcome.TIMEOUT,
        f"Hook `{command}` timed out after 0.3 s",
    )
    assert result.denied is False
    assert not (workspace / "finished").exists()


async def test_without_its_own_timeout_a_command_gets_the_session_default(workspace: Path) -> None:
    result = await run_tool_hooks([CommandHook("sleep 5")], pre_tool(), ctx=context(workspace, timeout_s=0.3))
    assert result.runs[0].message == "Hook `sleep 5` timed out after 0.3 s"


async def test_a_timed_out_command_takes_its_background_processes_with_it(workspace: Path) -> None:
    hook = CommandHook("sleep 30 & echo $! > child.pid; wait", timeout_s=0.3)
    await run_tool_hooks([hook], pre_tool(), ctx=context(workspace))
    assert await _dies(int((workspace / "child.pid").read_text()))


async def test_cancelling_the_caller_kills_a_running_command(workspace: Path) -> None:
    hook = CommandHook("sleep 30 & echo $! > child.pid; wait")
    task = asyncio.create_task(run_tool_hooks([hook], pre_tool(), ctx=context(workspace)))
    pid_file = workspace / "child.pid"
    for _ in range(200):
        if pid_file.exists() and pid_file.read_text().strip():
            break
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _dies(int(pid_file.read_text()))


async def _dies(pid: int) -> bool:
    """Whether process ``pid`` is gone within a second (a SIGKILL takes effect asynchronously)."""
    for _ in range(100):
        if not _alive(pid):
            return True
        await asyncio.sleep(0.01)
    return False


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is dead, merely not reaped yet


async def test_a_command_that_cannot_start_is_a_non_blocking_error(workspace: Path) -> None:
    result = await run_tool_hooks([CommandHook("true")], pre_tool(), ctx=context(workspace / "missing"))
    assert result.runs[0].outcome is HookOutcome.NON_BLOCKING_ERROR
    assert result.runs[0].message.startswith("Hook `true` could not be started in the workspace: ")


async def test_command_hooks_without_a_context_are_reported_as_not_run(workspace: Path) -> None:
    result = await run_tool_hooks([CommandHook("touch ran")], pre_tool())
    assert result.runs[0].outcome is HookOutcome.NON_BLOCKING_ERROR
    assert "was not run" in result.runs[0].message


async def test_a_failing_hook_does_not_keep_the_next_one_from_running(workspace: Path) -> None:
    hooks = [CommandHook("exit 1"), CommandHook("echo no >&2; exit 2")]
    result = await run_tool_hooks(hooks, pre_tool(), ctx=context(workspace))
    assert [run.outcome for run in result.runs] == [HookOutcome.NON_BLOCKING_ERROR, HookOutcome.BLOCKING]
    assert result.denied is True


# --- Matchers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("matcher", "tool_name", "runs"),
    [
        (None, "Bash", True),
        ("*", "Bash", True),
        ("", "Bash", True),
        ("Bash", "Bash", True),
        ("Write|Edit", "Edit", True),
        ("Write|Edit", "Bash", False),
        ("Edit", "NotebookEdit", False),  # the whole name must match
        ("mcp__.*", "mcp__github__search", True),
    ],
)
async def test_a_matcher_selects_the_tools_a_command_hook_runs_for(
    workspace: Path, matcher: str | None, tool_name: str, runs: bool
) -> None:
    result = await run_tool_hooks(
        [CommandHook("touch ran", matcher=matcher)], pre_tool(tool_name), ctx=context(workspace)
    )
    assert ((workspace / "ran").exists(), len(result.runs)) == (runs, int(runs))


def test_an_invalid_matcher_is_refused_when_the_hook_is_made() -> None:
    with pytest.raises(ValueError, match=r"matcher '\(' is not a valid regular expression"):
        CommandHook("true", matcher="(")


# --- Python callables --------------------------------------------------------------------------------


async def test_a_python_hook_deny_is_folded_with_its_label() -> None:
    def deny(hook_input: HookInput) -> HookResult:
        return HookResult(decision=HookDecision.DENY, reason="not today")

    result = await run_tool_hooks([deny], pre_tool())
    assert (result.denied, result.reason) == (True, "not today")
    assert result.runs == (
        HookRun(
            HookEvent.PRE_TOOL_USE,
            "test_a_python_hook_deny_is_folded_with_its_label.<locals>.deny",
            HookOutcome.BLOCKING,
            "not today",
        ),
    )


async def test_an_async_python_hook_can_rewrite_the_input() -> None:
    async def rewrite(hook_input: HookInput) -> HookResult:
        return HookResult(updated_input={**hook_input.tool_input, "timeout": 1000})

    result = await run_tool_hooks([rewrite], pre_tool())
    assert result.updated_input == {"command": "ls", "timeout": 1000}


async def test_a_python_hook_that_raises_is_a_non_blocking_error_with_the_exception_text() -> None:
    def broken(hook_input: HookInput) -> HookResult:
        raise ValueError("boom")

    result = await run_tool_hooks([broken], pre_tool())
    assert result.denied is False
    assert (result.runs[0].outcome, result.runs[0].message) == (
        HookOutcome.NON_BLOCKING_ERROR,
        "Hook `test_a_python_hook_that_raises_is_a_non_blocking_error_with_the_exception_text.<locals>.broken` "
        "raised ValueError: boom",
    )


async def test_a_python_hook_that_never_returns_is_bounded_by_the_timeout(workspace: Path) -> None:
    async def hang(stop_input: StopHookInput) -> None:
        await asyncio.Event().wait()

    outcome = await run_stop_hooks([hang], STOP, ctx=context(workspace, timeout_s=0.2))
    assert outcome.runs[0].outcome is HookOutcome.TIMEOUT
    assert outcome.runs[0].message.endswith("timed out after 0.2 s")


async def test_a_python_hook_returning_the_wrong_type_is_invalid_output() -> None:
    def wrong(hook_input: HookInput) -> Any:
        return {"decision": "deny"}

    result = await run_tool_hooks([wrong], pre_tool())
    assert (result.runs[0].outcome, result.denied) == (HookOutcome.INVALID_OUTPUT, False)


async def test_python_stop_hooks_block_or_prevent_continuation(workspace: Path) -> None:
    def block(stop_input: StopHookInput) -> StopHookResult:
        return StopHookResult(block=True, reason="write the tests too")

    def prevent(stop_input: StopHookInput) -> StopHookResult:
        return StopHookResult(prevent_continuation=True, stop_reason="session over")

    outcome = await run_stop_hooks([block, prevent], STOP, ctx=context(workspace))
    assert (outcome.blocking_reasons, outcome.prevent_continuation, outcome.stop_reason) == (
        ("write the tests too",),
        True,
        "session over",
    )


async def test_a_python_stop_hook_sees_stop_hook_active() -> None:
    seen: list[StopHookInput] = []
    await run_stop_hooks([seen.append], StopHookInput(stop_hook_active=False, last_assistant_text="hi"))
    assert seen == [StopHookInput(stop_hook_active=False, last_assistant_text="hi")]


# --- For the loop and the trace --------------------------------------------------------------------


def test_stop_hook_feedback_joins_several_reasons_with_blank_lines() -> None:
    assert stop_hook_feedback_text(["fix lint", "run tests"]) == "Stop hook feedback:\nfix lint\n\nrun tests"


def test_post_tool_feedback_joins_several_reasons_with_blank_lines() -> None:
    assert post_tool_feedback_text(["lint failed", "types failed"]) == (
        "PostToolUse hook feedback:\nlint failed\n\ntypes failed"
    )


def test_a_hook_run_renders_as_trace_data() -> None:
    run = HookRun(HookEvent.STOP, "exit 2", HookOutcome.BLOCKING, "keep going")
    assert run.trace_data() == {"event": "Stop", "hook": "exit 2", "outcome": "blocking", "message": "keep going"}
