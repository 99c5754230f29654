"""The fake model, specified through the real anthropic SDK on an in-process httpx2 transport."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic
import httpx2
import pytest

from replay.fake.blocks import StopReason, TextBlock, ToolUseBlock, Turn, Usage
from replay.fake.model import (
    CONNECTION_RESET_MESSAGE,
    DROPPED_CONNECTION_MESSAGE,
    FakeModel,
    FakeModelError,
    FakeResponse,
    ScenarioExhaustedError,
)
from replay.fake.scenario import Scenario

MODEL = "claude-sonnet-4-6"
HELLO = [{"role": "user", "content": "hello"}]

AsyncClientFor = Callable[[FakeModel], anthropic.AsyncAnthropic]
SyncClientFor = Callable[[FakeModel], anthropic.Anthropic]


def fake(*turns: Any, model: str | None = None, name: str | None = None) -> FakeModel:
    """A FakeModel over turns in the YAML dict shape or as dataclasses."""
    return FakeModel(Scenario.from_list(list(turns), model=model, name=name))


async def stream_events(client: anthropic.AsyncAnthropic, messages: list[dict[str, Any]] = HELLO) -> list[Any]:
    stream = await client.messages.create(model=MODEL, max_tokens=1024, messages=messages, stream=True)
    return [event async for event in stream]


async def final_message(client: anthropic.AsyncAnthropic) -> anthropic.types.Message:
    async with client.messages.stream(model=MODEL, max_tokens=1024, messages=HELLO) as stream:
        return await stream.get_final_message()


# --- turns, streamed -------------------------------------------------------------------------


async def test_streamed_text_reaches_the_sdk_exactly(async_client_for: AsyncClientFor) -> None:
    text = "Hello! This answer is long enough to span several deltas: ünïcödé ✓ and\nnew lines."
    message = await final_message(async_client_for(fake({"content": [{"text": text}]})))

    assert [block.type for block in message.content] == ["text"]
    assert message.content[0].text == text
    assert message.stop_reason == "end_turn"
    assert message.id == "msg_fake_0001"


async def test_stream_events_arrive_in_api_order(async_client_for: AsyncClientFor) -> None:
    events = await stream_events(async_client_for(fake({"content": [{"text": "short"}]})))

    assert [event.type for event in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]


async def test_tool_use_gets_a_deterministic_id_and_its_input_round_trips(async_client_for: AsyncClientFor) -> None:
    tool_input = {"file_path": "/workspace/src/main.py", "offset": 10, "limit": None, "flags": [True, 1.5]}
    scenario = fake({"content": [{"text": "Reading it."}, {"tool_use": {"name": "Read", "input": tool_input}}]})

    message = await final_message(async_client_for(scenario))

    tool_use = message.content[1]
    assert tool_use.type == "tool_use"
    assert (tool_use.id, tool_use.name, tool_use.input) == ("toolu_fake_0001_1", "Read", tool_input)
    assert message.stop_reason == "tool_use"


async def test_a_scripted_tool_use_id_is_kept(async_client_for: AsyncClientFor) -> None:
    scenario = fake({"content": [{"tool_use": {"name": "Bash", "input": {"command": "ls"}, "id": "toolu_abc"}}]})

    message = await final_message(async_client_for(scenario))

    assert message.content[0].id == "toolu_abc"


async def test_thinking_and_signature_round_trip(async_client_for: AsyncClientFor) -> None:
    thinking = "First I should read the file, then decide what to change in it."
    scenario = fake(
        {
            "content": [
                {"thinking": thinking, "signature": "EqQBCkgIARABGAIiQL=="},
                {"redacted_thinking": "EmwKAhgBEgy3va3pzix/LafPsn4a"},
                {"text": "Done."},
            ]
        }
    )

    message = await final_message(async_client_for(scenario))

    first, second, third = message.content
    assert (first.type, first.thinking, first.signature) == ("thinking", thinking, "EqQBCkgIARABGAIiQL==")
    assert (second.type, second.data) == ("redacted_thinking", "EmwKAhgBEgy3va3pzix/LafPsn4a")
    assert third.text == "Done."


async def test_scripted_usage_is_reported(async_client_for: AsyncClientFor) -> None:
    usage = {
        "input_tokens": 1200,
        "output_tokens": 42,
        "cache_creation_input_tokens": 7,
        "cache_read_input_tokens": 900,
    }
    message = await final_message(async_client_for(fake({"content": [{"text": "ok"}], "usage": usage})))

    assert message.usage.input_tokens == 1200
    assert message.usage.output_tokens == 42
    assert message.usage.cache_creation_input_tokens == 7
    assert message.usage.cache_read_input_tokens == 900


async def test_usage_is_estimated_from_the_request_and_content_when_not_scripted(
    async_client_for: AsyncClientFor,
) -> None:
    fake_model = fake({"content": [{"text": "x" * 40}]})

    message = await final_message(async_client_for(fake_model))

    assert message.usage.input_tokens == len(fake_model.requests[0].body) // 4
    assert message.usage.output_tokens == 10


@pytest.mark.parametrize("stop_reason", list(StopReason))
async def test_every_stop_reason_reaches_the_sdk(async_client_for: AsyncClientFor, stop_reason: StopReason) -> None:
    message = await final_message(async_client_for(fake({"content": [{"text": "..."}], "stop_reason": stop_reason})))

    assert message.stop_reason == stop_reason.value


async def test_a_scripted_end_turn_wins_over_a_tool_use_block(async_client_for: AsyncClientFor) -> None:
    # The loop must not trust stop_reason alone; the script must be able to say something odd.
    turn = {"content": [{"tool_use": {"name": "Read", "input": {}}}], "stop_reason": "end_turn"}

    message = await final_message(async_client_for(fake(turn)))

    assert message.stop_reason == "end_turn"
    assert message.content[0].type == "tool_use"


# --- turns, not streamed ---------------------------------------------------------------------


async def test_non_streaming_create_returns_the_whole_message(async_client_for: AsyncClientFor) -> None:
    scenario = fake(
        {
            "content": [{"text": "Let me look."}, {"tool_use": {"name": "Glob", "input": {"pattern": "**/*.py"}}}],
            "usage": {"input_tokens": 30, "output_tokens": 12},
        }
    )

    message = await async_client_for(scenario).messages.create(model=MODEL, max_tokens=1024, messages=HELLO)

    assert message.id == "msg_fake_0001"
    assert message.model == MODEL
    assert message.content[0].text == "Let me look."
    assert (message.content[1].id, message.content[1].input) == ("toolu_fake_0001_1", {"pattern": "**/*.py"})
    assert message.stop_reason == "tool_use"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (30, 12)


async def test_the_scenario_model_overrides_the_requested_one(async_client_for: AsyncClientFor) -> None:
    scenario = fake({"content": [{"text": "hi"}]}, model="claude-opus-4-6")

    message = await async_client_for(scenario).messages.create(model=MODEL, max_tokens=16, messages=HELLO)

    assert message.model == "claude-opus-4-6"


async def test_turns_play_in_order_with_numbered_ids(async_client_for: AsyncClientFor) -> None:
    client = async_client_for(
        fake({"content": [{"text": "one"}]}, {"content": [{"tool_use": {"name": "Read", "input": {}}}]})
    )

    first = await client.messages.create(model=MODEL, max_tokens=16, messages=HELLO)
    second = await client.messages.create(model=MODEL, max_tokens=16, messages=HELLO)

    assert (first.id, first.content[0].text) == ("msg_fake_0001", "one")
    assert (second.id, second.content[0].id) == ("msg_fake_0002", "toolu_fake_0002_0")


# --- HTTP errors -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error_type", "message", "exception"),
    [
        (400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum", anthropic.BadRequestError),
        (
            413,
            "request_too_large",
            "Request exceeds the maximum allowed number of bytes.",
            anthropic.ContentTooLargeError,
        ),
        (429, "rate_limit_error", "Number of request tokens has exceeded your rate limit.", anthropic.RateLimitError),
        (500, "api_error", "Internal server error", anthropic.InternalServerError),
        (529, "overloaded_error", "Overloaded", anthropic.OverloadedError),
    ],
)
@pytest.mark.parametrize("stream", [True, False])
async def test_an_http_error_surfaces_as_the_sdks_status_error(
    async_client_for: AsyncClientFor,
    status: int,
    error_type: str,
    message: str,
    exception: type[anthropic.APIStatusError],
    stream: bool,
) -> None:
    client = async_client_for(
        fake({"fault": "http_error", "status": status, "error_type": error_type, "message": message})
    )

    with pytest.raises(exception) as caught:
        await client.messages.create(model=MODEL, max_tokens=16, messages=HELLO, stream=stream)

    assert caught.value.status_code == status
    assert caught.value.type == error_type
    assert caught.value.body == {"type": "error", "error": {"type": error_type, "message": message}}
    assert caught.value.request_id == "req_fake_0001"


async def test_a_rate_limit_carries_its_retry_after_header(async_client_for: AsyncClientFor) -> None:
    fault = {"fault": "http_error", "status": 429, "error_type": "rate_limit_error", "message": "slow down"}
    client = async_client_for(fake(fault | {"headers": {"retry-after": 7}}))

    with pytest.raises(anthropic.RateLimitError) as caught:
        await client.messages.create(model=MODEL, max_tokens=16, messages=HELLO)

    assert caught.value.response.headers["retry-after"] == "7"


# --- mid-stream faults -----------------------------------------------------------------------


async def test_a_stream_error_arrives_after_the_scripted_events(async_client_for: AsyncClientFor) -> None:
    # 4 events: message_start, content_block_start, ping (the SDK hides it), one text delta.
    fault = {"fault": "stream_error", "after_events": 4, "content": [{"text": "The partial answer is cut here"}]}
    stream = await async_client_for(fake(fault)).messages.create(
        model=MODEL, max_tokens=16, messages=HELLO, stream=True
    )
    received: list[Any] = []

    with pytest.raises(anthropic.APIStatusError) as caught:
        async for event in stream:
            received.append(event)

    assert type(caught.value) is anthropic.APIStatusError
    assert (caught.value.status_code, caught.value.type) == (200, "overloaded_error")
    assert [event.type for event in received] == ["message_start", "content_block_start", "content_block_delta"]
    assert received[2].delta.text == "The partial answer is cu"


async def test_a_stream_error_can_carry_another_error_type(async_client_for: AsyncClientFor) -> None:
    fault = {"fault": "stream_error", "after_events": 0, "error_type": "api_error", "message": "Internal server error"}

    with pytest.raises(anthropic.APIStatusError) as caught:
        await stream_events(async_client_for(fake(fault)))

    assert (caught.value.type, caught.value.api_message) == ("api_error", "Internal server error")


@pytest.mark.parametrize(
    ("error_type", "exception", "status"),
    [("overloaded_error", anthropic.OverloadedError, 529), ("api_error", anthropic.InternalServerError, 500)],
)
async def test_a_stream_error_without_streaming_is_an_error_response(
    async_client_for: AsyncClientFor, error_type: str, exception: type[anthropic.APIStatusError], status: int
) -> None:
    client = async_client_for(fake({"fault": "stream_error", "after_events": 0, "error_type": error_type}))

    with pytest.raises(exception) as caught:
        await client.messages.create(model=MODEL, max_tokens=16, messages=HELLO)

    assert (caught.value.status_code, caught.value.type) == (status, error_type)


async def test_a_dropped_connection_breaks_the_stream_after_the_scripted_events(
    async_client_for: AsyncClientFor,
) -> None:
    fault = {"fault": "drop_connection", "after_events": 2, "content": [{"text": "never finished"}]}
    stream = await async_client_for(fake(fault)).messages.create(
        model=MODEL, max_tokens=16, messages=HELLO, stream=True
    )
    received: list[Any] = []

    with pytest.raises(httpx2.RemoteProtocolError, match="incomplete chunked read"):
        async for event in stream:
            received.append(event)

    assert [event.type for event in received] == ["message_start", "content_block_start"]


async def test_a_dropped_connection_without_streaming_is_a_connection_error(async_client_for: AsyncClientFor) -> None:
    client = async_client_for(fake({"fault": "drop_connection", "after_events": 0}))

    with pytest.raises(anthropic.APIConnectionError) as caught:
        await client.messages.create(model=MODEL, max_tokens=16, messages=HELLO)

    assert isinstance(caught.value.__cause__, httpx2.RemoteProtocolError)


@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "not streamed"])
async def test_a_reset_connection_fails_the_request_before_any_response_and_the_retry_gets_the_next_turn(
    async_client_for: AsyncClientFor, streaming: bool
) -> None:
    fake_model = fake({"fault": "reset_connection"}, {"content": [{"text": "answered on the retry"}]})
    client = async_client_for(fake_model)

    with pytest.raises(anthropic.APIConnectionError) as caught:
        await client.messages.create(model=MODEL, max_tokens=16, messages=HELLO, stream=streaming)
    retried = await client.messages.create(model=MODEL, max_tokens=16, messages=HELLO)

    assert isinstance(caught.value.__cause__, httpx2.ReadError)
    assert str(caught.value.__cause__) == CONNECTION_RESET_MESSAGE
    assert (retried.content[0].text, retried.id) == ("answered on the retry", "msg_fake_0002")


def test_a_reset_connection_reaches_the_sync_sdk_as_a_connection_error(sync_client_for: SyncClientFor) -> None:
    client = sync_client_for(fake({"fault": "reset_connection"}))

    with pytest.raises(anthropic.APIConnectionError) as caught:
        client.messages.create(model=MODEL, max_tokens=16, messages=HELLO)

    assert isinstance(caught.value.__cause__, httpx2.ReadError)


# --- count_tokens, other paths, bad bodies ---------------------------------------------------


async def test_count_tokens_answers_without_consuming_a_turn(async_client_for: AsyncClientFor) -> None:
    fake_model = fake({"content": [{"text": "still here"}]})
    client = async_client_for(fake_model)

    counted = await client.messages.count_tokens(model=MODEL, messages=HELLO)
    message = await client.messages.create(model=MODEL, max_tokens=16, messages=HELLO)

    assert counted.input_tokens == len(fake_model.requests[0].body) // 4
    assert message.content[0].text == "still here"
    assert message.id == "msg_fake_0001"


async def test_an_unknown_path_is_not_found(async_client_for: AsyncClientFor) -> None:
    fake_model = fake({"content": [{"text": "unused"}]})

    with pytest.raises(anthropic.NotFoundError) as caught:
        await async_client_for(fake_model).models.retrieve("claude-sonnet-4-6")

    assert caught.value.type == "not_found_error"
    assert fake_model.turns_remaining == 1


def test_a_body_that_is_not_json_is_a_bad_request_and_consumes_no_turn() -> None:
    fake_model = fake({"content": [{"text": "unused"}]})

    answer = fake_model.respond("POST", "/v1/messages", {}, b"not json")

    assert answer.status == 400
    assert json.loads(answer.chunks[0])["error"]["type"] == "invalid_request_error"
    assert fake_model.turns_remaining == 1


# --- exhaustion --------------------------------------------------------------------------------


async def test_an_exhausted_script_reaches_the_caller_as_the_cause_of_a_connection_error(
    async_client_for: AsyncClientFor,
) -> None:
    client = async_client_for(fake({"content": [{"text": "only answer"}]}, name="short"))
    await client.messages.create(model=MODEL, max_tokens=16, messages=HELLO)
    question = "Now summarise everything you found in the repository. " * 10
    messages = [*HELLO, {"role": "assistant", "content": "only answer"}, {"role": "user", "content": question}]

    with pytest.raises(anthropic.APIConnectionError) as caught:
        await client.messages.create(model=MODEL, max_tokens=16, messages=messages)

    cause = caught.value.__cause__
    assert isinstance(cause, ScenarioExhaustedError)
    assert isinstance(cause, FakeModelError)
    assert str(cause) == (
        "The scenario 'short' has 1 turn, but request 2 to POST /v1/messages (purpose side, model "
        f"{MODEL}) had no scripted turn "
        f"(last user message: {question[:200] + '…'!r}); add a turn to the scenario for it."
    )


def test_exhaustion_shows_tool_results_of_the_last_user_message() -> None:
    body = {
        "model": MODEL,
        "max_tokens": 16,
        "messages": [
            {"role": "user", "content": "read it"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "file body"}]},
        ],
    }

    with pytest.raises(ScenarioExhaustedError, match=r"request 1 .*'\[tool_result toolu_1\] file body'"):
        fake().respond("POST", "/v1/messages", {}, json.dumps(body).encode())


# --- the wire --------------------------------------------------------------------------------


def test_sse_responses_have_one_event_per_chunk_and_the_event_stream_type() -> None:
    body = json.dumps({"model": MODEL, "max_tokens": 16, "messages": HELLO, "stream": True}).encode()

    answer = fake({"content": [{"text": "hi"}]}).respond("POST", "/v1/messages", {}, body)

    headers = dict(answer.headers)
    assert headers["content-type"].startswith("text/event-stream")
    assert headers["request-id"] == "req_fake_0001"
    assert all(chunk.startswith(b"event: ") and chunk.count(b"\n\n") == 1 for chunk in answer.chunks)
    assert answer.chunks[-1] == b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    assert not answer.drop_after


def test_json_responses_have_the_json_type_and_request_ids_count_every_request() -> None:
    fake_model = fake({"content": [{"text": "hi"}]})
    body = json.dumps({"model": MODEL, "max_tokens": 16, "messages": HELLO}).encode()

    counted = fake_model.respond("POST", "/v1/messages/count_tokens", {}, body)
    answered = fake_model.respond("POST", "/v1/messages", {}, body)

    assert dict(counted.headers) == {"content-type": "application/json", "request-id": "req_fake_0001"}
    assert dict(answered.headers) == {"content-type": "application/json", "request-id": "req_fake_0002"}


def test_stream_false_is_answered_with_json() -> None:
    body = json.dumps({"model": MODEL, "max_tokens": 16, "messages": HELLO, "stream": False}).encode()

    answer = fake({"content": [{"text": "hi"}]}).respond("POST", "/v1/messages", {}, body)

    assert dict(answer.headers)["content-type"] == "application/json"
    assert json.loads(answer.chunks[0])["content"] == [{"type": "text", "text": "hi"}]


def test_the_same_scenario_gives_the_same_bytes() -> None:
    turns = [
        Turn(content=(TextBlock(text="Reading."), ToolUseBlock(name="Read", input={"file_path": "a.py"}))),
        {"fault": "stream_error", "after_events": 3, "content": [{"text": "partial"}]},
        {
            "content": [{"thinking": "hmm", "signature": "sig"}, {"text": "done"}],
            "usage": {"input_tokens": 5, "output_tokens": 2},
        },
    ]
    body = json.dumps({"model": MODEL, "max_tokens": 16, "messages": HELLO, "stream": True}).encode()

    def play() -> list[FakeResponse]:
        fake_model = fake(*turns)
        return [fake_model.respond("POST", "/v1/messages", {}, body) for _ in turns]

    assert play() == play()


async def test_requests_are_kept_for_inspection(async_client_for: AsyncClientFor) -> None:
    fake_model = fake({"content": [{"text": "hi"}]})

    await async_client_for(fake_model).messages.create(model=MODEL, max_tokens=16, messages=HELLO)

    (request,) = fake_model.requests
    assert (request.method, request.path) == ("POST", "/v1/messages")
    assert request.headers["authorization"] == "Bearer sk-ant-test"
    assert request.json == {"model": MODEL, "max_tokens": 16, "messages": HELLO}
    assert json.loads(request.body) == request.json


# --- the sync transport ----------------------------------------------------------------------


def test_the_sync_transport_serves_the_sync_client(sync_client_for: SyncClientFor) -> None:
    usage = Usage(input_tokens=3, output_tokens=4)
    client = sync_client_for(FakeModel(Scenario(turns=(Turn(content=(TextBlock(text="sync answer"),), usage=usage),))))

    with client.messages.stream(model=MODEL, max_tokens=16, messages=HELLO) as stream:
        message = stream.get_final_message()

    assert message.content[0].text == "sync answer"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (3, 4)


def test_the_sync_transport_drops_the_connection_too(sync_client_for: SyncClientFor) -> None:
    client = sync_client_for(fake({"fault": "drop_connection", "after_events": 1}))

    stream = client.messages.create(model=MODEL, max_tokens=16, messages=HELLO, stream=True)

    with pytest.raises(httpx2.RemoteProtocolError) as caught:
        list(stream)
    assert str(caught.value) == DROPPED_CONNECTION_MESSAGE
