"""``replay record`` and ``replay serve``, through typer's CliRunner (and a real process for serve)."""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import anthropic
import pytest
from typer.testing import CliRunner

from replay.cli.app import app
from replay.fake.model import FakeModel
from replay.fake.scenario import load_scenario
from replay.fake.server import FakeModelServer
from replay.session.demo import DEMO_DIR
from tests import forked
from tests.replay.bundle_helpers import assert_bad_input

runner = CliRunner()
HELLO = "version: 1\nturns:\n  - content: [{text: Hello.}]\n  - content: [{text: Hello again.}]\n"
BROKEN_YAML = "version: 1\nturns: [\n  - content: {text: Hello.\n"


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "hello.yaml"
    path.write_text(HELLO)
    return path


def test_record_with_a_scenario_writes_a_bundle_that_replays(tmp_path: Path, scenario: Path) -> None:
    out = tmp_path / "cassettes" / "hello"

    result = runner.invoke(app, ["record", "--scenario", str(scenario), "--prompt", "hi", "--out", str(out)])

    assert result.exit_code == 0, result.output
    assert f"Recorded {out}: 1 prompt, 1 pass, terminal completed." in result.stdout
    assert f"replay run {out}" in result.stdout
    assert json.loads((out / "session.json").read_text())["prompts"] == ["hi"]
    assert (out / "scenario.yaml").read_text() == HELLO
    assert runner.invoke(app, ["run", str(out)]).exit_code == 0


def test_record_takes_the_workspace_beside_the_scenario_by_default(tmp_path: Path) -> None:
    folder = tmp_path / "demo"
    shutil.copytree(DEMO_DIR, folder)
    out = tmp_path / "review"

    arguments = ["record", "--scenario", str(folder / "scenario.yaml"), "--prompt", "Review", "--out", str(out)]
    result = runner.invoke(app, arguments)

    assert result.exit_code == 0, result.output
    assert "1 prompt, 3 passes, terminal completed" in result.stdout
    assert sorted(p.name for p in (out / "workspace").iterdir()) == ["config.toml", "notes.md"]


def test_record_replaces_an_existing_bundle_but_never_another_folder(tmp_path: Path, scenario: Path) -> None:
    out = tmp_path / "hello"
    arguments = ["record", "--scenario", str(scenario), "--prompt", "hi", "--out", str(out)]
    assert runner.invoke(app, arguments).exit_code == 0
    again = runner.invoke(app, [*arguments[:-2], "--prompt", "again", "--out", str(out)])
    assert again.exit_code == 0
    assert "2 prompts, 2 passes, terminals completed, completed." in again.stdout
    assert json.loads((out / "session.json").read_text())["prompts"] == ["hi", "again"]

    project = tmp_path / "project"
    project.mkdir()
    (project / "main.py").write_text("print('mine')\n")
    assert_bad_input(
        runner.invoke(app, [*arguments[:-1], str(project)]), "exists and is not a bundle", "refusing to replace"
    )
    assert (project / "main.py").read_text() == "print('mine')\n"


def test_record_without_a_prompt_here_or_in_the_scenario_names_the_scenario_file(
    tmp_path: Path, scenario: Path
) -> None:
    result = runner.invoke(app, ["record", "--scenario", str(scenario), "--out", str(tmp_path / "b")])
    assert_bad_input(result, f"Nothing to submit: {scenario} lists no prompts", "--prompt TEXT")
    assert not (tmp_path / "b").exists()


def test_record_takes_the_scenarios_prompts_and_settings_and_a_flag_overlays_one(tmp_path: Path) -> None:
    scenario = tmp_path / "limited.yaml"
    scenario.write_text(
        "version: 1\nprompts: [List the files]\nsettings: {max_turns: 1, model: claude-scripted}\nturns:\n"
        "  - content: [{tool_use: {name: Glob, input: {pattern: '*'}}}]\n"
    )
    out = tmp_path / "limited"

    result = runner.invoke(app, ["record", "--scenario", str(scenario), "--out", str(out), "--model", "claude-flag"])

    assert result.exit_code == 0, result.output
    assert f"Recorded {out}: 1 prompt, 1 pass, terminal max_turns." in result.stdout
    session = json.loads((out / "session.json").read_text())
    assert session["prompts"] == ["List the files"]
    assert (session["settings"]["model"], session["settings"]["max_turns"]) == ("claude-flag", 1)


def test_record_refuses_a_script_that_runs_out_and_keeps_the_old_bundle(tmp_path: Path, scenario: Path) -> None:
    out = tmp_path / "hello"
    assert (
        runner.invoke(app, ["record", "--scenario", str(scenario), "--prompt", "hi", "--out", str(out)]).exit_code == 0
    )
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}

    # Three prompts need three turns; the script has two.
    prompts = ["--prompt", "hi", "--prompt", "again", "--prompt", "and once more"]
    result = runner.invoke(app, ["record", "--scenario", str(scenario), *prompts, "--out", str(out)])

    assert_bad_input(
        result,
        f"{scenario} ran out of turns: it has 2 turns, but request 3 to the model needed turn 3 "
        "(last user message: 'and once more')",
        f"Nothing was written to {out}.",
    )
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before


def test_record_with_a_yaml_syntax_error_names_the_file(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text(BROKEN_YAML)

    result = runner.invoke(app, ["record", "--scenario", str(broken), "--prompt", "hi", "--out", str(tmp_path / "b")])

    assert_bad_input(result, "broken.yaml", "invalid YAML")
    assert not (tmp_path / "b").exists()


def test_record_with_a_missing_scenario_or_workspace_exits_2(tmp_path: Path, scenario: Path) -> None:
    missing = ["record", "--scenario", str(tmp_path / "none.yaml"), "--prompt", "hi", "--out", str(tmp_path / "b")]
    assert_bad_input(runner.invoke(app, missing), "none.yaml")
    no_workspace = [*missing[:2], str(scenario), *missing[3:], "--workspace", str(tmp_path / "nowhere")]
    assert_bad_input(runner.invoke(app, no_workspace), "nowhere does not exist")


def test_record_live_without_an_api_key_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    result = runner.invoke(app, ["record", "--live", "--prompt", "hi", "--out", str(tmp_path / "live")])

    assert_bad_input(result, "needs an API key", "ANTHROPIC_API_KEY")
    assert not (tmp_path / "live").exists()


def test_record_needs_exactly_one_of_scenario_and_live(tmp_path: Path, scenario: Path) -> None:
    out = ["--prompt", "hi", "--out", str(tmp_path / "b")]
    assert_bad_input(runner.invoke(app, ["record", *out]), "--scenario FILE", "--live")
    assert_bad_input(runner.invoke(app, ["record", "--live", "--scenario", str(scenario), *out]), "not both")


def test_serve_refuses_a_broken_scenario_and_a_remote_host(tmp_path: Path, scenario: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text(BROKEN_YAML)
    assert_bad_input(runner.invoke(app, ["serve", "--scenario", str(broken)]), "broken.yaml", "invalid YAML")
    assert_bad_input(
        runner.invoke(app, ["serve", "--scenario", str(scenario), "--host", "0.0.0.0"]), "loopback", "'0.0.0.0'"
    )
    assert_bad_input(runner.invoke(app, ["serve", "--scenario", str(tmp_path / "none.yaml")]), "none.yaml")


def test_serve_prints_its_url_answers_the_sdk_and_stops_cleanly_on_ctrl_c(scenario: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    process = forked.Popen(
        [sys.executable, "-c", "from replay.cli.app import app; app()", "serve", "--scenario", str(scenario)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], 30)
        assert ready, "the server printed nothing within 30 s"
        first = process.stdout.readline()
        assert first.startswith("Serving the fake model (2 scripted turns from "), first
        url = first.rsplit(" at ", 1)[1].strip()
        assert url.startswith("http://127.0.0.1:")

        with anthropic.Anthropic(api_key="sk-ant-anything", base_url=url, max_retries=0) as client:
            message = client.messages.create(
                model="claude-sonnet-4-6", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
            )
        assert message.content[0].text == "Hello."

        process.send_signal(signal.SIGINT)
        process.wait(timeout=20)
        # Read through the same buffered stream as the first line (communicate() would skip its buffer).
        out, err = first + process.stdout.read(), process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err
    assert "ANTHROPIC_BASE_URL=" in out and out.rstrip().endswith("Stopped.")
    assert "Traceback" not in err


def test_record_live_talks_to_the_base_url_with_the_key_and_never_stores_it(
    tmp_path: Path, scenario: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A "live" API that happens to be the fake model on loopback: the live path, offline.
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-secret-key-for-this-test")
    out = tmp_path / "live"
    with FakeModelServer(FakeModel(load_scenario(scenario))) as server:
        arguments = ["record", "--live", "--prompt", "hi", "--out", str(out), "--model", "claude-opus-4-1"]
        result = runner.invoke(app, [*arguments, "--base-url", server.url])

    assert result.exit_code == 0, result.output
    session = json.loads((out / "session.json").read_text())
    assert session["live"] is True and session["model"] == "claude-opus-4-1"
    assert not any("secret-key-for-this-test" in p.read_text() for p in out.rglob("*") if p.is_file())
    assert runner.invoke(app, ["run", str(out)]).exit_code == 0
