"""Rendering turns as Messages API events and Message JSON."""

from __future__ import annotations

import json
import math
from typing import Any

import anthropic
import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay.fake.blocks import (
    DELTA_CHARS,
    MAX_DELTAS_PER_STRING,
    RedactedThinkingBlock,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Turn,
    Usage,
    count_message_events,
)
from replay.fake.model import FakeModel, SyncFakeModelTransport
from replay.fake.scenario import Scenario
from replay.fake.sse import encode_sse, error_body, render_message_events, render_message_json

MODEL = "claude-sonnet-4-6"


def render(*content: Any, **turn: Any) -> list[tuple[str, dict[str, Any]]]:
    return render_message_events(Turn(content=content, **turn), message_id="msg_1", model=MODEL, input_tokens=25)


def deltas(events: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    return [data["delta"] for name, data in events if name == "content_block_delta"]


def test_encode_sse_always_writes_the_event_line_and_compact_json() -> None:
    frame = encode_sse("content_block_delta", {"type": "content_block_delta", "delta": {"text": "é"}})

    assert frame == 'event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"text":"é"}}\n\n'.encode()


def test_error_body_has_the_api_shape() -> None:
    assert error_body("overloaded_error", "Overloaded") == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    }


def test_a_text_turn_renders_the_full_event_sequence() -> None:
    assert render(TextBlock(text="Hi"), usage=Usage(input_tokens=25, output_tokens=9, cache_read_input_tokens=3)) == [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": MODEL,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {
                        "input_tokens": 25,
                        "cache_creation_input_tokens": 0,
                        "cache_read_input_tokens": 3,
                        "output_tokens": 1,
                    },
                },
            },
        ),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        ("ping", {"type": "ping"}),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 9},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


def test_text_is_split_into_deltas_of_at_most_24_characters() -> None:
    text = "abcdefghijklmnopqrstuvwxyz" * 3

    pieces = [delta["text"] for delta in deltas(render(TextBlock(text=text)))]

    assert pieces == [text[0:24], text[24:48], text[48:72], text[72:]]
    assert DELTA_CHARS == 24


def test_a_long_string_is_split_into_at_most_max_deltas_pieces_so_a_stream_grows_linearly() -> None:
    text = "0123456789" * 100_000  # a million characters: 41,667 pieces of 24 would be one event each

    pieces = [delta["text"] for delta in deltas(render(TextBlock(text=text)))]

    assert "".join(pieces) == text
    assert len(pieces) == MAX_DELTAS_PER_STRING
    assert {len(piece) for piece in pieces[:-1]} == {math.ceil(len(text) / MAX_DELTAS_PER_STRING)}


def test_a_long_tool_input_streams_in_at_most_max_deltas_pieces() -> None:
    tool_input = {"file_path": "big.txt", "content": "x" * 10_000_000}

    rendered = render(ToolUseBlock(name="Write", input=tool_input, id="toolu_1"))
    pieces = [delta["partial_json"] for delta in deltas(rendered)]

    assert "".join(pieces) == json.dumps(tool_input, separators=(",", ":"))
    assert len(pieces) <= MAX_DELTAS_PER_STRING


def test_strings_up_to_max_deltas_times_24_characters_keep_their_24_character_pieces() -> None:
    text = "y" * (DELTA_CHARS * MAX_DELTAS_PER_STRING)

    pieces = [delta["text"] for delta in deltas(render(TextBlock(text=text)))]

    assert pieces == ["y" * DELTA_CHARS] * MAX_DELTAS_PER_STRING


def test_tool_use_starts_with_empty_input_and_streams_compact_json() -> None:
    tool_input = {"file_path": "/workspace/a very long path/to/the/file.py", "limit": 20}
    events = render(ToolUseBlock(name="Read", input=tool_input, id="toolu_1"))

    start = events[1][1]["content_block"]
    pieces = [delta["partial_json"] for delta in deltas(events)]
    assert start == {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}}
    assert {delta["type"] for delta in deltas(events)} == {"input_json_delta"}
    assert "".join(pieces) == json.dumps(tool_input, separators=(",", ":"))
    assert all(len(piece) <= 24 for piece in pieces)
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"


def test_thinking_streams_thinking_deltas_then_one_signature_delta() -> None:
    events = render(ThinkingBlock(thinking="t" * 30, signature="sig"))

    assert deltas(events) == [
        {"type": "thinking_delta", "thinking": "t" * 24},
        {"type": "thinking_delta", "thinking": "t" * 6},
        {"type": "signature_delta", "signature": "sig"},
    ]


def test_redacted_thinking_arrives_whole_in_its_start_event() -> None:
    events = render(RedactedThinkingBlock(data="opaque"))

    assert events[1][1]["content_block"] == {"type": "redacted_thinking", "data": "opaque"}
    assert deltas(events) == []


def test_one_ping_follows_the_first_block_start_only() -> None:
    names = [name for name, _ in render(TextBlock(text="a"), TextBlock(text="b"))]

    assert names.count("ping") == 1
    assert names[:3] == ["message_start", "content_block_start", "ping"]


def test_a_turn_without_content_still_pings_once() -> None:
    names = [name for name, _ in render(stop_reason=StopReason.MAX_TOKENS)]

    assert names == ["message_start", "ping", "message_delta", "message_stop"]


def test_count_message_events_matches_the_rendering() -> None:
    content = (
        ThinkingBlock(thinking="x" * 50, signature="s"),
        TextBlock(text="y" * 49),
        ToolUseBlock(name="Bash", input={"command": "ls -la"}, id="toolu_1"),
        RedactedThinkingBlock(data="d"),
    )

    assert count_message_events(content) == len(render(*content))


def test_usage_is_estimated_at_four_characters_per_token_and_at_least_one() -> None:
    long_events = render(TextBlock(text="z" * 400))
    empty_events = render_message_events(Turn(content=()), message_id="m", model=MODEL, input_tokens=0)

    assert long_events[-2][1]["usage"] == {"output_tokens": 100}
    assert empty_events[0][1]["message"]["usage"]["input_tokens"] == 1
    assert empty_events[-2][1]["usage"] == {"output_tokens": 1}


def test_render_message_json_is_the_complete_message() -> None:
    turn = Turn(
        content=(TextBlock(text="Reading."), ToolUseBlock(name="Read", input={"file_path": "a"}, id="toolu_9")),
        usage=Usage(input_tokens=10, output_tokens=5, cache_creation_input_tokens=2),
    )

    assert render_message_json(turn, message_id="msg_2", model=MODEL, input_tokens=999) == {
        "id": "msg_2",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "toolu_9", "name": "Read", "input": {"file_path": "a"}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 10,
            "cache_creation_input_tokens": 2,
            "cache_read_input_tokens": 0,
            "output_tokens": 5,
        },
    }


def test_a_tool_use_without_an_id_cannot_be_rendered() -> None:
    with pytest.raises(ValueError, match="tool_use block 'Read' has no id"):
        render(ToolUseBlock(name="Read", input={}))


# --- round trip through the real SDK --------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(), tool_input=st.dictionaries(st.text(), json_values, max_size=5), thinking=st.text())
def test_any_text_and_tool_input_round_trip_through_the_sdk(
    text: str, tool_input: dict[str, Any], thinking: str
) -> None:
    turn = Turn(
        content=(
            ThinkingBlock(thinking=thinking, signature="sig"),
            TextBlock(text=text),
            ToolUseBlock(name="Tool", input=tool_input),
        )
    )
    http_client = httpx2.Client(transport=SyncFakeModelTransport(FakeModel(Scenario(turns=(turn,)))))

    with anthropic.Anthropic(api_key="sk-ant-test", max_retries=0, http_client=http_client) as client:
        with client.messages.stream(model=MODEL, max_tokens=16, messages=[{"role": "user", "content": "go"}]) as stream:
            message = stream.get_final_message()

    thinking_block, text_block, tool_block = message.content
    assert thinking_block.thinking == thinking
    assert text_block.text == text
    assert tool_block.input == tool_input
