"""The ``compact_before_prompt`` session option: the prompts (numbered from 1) before which the
user compacts the conversation. One number or a list; it round-trips through session.json and
scenario files, and a number the session never reaches is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay.fake.blocks import ScenarioError
from replay.fake.scenario import load_scenario
from replay.schema.options import SessionOptions, SessionOptionsError
from replay.session.bundle import BundleError, SessionSpec


@pytest.mark.parametrize(
    ("written", "numbers", "written_back"),
    [(2, (2,), 2), ([2], (2,), 2), ([4, 2], (2, 4), [2, 4])],
    ids=["a number", "a list of one", "a list, sorted"],
)
def test_one_prompt_number_or_a_list_of_them_round_trips(
    written: object, numbers: tuple[int, ...], written_back: object
) -> None:
    options = SessionOptions.from_mapping({"compact_before_prompt": written})

    assert options.compact_before_prompt == numbers
    assert options.to_mapping() == {"compact_before_prompt": written_back}
    assert SessionOptions.from_mapping(options.to_mapping()) == options


def test_the_session_compacts_before_the_named_prompts_only() -> None:
    options = SessionOptions.from_mapping({"compact_before_prompt": [2, 4]})

    assert [options.compacts_before(index) for index in range(5)] == [False, True, False, True, False]
    assert not SessionOptions().compacts_before(1)
    assert "compact_before_prompt" not in SessionOptions().to_mapping()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (1, "'compact_before_prompt' must be a prompt number from 2 up"),
        (0, "'compact_before_prompt' must be a prompt number from 2 up"),
        (True, "'compact_before_prompt' must be a prompt number from 2 up"),
        ("2", "'compact_before_prompt' must be a prompt number from 2 up"),
        (2.0, "'compact_before_prompt' must be a prompt number from 2 up"),
        ([], "'compact_before_prompt' must be a prompt number from 2 up"),
        ([2, 2], "'compact_before_prompt' names a prompt more than once"),
    ],
)
def test_anything_but_prompt_numbers_from_2_is_refused_in_one_sentence(value: object, message: str) -> None:
    with pytest.raises(SessionOptionsError, match=message):
        SessionOptions.from_mapping({"compact_before_prompt": value})


def test_a_prompt_the_session_never_submits_is_refused() -> None:
    options = SessionOptions.from_mapping({"compact_before_prompt": 3})

    with pytest.raises(BundleError) as caught:
        SessionSpec(prompts=("first", "second"), options=options)

    assert str(caught.value) == (
        "The session option 'compact_before_prompt' names prompt 3, but the session submits only 2 prompts."
    )


def test_session_json_naming_a_prompt_it_does_not_have_is_refused_naming_the_file() -> None:
    spec = SessionSpec(prompts=("first", "second"), options=SessionOptions.from_mapping({"compact_before_prompt": 2}))
    text = spec.to_json().replace('"compact_before_prompt": 2', '"compact_before_prompt": 5')

    with pytest.raises(BundleError) as caught:
        SessionSpec.from_json(text, source=Path("b/session.json"))

    assert str(caught.value) == (
        "b/session.json: session_options: 'compact_before_prompt' names prompt 5, "
        "but the session submits only 2 prompts."
    )


def test_a_scenario_with_a_bad_value_names_the_file_and_the_option(tmp_path: Path) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text("version: 1\nprompts: [a, b]\nsession: {compact_before_prompt: 1}\nturns: []\n", encoding="utf-8")

    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)

    assert str(caught.value).startswith(f"{path}: session: 'compact_before_prompt' must be a prompt number from 2 up")
