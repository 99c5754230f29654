"""The line reader (`load_yaml`'s first path) reads what our dumper writes, and wherever it
returns data that data is what the full loader builds from the same text; whatever it is not
sure of it leaves (`Unusual`) to the event path and the full loader.

Generated examples: ``HYPOTHESIS_PROFILE=long`` draws thirty times as many, fresh each run."""

from __future__ import annotations

import os
import string
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from yaml.resolver import Resolver

from replay.cassette._native import compact_interaction
from replay.storage import _yaml_events
from replay.storage._yaml_events import Scalars, Unusual, construct_plain
from replay.storage._yaml_flow_json import WORDS as _WORDS
from replay.storage._yaml_lines import construct_lines
from replay.storage.strict_yaml import FlowMap, FlowSeq, dump_yaml, load_yaml_data
from tests.replay.storage.loaders import LIBRARY, RESOLVERS, full_loader, same

pytestmark = pytest.mark.skipif(not _yaml_events.AVAILABLE, reason="the lean paths need libyaml")

EXAMPLES = 3_000 if os.environ.get("HYPOTHESIS_PROFILE") == "long" else 100


def lines(text: str | bytes) -> Any:
    return construct_lines(text, RESOLVERS)


def agrees_with_the_full_loader(text: str) -> bool:
    """True when the line reader read ``text`` (then to the full loader's data), False when it
    left it; fails when it returned anything else."""
    try:
        fast = lines(text)
    except Unusual:
        return False
    try:
        expected = full_loader(text)
    except yaml.YAMLError as err:  # pragma: no cover - the failure it reports
        pytest.fail(f"the line reader accepted what the full loader refuses ({err}):\n{text}")
    assert same(fast, expected), text
    return True


# ---------------------------------------------------------------------------------------------
# What our dumper writes


# Every library cassette: tests/replay/storage/test_strict_yaml.py reads each by every path.


def test_the_interactions_hook_sees_each_interaction_as_the_event_path_does() -> None:
    text = (LIBRARY / "demo" / "cassette.yaml").read_text(encoding="utf-8")
    seen: list[dict[str, Any]] = []

    def hook(item: dict[str, Any]) -> Any:
        seen.append(item)
        return compact_interaction(item)

    fast = construct_lines(text, RESOLVERS, ("interactions", hook))
    events = construct_plain(text, RESOLVERS, ("interactions", compact_interaction))
    assert fast == events
    assert len(seen) == len(fast["interactions"]) > 1


def test_a_hooked_list_written_as_flow_is_left_to_the_event_path() -> None:
    # The event path hands the hook each item of it; the line reader does not read it at all.
    text = "interactions: [{a: 1}]\n"
    with pytest.raises(Unusual):
        construct_lines(text, RESOLVERS, ("interactions", compact_interaction))
    assert construct_lines(text, RESOLVERS) == {"interactions": [{"a": 1}]}  # no hook: read


def test_load_yaml_data_takes_the_line_reader_first_and_falls_back_for_the_rest(tmp_path: Path) -> None:
    ours = dump_yaml({"a": [{"b": "c\nd\n"}], "e": FlowMap(f=1)})
    assert lines(ours) == {"a": [{"b": "c\nd\n"}], "e": {"f": 1}}
    assert load_yaml_data(ours) == (lines(ours), True)
    hand_written = "a:\n  - b\n  - c\n"  # an indented sequence: not what our dumper writes
    with pytest.raises(Unusual):
        lines(hand_written)
    assert load_yaml_data(hand_written) == ({"a": ["b", "c"]}, True)  # the event path's
    path = tmp_path / "x.yaml"
    path.write_text(hand_written, encoding="utf-8")
    with path.open("rb") as handle:  # a file is read again from its start by the next path
        assert load_yaml_data(handle, whole_text=lambda: hand_written) == ({"a": ["b", "c"]}, True)


@pytest.mark.parametrize(
    "text",
    [
        "a: b\n  c\n",  # a multi-line plain scalar
        "a: 'b\n  c'\n",  # a multi-line quoted scalar
        "a: b # comment\n",
        "a: &x b\nc: *x\n",
        "a: !!str 1\n",
        "? a\n: b\n",
        "a: >\n  folded\n",
        "a:\tb\n",
        "a: b\r\n",
        "\ufeffa: b\n",
        "a: b\nb: c\na: d\n",  # a repeated key
        "a: {b: 1, b: 2}\n",
        "a:\n",  # null written as nothing
        "a: b",  # no line break at the end
        "--- a\n",
        "--- a: b\n",  # a document marker, not a key
        "x: 1\n--- a: b\n",
        "... a: b\n",
        "a: b\n...\n",
        "%YAML 1.1\n---\na: b\n",
        "yes: b\n",  # a key that is not a string
        "a: |\n\n",  # an empty literal
        "a: |\n  b\n   \n",  # a line of spaces in a literal
        'a: "\\ud800"\n',
        'a: "\\q"\n',
        "- - a\n",
        "a:\n  - b\n",
        "a: {b: c\n",
        "a: [b, c]]\n",
        "a: {b}\n",
        "a: [b: c]\n",
    ],
)
def test_whatever_it_is_not_sure_of_is_left_to_the_other_paths(text: str) -> None:
    with pytest.raises(Unusual):
        lines(text)


@pytest.mark.parametrize(
    "text",
    [
        "a: |2-\n    indented first line\n  second\n",
        "- |\n  x\n- |+\n  y\n\n\n- |-\n  z\n\n",
        "a:\n- b: |\n    c\n\n    d\n  e: 'it''s: here'\nf: \"tab\\tnew\\nline\\x41\\u00e9\\U0001F600\\e\\0\\ \"\n",
        "h: {content-type: 'a: b', n: [1, -2, 0.5, true, null, yes, ~, 0x1f, 1e3, .inf, 2001-01-01]}\nt: 1:20\n",
        "e: {}\nl: []\nk: [{}, [], {a: []}]\n",
        "'1': one\n\"2\": two\n-i: dash key\n<<: merge key\nu: https://example.com/a?b=c#d\n",
        "# a comment\na: b\n  # an indented comment\n\nc: d\n# end\n",
        "n: [0, 7, 1000, 00, 0012, 08, 1_000, +5, -0, 0b11]\nm: 0\no: 1000\np: 0012\nq: 08\nr: 1_0\n",
    ],
)
def test_what_it_reads_it_reads_as_the_full_loader_does(text: str) -> None:
    assert agrees_with_the_full_loader(text)


# ---------------------------------------------------------------------------------------------
# Generated: data through our dumper, and texts edited by hand


TRICKY = [
    ": ",
    " #",
    "#",
    "'",
    "''",
    '"',
    "\\",
    " ",
    "  ",
    "\t",
    "\r",
    "\n",
    "\n\n",
    "---",
    "...",
    "- ",
    "? ",
    "&a",
    "*a",
    "!tag",
    "|",
    ">",
    "%",
    "@",
    "`",
    ",",
    "[",
    "]",
    "{",
    "}",
    "yes",
    "no",
    "on",
    "off",
    "True",
    "null",
    "Null",
    "~",
    "0x1",
    "0o7",
    "017",
    "1e3",
    "1.5e3",
    "1.0e+3",
    ".inf",
    "-.inf",
    ".NaN",
    "1_000",
    "1:20",
    "2001-01-01",
    "-1",
    "+1",
    "0",
    "-0",
    "<<",
    "=",
    "é",
    "\u2028",
    "\x85",
    "\ufeff",
    "\x00",
    "\x1b",
    "😀",
    "\ud800",
]
texts = st.lists(st.sampled_from(TRICKY) | st.text(string.ascii_letters + string.digits + " -_.:/", max_size=6)).map(
    "".join
)
keys = texts.filter(lambda key: len(key) < 200)
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | texts
    | st.text(max_size=30)
    | st.sampled_from(["", " ", "a\n", "\nb", "c\n\n", " d\n", "e \n", "\n"])
)


def _flows(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return (
        st.lists(children, max_size=4)
        | st.lists(children, max_size=4).map(FlowSeq)
        | st.dictionaries(keys, children, max_size=4)
        | st.dictionaries(keys, children, max_size=4).map(FlowMap)
    )


data = st.recursive(scalars, _flows, max_leaves=25)
documents = st.dictionaries(keys, data, min_size=1, max_size=5) | st.lists(data, min_size=1, max_size=4)


def _dumped(document: Any) -> str | None:
    try:
        return dump_yaml(document)
    except (yaml.YAMLError, UnicodeEncodeError):
        return None


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(documents)
def test_data_our_dumper_writes_reads_back_as_the_full_loader_reads_it(document: Any) -> None:
    text = _dumped(document)
    assume(text is not None)
    agrees_with_the_full_loader(text)  # type: ignore[arg-type]


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(
        st.text(string.ascii_lowercase, min_size=1, max_size=8),
        st.text(string.ascii_letters + string.digits + " -_.,'", max_size=40) | st.integers() | st.booleans(),
        min_size=1,
        max_size=6,
    )
)
def test_the_usual_data_is_read_by_the_line_reader(document: dict[str, Any]) -> None:
    # Plain words, sentences, quotes, numbers and flow collections: never left to the others.
    text = dump_yaml({"block": document, "flow": FlowMap(document), "list": [document, FlowSeq(document.values())]})
    assert agrees_with_the_full_loader(text)


def _library_text() -> str:
    return (LIBRARY / "demo" / "cassette.yaml").read_text(encoding="utf-8")


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_hand_edits_of_a_cassette_are_read_as_the_full_loader_reads_them_or_left_to_it(draw: st.DataObject) -> None:
    text = _library_text()
    for _ in range(draw.draw(st.integers(1, 3))):
        at = draw.draw(st.integers(0, len(text)))
        cut = draw.draw(st.integers(0, 3))
        insert = draw.draw(st.sampled_from(TRICKY) | texts)
        text = text[:at] + insert + text[at + cut :]
    try:
        full_loader(text)
    except (yaml.YAMLError, RecursionError, UnicodeEncodeError):
        with pytest.raises(Unusual):  # the full loader names the problem to the user
            lines(text)
        return
    agrees_with_the_full_loader(text)


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_scalar_replaced_by_anything_is_read_as_the_full_loader_reads_it_or_left_to_it(draw: st.DataObject) -> None:
    # Values at the places a cassette has them: after a key, after a dash, inside a flow mapping.
    value = draw.draw(texts | st.text(max_size=12))
    template = draw.draw(
        st.sampled_from(
            [
                "a:\n  b: {v}\n  c: d\n",
                "a:\n- {v}\n- x\n",
                "a:\n- k: {v}\n  c: d\n",
                "a: {{k: {v}, c: d}}\n",
                "a: [{v}, d]\n",
                "a: {{k: [{v}], c: {{e: {v}}}}}\n",
                "{v}: x\nb: y\n",
                "a:\n  {v}: x\n",
                "a: |\n  {v}\n  b\n",
                "a: |-\n  {v}\nb: c\n",
            ]
        )
    )
    text = template.format(v=value)
    try:
        full_loader(text)
    except (yaml.YAMLError, RecursionError, UnicodeEncodeError):
        with pytest.raises(Unusual):
            lines(text)
        return
    agrees_with_the_full_loader(text)


# ---------------------------------------------------------------------------------------------
# Flow collections read as JSON: the words that are not strings


def test_the_words_left_out_of_json_strings_are_those_the_resolvers_do_not_read_as_strings() -> None:

    scalars = Scalars(RESOLVERS)
    assert all(type(scalars.plain(word)) is not str for word in _WORDS.split("|"))
    assert lines("a: {k: [yes, No, ON, true, Null]}\n") == full_loader("a: {k: [yes, No, ON, true, Null]}\n")


@settings(max_examples=EXAMPLES)
@given(st.text("yYnNtTfFoOeEsSuUlLrRaA", min_size=1, max_size=6))
def test_any_other_word_of_those_letters_is_a_string_to_the_resolvers(word: str) -> None:

    assume(word not in _WORDS.split("|"))
    assert type(Scalars(RESOLVERS).plain(word)) is str
    assert agrees_with_the_full_loader(f"a: {{{word}: [{word}]}}\n")


def test_resolvers_it_does_not_know_turn_the_json_reading_off() -> None:
    # PyYAML's own resolvers read "<<" as a merge key, which JSON would read as a string.
    text = "a: {k: v}\n"
    assert construct_lines(text, Resolver.yaml_implicit_resolvers) == {"a": {"k": "v"}}  # read token by token
