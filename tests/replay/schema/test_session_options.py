"""Session options: ``env`` names the variables a session's commands get (with their values),
and which network policy a run's commands get. They round-trip through session.json and
scenario files like the other options."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml

from engine import NetworkPolicy, ToolEnvironment
from replay.fake.scenario import Scenario, load_scenario
from replay.fake.scenario_writer import scenario_to_document
from replay.schema.options import SessionOptions, SessionOptionsError
from replay.session.bundle import SessionSpec, load_bundle
from replay.session.recording import record_bundle


def test_env_sets_named_variables_to_the_values_stored_with_the_session() -> None:
    options = SessionOptions.from_mapping({"env": {"APP_MODE": "test", "GREETING": "hello world"}})

    assert options.env == {"APP_MODE": "test", "GREETING": "hello world"}
    assert options.to_mapping() == {"env": {"APP_MODE": "test", "GREETING": "hello world"}}
    assert SessionOptions.from_mapping(options.to_mapping()) == options


def test_without_env_nothing_is_written_so_existing_session_files_keep_their_bytes() -> None:
    assert "env" not in SessionOptions.from_mapping({"permissions": {"deny": ["Write"]}}).to_mapping()


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (["APP_MODE"], "'env' must map variable names to string values"),
        ({"APP_MODE": 1}, "'env' must map variable names to string values"),
        ({"HTTPS_PROXY": "http://proxy:3128"}, "env: The environment variable HTTPS_PROXY is set by the engine"),
        ({"CLAUDE_PROJECT_DIR": "/x"}, "env: The environment variable CLAUDE_PROJECT_DIR is set by the engine"),
        ({"BAD NAME": "x"}, "env: 'BAD NAME' is not a usable environment variable name"),
    ],
)
def test_an_unusable_env_is_refused_naming_the_option(env: object, message: str) -> None:
    with pytest.raises(SessionOptionsError, match=message):
        SessionOptions.from_mapping({"env": env})


def test_a_replay_is_offline_and_only_a_live_recording_may_use_the_network() -> None:
    options = SessionOptions.from_mapping({"env": {"APP_MODE": "test"}})

    assert options.tool_environment(live_recording=False) == ToolEnvironment(
        variables={"APP_MODE": "test"}, network=NetworkPolicy.OFFLINE
    )
    assert options.tool_environment(live_recording=True).network is NetworkPolicy.ALLOW


def test_env_round_trips_through_session_json_and_the_scenario_file(tmp_path: Path) -> None:
    turns = Scenario.from_list([{"content": [{"text": "Done."}]}]).turns
    scenario = Scenario(turns=turns, prompts=("go",), session={"env": {"APP_MODE": "test"}})
    (tmp_path / "scenario.yaml").write_text(yaml.safe_dump(scenario_to_document(scenario)), encoding="utf-8")

    bundle = asyncio.run(record_bundle(tmp_path / "bundle", scenario=tmp_path / "scenario.yaml"))

    spec = load_bundle(bundle.path).spec
    assert spec.options.env == {"APP_MODE": "test"}
    assert SessionSpec.from_json(spec.to_json(), source=Path("session.json")) == spec
    assert json.loads((bundle.path / "session.json").read_text())["session_options"] == {"env": {"APP_MODE": "test"}}
    assert load_scenario(bundle.path / "scenario.yaml").session == {"env": {"APP_MODE": "test"}}
