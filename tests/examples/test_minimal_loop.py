"""examples/minimal_loop.py, as a user would run it: the plain SDK client against the fake model
served on loopback, its tools running in a real folder."""

from __future__ import annotations

from pathlib import Path

import anthropic
import pytest

from replay import FakeModel, FakeModelServer, Scenario
from tests.examples.conftest import load_module

minimal_loop = load_module("examples/minimal_loop.py")


def _serve(turns: list[dict[str, object]]) -> tuple[FakeModel, FakeModelServer]:
    fake = FakeModel(Scenario.from_list(turns, name="minimal-loop"))
    return fake, FakeModelServer(fake)


def test_it_runs_the_tools_the_model_asks_for_and_returns_the_final_answer(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.md").write_text("TODO: rotate the staging keys.\n", encoding="utf-8")
    fake, server = _serve(
        [
            {"content": [{"tool_use": {"name": "list_files", "input": {"path": "."}}}]},
            {"content": [{"tool_use": {"name": "read_file", "input": {"path": "docs/notes.md"}}}]},
            {"content": [{"text": "One TODO: rotate the staging keys."}]},
        ]
    )
    with server, anthropic.Anthropic(api_key="sk-ant-test", base_url=server.url, max_retries=0) as client:
        answer = minimal_loop.run(client, "What is left to do?", tmp_path)

    assert answer == "One TODO: rotate the staging keys."
    requests = [request.json for request in fake.requests]
    assert len(requests) == 3 and fake.turns_remaining == 0
    listing, reading = requests[1]["messages"][-1]["content"], requests[2]["messages"][-1]["content"]
    assert listing == [
        {"type": "tool_result", "tool_use_id": "toolu_fake_0001_0", "content": "docs/", "is_error": False}
    ]
    assert reading == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_fake_0002_0",
            "content": "TODO: rotate the staging keys.\n",
            "is_error": False,
        }
    ]


def test_a_failing_tool_call_is_an_error_result_and_the_loop_goes_on(tmp_path: Path) -> None:
    fake, server = _serve(
        [
            {"content": [{"tool_use": {"name": "read_file", "input": {"path": "../outside.txt"}}}]},
            {"content": [{"text": "I cannot read that file."}]},
        ]
    )
    with server, anthropic.Anthropic(api_key="sk-ant-test", base_url=server.url, max_retries=0) as client:
        answer = minimal_loop.run(client, "Read ../outside.txt", tmp_path)

    assert answer == "I cannot read that file."
    [result] = fake.requests[1].json["messages"][-1]["content"]
    assert result["is_error"] is True
    assert result["content"] == "Error: ../outside.txt is outside the workspace."


def test_an_api_error_it_does_not_retry_reaches_the_caller(tmp_path: Path) -> None:
    fake, server = _serve(
        [{"fault": "http_error", "status": 400, "error_type": "invalid_request_error", "message": "prompt is too long"}]
    )
    with server, anthropic.Anthropic(api_key="sk-ant-test", base_url=server.url) as client:
        with pytest.raises(anthropic.BadRequestError, match="prompt is too long"):
            minimal_loop.run(client, "Hello", tmp_path)
    assert len(fake.requests) == 1
