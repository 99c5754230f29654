"""A run of the CLI against a scenario, the parts that need no CLI: the workspace copy it runs in,
and how the requests it sent are summarized and their tool results read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay.claude_code.scripted import ClaudeCodeRun, RequestSummary, ToolResult, WorkspaceError, prepare_workspace
from replay.fake.blocks import RequestPurpose
from replay.fake.model import ReceivedRequest

TOOLS = [{"name": "Bash", "input_schema": {"type": "object"}}]


def received(body: dict[str, object], path: str = "/v1/messages?beta=true") -> ReceivedRequest:
    return ReceivedRequest(method="POST", path=path, headers={}, body=json.dumps(body).encode(), json=body)


def test_the_workspace_is_a_copy_with_the_settings_and_claude_md_written_over(tmp_path: Path) -> None:
    source = tmp_path / "project"
    (source / ".claude").mkdir(parents=True)
    (source / ".claude" / "settings.json").write_text('{"model": "copied"}')
    (source / "notes.md").write_text("notes\n")

    copy = prepare_workspace(tmp_path / "copy", source=source, settings={"model": "given"}, claude_md="Be brief.\n")

    assert json.loads((copy / ".claude" / "settings.json").read_text()) == {"model": "given"}
    assert (copy / "CLAUDE.md").read_text() == "Be brief.\n"
    assert (copy / "notes.md").read_text() == "notes\n"
    assert json.loads((source / ".claude" / "settings.json").read_text()) == {"model": "copied"}
    assert not (source / "CLAUDE.md").exists()


def test_without_a_source_the_workspace_is_empty(tmp_path: Path) -> None:
    assert list(prepare_workspace(tmp_path / "empty").iterdir()) == []


def test_a_source_that_is_not_a_folder_is_one_sentence(tmp_path: Path) -> None:
    (tmp_path / "file.txt").write_text("")

    with pytest.raises(WorkspaceError, match=rf"^The workspace {tmp_path}/file\.txt is not a folder\.$"):
        prepare_workspace(tmp_path / "copy", source=tmp_path / "file.txt")


def test_a_request_is_summarized_by_purpose_model_limit_and_streaming() -> None:
    main = {"model": "claude-sonnet-4-6", "max_tokens": 32000, "stream": True, "tools": TOOLS, "messages": [{}]}
    side = {"model": "claude-haiku-4-5", "max_tokens": 512, "messages": [{"role": "user", "content": "Title?"}]}

    assert RequestSummary.of(main) == RequestSummary(
        purpose=RequestPurpose.MAIN, model="claude-sonnet-4-6", max_tokens=32000, stream=True, messages=1, tools=1
    )
    assert RequestSummary.of(side).line() == "side claude-haiku-4-5 max_tokens=512 no-stream messages=1 tools=0"


def test_the_tool_results_are_each_requests_new_ones_in_order(tmp_path: Path) -> None:
    denied = {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": True, "content": "Blocked."}
    ran = {"type": "tool_result", "tool_use_id": "toolu_2", "content": [{"type": "text", "text": "ok"}]}
    user = {"role": "user", "content": "Go"}
    first = {"role": "user", "content": [denied]}
    second = {"role": "user", "content": [ran]}
    requests = (
        received({"messages": [user]}),
        received({"messages": [user, {"role": "assistant", "content": []}, first]}),
        received({"messages": [user, {"role": "assistant", "content": []}, first, {"role": "assistant"}, second]}),
    )
    run = ClaudeCodeRun(
        terminal_reason="completed",
        result="Done.",
        num_turns=3,
        is_error=False,
        subtype="success",
        session_id=None,
        permission_denials=(),
        exit_code=0,
        raw={},
        requests=requests,
        summary=tuple(RequestSummary.of(r.json) for r in requests),
        workspace=tmp_path,
    )

    assert run.tool_results == (
        ToolResult(tool_use_id="toolu_1", is_error=True, text="Blocked."),
        ToolResult(tool_use_id="toolu_2", is_error=False, text="ok"),
    )
    assert run.purposes == (RequestPurpose.SIDE,) * 3
    assert run.trace().splitlines()[-1] == "terminal: completed"
