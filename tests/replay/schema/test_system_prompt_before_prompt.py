"""The ``system_prompt_before_prompt`` session option: the system prompt the session switches to
before a prompt (numbered from 1), as a user changing output style mid-session does. Prompt
numbers are written as YAML numbers or, in session.json, as JSON's string keys; the option
round-trips, and anything else is refused in one sentence."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay.fake.blocks import ScenarioError
from replay.fake.scenario import load_scenario
from replay.schema.options import SessionOptions, SessionOptionsError
from replay.session.bundle import BundleError, SessionSpec

SHAPE = "'system_prompt_before_prompt' must map prompt numbers from 2 up to the system prompt used from that prompt on"


@pytest.mark.parametrize(
    "written",
    [{3: "Be terse.", 2: "Be brief."}, {"3": "Be terse.", "2": "Be brief."}],
    ids=["YAML numbers", "JSON string keys"],
)
def test_prompt_numbers_map_to_system_prompts_and_round_trip(written: dict[object, str]) -> None:
    options = SessionOptions.from_mapping({"system_prompt_before_prompt": written})

    assert options.system_prompt_before_prompt == {2: "Be brief.", 3: "Be terse."}
    assert options.to_mapping() == {"system_prompt_before_prompt": {"2": "Be brief.", "3": "Be terse."}}
    assert SessionOptions.from_mapping(options.to_mapping()) == options


def test_the_session_switches_before_the_named_prompts_only() -> None:
    options = SessionOptions.from_mapping({"system_prompt_before_prompt": {2: "Be brief.", 4: "Be terse."}})

    assert [options.system_prompt_before(index) for index in range(5)] == [
        None,
        "Be brief.",
        None,
        "Be terse.",
        None,
    ]
    assert SessionOptions().system_prompt_before(1) is None
    assert "system_prompt_before_prompt" not in SessionOptions().to_mapping()


def test_session_json_keeps_the_option_byte_for_byte() -> None:
    spec = SessionSpec(
        prompts=("first", "second"),
        options=SessionOptions.from_mapping({"system_prompt_before_prompt": {2: "Answer in French."}}),
    )

    again = SessionSpec.from_json(spec.to_json(), source=Path("session.json"))

    assert again.options == spec.options
    assert again.to_json() == spec.to_json()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({1: "x"}, SHAPE),
        ({0: "x"}, SHAPE),
        ({True: "x"}, SHAPE),
        ({"02": "x"}, SHAPE),
        ({"two": "x"}, SHAPE),
        ({2.0: "x"}, SHAPE),
        ({2: ""}, SHAPE),
        ({2: None}, SHAPE),
        ({2: ["x"]}, SHAPE),
        ({}, SHAPE),
        ("Be brief.", SHAPE),
        ([2, "Be brief."], SHAPE),
        ({2: "a", "2": "b"}, "'system_prompt_before_prompt' names prompt 2 more than once"),
    ],
)
def test_anything_but_prompt_numbers_to_text_is_refused_in_one_sentence(value: object, message: str) -> None:
    with pytest.raises(SessionOptionsError, match=message):
        SessionOptions.from_mapping({"system_prompt_before_prompt": value})


def test_a_prompt_the_session_never_submits_is_refused() -> None:
    options = SessionOptions.from_mapping({"system_prompt_before_prompt": {3: "Be brief."}})

    with pytest.raises(BundleError) as caught:
        SessionSpec(prompts=("first", "second"), options=options)

    assert str(caught.value) == (
        "The session option 'system_prompt_before_prompt' names prompt 3, but the session submits only 2 prompts."
    )


def test_a_scenario_with_a_bad_value_names_the_file_and_the_option(tmp_path: Path) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(
        "version: 1\nprompts: [a, b]\nsession: {system_prompt_before_prompt: {1: Be brief.}}\nturns: []\n",
        encoding="utf-8",
    )

    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)

    assert str(caught.value).startswith(f"{path}: session: {SHAPE}")
