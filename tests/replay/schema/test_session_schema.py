"""The session schema: one exactly typed description of session.json and of a scenario's session
fields, built from `EngineSettings` so the two cannot drift, and accepting exactly what the
writer writes."""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from pathlib import Path
from typing import Any

import pytest

from engine import CompactRequest, EngineSettings
from replay.fake.blocks import ScenarioError
from replay.fake.scenario import load_scenario
from replay.schema.documents import (
    ScenarioSessionDocument,
    SchemaError,
    SessionDocument,
    SettingsDocument,
    document_type,
    engine_settings_from,
)
from replay.schema.options import InterruptAt, SessionOptions
from replay.session.bundle import BundleError, SessionSpec

LIBRARY = Path(__file__).resolve().parents[3] / "cassettes"
SOURCE = Path("b/session.json")
SETTINGS = [item.name for item in dataclasses.fields(EngineSettings)]
HINTS = typing.get_type_hints(EngineSettings)


def _spec_text(**changes: Any) -> str:
    return SessionSpec(prompts=("hi",), **changes).to_json()


def _wrong_value(hint: Any) -> Any:
    """A value of the wrong type for ``hint`` that a lax reader would have accepted."""
    allowed = _types(hint)
    if str in allowed:
        return 5
    if bool in allowed:
        return "no"
    if int in allowed:
        return 1.5
    if float in allowed:
        return "0.5"
    return "CLAUDE.md"  # a string is not a list, nor a mapping


def test_every_engine_setting_is_in_the_schema_with_its_type_and_default() -> None:
    assert list(SettingsDocument.model_fields) == SETTINGS
    defaults = EngineSettings()
    for name in SETTINGS:
        field = SettingsDocument.model_fields[name]
        assert field.annotation == document_type(HINTS[name]), name
        default = getattr(defaults, name)
        assert field.default == (list(default) if isinstance(default, tuple) else default), name


def test_a_tuple_setting_is_a_list_an_enum_one_of_its_values_and_the_rest_keep_their_type() -> None:
    assert document_type(CompactRequest) == typing.Literal["own_prompt", "conversation_prefix"]
    assert document_type(tuple[str, ...]) == list[str]
    assert document_type(int | None) == int | None
    assert document_type(dict[str, Any] | None) == dict[str, Any] | None


@pytest.mark.parametrize("name", SETTINGS)
def test_every_engine_setting_refuses_a_value_of_another_type(name: str) -> None:
    wrong = _wrong_value(HINTS[name])

    with pytest.raises(SchemaError) as caught:
        engine_settings_from({name: wrong}, source=SOURCE)

    assert str(caught.value) == (f"{SOURCE}: settings.{name} {_problem(HINTS[name])} (got {wrong!r}).")


def _problem(hint: Any) -> str:
    if isinstance(hint, type) and issubclass(hint, enum.StrEnum):  # such as mid_stream_recovery
        return "must be one of " + " or ".join(repr(member.value) for member in hint)
    allowed = _types(hint)
    if typing.Literal in allowed:  # a closed set of strings, such as prompt_cache_ttl's
        (literal,) = (arg for arg in typing.get_args(hint) if typing.get_origin(arg) is typing.Literal)
        return "must be one of " + " or ".join(repr(value) for value in typing.get_args(literal))
    if str in allowed:
        return "must be a string"
    if bool in allowed:
        return "must be a boolean (true or false)"
    if int in allowed:
        return "must be an integer"
    if float in allowed:
        return "must be a number"
    return "must be a list" if tuple in allowed else "must be a mapping (a JSON object)"


def _types(hint: Any) -> set[Any]:
    """The plain types a setting's hint allows besides None: ``tuple[str, ...]`` is ``tuple``."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return {typing.get_origin(arg) or arg for arg in typing.get_args(hint)} - {type(None)}
    return {typing.get_origin(hint) or hint}


@pytest.mark.parametrize("value", [True, 1.0, "1", None])
def test_an_integer_setting_takes_only_an_integer(value: Any) -> None:
    with pytest.raises(SchemaError, match=r"settings\.context_window must be an integer"):
        engine_settings_from({"context_window": value}, source=SOURCE)


def test_a_string_enum_setting_takes_one_of_its_values_and_round_trips_through_session_json() -> None:
    settings = engine_settings_from({"compact_request": "conversation_prefix"}, source=SOURCE)
    text = SessionSpec(prompts=("hi",), settings=settings).to_json()

    assert settings.compact_request is CompactRequest.CONVERSATION_PREFIX
    assert '"compact_request": "conversation_prefix"' in text
    assert SessionSpec.from_json(text, source=SOURCE).settings == settings


def test_a_number_setting_takes_an_integer_and_keeps_it_as_written() -> None:
    settings = engine_settings_from({"bash_timeout_s": 5}, source=SOURCE)

    assert settings.bash_timeout_s == 5 and isinstance(settings.bash_timeout_s, int)


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_number_setting_must_be_finite(value: float) -> None:
    with pytest.raises(SchemaError, match=r"settings\.retry_jitter must be a finite number"):
        engine_settings_from({"retry_jitter": value}, source=SOURCE)


def test_a_misspelt_setting_is_refused_with_the_name_it_was_probably_meant_as() -> None:
    with pytest.raises(SchemaError) as caught:
        engine_settings_from({"max_turn": 3}, source=SOURCE)

    assert str(caught.value) == f"{SOURCE}: settings.max_turn is not a known field (did you mean max_turns?) (got 3)."


def test_the_settings_own_checks_still_apply_after_the_types() -> None:
    with pytest.raises(SchemaError, match=r"^b/session\.json: max_turns must be at least 1"):
        engine_settings_from({"max_turns": 0}, source=SOURCE)


def test_session_json_and_the_scenario_share_the_one_settings_model() -> None:
    assert SessionDocument.model_fields["settings"].annotation == SettingsDocument | None
    assert ScenarioSessionDocument.model_fields["settings"].annotation == SettingsDocument | None


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("prompts", "hello", "prompts must be a list (got 'hello')"),
        ("live", "no", "live must be a boolean (true or false) (got 'no')"),
        ("seed", 1.5, "seed must be an integer (got 1.5)"),
        ("seed", "1", "seed must be an integer (got '1')"),
        ("seed", True, "seed must be an integer (got True)"),
        ("scenario", 1, "scenario must be a string (got 1)"),
    ],
)
def test_session_json_refuses_what_a_lax_reader_would_have_coerced(key: str, value: Any, message: str) -> None:
    import json

    document = json.loads(_spec_text())
    document[key] = value

    with pytest.raises(BundleError) as caught:
        SessionSpec.from_json(json.dumps(document), source=SOURCE)

    assert str(caught.value) == f"{SOURCE}: {message}."


def test_a_spec_with_every_part_set_survives_the_round_trip_byte_for_byte() -> None:
    spec = SessionSpec(
        prompts=("first", "second"),
        settings=EngineSettings(
            model="claude-haiku-4-5",
            system_prompt="Be brief.",
            max_turns=4,
            thinking={"type": "enabled", "budget_tokens": 2048},
            memory_paths=("CLAUDE.md", "docs/*.md"),
            bash_timeout_s=5.0,
            context_collapse=True,
        ),
        tools=("Read", "Bash"),
        seed=7,
        scenario="scenario.yaml",
        options=SessionOptions.from_mapping(
            {
                "hooks": {"pre_tool_use": [{"command": "true", "matcher": "Bash", "timeout_s": 5}]},
                "permissions": {"deny": ["Write"]},
                "interrupt": {"at": InterruptAt.TOOL_RESULT.value, "count": 2},
                "clock_advance_minutes": [0, 90.5],
            }
        ),
    )
    text = spec.to_json()

    again = SessionSpec.from_json(text, source=SOURCE)

    assert again == spec
    assert again.to_json() == text


@pytest.mark.parametrize("session", sorted(LIBRARY.glob("*/session.json")), ids=lambda p: p.parent.name)
def test_every_bundle_in_the_library_fits_the_schema_and_writes_back_identically(session: Path) -> None:
    text = session.read_text(encoding="utf-8")

    assert SessionSpec.from_json(text, source=session).to_json() == text


def test_a_scenario_s_session_fields_are_checked_when_it_is_loaded(tmp_path: Path) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text("version: 1\nprompts: [hi]\nsettings: {live: true}\nturns: []\n", encoding="utf-8")

    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)

    assert str(caught.value) == f"{path}: settings.live is not a known field (got True)."


def test_mid_stream_recovery_is_written_as_its_value_and_an_unknown_one_is_refused_naming_both() -> None:
    assert engine_settings_from({"mid_stream_recovery": "resume"}, source=SOURCE).mid_stream_recovery == "resume"

    with pytest.raises(SchemaError) as caught:
        engine_settings_from({"mid_stream_recovery": "continue"}, source=SOURCE)

    assert str(caught.value) == (
        f"{SOURCE}: settings.mid_stream_recovery must be one of 'retry' or 'resume' (got 'continue')."
    )
