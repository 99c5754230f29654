"""The shared HTTP/1.1 layer (``replay.http``), specified with a tiny server of its own and real
clients: what a handler writes is what goes on the wire, chunk by chunk, as it writes it."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator
from urllib.parse import urlsplit

import httpx2
import pytest

from replay.http import BadRequest, HttpServer, Request, ResponseWriter, UnsendableResponse
from replay.http.connection import HEAD_LIMIT, MAX_BODY, MAX_HEADERS

Handler = Callable[[Request, ResponseWriter], Awaitable[None]]


class Server(HttpServer):
    label = "The test server"

    def __init__(self, handler: Handler) -> None:
        super().__init__()
        self.handler = handler

    async def handle(self, request: Request, response: ResponseWriter) -> None:
        await self.handler(request, response)


@pytest.fixture
def serve() -> Iterator[Callable[[Handler], Server]]:
    servers: list[Server] = []

    def start(handler: Handler) -> Server:
        server = Server(handler)
        servers.append(server)
        server.start()
        return server

    yield start
    for server in servers:
        server.stop()


def exchange(server: Server, data: bytes) -> bytes:
    parts = urlsplit(server.url)
    assert parts.hostname is not None and parts.port is not None
    with socket.create_connection((parts.hostname, parts.port), timeout=5) as connection:
        connection.sendall(data)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    return received


async def echo(request: Request, response: ResponseWriter) -> None:
    await response.send(
        200, [("content-type", "text/plain")], f"{request.method} {request.path} ".encode() + request.body
    )


def test_each_write_is_one_chunk_on_the_wire_flushed_before_the_next(serve: Callable[[Handler], Server]) -> None:
    second_may_go = threading.Event()

    async def two_events(request: Request, response: ResponseWriter) -> None:
        await response.start(200, [("content-type", "text/event-stream")])
        await response.write(b"event: one\ndata: {}\n\n")
        await asyncio.to_thread(second_may_go.wait, 5)
        await response.write(b"event: two\ndata: {}\n\n")
        await response.end()

    server = serve(two_events)
    parts = urlsplit(server.url)
    with socket.create_connection((parts.hostname or "", parts.port or 0), timeout=5) as connection:
        connection.sendall(b"GET /events HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        first = b""
        while not first.endswith(b"data: {}\n\n\r\n"):
            first += connection.recv(65536)
        second_may_go.set()
        rest = b""
        while chunk := connection.recv(65536):
            rest += chunk

    assert first.split(b"\r\n\r\n", 1)[1] == b"15\r\nevent: one\ndata: {}\n\n\r\n"
    assert rest == b"15\r\nevent: two\ndata: {}\n\n\r\n0\r\n\r\n"


def test_drop_cuts_the_body_and_the_client_sees_an_incomplete_message(serve: Callable[[Handler], Server]) -> None:
    async def cut(request: Request, response: ResponseWriter) -> None:
        await response.start(200, [("content-type", "text/event-stream")])
        await response.write(b"event: one\ndata: {}\n\n")
        await response.drop()

    server = serve(cut)
    received: list[bytes] = []

    with httpx2.Client() as client, client.stream("GET", server.url) as response:
        with pytest.raises(httpx2.RemoteProtocolError, match="incomplete chunked read"):
            for chunk in response.iter_raw():
                received.append(chunk)

    assert received == [b"event: one\ndata: {}\n\n"]


def test_drop_before_the_head_is_no_response_at_all(serve: Callable[[Handler], Server]) -> None:
    async def refuse(request: Request, response: ResponseWriter) -> None:
        await response.drop()

    server = serve(refuse)

    with pytest.raises(httpx2.RemoteProtocolError, match="without sending a response"):
        httpx2.get(server.url)


def test_reset_before_the_head_is_a_tcp_reset_and_the_server_carries_on(serve: Callable[[Handler], Server]) -> None:
    async def reset_the_first(request: Request, response: ResponseWriter) -> None:
        if request.path == "/reset":
            await response.reset()
        else:
            await echo(request, response)

    server = serve(reset_the_first)
    parts = urlsplit(server.url)

    with socket.create_connection((parts.hostname or "", parts.port or 0), timeout=5) as connection:
        connection.sendall(b"GET /reset HTTP/1.1\r\nHost: x\r\n\r\n")
        with pytest.raises(ConnectionResetError):
            connection.recv(65536)
    with pytest.raises(httpx2.ReadError):
        httpx2.get(f"{server.url}/reset")

    assert httpx2.get(f"{server.url}/after").text == "GET /after "


def test_reset_after_the_head_is_refused(serve: Callable[[Handler], Server]) -> None:
    refused: list[str] = []

    async def too_late(request: Request, response: ResponseWriter) -> None:
        await response.start(200, [("content-type", "text/plain")], length=2)
        try:
            await response.reset()
        except RuntimeError as exc:
            refused.append(str(exc))
        await response.write(b"ok")
        await response.end()

    server = serve(too_late)

    assert httpx2.get(server.url).text == "ok"
    assert refused == ["The response head was already sent; a reset must come before it."]


def test_keep_alive_serves_several_requests_on_one_connection(serve: Callable[[Handler], Server]) -> None:
    server = serve(echo)

    with httpx2.Client() as client:
        answers = [client.post(f"{server.url}/n/{n}", content=b"body").text for n in range(3)]

    assert answers == ["POST /n/0 body", "POST /n/1 body", "POST /n/2 body"]
    assert server.connections_accepted == 1


def test_a_chunked_request_body_arrives_whole(serve: Callable[[Handler], Server]) -> None:
    server = serve(echo)

    answer = exchange(
        server,
        b"POST /up HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
    )

    assert answer.endswith(b"\r\n\r\nPOST /up abcde")


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (2 * HEAD_LIMIT) + b"\r\n\r\n", 431),
        (b"GET / HTTP/1.1\r\nHost: x\r\n" + b"X-A: b\r\n" * MAX_HEADERS + b"\r\n", 431),
        (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (MAX_BODY + 1), 413),
        (b"GET / HTTP/1.1\r\n\r\n", 400),  # HTTP/1.1 needs Host
        (b"GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505),
    ],
    ids=["head-too-large", "too-many-headers", "body-too-large", "no-host", "http-2"],
)
def test_a_request_over_a_limit_is_refused_with_its_status_and_the_connection_closes(
    serve: Callable[[Handler], Server], request_bytes: bytes, status: int
) -> None:
    server = serve(echo)

    answer = exchange(server, request_bytes)

    assert answer.startswith(b"HTTP/1.1 %d " % status)
    assert b"\r\nconnection: close\r\n" in answer.lower()
    with httpx2.Client() as client:
        assert client.get(f"{server.url}/still").text == "GET /still "


def test_an_unsendable_head_raises_before_anything_is_sent(serve: Callable[[Handler], Server]) -> None:
    problems: list[str] = []

    async def bad_header(request: Request, response: ResponseWriter) -> None:
        try:
            await response.start(200, [("x-note", "two\r\nlines")], length=0)
        except UnsendableResponse as exc:
            problems.append(str(exc))
        await response.send(500, [("content-type", "text/plain")], b"fallback")

    server = serve(bad_header)

    answer = httpx2.get(server.url)

    assert (answer.status_code, answer.text) == (500, "fallback")
    assert "cannot be sent" in problems[0]


def test_bad_request_is_what_a_subclass_refuses_with() -> None:
    refusal = Server(echo).bad_request_response(BadRequest("no", status=413))

    assert refusal == ([("content-type", "text/plain; charset=utf-8")], b"no\n")


async def _whole(response: ResponseWriter) -> None:
    await response.send(200, [], b"hello")


async def _streamed(response: ResponseWriter) -> None:
    await response.start(200, [("content-type", "text/event-stream")])
    await response.write(b"one")
    await response.write(b"two")
    await response.end()


async def _cut(response: ResponseWriter) -> None:
    await response.start(200, [("content-type", "text/event-stream")])
    await response.write(b"one")
    await response.drop()


async def _empty(response: ResponseWriter) -> None:
    await response.send(204, [], b"")


@pytest.mark.parametrize("answer", [_whole, _streamed, _cut, _empty], ids=["length", "chunked", "dropped", "no-body"])
def test_before_complete_runs_once_before_the_last_bytes_of_the_answer(
    serve: Callable[[Handler], Server], answer: Callable[[ResponseWriter], Awaitable[None]]
) -> None:
    # What a handler does there (a proxy logging the request) has happened before the client
    # can have read the whole answer: the hook sees the answer unfinished, and runs once.
    seen: list[tuple[bool, bool]] = []

    async def handler(request: Request, response: ResponseWriter) -> None:
        response.before_complete = lambda: seen.append((response.finished, response.dropped))
        await answer(response)

    server = serve(handler)
    exchange(server, b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")

    assert seen == [(False, answer is _cut)]
