"""A body's normalized text kept as its pieces (`replay.cassette.normalized_text`): it reads back
as the members joined in order, ``messages`` as the list of its elements, and knows its length
without joining."""

from __future__ import annotations

import json

from replay.cassette.normalized_text import NormalizedText

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
