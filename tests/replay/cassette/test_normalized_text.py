"""A body's normalized text kept as its pieces (`replay.cassette.normalized_text`): it reads back
as the members joined in order, ``messages`` as the list of its elements, and knows its length
without joining."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay.cassette.normalized_text import NormalizedText, SharedParser

MESSAGE_A = '{"content":"Fix the test.","role":"user"}'
MESSAGE_B = '{"content":"Done.","role":"assistant"}'


def test_the_pieces_read_back_as_the_body_they_were_cut_from() -> None:
    text = NormalizedText(('"max_tokens":64', (MESSAGE_A, MESSAGE_B), '"model":"m"'))
    assert text.text == f'{{"max_tokens":64,"messages":[{MESSAGE_A},{MESSAGE_B}],"model":"m"}}'
    assert json.loads(text.text)["messages"][1] == {"content": "Done.", "role": "assistant"}
    assert text.size() == len(text.text)


def test_an_empty_messages_list_and_a_lone_member_read_back_too() -> None:
    for members in [((),), ('"model":"m"',), ((MESSAGE_A,), '"stream":true')]:
        text = NormalizedText(members)
        assert json.loads(text.text) is not None
        assert text.size() == len(text.text)
    assert NormalizedText(((),)).text == '{"messages":[]}'


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)


def _piece(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _pieces(body: dict[str, object]) -> NormalizedText:
    """A body's pieces, as the player cuts them: members in key order, ``messages`` by element."""
    members: list[str | tuple[str, ...]] = []
    for key in sorted(body):
        value = body[key]
        if key == "messages" and isinstance(value, list):
            members.append(tuple(_piece(element) for element in value))
        else:
            members.append(f"{_piece(key)}:{_piece(value)}")
    return NormalizedText(tuple(members))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    bodies=st.lists(
        st.dictionaries(st.sampled_from(["model", "system", "tools", "messages", "é", ""]), _VALUES, max_size=4)
        | st.builds(
            lambda messages, rest: {**rest, "messages": messages},
            st.lists(_VALUES, max_size=4),
            st.dictionaries(st.sampled_from(["model", "tools"]), _VALUES, max_size=2),
        ),
        max_size=6,
    )
)
def test_a_shared_parser_reads_each_body_as_its_text_parses(bodies: list[dict[str, object]]) -> None:
    reader = SharedParser()
    for body in bodies:
        text = _pieces(body)
        assert reader.parsed(text) == json.loads(text.text)


def test_bodies_parsed_one_after_the_other_share_the_objects_of_the_pieces_they_share() -> None:
    reader = SharedParser()
    first = reader.parsed(NormalizedText(('"model":"m"', (MESSAGE_A,), '"tools":[{"name":"x"}]')))
    second = reader.parsed(NormalizedText(('"model":"m"', (MESSAGE_A, MESSAGE_B), '"tools":[{"name":"x"}]')))
    assert second["messages"][0] is first["messages"][0] and second["tools"] is first["tools"]
    # Only the body before is kept: a piece left out once is read anew.
    reader.parsed(NormalizedText(('"model":"m"',)))
    third = reader.parsed(NormalizedText(((MESSAGE_A,),)))
    assert third["messages"][0] == first["messages"][0] and third["messages"][0] is not first["messages"][0]
