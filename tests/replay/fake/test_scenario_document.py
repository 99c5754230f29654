"""A scenario built in Python can be written back to the YAML shape and read again unchanged."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import yaml

from replay.fake.scenario import Scenario, load_scenario
from replay.fake.scenario_writer import scenario_to_document

EVERY_KIND = [
    {
        "content": [
            {"thinking": "hm", "signature": "sig"},
            {"text": "hi"},
            {"tool_use": {"name": "Read", "input": {"file_path": "a"}, "id": "toolu_1"}},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 5, "output_tokens": 2},
    },
    {"content": [{"redacted_thinking": "opaque"}]},
    {
        "fault": "http_error",
        "status": 429,
        "error_type": "rate_limit_error",
        "message": "slow",
        "headers": {"retry-after": "3"},
    },
    {
        "fault": "stream_error",
        "after_events": 3,
        "error_type": "overloaded_error",
        "message": "Overloaded",
        "content": [{"text": "partial"}],
    },
    {"fault": "drop_connection", "after_events": 2, "content": [{"text": "partial"}]},
    {"fault": "malformed_event", "after_events": 1, "content": [{"text": "partial"}]},
    {"fault": "reset_connection"},
]


def test_every_turn_and_fault_kind_round_trips_through_a_file(tmp_path: Path) -> None:
    scenario = Scenario.from_list(EVERY_KIND, name="all kinds", model="claude-sonnet-4-6")
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario_to_document(scenario), sort_keys=False))
    assert load_scenario(path) == scenario


def test_the_bundled_demo_round_trips() -> None:
    demo = load_scenario(Path(__file__).resolve().parents[3] / "cassettes" / "demo" / "scenario.yaml")
    document = scenario_to_document(demo)
    rebuilt = Scenario.from_list(document["turns"], name=document.get("name"))
    assert dataclasses.replace(rebuilt, prompts=tuple(document.get("prompts", ()))) == demo


def test_a_scenario_can_carry_its_prompts_and_engine_settings(tmp_path: Path) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(
        "version: 1\nprompts: [first, second]\nsettings: {max_turns: 3}\nturns:\n  - content: [{text: hi}]\n"
    )
    scenario = load_scenario(path)
    assert scenario.prompts == ("first", "second") and scenario.settings == {"max_turns": 3}
    assert scenario_to_document(scenario)["prompts"] == ["first", "second"]


def test_prompts_must_be_non_empty_strings(tmp_path: Path) -> None:
    import pytest

    from replay.fake.blocks import ScenarioError

    path = tmp_path / "scenario.yaml"
    path.write_text("version: 1\nprompts: [' ']\nturns: []\n")
    with pytest.raises(ScenarioError, match=r"'prompts' must be a list of non-empty strings"):
        load_scenario(path)
