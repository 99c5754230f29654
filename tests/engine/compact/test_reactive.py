"""Recovery: reactive compact on a too-long prompt, and media stripping on too-large media."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2
import pytest

from engine.compact.autocompact import CompactionError
from engine.compact.reactive import is_single_exchange, reactive_compact, strip_media
from engine.deps import QueryDeps
from engine.model import AnthropicModel
from engine.settings import EngineSettings
from replay.fake.model import FakeModel, FakeModelTransport
from replay.fake.scenario import Scenario
from tests.engine.compact.builders import (
    Conversation,
    document,
    frozen_copy,
    image,
    text,
    tool_result,
    uuids,
)

SUMMARY = {"content": [{"text": "<summary>Looked at two pictures.</summary>"}]}


def with_media() -> Conversation:
    chat = Conversation()
    chat.user([text("compare these"), image(), document()])
    chat.response({"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "b.png"}})
    chat.user([tool_result("t1", [text("b.png:"), image()])])
    return chat


def test_every_image_and_document_becomes_a_text_block_saying_it_was_removed() -> None:
    result = strip_media(with_media().messages)
    assert result.messages[0].message["content"] == [
        text("compare these"),
        text("[image removed: too large for the API]"),
        text("[document removed: too large for the API]"),
    ]


def test_media_inside_tool_results_is_removed_too() -> None:
    result = strip_media(with_media().messages)
    assert result.messages[2].message["content"][0]["content"] == [
        text("b.png:"),
        text("[image removed: too large for the API]"),
    ]


def test_strip_media_counts_what_it_removed() -> None:
    assert strip_media(with_media().messages).stripped == 3


def test_a_history_without_media_is_unchanged() -> None:
    chat = Conversation()
    chat.user("hi")
    chat.response(text("hello"))
    result = strip_media(chat.messages)
    assert (result.messages, result.stripped) == (chat.messages, 0)


def test_stripping_keeps_the_uuids_and_never_changes_the_input() -> None:
    chat = with_media()
    before = frozen_copy(chat.messages)
    result = strip_media(chat.messages)
    assert (uuids(result.messages), chat.messages) == (uuids(before), before)


@pytest.fixture
async def deps_and_fake() -> AsyncIterator[tuple[QueryDeps, FakeModel]]:
    fake = FakeModel(Scenario.from_list([SUMMARY]))
    client = httpx2.AsyncClient(transport=FakeModelTransport(fake))
    yield QueryDeps.deterministic(AnthropicModel(http_client=client)), fake
    await client.aclose()


async def test_reactive_compact_is_an_automatic_compaction(deps_and_fake: tuple[QueryDeps, FakeModel]) -> None:
    deps, _ = deps_and_fake
    result = await reactive_compact(
        with_media().messages, deps=deps, settings=EngineSettings(), model="claude-sonnet-4-6"
    )
    assert result.boundary.compact_metadata is not None
    assert result.boundary.compact_metadata["trigger"] == "auto"


async def test_reactive_compact_keeps_as_many_recent_messages_as_the_settings_say(
    deps_and_fake: tuple[QueryDeps, FakeModel],
) -> None:
    deps, _ = deps_and_fake
    chat = with_media()
    chat.response(text("They differ."))
    settings = EngineSettings(compact_keep_recent_messages=1)
    result = await reactive_compact(chat.messages, deps=deps, settings=settings, model="claude-sonnet-4-6")
    assert uuids(result.kept) == [chat.messages[-1].uuid]


def test_a_prompt_alone_is_a_single_exchange_and_a_response_ends_it() -> None:
    chat = Conversation()
    chat.user("explain the retry policy")
    assert is_single_exchange(chat.messages)
    chat.response(text("It retries."))
    chat.user("and the timeouts?")
    assert not is_single_exchange(chat.messages)


def test_an_api_error_is_not_a_response() -> None:
    chat = Conversation()
    chat.user("explain the retry policy")
    chat.api_error()
    assert is_single_exchange(chat.messages)


async def test_a_single_exchange_is_not_compacted_and_no_summary_is_asked_for(
    deps_and_fake: tuple[QueryDeps, FakeModel],
) -> None:
    deps, fake = deps_and_fake
    chat = Conversation()
    chat.user("explain the retry policy")
    with pytest.raises(CompactionError, match="single exchange"):
        await reactive_compact(chat.messages, deps=deps, settings=EngineSettings(), model="claude-sonnet-4-6")
    assert fake.requests == []
