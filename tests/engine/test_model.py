"""AnthropicModel and classify_error, through the real anthropic SDK on the fake model's transport."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2
import pytest

from engine.model import (
    AnthropicModel,
    BlockComplete,
    ModelError,
    ModelErrorKind,
    ModelEvent,
    ModelRequest,
    ResponseEnd,
    StreamBreak,
    StreamEvent,
)
from engine.retry import is_retryable
from replay.fake.model import FakeModel, FakeModelTransport, ScenarioExhaustedError
from replay.fake.scenario import Scenario

MODEL = "claude-sonnet-4-6"
API_KEY = "sk-ant-test-0123456789-secret"
REQUEST = ModelRequest(model=MODEL, messages=[{"role": "user", "content": "hi"}], max_tokens=100)
# REQUEST's messages as sent: the one message breakpoint on the last (here the only) block.
HI_MARKED = [{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}]
NON_STREAMING = dataclasses.replace(REQUEST, stream=False)


@pytest.fixture
async def model_for() -> AsyncIterator[Callable[[httpx2.AsyncBaseTransport], AnthropicModel]]:
    """Builds AnthropicModels over a transport and closes their clients afterwards."""
    models: list[AnthropicModel] = []

    def build(transport: httpx2.AsyncBaseTransport) -> AnthropicModel:
        model = AnthropicModel(http_client=httpx2.AsyncClient(transport=transport), api_key=API_KEY)
        models.append(model)
        return model

    yield build
    for model in models:
        await model.client.close()


@pytest.fixture
def fake_for(
    model_for: Callable[[httpx2.AsyncBaseTransport], AnthropicModel],
) -> Callable[..., tuple[AnthropicModel, FakeModel]]:
    """An AnthropicModel over a FakeModel playing the given turns (YAML-shaped dicts)."""

    def build(*turns: dict[str, Any]) -> tuple[AnthropicModel, FakeModel]:
        fake = FakeModel(Scenario.from_list(list(turns)))
        return model_for(FakeModelTransport(fake)), fake

    return build


FakeFor = Callable[..., tuple[AnthropicModel, FakeModel]]


async def collect(model: AnthropicModel, request: ModelRequest = REQUEST) -> list[ModelEvent]:
    return [event async for event in model.stream(request)]


async def collect_until_error(
    model: AnthropicModel, request: ModelRequest = REQUEST
) -> tuple[list[ModelEvent], ModelError]:
    events: list[ModelEvent] = []
    with pytest.raises(ModelError) as raised:
        async for event in model.stream(request):
            events.append(event)
    return events, raised.value


async def failure(model: AnthropicModel, request: ModelRequest = REQUEST) -> ModelError:
    return (await collect_until_error(model, request))[1]


def blocks(events: list[ModelEvent]) -> list[dict[str, Any]]:
    return [event.block for event in events if isinstance(event, BlockComplete)]


def http_error(status: int, error_type: str, message: str, **headers: str) -> dict[str, Any]:
    return {"fault": "http_error", "status": status, "error_type": error_type, "message": message, "headers": headers}


# --- a streamed response ---------------------------------------------------------------------


async def test_each_content_block_completes_once_in_order_in_the_api_shape(fake_for: FakeFor) -> None:
    model, _ = fake_for(
        {
            "content": [
                {"thinking": "I should list the files, carefully and at length.", "signature": "sig-abc"},
                {"text": "Let me look at the directory for you, it may take a moment."},
                {"tool_use": {"id": "toolu_1", "name": "Bash", "input": {"command": "ls -la", "timeout": 30}}},
            ]
        }
    )
    assert blocks(await collect(model)) == [
        {"type": "thinking", "thinking": "I should list the files, carefully and at length.", "signature": "sig-abc"},
        {"type": "text", "text": "Let me look at the directory for you, it may take a moment."},
        {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls -la", "timeout": 30}},
    ]


async def test_a_tool_use_with_empty_input_completes_with_an_empty_dict(fake_for: FakeFor) -> None:
    model, _ = fake_for({"content": [{"tool_use": {"id": "toolu_1", "name": "Now", "input": {}}}]})
    assert blocks(await collect(model)) == [{"type": "tool_use", "id": "toolu_1", "name": "Now", "input": {}}]


async def test_a_block_completes_with_the_response_id_model_and_request_id(fake_for: FakeFor) -> None:
    model, _ = fake_for({"content": [{"text": "hello"}]})
    complete = next(e for e in await collect(model) if isinstance(e, BlockComplete))
    assert (complete.message_id, complete.model, complete.request_id) == ("msg_fake_0001", MODEL, "req_fake_0001")


async def test_the_response_ends_with_its_stop_reason_and_cumulative_usage(fake_for: FakeFor) -> None:
    model, _ = fake_for(
        {
            "content": [{"text": "cut off"}],
            "stop_reason": "max_tokens",
            "usage": {"input_tokens": 42, "output_tokens": 17, "cache_read_input_tokens": 5},
        }
    )
    ends = [e for e in await collect(model) if isinstance(e, ResponseEnd)]
    assert ends == [
        ResponseEnd(
            message_id="msg_fake_0001",
            stop_reason="max_tokens",
            stop_sequence=None,
            usage={
                "input_tokens": 42,
                "output_tokens": 17,  # from message_delta; message_start said 1
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 5,
            },
        )
    ]


async def test_the_response_end_comes_after_every_block(fake_for: FakeFor) -> None:
    model, _ = fake_for({"content": [{"text": "a"}, {"text": "b"}]})
    kinds = [type(e).__name__ for e in await collect(model) if not isinstance(e, StreamEvent)]
    assert kinds == ["BlockComplete", "BlockComplete", "ResponseEnd"]


async def test_raw_sdk_stream_events_pass_through_in_wire_order(fake_for: FakeFor) -> None:
    model, _ = fake_for({"content": [{"text": "hi"}]})
    raw = [e.event.type for e in await collect(model) if isinstance(e, StreamEvent)]
    assert raw == [  # the SDK itself swallows the wire's ping
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]


async def test_without_raw_events_only_the_blocks_and_the_end_come_out_the_same(fake_for: FakeFor) -> None:
    turn = {"content": [{"text": "a"}, {"tool_use": {"id": "toolu_1", "name": "Now", "input": {"at": 1}}}]}
    with_raw, _ = fake_for(turn)
    without_raw, _ = fake_for(turn)
    every = await collect(with_raw)
    lean = await collect(without_raw, dataclasses.replace(REQUEST, raw_events=False))
    assert lean == [e for e in every if not isinstance(e, StreamEvent)]
    assert [type(e).__name__ for e in lean] == ["BlockComplete", "BlockComplete", "ResponseEnd"]


# --- the request -----------------------------------------------------------------------------


async def test_the_request_is_streamed_with_the_requests_parameters(fake_for: FakeFor) -> None:
    model, fake = fake_for({"content": [{"text": "hi"}]})
    await collect(model)
    assert fake.requests[0].json == {
        "model": MODEL,
        "max_tokens": 100,
        "messages": HI_MARKED,
        "stream": True,
    }


async def test_a_failed_request_is_not_retried_by_the_sdk(fake_for: FakeFor) -> None:
    model, fake = fake_for(http_error(529, "overloaded_error", "Overloaded"), {"content": [{"text": "late"}]})
    await failure(model)
    assert len(fake.requests) == 1


async def test_the_sdk_reports_zero_retries_on_the_request(fake_for: FakeFor) -> None:
    model, fake = fake_for({"content": [{"text": "hi"}]})
    await collect(model)
    assert fake.requests[0].headers["x-stainless-retry-count"] == "0"


async def test_the_api_key_appears_only_in_the_authorization_header(fake_for: FakeFor) -> None:
    model, fake = fake_for({"content": [{"text": "hi"}]})
    await collect(model)
    sent = fake.requests[0]
    assert sent.headers["authorization"] == f"Bearer {API_KEY}"
    elsewhere = [name for name, value in sent.headers.items() if API_KEY in value and name != "authorization"]
    assert elsewhere == []
    assert API_KEY.encode() not in sent.body
    assert API_KEY not in sent.path


# --- error classification --------------------------------------------------------------------


async def test_a_prompt_too_long_400_is_prompt_too_long(fake_for: FakeFor) -> None:
    model, _ = fake_for(http_error(400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"))
    error = await failure(model)
    assert (error.kind, error.status, error.message) == (
        ModelErrorKind.PROMPT_TOO_LONG,
        400,
        "prompt is too long: 210000 tokens > 200000 maximum",
    )


async def test_a_413_request_too_large_is_prompt_too_long(fake_for: FakeFor) -> None:
    model, _ = fake_for(http_error(413, "request_too_large", "Request exceeds the maximum allowed number of bytes."))
    assert (await failure(model)).kind is ModelErrorKind.PROMPT_TOO_LONG


async def test_an_image_over_the_size_limit_is_media_too_large(fake_for: FakeFor) -> None:
    model, _ = fake_for(
        http_error(400, "invalid_request_error", "messages.0.content.1.image.source.base64: image exceeds 5 MB maximum")
    )
    assert (await failure(model)).kind is ModelErrorKind.MEDIA_TOO_LARGE


async def test_a_529_is_overloaded(fake_for: FakeFor) -> None:
    model, _ = fake_for(http_error(529, "overloaded_error", "Overloaded"))
    error = await failure(model)
    assert (error.kind, error.status, error.error_type) == (ModelErrorKind.OVERLOADED, 529, "overloaded_error")


async def test_an_overloaded_error_event_mid_stream_is_overloaded_with_status_200(fake_for: FakeFor) -> None:
    model, _ = fake_for({"fault": "stream_error", "after_events": 3, "content": [{"text": "partial"}]})
    error = await failure(model)
    assert (error.kind, error.status, error.error_type) == (ModelErrorKind.OVERLOADED, 200, "overloaded_error")


async def test_a_429_is_rate_limited_with_its_retry_after(fake_for: FakeFor) -> None:
    model, _ = fake_for(http_error(429, "rate_limit_error", "Too many requests", **{"retry-after": "7"}))
    error = await failure(model)
    assert (error.kind, error.retry_after_s) == (ModelErrorKind.RATE_LIMITED, 7.0)


async def test_a_500_is_a_server_error(fake_for: FakeFor) -> None:
    model, _ = fake_for(http_error(500, "api_error", "Internal server error"))
    assert (await failure(model)).kind is ModelErrorKind.SERVER_ERROR


async def test_another_invalid_request_400_is_an_invalid_request(fake_for: FakeFor) -> None:
    model, _ = fake_for(http_error(400, "invalid_request_error", "messages: roles must alternate"))
    assert (await failure(model)).kind is ModelErrorKind.INVALID_REQUEST


async def test_an_error_carries_the_request_id(fake_for: FakeFor) -> None:
    model, _ = fake_for(http_error(500, "api_error", "Internal server error"))
    assert (await failure(model)).request_id == "req_fake_0001"


async def test_x_should_retry_false_means_should_retry_false(fake_for: FakeFor) -> None:
    model, _ = fake_for(http_error(529, "overloaded_error", "Overloaded", **{"x-should-retry": "false"}))
    assert (await failure(model)).should_retry is False


async def test_without_x_should_retry_the_api_leaves_should_retry_open(fake_for: FakeFor) -> None:
    model, _ = fake_for(http_error(529, "overloaded_error", "Overloaded"))
    assert (await failure(model)).should_retry is None


async def test_a_dropped_connection_mid_stream_is_connection_dropped(fake_for: FakeFor) -> None:
    model, _ = fake_for({"fault": "drop_connection", "after_events": 6, "content": [{"text": "a"}, {"text": "b"}]})
    error = await failure(model)
    assert error.kind is ModelErrorKind.CONNECTION_DROPPED


async def test_blocks_finished_before_a_dropped_connection_were_already_yielded(fake_for: FakeFor) -> None:
    # message_start, block 0 start, ping, delta, block 0 stop, block 1 start | drop
    model, _ = fake_for({"fault": "drop_connection", "after_events": 6, "content": [{"text": "a"}, {"text": "b"}]})
    events, _ = await collect_until_error(model)
    assert blocks(events) == [{"type": "text", "text": "a"}]


@pytest.mark.parametrize(
    ("fault", "kind", "stream_break"),
    [
        ({"fault": "stream_error", "after_events": 3}, ModelErrorKind.OVERLOADED, StreamBreak.ERROR_EVENT),
        ({"fault": "drop_connection", "after_events": 3}, ModelErrorKind.CONNECTION_DROPPED, StreamBreak.DROPPED),
        ({"fault": "malformed_event", "after_events": 3}, ModelErrorKind.HARNESS, StreamBreak.MALFORMED_EVENT),
    ],
    ids=["error event", "dropped connection", "malformed event"],
)
async def test_a_stream_that_breaks_after_it_began_says_how_it_broke(
    fake_for: FakeFor, fault: dict[str, Any], kind: ModelErrorKind, stream_break: StreamBreak
) -> None:
    model, _ = fake_for({**fault, "content": [{"text": "partial"}]})
    error = await failure(model)
    assert (error.kind, error.stream_break) == (kind, stream_break)


async def test_a_request_that_fails_before_its_response_began_has_no_stream_break(fake_for: FakeFor) -> None:
    model, _ = fake_for(http_error(529, "overloaded_error", "Overloaded"))
    assert (await failure(model)).stream_break is None


async def test_an_exhausted_script_is_a_harness_error_with_the_scripts_own_words(fake_for: FakeFor) -> None:
    model, _fake = fake_for({"content": [{"text": "only turn"}]})
    await collect(model)
    error = await failure(model)
    assert error.kind is ModelErrorKind.HARNESS
    assert isinstance(error.cause, ScenarioExhaustedError)
    assert error.message == str(error.cause)


async def test_an_exhausted_script_never_reads_as_a_connection_error(fake_for: FakeFor) -> None:
    model, _ = fake_for()
    assert "Connection error" not in (await failure(model)).message


class RefusingTransport(httpx2.AsyncBaseTransport):
    """A transport whose every connection attempt fails, as with no network."""

    def __init__(self) -> None:
        self.attempts = 0

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.attempts += 1
        raise httpx2.ConnectError("[Errno 111] Connection refused", request=request)


async def test_a_connection_that_cannot_be_made_is_connection_failed(
    model_for: Callable[[httpx2.AsyncBaseTransport], AnthropicModel],
) -> None:
    error = await failure(model_for(RefusingTransport()))
    assert error.kind is ModelErrorKind.CONNECTION_FAILED


async def test_a_failed_connection_is_not_retried_by_the_sdk(
    model_for: Callable[[httpx2.AsyncBaseTransport], AnthropicModel],
) -> None:
    transport = RefusingTransport()
    await failure(model_for(transport))
    assert transport.attempts == 1


# --- 408, 409 and x-should-retry through the SDK ---------------------------------------------


async def test_a_408_is_a_retryable_request_timeout(fake_for: FakeFor) -> None:
    model, _ = fake_for(http_error(408, "timeout_error", "Request timed out"))
    error = await failure(model)
    assert (error.kind, error.status, is_retryable(error)) == (ModelErrorKind.REQUEST_TIMEOUT, 408, True)


async def test_a_409_is_a_retryable_conflict(fake_for: FakeFor) -> None:
    model, _ = fake_for(http_error(409, "api_error", "Lock timeout"))
    error = await failure(model)
    assert (error.kind, error.status, is_retryable(error)) == (ModelErrorKind.CONFLICT, 409, True)


async def test_a_400_the_server_marks_x_should_retry_true_is_retryable(fake_for: FakeFor) -> None:
    model, _ = fake_for(http_error(400, "invalid_request_error", "try again", **{"x-should-retry": "true"}))
    error = await failure(model)
    assert (error.kind, is_retryable(error)) == (ModelErrorKind.INVALID_REQUEST, True)


async def test_a_529_the_server_marks_x_should_retry_false_is_not_retryable(fake_for: FakeFor) -> None:
    model, _ = fake_for(http_error(529, "overloaded_error", "Overloaded", **{"x-should-retry": "false"}))
    assert not is_retryable(await failure(model))


async def test_an_overloaded_error_event_mid_stream_is_retryable(fake_for: FakeFor) -> None:
    model, _ = fake_for({"fault": "stream_error", "after_events": 3, "content": [{"text": "partial"}]})
    assert is_retryable(await failure(model))


async def test_an_exhausted_script_is_not_retryable(fake_for: FakeFor) -> None:
    model, _ = fake_for()
    assert not is_retryable(await failure(model))


# --- a non-streamed response (the streaming fallback) ----------------------------------------

EVERY_BLOCK_KIND: dict[str, Any] = {
    "content": [
        {"thinking": "I should list the files, carefully and at length.", "signature": "sig-abc"},
        {"redacted_thinking": "EmwKAhgBEgy3va3pzix"},
        {"text": "Let me look at the directory for you, it may take a moment."},
        {"tool_use": {"name": "Bash", "input": {"command": "ls -la", "flags": ["-a", 1, None]}}},
    ],
    "usage": {"input_tokens": 42, "output_tokens": 17, "cache_read_input_tokens": 5},
}


async def test_a_non_streamed_response_completes_the_same_blocks_and_end_as_a_streamed_one(fake_for: FakeFor) -> None:
    streamed, _ = fake_for(EVERY_BLOCK_KIND)
    whole, _ = fake_for(EVERY_BLOCK_KIND)
    expected = [e for e in await collect(streamed) if not isinstance(e, StreamEvent)]
    events = await collect(whole, NON_STREAMING)

    def without_usage(event: ModelEvent) -> ModelEvent:
        # A stream's blocks carry message_start's usage, a whole message's the final one.
        return dataclasses.replace(event, usage={}) if isinstance(event, BlockComplete) else event

    assert [without_usage(e) for e in events] == [without_usage(e) for e in expected]
    assert [type(e).__name__ for e in events] == ["BlockComplete"] * 4 + ["ResponseEnd"]
    assert events[-1] == expected[-1]


async def test_a_non_streamed_response_yields_no_stream_events(fake_for: FakeFor) -> None:
    model, _ = fake_for({"content": [{"text": "hi"}]})
    assert not [e for e in await collect(model, NON_STREAMING) if isinstance(e, StreamEvent)]


async def test_a_non_streamed_block_carries_the_final_usage_and_the_request_id(fake_for: FakeFor) -> None:
    model, _ = fake_for({"content": [{"text": "hi"}], "usage": {"input_tokens": 42, "output_tokens": 17}})
    complete = next(e for e in await collect(model, NON_STREAMING) if isinstance(e, BlockComplete))
    assert (complete.usage["output_tokens"], complete.request_id) == (17, "req_fake_0001")


async def test_a_non_streamed_request_is_the_same_request_without_stream(fake_for: FakeFor) -> None:
    model, fake = fake_for({"content": [{"text": "hi"}]})
    await collect(model, NON_STREAMING)
    assert fake.requests[0].json == {"model": MODEL, "max_tokens": 100, "messages": HI_MARKED}


async def test_a_non_streamed_request_may_ask_for_the_escalated_64000_tokens(fake_for: FakeFor) -> None:
    # Without an explicit timeout the SDK refuses a non-streamed call this large before sending it.
    model, fake = fake_for({"content": [{"text": "hi"}]})
    await collect(model, dataclasses.replace(NON_STREAMING, max_tokens=64_000))
    assert fake.requests[0].json["max_tokens"] == 64_000


async def test_a_non_streamed_http_error_is_classified_as_a_streamed_one(fake_for: FakeFor) -> None:
    model, _ = fake_for(http_error(400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"))
    error = await failure(model, NON_STREAMING)
    assert (error.kind, error.status, error.request_id) == (ModelErrorKind.PROMPT_TOO_LONG, 400, "req_fake_0001")


async def test_a_non_streamed_overload_is_overloaded(fake_for: FakeFor) -> None:
    model, _ = fake_for({"fault": "stream_error", "after_events": 3, "content": [{"text": "partial"}]})
    error = await failure(model, NON_STREAMING)
    assert (error.kind, error.status) == (ModelErrorKind.OVERLOADED, 529)


async def test_a_non_streamed_response_dropped_before_its_body_is_a_failed_connection(fake_for: FakeFor) -> None:
    model, _ = fake_for({"fault": "drop_connection", "after_events": 2, "content": [{"text": "never"}]})
    events, error = await collect_until_error(model, NON_STREAMING)
    assert (events, error.kind) == ([], ModelErrorKind.CONNECTION_FAILED)


async def test_a_non_streamed_request_past_the_script_is_a_harness_error(fake_for: FakeFor) -> None:
    model, _ = fake_for()
    error = await failure(model, NON_STREAMING)
    assert (error.kind, type(error.cause)) == (ModelErrorKind.HARNESS, ScenarioExhaustedError)


async def test_a_non_streamed_request_is_not_retried_by_the_sdk(fake_for: FakeFor) -> None:
    model, fake = fake_for(http_error(529, "overloaded_error", "Overloaded"), {"content": [{"text": "late"}]})
    await failure(model, NON_STREAMING)
    assert len(fake.requests) == 1


# --- counting tokens -------------------------------------------------------------------------


async def test_count_tokens_returns_the_servers_input_tokens(fake_for: FakeFor) -> None:
    model, fake = fake_for()
    tokens = await model.count_tokens(REQUEST)
    assert tokens == len(fake.requests[0].body) // 4  # what the fake answers


async def test_count_tokens_sends_the_request_without_max_tokens_and_plays_no_turn(fake_for: FakeFor) -> None:
    model, fake = fake_for({"content": [{"text": "hi"}]})
    tool = {"name": "Now", "input_schema": {"type": "object"}}
    request = dataclasses.replace(REQUEST, system="Be brief.", tools=[tool])
    await model.count_tokens(request)
    sent = fake.requests[0]
    assert (sent.path, sent.json) == (
        "/v1/messages/count_tokens",
        {
            "model": MODEL,
            "messages": HI_MARKED,
            "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
            "tools": [tool],
        },
    )
    assert fake.turns_remaining == 1


async def test_count_tokens_failures_are_classified(
    model_for: Callable[[httpx2.AsyncBaseTransport], AnthropicModel],
) -> None:
    with pytest.raises(ModelError) as raised:
        await model_for(RefusingTransport()).count_tokens(REQUEST)
    assert raised.value.kind is ModelErrorKind.CONNECTION_FAILED
