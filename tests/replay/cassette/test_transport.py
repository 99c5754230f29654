"""CassetteTransport: matching by fingerprint, recorded order, faults, misses and strict mode —
through the real SDK."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from replay.cassette import Cassette, load_cassette, save_cassette
from replay.cassette.fingerprints import Normalizer
from replay.cassette.interaction import (
    BodyKind,
    FaultKind,
    Interaction,
    RecordedFault,
    RecordedRequest,
    RecordedResponse,
    SseEvent,
)
from replay.cassette.transport import (
    CassetteMismatchError,
    CassettePlayer,
    CassetteTransport,
    SyncCassetteTransport,
    UnplayedInteractionsError,
)

URI = "https://api.anthropic.com/v1/messages"


def body(text: str, *, stream: bool = True) -> dict[str, Any]:
    request: dict[str, Any] = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": text}],
    }
    if stream:
        request["stream"] = True
    return request


def sse_answer(text: str) -> list[SseEvent]:
    return [
        SseEvent(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-6",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 3, "output_tokens": 1},
                },
            },
        ),
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
                "usage": {"output_tokens": 2},
            },
        ),
        SseEvent("message_stop", {"type": "message_stop"}),
    ]


def answer(question: str, text: str, *, fault: RecordedFault | None = None, status: int = 200) -> Interaction:
    return Interaction(
        RecordedRequest(method="POST", uri=URI, body=body(question)),
        RecordedResponse(
            status=status,
            headers={"content-type": "text/event-stream"},
            kind=BodyKind.SSE,
            body=sse_answer(text),
            fault=fault,
        ),
    )


def client_for(player: CassettePlayer) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        api_key="sk-ant-test", max_retries=0, http_client=httpx2.AsyncClient(transport=CassetteTransport(player))
    )


async def ask(client: anthropic.AsyncAnthropic, question: str) -> str:
    stream = await client.messages.create(**body(question, stream=False), stream=True)
    text = ""
    async for event in stream:
        if event.type == "content_block_delta":
            text += event.delta.text
    return text


async def test_a_request_gets_the_response_recorded_for_it() -> None:
    client = client_for(CassettePlayer([answer("hi", "hello"), answer("bye", "goodbye")]))
    assert await ask(client, "bye") == "goodbye"
    assert await ask(client, "hi") == "hello"


async def test_identical_requests_play_in_recorded_order() -> None:
    client = client_for(CassettePlayer([answer("hi", "first"), answer("hi", "second")]))
    assert [await ask(client, "hi"), await ask(client, "hi")] == ["first", "second"]


async def test_key_order_in_the_body_does_not_matter() -> None:
    player = CassettePlayer([answer("hi", "hello")])
    reordered = (
        b'{"stream":true,"messages":[{"content":"hi","role":"user"}],"max_tokens":100,"model":"claude-sonnet-4-6"}'
    )
    assert player.match("POST", "/v1/messages", reordered).response.status == 200


async def test_a_recorded_dropped_connection_drops_at_the_same_event() -> None:
    fault = RecordedFault(kind=FaultKind.DROPPED_CONNECTION, after_events=3)
    client = client_for(CassettePlayer([answer("hi", "cut short", fault=fault)]))
    seen: list[str] = []
    with pytest.raises(httpx2.RemoteProtocolError):
        stream = await client.messages.create(**body("hi", stream=False), stream=True)
        async for event in stream:
            seen.append(event.type)
    assert seen == ["message_start", "content_block_start", "content_block_delta"]


async def test_a_recorded_connection_failure_fails_before_any_response() -> None:
    failed = Interaction(
        RecordedRequest(method="POST", uri=URI, body=body("hi")),
        RecordedResponse(status=0, fault=RecordedFault(kind=FaultKind.CONNECTION_FAILED)),
    )
    client = client_for(CassettePlayer([failed]))
    with pytest.raises(anthropic.APIConnectionError) as caught:
        await ask(client, "hi")
    assert isinstance(caught.value.__cause__, httpx2.ConnectError)


async def test_a_miss_names_the_request_shows_the_nearest_with_a_diff_and_says_how_to_rerecord() -> None:
    player = CassettePlayer([answer("what is in notes.md?", "hello")], name="cassettes/demo/cassette.yaml")
    with pytest.raises(CassetteMismatchError) as caught:
        player.match(
            "POST",
            "/v1/messages",
            b'{"model":"claude-sonnet-4-6","max_tokens":100,"stream":true,'
            b'"messages":[{"role":"user","content":"what is in todo.md?"}]}',
        )
    message = str(caught.value)
    assert message.startswith("No recorded interaction matches request 1: POST /v1/messages (fingerprint ")
    assert "in cassettes/demo/cassette.yaml." in message
    assert "Nearest recorded requests:" in message
    assert "#1 POST /v1/messages, 1 messages (not played yet) — differs at messages[0].content" in message
    assert '-   "content": "what is in notes.md?",' in message
    assert '+   "content": "what is in todo.md?",' in message
    assert 'record mode "rewrite"' in message


async def test_a_miss_reaches_the_engine_as_the_miss_never_as_a_connection_error() -> None:
    client = client_for(CassettePlayer([answer("hi", "hello")]))
    with pytest.raises(anthropic.APIConnectionError) as caught:
        await ask(client, "something else")
    assert isinstance(caught.value.__cause__, CassetteMismatchError)


async def test_a_path_never_recorded_says_so() -> None:
    player = CassettePlayer([answer("hi", "hello")])
    with pytest.raises(CassetteMismatchError, match=r"has no POST /v1/messages/count_tokens request at all"):
        player.match("POST", "/v1/messages/count_tokens", b"{}")


def recorded_at(method: str, uri: str, question: str) -> Interaction:
    return Interaction(RecordedRequest(method=method, uri=uri, body=body(question)), answer(question, "hi").response)


async def test_a_recorded_beta_true_request_matches_the_same_request_without_it() -> None:
    player = CassettePlayer([recorded_at("POST", f"{URI}?beta=true", "hi")])
    client = client_for(player)
    assert await ask(client, "hi") == "hi"
    assert [entry.path for entry in player.log] == ["/v1/messages"]


@pytest.mark.parametrize(
    ("recorded_method", "recorded_uri", "difference"),
    [
        ("POST", f"{URI}?beta=false", "query"),
        ("POST", f"{URI}/batches", "path"),
        ("PUT", URI, "method"),
        ("PUT", f"{URI}?version=2", "method and query"),
    ],
)
async def test_a_miss_names_a_recorded_request_with_the_same_body_on_another_route(
    recorded_method: str, recorded_uri: str, difference: str
) -> None:
    recorded = recorded_at(recorded_method, recorded_uri, "hi")
    player = CassettePlayer([answer("other", "x"), recorded])
    with pytest.raises(CassetteMismatchError) as caught:
        player.match("POST", "/v1/messages", json.dumps(body("hi")).encode())
    message = str(caught.value)
    assert (
        f"A recorded request has the same body but is {recorded_method} {recorded.request.path} "
        f"(#2, not played yet; 1 such): this request differs only in {difference}."
    ) in message


async def test_a_route_never_recorded_lists_the_routes_the_cassette_has() -> None:
    player = CassettePlayer([recorded_at("POST", f"{URI}?beta=false", "hi"), recorded_at("POST", URI, "ho")])
    with pytest.raises(CassetteMismatchError) as caught:
        player.match("GET", "/v1/models", b"")
    assert (
        "The cassette has no GET /v1/models request at all "
        "(2 interactions: POST /v1/messages?beta=false ×1, POST /v1/messages ×1)."
    ) in str(caught.value)


async def test_unplayed_interactions_are_reported_and_strict_mode_fails_on_them() -> None:
    lenient = CassettePlayer([answer("hi", "a"), answer("bye", "b")])
    lenient.match("POST", "/v1/messages", _bytes(body("hi")))
    assert lenient.finish() == [1]

    strict = CassettePlayer([answer("hi", "a"), answer("bye", "b")], name="c.yaml", strict=True)
    strict.match("POST", "/v1/messages", _bytes(body("hi")))
    with pytest.raises(UnplayedInteractionsError, match=r"1 recorded interaction\(s\) in c.yaml were never requested"):
        strict.finish()


async def test_workspace_paths_match_across_folders(tmp_path: Path) -> None:
    recorded_in, replayed_in = tmp_path / "a" / "workspace", tmp_path / "elsewhere" / "ws"
    question = f"read {recorded_in}/notes.md"
    cassette = Cassette(interactions=[answer(question, "ok")], recorded_paths={"workspace": str(recorded_in)})
    save_cassette(cassette, tmp_path / "c.yaml")
    player = CassettePlayer.from_cassette(load_cassette(tmp_path / "c.yaml"), workspace=replayed_in)
    assert player.match("POST", "/v1/messages", _bytes(body(f"read {replayed_in}/notes.md"))).response.status == 200


async def test_a_live_key_in_a_body_still_matches_its_scrubbed_recording(tmp_path: Path) -> None:
    save_cassette(Cassette(interactions=[answer("my key is sk-ant-api03-abcdefghijklmnop", "ok")]), tmp_path / "c.yaml")
    player = CassettePlayer.from_cassette(load_cassette(tmp_path / "c.yaml"))
    assert player.match("POST", "/v1/messages", _bytes(body("my key is sk-ant-api03-abcdefghijklmnop")))


def test_the_sync_transport_serves_the_sync_sdk() -> None:
    client = anthropic.Anthropic(
        api_key="sk-ant-test",
        max_retries=0,
        http_client=httpx2.Client(transport=SyncCassetteTransport(CassettePlayer([answer("hi", "hello")]))),
    )
    with client.messages.stream(**body("hi", stream=False)) as stream:
        assert stream.get_final_text() == "hello"


def _bytes(value: dict[str, Any]) -> bytes:
    import json

    return json.dumps(value).encode()


async def test_the_log_keeps_each_body_normalized_its_time_and_whether_it_was_answered(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    question = f"what is in {workspace}/notes.md?"
    normalizer = Normalizer.for_paths(workspace=workspace)
    player = CassettePlayer(
        [answer(question, "", status=400), answer(question, "a TODO")],
        normalizer=normalizer,
        recorded_normalizer=normalizer,
    )
    times = iter([1.5, 2.0, 3.0])
    player.clock = lambda: next(times)
    client = client_for(player)
    with pytest.raises(anthropic.BadRequestError):
        await ask(client, question)
    assert await ask(client, question) == "a TODO"
    with pytest.raises(anthropic.APIConnectionError):
        await ask(client, "a question never recorded")
    refused, answered, missed = player.log
    # As the fingerprint reads it: the workspace is a placeholder, so any folder logs the same.
    assert refused.body == body("what is in <workspace>/notes.md?")
    assert (refused.at, refused.answered) == (1.5, False)
    assert (answered.at, answered.answered) == (2.0, True)
    assert (missed.at, missed.matched, missed.answered) == (3.0, False, False)
