"""The pinned CLI through ``replay proxy``: a run recorded into a cassette (here from a scenario's
fake model, standing in for the live API) replays offline from the cassette alone, in another
folder with another HOME, request for request; what the cassette lacks is one diagnosis per
request. The cassettes stay in the test's temp folder: they hold what the CLI sent."""

from __future__ import annotations

import datetime
import json
import platform
import shutil
from pathlib import Path

import pytest

from replay.cassette import CassetteNotFoundError
from replay.claude_code import DEVICE_ID, run_recorded
from replay.claude_code.scripted import ClaudeCodeRun, prepare_workspace
from replay.fake.model import FakeModel
from replay.fake.scenario import load_scenario
from replay.fake.server import FakeModelServer

MODEL = "claude-sonnet-4-6"
# The model reads a file by its absolute path (the CLI's Read takes one), then answers.
SCENARIO = """
version: 1
turns:
  - content:
      - text: Reading the notes.
      - tool_use: {name: Read, input: {file_path: "%s/notes.md"}}
  - content:
      - text: The notes say to ship on Friday.
"""


def workspace_in(folder: Path) -> Path:
    workspace = prepare_workspace(folder / "workspace")
    (workspace / "notes.md").write_text("Ship on Friday.\n", encoding="utf-8")
    return workspace


def record(claude: Path, tmp_path: Path, cassette: Path) -> Path:
    first = workspace_in(tmp_path / "recording")
    scenario_file = tmp_path / "scenario.yaml"
    scenario_file.write_text(SCENARIO % first, encoding="utf-8")
    with FakeModelServer(FakeModel(load_scenario(scenario_file))) as upstream:
        recorded = run_recorded(
            claude,
            "What do the notes say?",
            cassette,
            workspace=first,
            mode="once",
            upstream=upstream.url,
            home=tmp_path / "recording" / "home",
            model=MODEL,
        )
    assert recorded.terminal_reason == "completed", recorded.raw
    return first


def replay(claude: Path, prompt: str, cassette: Path, workspace: Path) -> ClaudeCodeRun:
    """A run answered by ``cassette`` alone, in ``workspace`` with a HOME beside it."""
    return run_recorded(
        claude, prompt, cassette, workspace=workspace, mode="none", home=workspace.parent / "home", model=MODEL
    )


def test_a_recorded_run_replays_offline_in_another_folder(claude: Path, tmp_path: Path) -> None:
    cassette = tmp_path / "cassettes" / "notes.yaml"
    first = record(claude, tmp_path, cassette)
    second = workspace_in(tmp_path / "a-later-run-elsewhere")

    replayed = replay(claude, "What do the notes say?", cassette, second)

    assert replayed.misses == ()
    assert (replayed.terminal_reason, replayed.result) == ("completed", "The notes say to ship on Friday.")
    # The model's call came back with this run's path, so the CLI read this run's file.
    assert [(r.is_error, "Ship on Friday." in r.text) for r in replayed.tool_results] == [(False, True)]
    assert len(replayed.summary) == 2
    text = cassette.read_text(encoding="utf-8")
    assert str(first) not in text and str(first).replace("/", "-") not in text
    assert "<workspace>/notes.md" in text and DEVICE_ID in text
    # The CLI tells the model the date and the kernel: a replay on another day, in CI, matches.
    assert datetime.date.today().isoformat() not in text and "Today's date is <date>." in text
    assert platform.release() not in text and "<os-version>" in text


def test_a_request_the_cassette_lacks_is_a_miss_with_its_diagnosis(claude: Path, tmp_path: Path) -> None:
    cassette = tmp_path / "notes.yaml"
    record(claude, tmp_path, cassette)
    second = workspace_in(tmp_path / "again")

    replayed = replay(claude, "Something else entirely?", cassette, second)

    assert replayed.is_error
    assert len(replayed.misses) == 1 and "No recorded interaction matches request 1" in replayed.misses[0]
    assert "messages[0]" in replayed.misses[0]


def test_no_cassette_and_record_mode_none_is_one_sentence_before_the_cli_starts(claude: Path, tmp_path: Path) -> None:
    with pytest.raises(CassetteNotFoundError, match=r"absent\.yaml does not exist"):
        run_recorded(claude, "hi", tmp_path / "absent.yaml", workspace=workspace_in(tmp_path), mode="none")


def test_a_fresh_home_gets_the_fixed_device_id(claude: Path, tmp_path: Path) -> None:
    cassette = tmp_path / "notes.yaml"
    record(claude, tmp_path, cassette)

    config = json.loads((tmp_path / "recording" / "home" / ".claude.json").read_text(encoding="utf-8"))
    assert config["userID"] == DEVICE_ID
    shutil.rmtree(tmp_path / "recording")
