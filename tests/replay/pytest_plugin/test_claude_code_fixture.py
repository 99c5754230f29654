"""The ``claude_code`` fixture: the pinned Claude Code CLI against a scenario on loopback, in a
copy of a workspace. What a run gives a test (its result, the requests and their summary, the
tool results, the copy), where its paths point, and the one sentence each failure gives — an
install that failed included, which fails the test and skips nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay.claude_code.scripted import RequestSummary
from replay.fake.blocks import RequestPurpose
from replay.fake.scenario import Scenario
from replay.pytest_plugin import ClaudeCodeRunner

HERE = Path(__file__).parent
ONE_TURN = Scenario.from_list([{"content": [{"text": "Hello."}]}], name="one-turn")


def test_a_run_gives_the_result_the_requests_and_their_summary(claude_code: ClaudeCodeRunner, tmp_path: Path) -> None:
    run = claude_code.run("Say hello", scenario=ONE_TURN, model="claude-sonnet-4-6")

    assert (run.terminal_reason, run.result, run.num_turns, run.exit_code) == ("completed", "Hello.", 1, 0)
    assert [(r.method, r.path) for r in run.requests] == [("POST", "/v1/messages?beta=true")]
    [summary] = run.summary
    assert summary == RequestSummary(
        purpose=RequestPurpose.MAIN,
        model="claude-sonnet-4-6",
        max_tokens=32000,
        stream=True,
        messages=1,
        tools=summary.tools,
    )
    assert summary.tools > 0
    assert run.trace() == (
        f"1. main claude-sonnet-4-6 max_tokens=32000 stream messages=1 tools={summary.tools}\nterminal: completed"
    )
    assert run.workspace == tmp_path / "claude_code" / "run-1" / "workspace"
    assert list(run.workspace.iterdir()) == []
    assert claude_code.runs == [run]


def test_the_workspace_is_a_copy_beside_the_test_file_with_the_settings_and_claude_md(
    claude_code: ClaudeCodeRunner,
) -> None:
    run = claude_code.run(
        "List the files",
        scenario="claude_code/list_files.yaml",
        workspace="claude_code/project",
        allowed_tools=["Bash"],
        settings={"permissions": {"deny": ["WebFetch"]}},
        claude_md="Be brief.\n",
    )

    assert run.permission_denials == ()
    [listed] = run.tool_results
    assert (listed.tool_use_id, listed.is_error, listed.text.split()) == (
        "toolu_fake_0001_0",
        False,
        [".claude", "CLAUDE.md", "made.txt", "notes.md"],
    )
    assert json.loads((run.workspace / ".claude" / "settings.json").read_text()) == {
        "permissions": {"deny": ["WebFetch"]}
    }
    assert (run.workspace / "CLAUDE.md").read_text() == "Be brief.\n"
    assert sorted(path.name for path in (HERE / "claude_code" / "project").iterdir()) == ["notes.md"]
    assert run.purposes == (RequestPurpose.MAIN, RequestPurpose.MAIN)


def test_each_run_of_a_test_gets_its_own_copy(claude_code: ClaudeCodeRunner, tmp_path: Path) -> None:
    first = claude_code.run("Say hello", scenario=ONE_TURN)
    (first.workspace / "left.txt").write_text("by the first run\n")

    second = claude_code.run("Say hello", scenario=ONE_TURN)

    assert second.workspace == tmp_path / "claude_code" / "run-2" / "workspace"
    assert list(second.workspace.iterdir()) == []
    assert len(claude_code.runs) == 2


def failure_lines(outcome: pytest.RunResult) -> list[str]:
    """What the failures section of a pytest run says, less its separator lines."""
    section = outcome.stdout.str().split("= FAILURES =", 1)[1].split("= short test summary info =", 1)[0]
    return [line for line in section.splitlines() if line and not line.startswith(("_", "="))]


BAD_INPUT_TESTS = """\
def test_a_scenario_that_is_not_there(claude_code):
    claude_code.run("Say hello", scenario="missing.yaml")


def test_a_workspace_that_is_not_a_folder(claude_code):
    claude_code.run("Say hello", scenario="one.yaml", workspace="one.yaml")


def test_neither_a_scenario_nor_a_cassette(claude_code):
    claude_code.run("Say hello")


def test_a_cassette_that_is_not_there_in_record_mode_none(claude_code):
    claude_code.run("Say hello", cassette="absent")


def test_a_corrupt_cassette(claude_code):
    claude_code.run("Say hello", cassette="corrupt")
"""


def test_bad_input_fails_the_test_with_one_sentence(project: pytest.Pytester, claude_code_cache: Path) -> None:
    project.makefile(".yaml", one="version: 1\nturns:\n  - content: [{text: Hello.}]\n")
    (project.path / "cassettes").mkdir()
    (project.path / "cassettes" / "corrupt.yaml").write_text("interactions: [[[", encoding="utf-8")
    project.makepyfile(test_bad_input=BAD_INPUT_TESTS)

    outcome = project.runpytest_inprocess("-q")

    outcome.assert_outcomes(failed=5)
    lines = failure_lines(outcome)
    assert lines[:4] == [
        f"{project.path}/missing.yaml does not exist.",
        f"The workspace {project.path}/one.yaml is not a folder.",
        "claude_code.run needs a scenario= (the scripted model) or a cassette= (a recorded run).",
        f"Cassette {project.path}/cassettes/absent.yaml does not exist and record mode 'none' never records. "
        "Run pytest with --record-mode=once to record cassettes that do not exist yet.",
    ]
    assert len(lines) == 5 and lines[4].startswith(f"{project.path}/cassettes/corrupt.yaml ")


def test_recording_from_the_api_without_a_key_fails_at_once_with_one_sentence(
    project: pytest.Pytester, claude_code_cache: Path
) -> None:
    project.makepyfile(test_live="def test_live(claude_code):\n    claude_code.run('Say hello', cassette='live')\n")

    outcome = project.runpytest_inprocess("-q", "--record-mode=once")

    outcome.assert_outcomes(failed=1)
    assert failure_lines(outcome) == [
        f"Recording {project.path}/cassettes/live.yaml from https://api.anthropic.com needs ANTHROPIC_API_KEY in "
        "the environment (or give claude_code.run a scenario= to record from)."
    ]
    assert not (project.path / "cassettes" / "live.yaml").exists()


def test_an_install_that_fails_fails_the_test_with_its_sentence(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # No npm, no claude on PATH, an empty cache: the install cannot happen.
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("REPLAY_CLAUDE_CODE_CACHE", str(tmp_path / "cache"))
    project.makepyfile(test_hello="def test_hello(claude_code):\n    claude_code.run('Say hello', scenario='x.yaml')\n")

    outcome = project.runpytest_inprocess("-q")

    outcome.assert_outcomes(failed=1)
    assert failure_lines(outcome) == [
        "Installing Claude Code 2.1.328 needs npm on PATH (it comes with Node.js); install Node.js, or put a "
        "claude that reports 2.1.328 on PATH."
    ]
