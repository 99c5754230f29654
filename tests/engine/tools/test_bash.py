"""Bash: one `bash -c` in the workspace, without credentials, bounded in time and output."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import time
from pathlib import Path

import jsonschema
import pytest

from engine.process import WORKSPACE_VARIABLE, NetworkPolicy, ToolEnvironment
from engine.tools import (
    BashTool,
    PermissionBehavior,
    ToolError,
    ToolResult,
    ToolUseContext,
)
from engine.tools.bash import is_read_only_command
from tests.engine.tools.network_probe import FETCH_COMMAND


@pytest.fixture
def ctx(tmp_path: Path) -> ToolUseContext:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    return ToolUseContext(workspace_root=workspace, session_dir=tmp_path / "session")


async def run(ctx: ToolUseContext, command: str, **extra: object) -> ToolResult:
    return await BashTool().call({"command": command, **extra}, ctx)


def process_is_gone(pid: int, *, within_s: float = 60.0) -> bool:
    """True once ``pid`` has exited. A killed orphan stays a zombie until init reaps it, which
    can take a while in containers, so a zombie counts as gone. ``within_s`` only guards against
    a process that never dies; it returns as soon as the process is gone, so it times nothing."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
        except FileNotFoundError:  # reaped meanwhile, or a system without /proc
            state = ""
        if state == "Z":
            return True
        time.sleep(0.02)
    return False


async def test_the_working_directory_is_the_workspace(ctx: ToolUseContext) -> None:
    result = await run(ctx, "pwd -P")
    assert result == ToolResult(str(ctx.workspace_root.resolve()))


async def test_the_environment_holds_only_the_allowlisted_variables_and_the_workspace(
    ctx: ToolUseContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "tok")
    monkeypatch.setenv("MY_ANTHROPIC_CREDENTIAL", "sk-ant-unlisted")
    monkeypatch.setenv("HARMLESS_SETTING", "not on the list either")
    monkeypatch.setenv("LC_TIME", "C")

    result = await run(ctx, "env -0")

    assert isinstance(result.content, str)
    env = dict(entry.split("=", 1) for entry in result.content.split("\0") if entry)
    bash_own = {"PWD", "OLDPWD", "SHLVL", "_"}
    allowed = {"PATH", "HOME", "LANG", "TERM", "TMPDIR", WORKSPACE_VARIABLE}
    assert set(env) - bash_own <= allowed | {name for name in env if name.startswith("LC_")}
    assert env["LC_TIME"] == "C" and env[WORKSPACE_VARIABLE] == str(ctx.workspace_root)
    assert "sk-ant" not in result.content and "tok" not in env.values()


async def test_the_sessions_variables_and_the_offline_proxies_reach_the_command(
    ctx: ToolUseContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARMLESS_SETTING", "not on the list")
    ctx.environment = ToolEnvironment(variables={"APP_MODE": "test"}, network=NetworkPolicy.OFFLINE)

    result = await run(ctx, 'echo "$APP_MODE $https_proxy $ALL_PROXY [$NO_PROXY] [$HARMLESS_SETTING]"')

    assert result == ToolResult("test http://127.0.0.1:9 http://127.0.0.1:9 [] []")


async def test_offline_a_request_to_a_remote_host_goes_to_the_closed_proxy_and_is_refused(
    ctx: ToolUseContext,
) -> None:
    ctx.environment = ToolEnvironment(network=NetworkPolicy.OFFLINE)

    result = await run(ctx, FETCH_COMMAND)

    assert result == ToolResult("connect ('127.0.0.1', 9)\n<urlopen error [Errno 111] Connection refused>")


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
async def test_offline_curl_goes_to_the_closed_proxy_too(ctx: ToolUseContext) -> None:
    # A name under .invalid never resolves (RFC 2606); through the proxy curl never looks it up.
    ctx.environment = ToolEnvironment(network=NetworkPolicy.OFFLINE)

    result = await run(ctx, "curl -sS --max-time 30 http://remote.invalid/ https://remote.invalid/")

    assert result.is_error and isinstance(result.content, str)
    assert result.content.count("Failed to connect to 127.0.0.1 port 9") == 2, result.content


async def test_stdout_and_stderr_are_combined(ctx: ToolUseContext) -> None:
    assert await run(ctx, "echo out; echo err >&2") == ToolResult("out\nerr")


async def test_a_non_zero_exit_is_an_error_result_with_the_output_and_exit_code(ctx: ToolUseContext) -> None:
    assert await run(ctx, "echo oops; exit 3") == ToolResult("oops\nExit code 3", is_error=True)


async def test_a_silent_success_has_empty_output(ctx: ToolUseContext) -> None:
    assert await run(ctx, "true") == ToolResult("")


async def test_a_timeout_kills_the_whole_process_group(ctx: ToolUseContext) -> None:
    result = await run(ctx, "sleep 30 & echo $! > child.pid; wait", timeout=300)

    assert result == ToolResult("Command timed out after 0.3 seconds and was killed.", is_error=True)
    child = int((ctx.workspace_root / "child.pid").read_text())
    assert process_is_gone(child)


async def test_the_sessions_timeout_applies_when_the_input_has_none(ctx: ToolUseContext) -> None:
    ctx.bash_timeout_s = 0.2
    result = await run(ctx, "echo started; sleep 30")
    assert result == ToolResult("started\nCommand timed out after 0.2 seconds and was killed.", is_error=True)


async def test_background_processes_do_not_outlive_the_command(ctx: ToolUseContext) -> None:
    result = await run(ctx, "sleep 30 >/dev/null 2>&1 & echo $!")
    assert isinstance(result.content, str)
    assert process_is_gone(int(result.content))


async def test_long_output_is_truncated_with_a_note(ctx: ToolUseContext) -> None:
    ctx.bash_max_output_chars = 100
    result = await run(ctx, "yes abcdefghi | head -c 100000")
    assert result == ToolResult(
        ("abcdefghi\n" * 10) + "\n\n[Output truncated: the command printed more than 100 characters; "
        "only the first ones are shown.]"
    )


async def test_an_abort_while_running_kills_the_command_and_interrupts(ctx: ToolUseContext) -> None:
    task = asyncio.create_task(run(ctx, "sleep 30 & echo $! > child.pid; wait"))
    pid_file = ctx.workspace_root / "child.pid"
    while not pid_file.exists() or not pid_file.read_text():
        await asyncio.sleep(0.01)
    ctx.abort.abort()

    with pytest.raises(ToolError, match=r"^Interrupted by user$"):
        await asyncio.wait_for(task, 5)
    assert process_is_gone(int(pid_file.read_text()))


async def test_cancelling_the_call_kills_the_command(ctx: ToolUseContext) -> None:
    # The orchestrator cancels a Bash call's siblings when it fails; nothing may keep running.
    task = asyncio.create_task(run(ctx, "sleep 30 & echo $! > child.pid; wait"))
    pid_file = ctx.workspace_root / "child.pid"
    while not pid_file.exists() or not pid_file.read_text():
        await asyncio.sleep(0.01)
    task.cancel()

    with pytest.raises(asyncio.CancelledError):
        await task
    assert process_is_gone(int(pid_file.read_text()))


@pytest.mark.skipif(shutil.which("setsid") is None, reason="needs setsid(1)")
async def test_a_process_that_escapes_the_group_cannot_hold_the_result_back(ctx: ToolUseContext) -> None:
    # The escapee writes its pid only once it is in its own session, so the command cannot end
    # (and its group be killed) before the escape has happened.
    result = await run(
        ctx,
        "setsid sh -c 'echo $$ > escaped.pid; exec sleep 30' & "
        "while [ ! -s escaped.pid ]; do sleep 0.01; done; echo done",
    )
    escapee = int((ctx.workspace_root / "escaped.pid").read_text())
    try:
        assert result == ToolResult("done")
        # The result came back while the escapee still held the output pipe: not held back by it.
        os.kill(escapee, 0)
    finally:
        os.kill(escapee, signal.SIGKILL)


async def test_an_already_aborted_context_runs_nothing(ctx: ToolUseContext) -> None:
    ctx.abort.abort()
    with pytest.raises(ToolError, match=r"^Interrupted by user$"):
        await run(ctx, "touch ran")
    assert not (ctx.workspace_root / "ran").exists()


async def test_every_command_asks_the_session_for_permission(ctx: ToolUseContext) -> None:
    decision = await BashTool().check_permissions({"command": "ls"}, ctx)
    assert (decision.behavior, decision.reason) == (PermissionBehavior.ASK, "Bash wants to run: ls")


@pytest.mark.parametrize("command", ["ls -la", "cat README.md", "grep -rn 'a b' src", "pwd", "echo hi", "wc -l x"])
def test_simple_read_only_commands_are_concurrency_safe(command: str) -> None:
    assert BashTool().is_concurrency_safe({"command": command})


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf x",
        "ls; rm x",
        "cat a | sh",
        "echo x > f",
        "cat < f",
        "ls && rm x",
        "ls & rm x",
        "echo `rm x`",
        "echo $(rm x)",
        "ls\nrm x",
        "FOO=1 ls",
        "echo 'unclosed",
        "",
    ],
)
def test_anything_else_is_not_concurrency_safe(command: str) -> None:
    assert not is_read_only_command(command)


def test_bash_is_not_read_only_and_limits_results_to_30000_chars() -> None:
    assert (BashTool.is_read_only, BashTool.max_result_size_chars) == (False, 30_000)


@pytest.mark.parametrize(
    "bad_input",
    [
        {},
        {"command": ""},
        {"command": "ls", "timeout": 600_001},
        {"command": "ls", "timeout": 0},
        {"command": "ls", "cwd": "/"},
    ],
    ids=["missing-command", "empty-command", "timeout-over-max", "zero-timeout", "unknown-key"],
)
def test_the_schema_rejects_bad_input(bad_input: dict[str, object]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad_input, BashTool.input_schema)
