"""The real Claude Code CLI, pinned, against the real fake model server on loopback: what a run
sends and what its result says. Nothing the CLI sends is kept beyond the test's temp folders."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest

from replay.claude_code.install import CLAUDE_CODE_VERSION
from replay.claude_code.run import ClaudeCodeRunError, PermissionMode, run_claude

from .conftest import ServeScenario

ONE_TEXT_TURN = """
version: 1
turns:
  - content: [{text: Hello from the fake model.}]
"""

BASH_THEN_TEXT = """
version: 1
turns:
  - content:
      - tool_use: {name: Bash, input: {command: "echo listed > listing.txt", description: List}}
  - content: [{text: Listed.}]
"""


def test_one_text_turn_is_one_streamed_request_and_a_completed_result(
    claude: Path, serve_scenario: ServeScenario, workspace: Path
) -> None:
    server = serve_scenario(ONE_TEXT_TURN)

    result = run_claude(claude, "Say hello", base_url=server.url, workspace=workspace)

    assert (result.terminal_reason, result.result, result.num_turns) == ("completed", "Hello from the fake model.", 1)
    assert (result.is_error, result.exit_code, result.permission_denials) == (False, 0, ())
    requests = server.fake_model.requests
    assert [(r.method, r.path) for r in requests] == [("POST", "/v1/messages?beta=true")]
    assert requests[0].json["stream"] is True
    assert requests[0].headers["user-agent"].startswith(f"claude-cli/{CLAUDE_CODE_VERSION} ")


def test_the_model_option_sets_the_requested_model(
    claude: Path, serve_scenario: ServeScenario, workspace: Path
) -> None:
    server = serve_scenario(ONE_TEXT_TURN)

    run_claude(claude, "Say hello", base_url=server.url, workspace=workspace, model="claude-sonnet-4-6")

    assert [r.json["model"] for r in server.fake_model.requests] == ["claude-sonnet-4-6"]


def test_a_tool_call_that_needs_permission_is_denied_in_print_mode(
    claude: Path, serve_scenario: ServeScenario, workspace: Path
) -> None:
    server = serve_scenario(BASH_THEN_TEXT)

    result = run_claude(claude, "List the files", base_url=server.url, workspace=workspace)

    assert [(d.tool_name, d.tool_input["command"]) for d in result.permission_denials] == [
        ("Bash", "echo listed > listing.txt")
    ]
    assert (result.terminal_reason, result.num_turns, result.result) == ("completed", 2, "Listed.")
    assert not (workspace / "listing.txt").exists()


def test_an_allowed_tool_runs_in_the_workspace(claude: Path, serve_scenario: ServeScenario, workspace: Path) -> None:
    server = serve_scenario(BASH_THEN_TEXT)

    result = run_claude(claude, "List the files", base_url=server.url, workspace=workspace, allowed_tools=["Bash"])

    assert result.permission_denials == ()
    assert (workspace / "listing.txt").read_text() == "listed\n"
    tool_result = server.fake_model.requests[1].json["messages"][-1]["content"][0]
    assert (tool_result["type"], tool_result["tool_use_id"]) == ("tool_result", "toolu_fake_0001_0")


def test_bypassing_permissions_runs_the_tool(claude: Path, serve_scenario: ServeScenario, workspace: Path) -> None:
    server = serve_scenario(BASH_THEN_TEXT)

    result = run_claude(
        claude,
        "List the files",
        base_url=server.url,
        workspace=workspace,
        permission_mode=PermissionMode.BYPASS_PERMISSIONS,
    )

    assert (result.terminal_reason, result.permission_denials) == ("completed", ())
    assert (workspace / "listing.txt").exists()


def test_max_turns_ends_the_run_with_an_error_result(
    claude: Path, serve_scenario: ServeScenario, workspace: Path
) -> None:
    server = serve_scenario(BASH_THEN_TEXT)

    result = run_claude(
        claude, "List the files", base_url=server.url, workspace=workspace, allowed_tools=["Bash"], max_turns=1
    )

    assert (result.terminal_reason, result.subtype, result.is_error) == ("max_turns", "error_max_turns", True)
    assert (result.result, result.exit_code) == (None, 1)
    assert len(server.fake_model.requests) == 1


def test_a_stop_hook_that_blocks_twice_makes_the_cli_continue_twice(
    claude: Path, serve_scenario: ServeScenario, workspace: Path
) -> None:
    settings = workspace / ".claude" / "settings.json"
    settings.parent.mkdir()
    hook = workspace / ".claude" / "stop_hook.py"
    hook.write_text(
        "import json, pathlib, sys\n"
        "log = pathlib.Path('stop_inputs.jsonl')\n"
        "with log.open('a') as out:\n"
        "    out.write(json.dumps(json.load(sys.stdin)) + '\\n')\n"
        "if len(log.read_text().splitlines()) <= 2:\n"
        "    print('Run the tests first.', file=sys.stderr)\n"
        "    sys.exit(2)\n"
    )
    command = f"{sys.executable} {hook}"
    settings.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": command}]}]}}))
    server = serve_scenario(
        """
version: 1
turns:
  - content: [{text: Done.}]
  - content: [{text: Still done.}]
  - content: [{text: Really done.}]
"""
    )

    result = run_claude(claude, "Fix the bug", base_url=server.url, workspace=workspace)

    assert (result.terminal_reason, result.num_turns, result.result) == ("completed", 3, "Really done.")
    inputs = [json.loads(line) for line in (workspace / "stop_inputs.jsonl").read_text().splitlines()]
    assert [(i["hook_event_name"], i["stop_hook_active"]) for i in inputs] == [
        ("Stop", False),
        ("Stop", True),
        ("Stop", True),
    ]
    assert len(server.fake_model.requests) == 3


def test_a_run_that_prints_no_json_result_raises_one_sentence(
    claude: Path, serve_scenario: ServeScenario, workspace: Path
) -> None:
    server = serve_scenario(ONE_TEXT_TURN)

    with pytest.raises(ClaudeCodeRunError, match=r"exited with status 0 without a JSON result; it said: 2\.1\.\d+"):
        run_claude(claude, "Say hello", base_url=server.url, workspace=workspace, args=["--version"])


def test_a_run_past_its_timeout_is_stopped_with_one_sentence(claude: Path, workspace: Path) -> None:
    # A model that takes the connection and never answers: the CLI can only wait, so however fast
    # the machine, the run ends by its timeout (and a short one does not keep the suite waiting).
    with socket.create_server(("127.0.0.1", 0)) as silent:
        port = silent.getsockname()[1]
        with pytest.raises(ClaudeCodeRunError, match=r"^Claude Code ran for over 0.5 s in .* and was stopped; "):
            run_claude(claude, "Say hello", base_url=f"http://127.0.0.1:{port}", workspace=workspace, timeout=0.5)
