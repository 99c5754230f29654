"""The recorded session the respx suite replays: what was asked, and what the API answered.

One source for both sides: ``tests/replay/cassette/test_respx_adapter.py`` saves these interactions as a
cassette, and ``check_respx.py`` sends the same requests through the SDK and checks the answers.
Only ``replay.cassette.interaction`` is imported here, so the suite's process stays free to alias httpx.
"""

from __future__ import annotations

from typing import Any

from replay.cassette.interaction import (
    BodyKind,
    FaultKind,
    Interaction,
    RecordedFault,
    RecordedRequest,
    RecordedResponse,
    SseEvent,
)

BASE_URL = "https://api.anthropic.com"
MODEL = "claude-sonnet-4-6"
CASSETTE_ENV = "RESPX_SUITE_CASSETTE"

READ_FILE_TOOL: dict[str, Any] = {
    "name": "read_file",
    "description": "Read a file from the workspace.",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
}

HELLO = "Say hello."
TOOL_QUESTION = "What is in notes.md?"
RATE_LIMITED = "Summarize the notes."
CUT_SHORT = "Tell me a long story."
RETRIED = "Try again after the rate limit."
SYNC_QUESTION = "Say hello without streaming."

HELLO_ANSWER = "Hello!"
STORY_START = "Once upon"
RETRIED_ANSWER = "Second time lucky."
SYNC_ANSWER = "Hello, synchronously."
RATE_LIMIT_MESSAGE = "Number of request tokens has exceeded your per-minute rate limit."
TOOL_INPUT = {"path": "notes.md"}
TOOL_USE_ID = "toolu_01"


def message_params(question: str, *, tools: bool = False) -> dict[str, Any]:
    """The keyword arguments of ``messages.create`` for ``question`` (without ``stream``)."""
    params: dict[str, Any] = {"model": MODEL, "max_tokens": 256, "messages": [{"role": "user", "content": question}]}
    if tools:
        params["tools"] = [READ_FILE_TOOL]
    return params


def recorded_session() -> list[Interaction]:
    """The session in recorded order: a text answer, a tool call, a 429, a dropped connection, a
    429 the SDK retried and its answer, and a non-streamed answer."""
    return [
        _streamed(HELLO, _text_events(HELLO_ANSWER)),
        _streamed(TOOL_QUESTION, _tool_use_events(), tools=True),
        _rate_limited(RATE_LIMITED, headers={"retry-after": "30"}),
        _streamed(
            CUT_SHORT,
            _text_events(STORY_START),
            fault=RecordedFault(kind=FaultKind.DROPPED_CONNECTION, after_events=3),
        ),
        _rate_limited(RETRIED, headers={"retry-after-ms": "1"}),
        _streamed(RETRIED, _text_events(RETRIED_ANSWER)),
        Interaction(
            _request(message_params(SYNC_QUESTION)),
            RecordedResponse(
                status=200,
                headers={"content-type": "application/json", "request-id": "req_sync"},
                kind=BodyKind.JSON,
                body={**_message(), "content": [{"type": "text", "text": SYNC_ANSWER}], "stop_reason": "end_turn"},
            ),
        ),
    ]


def _request(body: dict[str, Any]) -> RecordedRequest:
    return RecordedRequest(method="POST", uri=f"{BASE_URL}/v1/messages", body=body)


def _streamed(
    question: str, events: list[SseEvent], *, tools: bool = False, fault: RecordedFault | None = None
) -> Interaction:
    return Interaction(
        _request({**message_params(question, tools=tools), "stream": True}),
        RecordedResponse(
            status=200,
            headers={"content-type": "text/event-stream", "request-id": "req_stream"},
            kind=BodyKind.SSE,
            body=events,
            fault=fault,
        ),
    )


def _rate_limited(question: str, *, headers: dict[str, str]) -> Interaction:
    return Interaction(
        _request({**message_params(question), "stream": True}),
        RecordedResponse(
            status=429,
            headers={"content-type": "application/json", "request-id": "req_429", **headers},
            kind=BodyKind.JSON,
            body={"type": "error", "error": {"type": "rate_limit_error", "message": RATE_LIMIT_MESSAGE}},
        ),
    )


def _message() -> dict[str, Any]:
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 1},
    }


def _text_events(text: str) -> list[SseEvent]:
    return [
        SseEvent("message_start", {"type": "message_start", "message": _message()}),
        SseEvent(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        SseEvent(
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        ),
        SseEvent("content_block_stop", {"type": "content_block_stop", "index": 0}),
        SseEvent(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 4},
            },
        ),
        SseEvent("message_stop", {"type": "message_stop"}),
    ]


def _tool_use_events() -> list[SseEvent]:
    block = {"type": "tool_use", "id": TOOL_USE_ID, "name": READ_FILE_TOOL["name"], "input": {}}
    return [
        SseEvent("message_start", {"type": "message_start", "message": _message()}),
        SseEvent("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
        *(
            SseEvent(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": part},
                },
            )
            for part in ('{"path": ', '"notes.md"}')
        ),
        SseEvent("content_block_stop", {"type": "content_block_stop", "index": 0}),
        SseEvent(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 9},
            },
        ),
        SseEvent("message_stop", {"type": "message_stop"}),
    ]
