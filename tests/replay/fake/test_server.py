"""The fake model over real HTTP on loopback, specified through the real SDK's default httpx2 client."""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import socket
import struct
import subprocess
import threading
from typing import Any
from urllib.parse import urlsplit

import anthropic
import httpx2
import pytest

from engine.compact import SUMMARY_PREAMBLE
from replay.fake.model import DROPPED_CONNECTION_MESSAGE, FakeModel, FakeResponse
from replay.fake.scenario import Scenario
from replay.fake.server import AuthStyle, FakeModelServer
from replay.prompt_cache.prefixes import estimate_request_tokens
from tests.replay.fake.conftest import Serve

MODEL = "claude-sonnet-4-6"
HELLO = [{"role": "user", "content": "hello"}]
REQUEST = {"model": MODEL, "max_tokens": 64, "messages": HELLO}


def fake(*turns: Any, name: str | None = None) -> FakeModel:
    """A FakeModel over turns in the YAML dict shape."""
    return FakeModel(Scenario.from_list(list(turns), name=name))


def text_turn(text: str) -> dict[str, Any]:
    return {"content": [{"text": text}]}


def async_sdk(server: FakeModelServer, *, max_retries: int = 0) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(api_key="sk-ant-test", base_url=server.url, max_retries=max_retries)


def sync_sdk(server: FakeModelServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="sk-ant-test", base_url=server.url, max_retries=0)


def address(server: FakeModelServer) -> tuple[str, int]:
    parts = urlsplit(server.url)
    assert parts.hostname is not None and parts.port is not None
    return parts.hostname, parts.port


def raw_exchange(server: FakeModelServer, data: bytes) -> bytes:
    """Send raw bytes on a fresh connection and read until the server closes it."""
    with socket.create_connection(address(server), timeout=5) as connection:
        connection.sendall(data)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    return received


async def collect(stream: anthropic.AsyncStream[Any], into: list[Any]) -> None:
    async for event in stream:
        into.append(event)


# --- answers through the SDK -----------------------------------------------------------------


async def test_a_streamed_message_reaches_the_async_sdk_event_by_event(serve: Serve) -> None:
    text = "Hello over real HTTP! Long enough for several deltas: ünïcödé ✓."
    server = serve(fake(text_turn(text)))

    async with async_sdk(server) as client:
        stream = await client.messages.create(**REQUEST, stream=True)
        events = [event async for event in stream]

    assert [event.type for event in events] == [
        "message_start",
        "content_block_start",
        *["content_block_delta"] * 3,
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert "".join(event.delta.text for event in events if event.type == "content_block_delta") == text
    assert events[0].message.id == "msg_fake_0001"


async def test_a_non_streamed_message_reaches_the_async_sdk_whole(serve: Serve) -> None:
    server = serve(fake({"content": [{"text": "Reading."}, {"tool_use": {"name": "Read", "input": {"path": "a"}}}]}))

    async with async_sdk(server) as client:
        message = await client.messages.create(**REQUEST)

    assert message.content[0].text == "Reading."
    assert (message.content[1].id, message.content[1].input) == ("toolu_fake_0001_1", {"path": "a"})
    assert message.stop_reason == "tool_use"


def test_the_sync_sdk_streams_and_creates_from_the_main_thread(serve: Serve) -> None:
    server = serve(fake(text_turn("Streamed to a sync client."), text_turn("Created for a sync client.")))

    with sync_sdk(server) as client:
        with client.messages.stream(**REQUEST) as stream:
            streamed = stream.get_final_message()
        created = client.messages.create(**REQUEST)

    assert streamed.content[0].text == "Streamed to a sync client."
    assert created.content[0].text == "Created for a sync client."


async def test_count_tokens_answers_from_the_body_and_plays_no_turn(serve: Serve) -> None:
    fake_model = fake(text_turn("still here"))
    server = serve(fake_model)

    async with async_sdk(server) as client:
        counted = await client.messages.count_tokens(model=MODEL, messages=HELLO)

    assert counted.input_tokens == len(fake_model.requests[0].body) // 4
    assert fake_model.turns_remaining == 1


async def test_a_chunked_request_body_is_read_whole(serve: Serve) -> None:
    fake_model = fake()
    server = serve(fake_model)
    body = json.dumps({"model": MODEL, "messages": HELLO}).encode()

    async def pieces() -> Any:
        for start in range(0, len(body), 7):
            yield body[start : start + 7]

    async with httpx2.AsyncClient() as http:
        response = await http.post(
            f"{server.url}/v1/messages/count_tokens", content=pieces(), headers={"x-api-key": "sk-ant-test"}
        )

    assert fake_model.requests[0].headers["transfer-encoding"] == "chunked"
    assert fake_model.requests[0].body == body
    assert response.json() == {"input_tokens": estimate_request_tokens(json.loads(body))}


# --- auth ------------------------------------------------------------------------------------


async def test_both_auth_styles_are_accepted_and_counted(serve: Serve) -> None:
    server = serve(fake(text_turn("to the SDK"), text_turn("to x-api-key")))

    async with async_sdk(server) as client:
        message = await client.messages.create(**REQUEST)
    # The 2.x SDK always sends Bearer; a 0.x-style client sends x-api-key.
    async with httpx2.AsyncClient() as http:
        response = await http.post(f"{server.url}/v1/messages", json=REQUEST, headers={"x-api-key": "sk-ant-test"})

    assert message.content[0].text == "to the SDK"
    assert response.json()["content"][0]["text"] == "to x-api-key"
    assert server.auth_styles == {AuthStyle.BEARER: 1, AuthStyle.X_API_KEY: 1}


async def test_a_request_without_a_key_gets_401_and_plays_no_turn(serve: Serve) -> None:
    fake_model = fake(text_turn("not for you"))
    server = serve(fake_model)

    async with httpx2.AsyncClient() as http:
        response = await http.post(f"{server.url}/v1/messages", json=REQUEST)

    assert response.status_code == 401
    assert response.json()["error"]["type"] == "authentication_error"
    assert "x-api-key" in response.json()["error"]["message"]
    assert fake_model.requests == []
    assert server.auth_styles == {AuthStyle.NONE: 1}


async def test_require_auth_false_serves_a_request_without_a_key(serve: Serve) -> None:
    server = serve(fake(text_turn("open door")), require_auth=False)

    async with httpx2.AsyncClient() as http:
        response = await http.post(f"{server.url}/v1/messages", json=REQUEST)

    assert response.json()["content"][0]["text"] == "open door"
    assert server.auth_styles == {AuthStyle.NONE: 1}


# --- faults ----------------------------------------------------------------------------------


async def test_an_http_error_fault_keeps_its_headers(serve: Serve) -> None:
    rate_limited = {
        "fault": "http_error",
        "status": 429,
        "error_type": "rate_limit_error",
        "message": "Number of request tokens has exceeded your rate limit.",
        "headers": {"retry-after": 2},
    }
    server = serve(fake(rate_limited))

    async with async_sdk(server) as client:
        with pytest.raises(anthropic.RateLimitError) as caught:
            await client.messages.create(**REQUEST, stream=True)

    assert caught.value.response.headers["retry-after"] == "2"
    assert caught.value.request_id == "req_fake_0001"
    assert caught.value.body["error"]["message"] == "Number of request tokens has exceeded your rate limit."


async def test_an_error_event_mid_stream_surfaces_as_a_200_status_error(serve: Serve) -> None:
    fault = {"fault": "stream_error", "after_events": 4, "content": [{"text": "Cut off after one delta, please."}]}
    server = serve(fake(fault))
    events: list[Any] = []

    async with async_sdk(server) as client:
        stream = await client.messages.create(**REQUEST, stream=True)
        with pytest.raises(anthropic.APIStatusError) as caught:
            await collect(stream, events)

    assert (caught.value.status_code, caught.value.type) == (200, "overloaded_error")
    assert [event.type for event in events] == ["message_start", "content_block_start", "content_block_delta"]


async def test_a_dropped_connection_mid_stream_is_an_incomplete_chunked_body(serve: Serve) -> None:
    fault = {"fault": "drop_connection", "after_events": 2, "content": [{"text": "Never finished."}]}
    server = serve(fake(fault, text_turn("Answered on a new connection.")))
    events: list[Any] = []

    async with async_sdk(server) as client:
        stream = await client.messages.create(**REQUEST, stream=True)
        with pytest.raises(httpx2.RemoteProtocolError) as caught:
            await collect(stream, events)
        retried = await client.messages.create(**REQUEST)

    assert str(caught.value) == DROPPED_CONNECTION_MESSAGE
    assert [event.type for event in events] == ["message_start", "content_block_start"]
    assert retried.content[0].text == "Answered on a new connection."
    assert server.connections_accepted == 2


async def test_a_dropped_connection_on_a_non_streamed_request_is_a_connection_error(serve: Serve) -> None:
    server = serve(fake({"fault": "drop_connection", "after_events": 0}))

    async with async_sdk(server) as client:
        with pytest.raises(anthropic.APIConnectionError) as caught:
            await client.messages.create(**REQUEST)

    assert isinstance(caught.value.__cause__, httpx2.RemoteProtocolError)


def test_a_reset_connection_is_a_tcp_reset_before_any_response_byte(serve: Serve) -> None:
    server = serve(fake({"fault": "reset_connection"}))
    body = json.dumps(REQUEST).encode()
    head = f"POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: k\r\nContent-Length: {len(body)}\r\n\r\n"

    with socket.create_connection(address(server), timeout=5) as connection:
        connection.sendall(head.encode() + body)
        with pytest.raises(ConnectionResetError):
            connection.recv(65536)


async def test_a_reset_connection_reaches_the_sdk_as_a_connection_error_and_the_retry_is_answered(
    serve: Serve,
) -> None:
    lines: list[str] = []
    server = serve(
        fake({"fault": "reset_connection"}, text_turn("Answered on a new connection.")), on_request=lines.append
    )

    async with async_sdk(server) as client:
        with pytest.raises(anthropic.APIConnectionError) as caught:
            await client.messages.create(**REQUEST, stream=True)
        retried = await client.messages.create(**REQUEST)

    assert isinstance(caught.value.__cause__, httpx2.ReadError)
    assert retried.content[0].text == "Answered on a new connection."
    assert server.connections_accepted == 2
    assert lines[0].startswith("POST /v1/messages reset ")


async def test_an_exhausted_script_answers_500_that_clients_must_not_retry(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    fake_model = fake(text_turn("the only turn"), name="one-turn")
    server = serve(fake_model)
    caplog.set_level(logging.WARNING, logger="replay.fake.server")

    # Retries allowed: the x-should-retry header alone keeps the SDK from asking again.
    async with async_sdk(server, max_retries=2) as client:
        await client.messages.create(**REQUEST)
        with pytest.raises(anthropic.InternalServerError) as caught:
            await client.messages.create(**REQUEST)

    message = caught.value.body["error"]["message"]
    assert caught.value.status_code == 500
    assert caught.value.body["error"]["type"] == "api_error"
    assert message.startswith("The scenario 'one-turn' has 1 turn, but request 2 to POST /v1/messages")
    assert caught.value.response.headers["x-should-retry"] == "false"
    assert len(fake_model.requests) == 2
    assert message in caplog.text


class _BrokenModel(FakeModel):
    def respond(self, method: str, path: str, headers: Any, body: bytes) -> FakeResponse:
        raise RuntimeError("the renderer fell over")


async def test_an_exception_inside_respond_answers_500_and_the_server_carries_on(serve: Serve) -> None:
    server = serve(_BrokenModel(Scenario(turns=())))

    async with async_sdk(server) as client:
        for _ in range(2):
            with pytest.raises(anthropic.InternalServerError) as caught:
                await client.messages.create(**REQUEST)
            assert "RuntimeError: the renderer fell over" in caught.value.body["error"]["message"]


# --- HTTP robustness -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"NONSENSE\r\n\r\n",
        b"POST /v1/messages HTTP/1.1\r\nno colon here\r\n\r\n",
        b"POST /v1/messages HTTP/1.1\r\nContent-Length: lots\r\n\r\n",
        b"POST /v1/messages HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
    ],
    ids=["request-line", "header", "content-length", "transfer-encoding"],
)
def test_a_malformed_request_gets_400_and_the_connection_closes(serve: Serve, request_bytes: bytes) -> None:
    fake_model = fake(text_turn("still serving"))
    server = serve(fake_model)

    answer = raw_exchange(server, request_bytes)

    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert b"\r\nconnection: close" in head
    assert json.loads(body)["error"]["type"] == "invalid_request_error"
    assert fake_model.requests == []
    with sync_sdk(server) as client:
        assert client.messages.create(**REQUEST).content[0].text == "still serving"


def test_expect_100_continue_is_answered_before_the_body(serve: Serve) -> None:
    server = serve(fake())
    body = json.dumps({"model": MODEL, "messages": HELLO}).encode()
    head = (
        b"POST /v1/messages/count_tokens HTTP/1.1\r\nHost: x\r\nx-api-key: k\r\nExpect: 100-continue\r\n"
        b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body)
    )

    with socket.create_connection(address(server), timeout=5) as connection:
        connection.sendall(head)
        interim = connection.recv(65536)
        connection.sendall(body)
        final = b""
        while chunk := connection.recv(65536):
            final += chunk

    assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
    assert final.startswith(b"HTTP/1.1 200 OK\r\n")
    assert json.loads(final.partition(b"\r\n\r\n")[2]) == {"input_tokens": estimate_request_tokens(json.loads(body))}


def test_an_http_1_0_client_gets_a_stream_that_ends_with_the_connection(serve: Serve) -> None:
    server = serve(fake(text_turn("Hello, old client.")))
    body = json.dumps({**REQUEST, "stream": True}).encode()

    answer = raw_exchange(
        server, b"POST /v1/messages HTTP/1.0\r\nx-api-key: k\r\nContent-Length: %d\r\n\r\n%b" % (len(body), body)
    )

    head, _, events = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"transfer-encoding" not in head.lower()
    assert b"\r\nconnection: close" in head.lower()  # header names are case-insensitive (h11 writes Connection)
    assert events.startswith(b"event: message_start\n")
    assert events.endswith(b'event: message_stop\ndata: {"type":"message_stop"}\n\n')


def test_a_client_that_disconnects_mid_stream_does_not_stop_the_server(serve: Serve) -> None:
    server = serve(fake(text_turn("x" * 200_000), text_turn("next client")))
    body = json.dumps({**REQUEST, "stream": True}).encode()
    request = b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: k\r\nContent-Length: %d\r\n\r\n%b" % (
        len(body),
        body,
    )

    with socket.create_connection(address(server), timeout=5) as connection:
        connection.sendall(request)
        assert connection.recv(1024).startswith(b"HTTP/1.1 200 OK\r\n")
        # Closing with unread data makes the kernel send a reset: the server's next write fails.
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    with sync_sdk(server) as client:
        assert client.messages.create(**REQUEST).content[0].text == "next client"


# --- connections, ports, lifecycle -----------------------------------------------------------


async def test_keep_alive_reuses_one_connection_for_several_requests(serve: Serve) -> None:
    server = serve(fake(text_turn("one"), text_turn("two"), text_turn("three")))

    async with async_sdk(server) as client:
        stream = await client.messages.create(**REQUEST, stream=True)
        [event async for event in stream]
        await client.messages.create(**REQUEST)
        await client.messages.count_tokens(model=MODEL, messages=HELLO)
        await client.messages.create(**REQUEST)

    assert server.connections_accepted == 1


async def test_two_servers_at_once_do_not_interfere(serve: Serve) -> None:
    first = serve(fake(text_turn("first server, turn 1"), text_turn("first server, turn 2")))
    second = serve(fake(text_turn("second server, turn 1")))

    async with async_sdk(first) as one, async_sdk(second) as two:
        answers = await asyncio.gather(
            one.messages.create(**REQUEST), two.messages.create(**REQUEST), one.messages.create(**REQUEST)
        )

    assert first.url != second.url
    assert sorted(answer.content[0].text for answer in answers) == [
        "first server, turn 1",
        "first server, turn 2",
        "second server, turn 1",
    ]
    assert first.fake_model.turns_remaining == second.fake_model.turns_remaining == 0


def test_port_zero_binds_a_free_port_and_stop_closes_it() -> None:
    server = FakeModelServer(fake(text_turn("hi")))

    url = server.start()
    host, port = address(server)
    with sync_sdk(server) as client:
        client.messages.create(**REQUEST)
    server.stop()
    server.stop()  # idempotent

    assert url == server.url == f"http://127.0.0.1:{port}"
    assert port != 0
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((host, port), timeout=5).close()
    assert not [thread for thread in threading.enumerate() if thread.name.startswith("FakeModelServer(")]


def test_the_context_manager_starts_and_stops() -> None:
    with FakeModelServer(fake(text_turn("managed"))) as server:
        with sync_sdk(server) as client:
            assert client.messages.create(**REQUEST).content[0].text == "managed"

    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(address(server), timeout=5).close()


async def test_stop_while_a_client_is_mid_stream_returns_and_refuses_new_connections(serve: Serve) -> None:
    # Megabytes of events: the server is still writing (blocked on a full socket) when stop() comes.
    server = serve(fake(text_turn("x" * 1_000_000)))

    async with async_sdk(server) as client:
        stream = await client.messages.create(**REQUEST, stream=True)
        first = await stream.__aiter__().__anext__()
        server.stop()  # returns although the writer is blocked on a full socket (a hang fails)
        await stream.close()

    assert first.type == "message_start"
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(address(server), timeout=5).close()


async def test_serve_forever_serves_in_the_current_loop_until_cancelled() -> None:
    server = FakeModelServer(fake(text_turn("in the foreground")))
    ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    serving = asyncio.create_task(server.serve_forever(on_ready=ready.set_result))
    url = await asyncio.wait_for(ready, timeout=5)
    async with async_sdk(server) as client:
        message = await client.messages.create(**REQUEST)
    serving.cancel()
    with pytest.raises(asyncio.CancelledError):
        await serving

    assert url == server.url
    assert message.content[0].text == "in the foreground"
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(address(server), timeout=5).close()


def test_a_server_starts_once() -> None:
    server = FakeModelServer(fake())
    server.start()
    server.stop()

    with pytest.raises(RuntimeError, match="starts once"):
        server.start()


def test_a_port_in_use_fails_start_with_the_os_error(serve: Serve) -> None:
    taken = serve(fake())

    with pytest.raises(OSError):
        FakeModelServer(fake(), port=address(taken)[1]).start()


def test_the_url_is_unknown_before_start() -> None:
    with pytest.raises(RuntimeError, match="call start"):
        _ = FakeModelServer(fake()).url


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.10", "::", "example.com"])
def test_a_non_loopback_host_is_refused(host: str) -> None:
    with pytest.raises(ValueError, match="allow_remote=True"):
        FakeModelServer(fake(), host=host)


@pytest.mark.parametrize(
    ("host", "bound"),
    [("127.0.0.1", "127.0.0.1"), ("127.0.0.2", "127.0.0.2"), ("::1", "::1"), ("localhost", "127.0.0.1")],
)
def test_loopback_hosts_are_accepted(host: str, bound: str) -> None:
    # localhost may resolve to two addresses, and port 0 would give each a different port.
    assert FakeModelServer(fake(), host=host).host == bound


def test_allow_remote_lifts_the_loopback_rule() -> None:
    assert FakeModelServer(fake(), host="0.0.0.0", allow_remote=True).host == "0.0.0.0"


def test_localhost_serves_on_127_0_0_1(serve: Serve) -> None:
    server = serve(fake(text_turn("local")), host="localhost")

    assert server.url.startswith("http://127.0.0.1:")


# --- any client ------------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not on PATH")
def test_curl_gets_server_sent_events(serve: Serve) -> None:
    server = serve(fake(text_turn("Hello, curl.")))
    command = [
        "curl",
        "--silent",
        "--show-error",
        "--no-buffer",
        "--noproxy",
        "*",
        "--max-time",
        "10",
        "--header",
        "x-api-key: sk-ant-test",
        "--header",
        "content-type: application/json",
        "--data",
        json.dumps({**REQUEST, "stream": True}),
        f"{server.url}/v1/messages",
    ]

    result = subprocess.run(command, capture_output=True, text=True, timeout=20, check=True)

    events = [line.removeprefix("event: ") for line in result.stdout.splitlines() if line.startswith("event: ")]
    assert events[0] == "message_start"
    assert events[-1] == "message_stop"
    assert '"text":"Hello, curl."' in result.stdout


# --- new conversations and POST /reset -------------------------------------------------------


def test_a_compacted_history_continues_the_conversation_instead_of_restarting_it(serve: Serve) -> None:
    server = serve(fake(text_turn("first"), text_turn("after the compaction")), restart_per_conversation=True)
    summary = f"{SUMMARY_PREAMBLE}The user said hello.\n\nhello again"
    compacted = [{"role": "user", "content": [{"type": "text", "text": summary}]}]

    with sync_sdk(server) as client:
        client.messages.create(**REQUEST)
        answer = client.messages.create(**{**REQUEST, "messages": compacted})

    assert answer.content[0].text == "after the compaction"


def test_a_side_query_a_matched_turn_accepts_does_not_restart_the_conversation(serve: Serve) -> None:
    title = {"content": [{"text": "A title"}], "match": {"purpose": "side", "repeat": True}}
    tools = [{"name": "Read", "description": "Reads a file.", "input_schema": {"type": "object"}}]
    server = serve(fake(text_turn("first"), text_turn("second"), title), restart_per_conversation=True)
    conversation = {**REQUEST, "tools": tools}
    # A client's title query: one user message and no tools, as a new conversation would start.
    title_query = {**REQUEST, "messages": [{"role": "user", "content": "Title this: hello"}]}

    with sync_sdk(server) as client:
        first = client.messages.create(**conversation).content[0].text
        named = client.messages.create(**title_query).content[0].text
        history = [*HELLO, {"role": "assistant", "content": first}, {"role": "user", "content": "and?"}]
        second = client.messages.create(**{**conversation, "messages": history}).content[0].text
        named_again = client.messages.create(**title_query).content[0].text

    assert [first, named, second, named_again] == ["first", "A title", "second", "A title"]


def test_a_new_conversation_restarts_the_scenario_only_when_asked_and_post_reset_always(serve: Serve) -> None:
    lines: list[str] = []
    restarting = serve(fake(text_turn("first")), restart_per_conversation=True, on_request=lines.append)
    plain = serve(fake(text_turn("first")))

    with sync_sdk(restarting) as client:
        answers = [client.messages.create(**REQUEST).content[0].text for _ in range(2)]
    with sync_sdk(plain) as client:
        client.messages.create(**REQUEST)
        with pytest.raises(anthropic.InternalServerError):  # the one turn is played
            client.messages.create(**REQUEST)
        reset = httpx2.post(f"{plain.url}/reset")
        after_reset = client.messages.create(**REQUEST)

    assert answers == ["first", "first"]
    assert lines[1].endswith("turn 1/1 (new conversation: scenario restarted)")
    assert reset.status_code == 204
    assert (after_reset.content[0].text, after_reset.id) == ("first", "msg_fake_0001")
