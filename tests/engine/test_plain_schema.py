"""``plainly_valid``: a quick yes for a tool input that plainly satisfies a flat schema, and
never a yes that ``jsonschema`` would not give (every other case is left to it)."""

from __future__ import annotations

from typing import Any

import jsonschema
from hypothesis import given
from hypothesis import strategies as st

from engine.orchestration.batching import validation_error
from engine.orchestration.plain_schema import plainly_valid
from engine.tools import default_tools

JsonDict = dict[str, Any]
NAMES = ("a", "b", "c")
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-5, max_value=5),
    st.floats(min_value=-5, max_value=5) | st.sampled_from([float("nan"), 1.0, 0.0]),
    st.text(max_size=4),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)
BOUNDS = st.one_of(st.integers(min_value=-3, max_value=3), st.floats(min_value=-3, max_value=3), st.booleans())
DEFINITIONS = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["string", "boolean", "integer", "number", "array", "object", "null", ["string"]]),
        "description": st.text(max_size=3),
        "default": VALUES,
        "minLength": st.integers(min_value=0, max_value=3) | st.just(1.5),
        "maxLength": st.integers(min_value=0, max_value=3),
        "enum": st.lists(VALUES, max_size=3),
        "minimum": BOUNDS,
        "maximum": BOUNDS,
        "exclusiveMinimum": BOUNDS,
        "exclusiveMaximum": BOUNDS,
        "pattern": st.just("^a"),
    },
)
SCHEMAS = st.fixed_dictionaries(
    {"type": st.sampled_from(["object", "object", "object", "array"])},
    optional={
        "properties": st.dictionaries(st.sampled_from(NAMES), DEFINITIONS | st.booleans(), max_size=3),
        "required": st.lists(st.sampled_from(NAMES), max_size=3, unique=True),
        "additionalProperties": st.booleans(),
        "description": st.text(max_size=3),
        "minProperties": st.integers(min_value=0, max_value=2),
    },
)
INSTANCES = st.dictionaries(st.sampled_from((*NAMES, "d")), VALUES, max_size=4) | VALUES


@given(schema=SCHEMAS, instance=INSTANCES)
def test_a_plain_yes_is_never_a_verdict_jsonschema_would_not_give(schema: JsonDict, instance: Any) -> None:
    if plainly_valid(schema, instance):
        assert list(jsonschema.Draft202012Validator(schema).iter_errors(instance)) == []


def test_typical_inputs_of_the_default_tools_are_plainly_valid() -> None:
    inputs = {
        "Read": {"file_path": "notes.md", "offset": 3, "limit": 20},
        "Write": {"file_path": "notes.md", "content": "hello\n"},
        "Edit": {"file_path": "notes.md", "old_string": "a", "new_string": "b", "replace_all": True},
        "Bash": {"command": "ls", "timeout": 1000, "description": "List"},
        "Glob": {"pattern": "*.py", "path": "src"},
        "Grep": {"pattern": "def", "output_mode": "content", "-i": True},
    }
    for tool in default_tools():
        assert plainly_valid(tool.input_schema, inputs[tool.name]), tool.name


def test_an_input_it_cannot_vouch_for_is_left_to_jsonschema_which_words_the_error() -> None:
    grep = next(tool for tool in default_tools() if tool.name == "Grep")
    bad = {"pattern": "def", "output_mode": "lines"}
    assert not plainly_valid(grep.input_schema, bad)
    expected = "'lines' is not one of ['files_with_matches', 'content', 'count'] (at output_mode)"
    assert validation_error(grep, bad) == expected


def test_a_schema_changed_in_place_is_read_as_it_is_now() -> None:
    schema: JsonDict = {"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": False}
    assert plainly_valid(schema, {"n": 1})
    schema["properties"]["n"]["type"] = "string"
    assert not plainly_valid(schema, {"n": 1})
