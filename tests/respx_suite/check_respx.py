"""A recorded session replays through respx: the anthropic SDK, on its default httpx2 client,
under ``respx.mock`` with the cassette mounted — text, a tool call, HTTP errors, a dropped
connection, the SDK's own retry, the sync client, a miss, and the whole session in strict mode.

Runs only in a process aliased by ``-p replay.respx_alias`` (see pytest.ini).
"""

from __future__ import annotations

from pathlib import Path

import anthropic
import httpx2
import pytest
import respx

from replay.cassette.respx_adapter import mount_cassette
from replay.cassette.transport import CassetteMismatchError

from .session import (
    BASE_URL,
    CUT_SHORT,
    HELLO,
    HELLO_ANSWER,
    RATE_LIMIT_MESSAGE,
    RATE_LIMITED,
    RETRIED,
    RETRIED_ANSWER,
    STORY_START,
    SYNC_ANSWER,
    SYNC_QUESTION,
    TOOL_INPUT,
    TOOL_QUESTION,
    TOOL_USE_ID,
    message_params,
)


async def streamed_text(client: anthropic.AsyncAnthropic, question: str) -> str:
    async with client.messages.stream(**message_params(question)) as stream:
        return await stream.get_final_text()


def test_respx_patches_httpx2_in_this_process() -> None:
    import httpx

    assert httpx is httpx2


async def test_a_text_answer_replays(
    respx_mock: respx.MockRouter, cassette_path: Path, client: anthropic.AsyncAnthropic
) -> None:
    mount_cassette(respx_mock, cassette_path)
    assert await streamed_text(client, HELLO) == HELLO_ANSWER


async def test_a_tool_call_replays_with_its_streamed_input(
    respx_mock: respx.MockRouter, cassette_path: Path, client: anthropic.AsyncAnthropic
) -> None:
    mount_cassette(respx_mock, cassette_path)
    async with client.messages.stream(**message_params(TOOL_QUESTION, tools=True)) as stream:
        message = await stream.get_final_message()
    assert message.stop_reason == "tool_use"
    [block] = message.content
    assert (block.type, block.id, block.input) == ("tool_use", TOOL_USE_ID, TOOL_INPUT)


async def test_a_recorded_429_is_a_rate_limit_error_with_its_headers(
    respx_mock: respx.MockRouter, cassette_path: Path, client: anthropic.AsyncAnthropic
) -> None:
    mount_cassette(respx_mock, cassette_path)
    with pytest.raises(anthropic.RateLimitError) as caught:
        await streamed_text(client, RATE_LIMITED)
    assert caught.value.status_code == 429
    assert caught.value.response.headers["retry-after"] == "30"
    assert RATE_LIMIT_MESSAGE in str(caught.value)


async def test_a_recorded_dropped_connection_drops_after_the_same_events(
    respx_mock: respx.MockRouter, cassette_path: Path, client: anthropic.AsyncAnthropic
) -> None:
    mount_cassette(respx_mock, cassette_path)
    seen: list[str] = []
    text = ""
    with pytest.raises(httpx2.RemoteProtocolError, match="peer closed connection"):
        stream = await client.messages.create(**message_params(CUT_SHORT), stream=True)
        async for event in stream:
            seen.append(event.type)
            if event.type == "content_block_delta" and event.delta.type == "text_delta":
                text += event.delta.text
    assert seen == ["message_start", "content_block_start", "content_block_delta"]
    assert text == STORY_START


async def test_the_sdks_own_retry_gets_the_next_recorded_answer(
    respx_mock: respx.MockRouter, cassette_path: Path, client: anthropic.AsyncAnthropic
) -> None:
    mount_cassette(respx_mock, cassette_path)
    assert await streamed_text(client.with_options(max_retries=1), RETRIED) == RETRIED_ANSWER
    assert [call.response.status_code for call in respx_mock.calls] == [429, 200]


def test_the_sync_client_replays_a_json_answer(
    respx_mock: respx.MockRouter, cassette_path: Path, sync_client: anthropic.Anthropic
) -> None:
    mount_cassette(respx_mock, cassette_path)
    message = sync_client.messages.create(**message_params(SYNC_QUESTION))
    assert [block.text for block in message.content if block.type == "text"] == [SYNC_ANSWER]


async def test_a_miss_reaches_the_caller_as_the_miss(
    respx_mock: respx.MockRouter, cassette_path: Path, client: anthropic.AsyncAnthropic
) -> None:
    player = mount_cassette(respx_mock, cassette_path)
    with pytest.raises(anthropic.APIConnectionError) as caught:
        await streamed_text(client, "A question nobody recorded.")
    assert isinstance(caught.value.__cause__, CassetteMismatchError)
    assert "No recorded interaction matches request 1: POST /v1/messages" in str(caught.value.__cause__)
    assert len(player.unplayed()) == 7


async def test_a_request_outside_the_base_url_is_not_the_cassettes(
    cassette_path: Path, client: anthropic.AsyncAnthropic
) -> None:
    with respx.mock(assert_all_called=False) as router:
        mount_cassette(router, cassette_path, base_url="https://proxy.example/anthropic")
        with pytest.raises(anthropic.APIConnectionError) as caught:
            await streamed_text(client, HELLO)
    assert isinstance(caught.value.__cause__, respx.models.AllMockedAssertionError)


@pytest.mark.parametrize("mocker", ["httpcore", "httpx"])
async def test_the_whole_session_replays_in_order_in_strict_mode(
    mocker: str, cassette_path: Path, client: anthropic.AsyncAnthropic, sync_client: anthropic.Anthropic
) -> None:
    with respx.mock(base_url=BASE_URL, using=mocker) as router:
        player = mount_cassette(router, cassette_path, strict=True)
        assert await streamed_text(client, HELLO) == HELLO_ANSWER
        async with client.messages.stream(**message_params(TOOL_QUESTION, tools=True)) as stream:
            assert (await stream.get_final_message()).stop_reason == "tool_use"
        with pytest.raises(anthropic.RateLimitError):
            await streamed_text(client, RATE_LIMITED)
        with pytest.raises(httpx2.RemoteProtocolError):
            await streamed_text(client, CUT_SHORT)
        assert await streamed_text(client.with_options(max_retries=1), RETRIED) == RETRIED_ANSWER
        assert sync_client.messages.create(**message_params(SYNC_QUESTION)).content[0].type == "text"
        assert [call.response.status_code for call in router.calls] == [200, 200, 429, 200, 429, 200, 200]
        assert player.finish() == []
