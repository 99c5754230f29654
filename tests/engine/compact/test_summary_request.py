"""The summary request's two shapes (``EngineSettings.compact_request``): a request of its own,
or the conversation's own request with the summary prompt as its last user turn."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import pytest

from engine.compact.autocompact import COMPACT_PROMPT, COMPACT_SYSTEM_PROMPT, build_summary_request
from engine.messages import Message
from engine.model import ModelRequest, QuerySource
from engine.normalize import normalize_messages_for_api
from engine.settings import CompactRequest, EngineSettings
from tests.engine.compact.builders import Conversation, image, text

JsonDict = dict[str, Any]
MODEL = "claude-sonnet-4-6"
PREFIX = EngineSettings(compact_request=CompactRequest.CONVERSATION_PREFIX)
READ_TOOL = {"name": "Read", "description": "Read a file.", "input_schema": {"type": "object"}}
PROMPT_BLOCK = {"type": "text", "text": COMPACT_PROMPT}


def loop_request(messages: Sequence[Message]) -> ModelRequest:
    """What a loop would send for ``messages``: its system prompt, tools and output limit."""
    return ModelRequest(
        model=MODEL,
        messages=normalize_messages_for_api(messages),
        max_tokens=8_000,
        system="You help with notes.",
        tools=[READ_TOOL],
        thinking={"type": "enabled", "budget_tokens": 2_000},
    )


def chat_with_a_tool_round() -> Conversation:
    chat = Conversation()
    chat.user("tidy the notes")
    chat.tool_round("t1", "Read", {"file_path": "notes.md"}, result="note " * 40)
    return chat


def test_own_prompt_is_the_default() -> None:
    request = build_summary_request(chat_with_a_tool_round().messages, settings=EngineSettings(), model=MODEL)
    assert (request.system, request.tools) == (COMPACT_SYSTEM_PROMPT, [])


def test_a_conversation_prefix_request_keeps_the_conversations_system_tools_and_thinking() -> None:
    messages = chat_with_a_tool_round().messages
    base = loop_request(messages)
    request = build_summary_request(messages, settings=PREFIX, model=MODEL, conversation_request=loop_request)
    assert (request.model, request.system, request.tools, request.thinking) == (
        base.model,
        base.system,
        base.tools,
        base.thinking,
    )


def test_its_messages_are_the_conversations_with_the_prompt_joining_the_last_user_turn() -> None:
    messages = chat_with_a_tool_round().messages
    base = loop_request(messages).messages
    request = build_summary_request(messages, settings=PREFIX, model=MODEL, conversation_request=loop_request)
    assert request.messages[:-1] == base[:-1]
    assert request.messages[-1] == {**base[-1], "content": [*base[-1]["content"], PROMPT_BLOCK]}


def test_a_history_ending_with_an_answer_gets_the_prompt_as_a_new_user_turn() -> None:
    chat = chat_with_a_tool_round()
    chat.response(text("Tidied."))
    base = loop_request(chat.messages).messages
    request = build_summary_request(chat.messages, settings=PREFIX, model=MODEL, conversation_request=loop_request)
    assert request.messages == [*base, {"role": "user", "content": [PROMPT_BLOCK]}]


def test_it_is_a_compaction_query_with_the_summary_output_limit() -> None:
    settings = EngineSettings(compact_request=CompactRequest.CONVERSATION_PREFIX, summary_max_output_tokens=12_345)
    request = build_summary_request(
        chat_with_a_tool_round().messages, settings=settings, model=MODEL, conversation_request=loop_request
    )
    assert (request.query_source, request.max_tokens, request.stream) == (QuerySource.COMPACT, 12_345, True)


def test_its_message_mark_goes_on_the_second_to_last_message_so_it_reads_and_writes_nothing_new() -> None:
    messages = chat_with_a_tool_round().messages
    request = build_summary_request(messages, settings=PREFIX, model=MODEL, conversation_request=loop_request)
    marked = [
        index
        for index, message in enumerate(request.params()["messages"])
        for block in message["content"]
        if "cache_control" in block
    ]
    assert marked == [len(request.messages) - 2]


def test_media_stays_as_the_conversation_sent_it() -> None:
    chat = Conversation()
    chat.user([text("what is in this picture?"), image()])
    chat.response(text("A cat."))
    request = build_summary_request(chat.messages, settings=PREFIX, model=MODEL, conversation_request=loop_request)
    assert request.messages[0]["content"][1] == image()


def test_the_conversations_request_is_never_changed() -> None:
    messages = chat_with_a_tool_round().messages
    base = loop_request(messages)
    before = copy.deepcopy(base.messages)
    build_summary_request(messages, settings=PREFIX, model=MODEL, conversation_request=lambda _: base)
    assert base.messages == before


def test_a_conversation_prefix_request_needs_the_conversations_request() -> None:
    with pytest.raises(ValueError, match="conversation"):
        build_summary_request(chat_with_a_tool_round().messages, settings=PREFIX, model=MODEL)


def test_the_setting_takes_its_value_as_text_and_refuses_others() -> None:
    assert EngineSettings(compact_request="conversation_prefix").compact_request is CompactRequest.CONVERSATION_PREFIX  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'own_prompt' or 'conversation_prefix'"):
        EngineSettings(compact_request="prefix")  # type: ignore[arg-type]
