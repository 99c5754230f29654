"""`load_yaml` builds plain data straight from the parser's events, and leaves anything unusual
to the full loader: both give the same data, and the full loader's refusals are unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from replay.storage import _yaml_events
from replay.storage._yaml_events import Unusual, construct_plain
from replay.storage._yaml_lines import construct_lines
from replay.storage.strict_yaml import AliasRefusedError, DuplicateKeyError, load_yaml, load_yaml_data
from tests.replay.storage.loaders import LIBRARY, RESOLVERS, full_loader, same

pytestmark = pytest.mark.skipif(not _yaml_events.AVAILABLE, reason="the lean path needs libyaml")


def lean(text: str) -> object:
    return construct_plain(text, RESOLVERS)


SCALARS = """\
plain: text
quoted: 'yes'
double: "null"
empty:
tilde: ~
null_word: null
yes_word: yes
on_word: off
int: 42
negative: -7
hex: 0x1f
octal: 017
underscored: 1_000
sexagesimal: 1:30
float: 1.5e+3
inf: .inf
nan_is_not_equal_to_itself_so_not_here: 1
date: 2026-12-02
merge_key: {<<: x}
equals: =
literal: |
  two
  lines
folded: >
  folded
  text
flow: [1, two, {three: 3}]
"""


def test_every_kind_of_scalar_reads_as_the_full_loader_reads_it() -> None:
    assert same(lean(SCALARS), full_loader(SCALARS))


@pytest.mark.parametrize("path", sorted(LIBRARY.glob("*/*.yaml")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_file_of_the_library_reads_the_same_by_every_path(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    expected = full_loader(text)
    if path.name != "cassette.yaml":
        # A scenario may have keys that are not strings (turn numbers): the full loader reads those.
        try:
            built = lean(text)
        except Unusual:
            return
        assert same(built, expected)
        return
    # Every cassette takes the line reader (from its text, and from the file a slice at a time)
    # and the event path.
    assert same(construct_lines(text, RESOLVERS), expected)
    with path.open("rb") as handle:
        assert same(construct_lines(handle, RESOLVERS), expected)
    assert same(lean(text), expected)


@pytest.mark.parametrize(
    "text",
    [
        "a: &x 1\nb: *x\n",  # an alias
        "a: &x 1\n",  # an anchor
        "a: !!binary aGk=\n",  # an explicit tag
        "a: !custom x\n",
        "a: 1\na: 1\n",  # a repeated key (the full loader accepts the same value twice)
        "? [1, 2]\n: x\n",  # a key that is not a scalar
        "1: int\n",  # a key that is not a string
        "a: 1\n---\nb: 2\n",  # two documents
        "a: [1, 2\n",  # a parse error
        "[" * (_yaml_events.MAX_DEPTH + 1) + "]" * (_yaml_events.MAX_DEPTH + 1),
    ],
    ids=[
        "alias",
        "anchor",
        "binary",
        "custom-tag",
        "repeated-key",
        "complex-key",
        "int-key",
        "two-documents",
        "error",
        "deep",
    ],
)
def test_what_the_lean_path_does_not_handle_goes_to_the_full_loader(text: str) -> None:
    with pytest.raises(Unusual):
        lean(text)


def test_the_full_loader_still_refuses_aliases_and_different_repeated_keys() -> None:
    with pytest.raises(AliasRefusedError):
        load_yaml("a: &x 1\nb: *x\n")
    with pytest.raises(DuplicateKeyError):
        load_yaml("a: 1\na: 2\n")
    assert load_yaml("a: 1\na: 1\n") == {"a": 1}


def test_a_parse_error_keeps_the_full_loaders_message_and_mark() -> None:
    with pytest.raises(yaml.YAMLError) as caught:
        load_yaml("a: [1, 2\n")
    assert caught.value.problem_mark is not None  # type: ignore[attr-defined]


def test_binary_and_anchors_still_load_through_the_full_loader() -> None:
    assert load_yaml("a: !!binary aGk=\nb: &x 1\n") == {"a": b"hi", "b": 1}


@pytest.mark.parametrize("text", ["", "# only a comment\n", "---\n", "just text\n", "- 1\n- 2\n"])
def test_documents_without_a_mapping_read_the_same(text: str) -> None:
    assert same(load_yaml(text), full_loader(text))


def test_keys_that_are_not_strings_still_load_and_are_not_called_json_data() -> None:
    assert load_yaml_data("keys: {1: int, false: bool, null: none, 1.5: float}\n") == (
        {"keys": {1: "int", False: "bool", None: "none", 1.5: "float"}},
        False,
    )
    assert load_yaml_data("a: 1\n") == ({"a": 1}, True)


# ---------------------------------------------------------------------------------------------
# Bytes, files, and items handed over as they are built


DOCUMENT = "top: 1\nitems:\n- {a: 1, b: [x, y]}\n- {a: 2}\ntail: end\n"


def test_bytes_and_a_binary_file_load_as_the_text_does(tmp_path: Path) -> None:
    path = tmp_path / "doc.yaml"
    path.write_text(DOCUMENT, encoding="utf-8")
    expected = load_yaml_data(DOCUMENT)
    assert load_yaml_data(DOCUMENT.encode()) == expected
    with path.open("rb") as handle:
        assert load_yaml_data(handle, whole_text=lambda: DOCUMENT) == expected


def test_each_item_of_the_named_list_is_handed_over_as_soon_as_it_is_built() -> None:
    seen: list[object] = []

    def compact(item: dict[str, object]) -> object:
        seen.append(dict(item))
        return item["a"]

    data, json_only = load_yaml_data(DOCUMENT, items=("items", compact))
    assert json_only and data == {"top": 1, "items": [1, 2], "tail": "end"}
    assert seen == [{"a": 1, "b": ["x", "y"]}, {"a": 2}]


def test_items_are_left_alone_where_the_full_loader_reads_the_document() -> None:
    unusual = DOCUMENT + "tagged: !!str 5\n"  # a tag: the full loader's
    data, json_only = load_yaml_data(unusual, items=("items", lambda item: "compacted"))
    assert not json_only and data["items"] == [{"a": 1, "b": ["x", "y"]}, {"a": 2}]


def test_a_file_the_full_loader_must_read_is_read_again_as_text(tmp_path: Path) -> None:
    path = tmp_path / "doc.yaml"
    unusual = DOCUMENT + "tagged: !!str 5\n"
    path.write_text(unusual, encoding="utf-8")
    with path.open("rb") as handle:
        assert load_yaml_data(handle, whole_text=lambda: unusual) == (full_loader(unusual), False)
