"""Token accounting: the rough estimator, the estimate of a history, and the count that trusts
the API's usage where it has one."""

from __future__ import annotations

import json

import pytest

from engine.tokens import (
    MEDIA_BLOCK_TOKENS,
    estimate_message_tokens,
    rough_token_count,
    token_count_with_estimation,
)
from tests.engine.compact.builders import (
    Conversation,
    document,
    image,
    text,
    tool_result,
    tool_use,
)

USAGE = {
    "input_tokens": 1_000,
    "output_tokens": 50,
    "cache_creation_input_tokens": 200,
    "cache_read_input_tokens": 3_000,
}
USAGE_TOTAL = 4_250


@pytest.mark.parametrize(("value", "tokens"), [("", 0), ("a", 1), ("abcd", 1), ("abcde", 2), ("x" * 400, 100)])
def test_rough_count_is_a_quarter_of_the_characters_rounded_up(value: str, tokens: int) -> None:
    assert rough_token_count(value) == tokens


def test_a_text_prompt_counts_its_text() -> None:
    chat = Conversation()
    chat.user("x" * 40)
    assert estimate_message_tokens(chat.messages) == 10


def test_a_tool_use_counts_its_name_and_its_json_input() -> None:
    chat = Conversation()
    chat.response(tool_use("t1", "Read", {"file_path": "notes.md"}))
    expected = rough_token_count("Read" + json.dumps({"file_path": "notes.md"}))
    assert estimate_message_tokens(chat.messages) == expected


def test_a_tool_result_counts_its_content_string_or_blocks() -> None:
    chat = Conversation()
    chat.user([tool_result("t1", "y" * 80), tool_result("t2", [text("z" * 40)])])
    assert estimate_message_tokens(chat.messages) == 20 + 10


def test_thinking_counts_its_text() -> None:
    chat = Conversation()
    chat.response({"type": "thinking", "thinking": "w" * 20, "signature": "sig"})
    assert estimate_message_tokens(chat.messages) == 5


def test_images_and_documents_count_a_flat_amount_each_even_inside_tool_results() -> None:
    chat = Conversation()
    chat.user([image(), document(), tool_result("t1", [image()])])
    assert estimate_message_tokens(chat.messages) == 3 * MEDIA_BLOCK_TOKENS


def test_messages_the_api_never_sees_count_nothing() -> None:
    chat = Conversation()
    chat.system("x" * 400)
    chat.api_error("x" * 400)
    assert estimate_message_tokens(chat.messages) == 0


def test_without_usage_the_count_is_the_estimate_of_everything() -> None:
    chat = Conversation()
    chat.user("x" * 40)
    chat.response(text("y" * 40))
    assert token_count_with_estimation(chat.messages) == 20


def test_the_last_usage_counts_input_cache_and_output_tokens_plus_what_came_after() -> None:
    chat = Conversation()
    chat.user("x" * 4_000)
    chat.response(tool_use("t1"), usage=USAGE)
    chat.user([tool_result("t1", "r" * 400)])
    assert token_count_with_estimation(chat.messages) == USAGE_TOTAL + 100


def test_only_the_last_response_with_usage_counts() -> None:
    chat = Conversation()
    chat.user("x")
    chat.response(text("first"), usage={"input_tokens": 10, "output_tokens": 5})
    chat.user("y" * 40)
    chat.response(text("second"), usage=USAGE)
    assert token_count_with_estimation(chat.messages) == USAGE_TOTAL


def test_the_blocks_of_the_last_response_are_not_counted_twice() -> None:
    chat = Conversation()
    chat.user("x")
    chat.response(text("a" * 400), text("b" * 400), tool_use("t1"), usage=USAGE)
    assert token_count_with_estimation(chat.messages) == USAGE_TOTAL


def test_a_tool_result_interleaved_between_the_blocks_of_a_response_is_estimated() -> None:
    chat = Conversation()
    chat.user("x")
    first, second = chat.response(tool_use("t1"), tool_use("t2"), usage=USAGE)
    streamed = chat.user([tool_result("t1", "r" * 400)])
    # A streamed tool finished before the response's last block arrived.
    chat.messages[:] = [chat.messages[0], first, streamed, second]
    assert token_count_with_estimation(chat.messages) == USAGE_TOTAL + 100


def test_an_api_error_after_the_last_response_is_neither_usage_nor_estimated() -> None:
    chat = Conversation()
    chat.user("x")
    chat.response(text("answer"), usage=USAGE)
    chat.api_error("x" * 4_000)
    assert token_count_with_estimation(chat.messages) == USAGE_TOTAL


def test_zero_usage_is_no_usage() -> None:
    chat = Conversation()
    chat.user("x" * 40)
    chat.response(text("y" * 40), usage={"input_tokens": 0, "output_tokens": 0})
    assert token_count_with_estimation(chat.messages) == 20
