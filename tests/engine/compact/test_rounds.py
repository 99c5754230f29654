"""API rounds: one response with everything up to the next response; the prompt stands apart."""

from __future__ import annotations

from engine.compact.rounds import group_into_rounds, split_rounds
from tests.engine.compact.builders import Conversation, text, tool_use, uuids


def test_the_prompt_before_the_first_response_is_the_first_group() -> None:
    chat = Conversation()
    prompt = chat.user("hi")
    chat.response(text("hello"))
    assert uuids(group_into_rounds(chat.messages)[0]) == [prompt.uuid]


def test_a_response_and_the_message_with_its_tool_results_form_one_round() -> None:
    chat = Conversation()
    chat.user("hi")
    chat.tool_round("t1")
    assert uuids(group_into_rounds(chat.messages)[1]) == uuids(chat.messages[1:])


def test_the_blocks_of_one_response_stay_in_one_round() -> None:
    chat = Conversation()
    chat.user("hi")
    chat.response(text("let me look"), tool_use("t1"), tool_use("t2"))
    assert len(group_into_rounds(chat.messages)) == 2


def test_each_new_response_starts_a_round() -> None:
    chat = Conversation()
    chat.user("hi")
    chat.tool_round("t1")
    chat.tool_round("t2")
    chat.response(text("done"))
    assert [len(group) for group in group_into_rounds(chat.messages)] == [1, 2, 2, 1]


def test_a_later_prompt_belongs_to_the_round_before_it() -> None:
    chat = Conversation()
    chat.user("first")
    chat.response(text("answer"))
    second = chat.user("second")
    chat.response(text("answer again"))
    assert group_into_rounds(chat.messages)[1][-1] is second


def test_an_api_error_message_joins_the_round_it_interrupts() -> None:
    chat = Conversation()
    chat.user("hi")
    chat.response(text("partial"))
    chat.api_error()
    assert len(group_into_rounds(chat.messages)) == 2


def test_the_groups_put_together_give_the_messages_back() -> None:
    chat = Conversation()
    chat.system()
    chat.user("hi")
    chat.tool_round("t1", say="looking")
    chat.api_error()
    chat.user("again")
    chat.response(text("ok"))
    assert [m for group in group_into_rounds(chat.messages) for m in group] == chat.messages


def test_split_rounds_sets_the_prompt_apart_as_the_head() -> None:
    chat = Conversation()
    prompt = chat.user("hi")
    chat.tool_round("t1")
    split = split_rounds(chat.messages)
    assert (uuids(split.head), len(split.rounds)) == ([prompt.uuid], 1)


def test_a_history_that_starts_with_a_response_has_no_head() -> None:
    chat = Conversation()
    chat.tool_round("t1")
    split = split_rounds(chat.messages)
    assert (split.head, len(split.rounds)) == ([], 1)


def test_an_empty_history_has_no_rounds() -> None:
    assert group_into_rounds([]) == []
