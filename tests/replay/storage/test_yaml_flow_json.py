"""`FlowJson` reads a flow collection that differs from an earlier one only inside its last
single-quoted string from the earlier one's JSON, and gets exactly what `as_json` gets from the
line alone: the same JSON text and value, or nothing when `as_json` refuses it.

Generated examples: ``HYPOTHESIS_PROFILE=long`` draws thirty times as many, fresh each run."""

from __future__ import annotations

import os
import string

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from replay.storage import _yaml_events
from replay.storage._yaml_events import Unusual
from replay.storage._yaml_flow_json import FlowJson, as_json
from replay.storage._yaml_lines import construct_lines
from replay.storage.strict_yaml import FlowMap, FlowSeq, dump_yaml
from tests.replay.storage.loaders import RESOLVERS, full_loader, same

pytestmark = pytest.mark.skipif(not _yaml_events.AVAILABLE, reason="the lean paths need libyaml")

EXAMPLES = 3_000 if os.environ.get("HYPOTHESIS_PROFILE") == "long" else 100

# What could make a string, or what surrounds it, tokenize otherwise: indicators, quotes, escapes,
# the words the resolvers take, spaces.
_TRICKY = ["'", "''", '"', "\\", ": ", ", ", ":", ",", " ", "{", "}", "[", "]", "#", " #", "-", "true", "null", "0"]
contents = st.lists(st.sampled_from(_TRICKY) | st.text(string.ascii_letters + " .", max_size=5), max_size=6).map(
    "".join
)


def reads_alike(flow: FlowJson, text: str) -> None:
    try:
        expected = as_json(text)
    except Unusual:  # a repeated key
        with pytest.raises(Unusual):
            flow.read(text)
        return
    got = flow.read(text)
    if expected is None:
        assert got is None
    else:
        assert got is not None and got[0] == expected[0] and same(got[1], expected[1])


def with_last_quoted(text: str, content: str) -> str | None:
    """``text`` with what lies between its last two single quotes replaced by ``content``."""
    end = text.rfind("'")
    start = text.rfind("'", 0, end) if end > 0 else -1
    return None if start < 0 else text[: start + 1] + content + text[end:]


def test_events_alike_but_for_their_text_read_as_each_alone() -> None:
    flow = FlowJson()
    for text in ("part 0 of the answer ", "", "a, b: {c} [d] # e", "true", "x: y", "-1", " [", "é ünïcode"):
        line = f"{{event: content_block_delta, data: {{index: 0, delta: {{type: text_delta, text: '{text}'}}}}}}"
        reads_alike(flow, line)
        assert flow.read(line) is not None


def test_a_string_that_is_a_key_or_that_a_plain_scalar_swallows_is_read_alone() -> None:
    flow = FlowJson()
    for line in ("{a: 1, 'k': 2}", "{a: 1, 'j': 2}", "[x 'a']", "[x 'b']", "{a: 'it''s'}", "{a: 'it''z'}"):
        reads_alike(flow, line)
    with pytest.raises(Unusual):  # a repeated key: the full loader decides
        flow.read("{a: 1, 'k': 1, 'k': 2}")


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(st.text(string.ascii_lowercase, min_size=1, max_size=4), contents, min_size=1, max_size=4),
    st.lists(contents, min_size=1, max_size=4),
    st.booleans(),
)
def test_lines_that_differ_in_their_last_quoted_string_read_as_each_alone(
    data: dict[str, str], others: list[str], as_list: bool
) -> None:
    line = dump_yaml({"k": FlowSeq(data.values()) if as_list else FlowMap(data)}).split("\n")[0][len("k: ") :]
    flow = FlowJson()
    reads_alike(flow, line)
    for content in others:
        changed = with_last_quoted(line, content)
        assume(changed is not None)
        reads_alike(flow, changed)  # type: ignore[arg-type]


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(contents, min_size=2, max_size=6), st.lists(contents, min_size=1, max_size=3))
def test_a_document_of_such_lines_reads_as_the_full_loader_reads_it(texts: list[str], keys: list[str]) -> None:
    events = [FlowMap({"event": "delta", "data": FlowMap({"index": 0, "text": text})}) for text in texts]
    try:
        document = dump_yaml({"events": events, "more": [FlowMap({key: text}) for key in keys for text in texts]})
    except (yaml.YAMLError, UnicodeEncodeError):
        return
    try:
        read = construct_lines(document, RESOLVERS)
    except Unusual:
        return  # left to the other paths, which read it as ever
    assert same(read, full_loader(document))


def test_the_remembered_lines_are_bounded() -> None:
    flow = FlowJson()
    for number in range(5_000):
        reads_alike(flow, f"{{n{number}: '{number}'}}")
    assert len(flow._templates) <= 4_096
