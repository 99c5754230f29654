"""Writing the fake model's responses on the wire, for the loopback server: a JSON answer with
Content-Length, an SSE answer with ``Transfer-Encoding: chunked`` (one chunk per event, flushed
as it goes; HTTP/1.0 gets the bare stream and a closed connection), and the scripted dropped
connection, which stops without the terminating zero-length chunk so the client sees a real
incomplete body. The server owns the framing headers; a response that cannot be sent (a header
that is not Latin-1 or holds a line break) becomes a 500. Also the errors the server itself
answers with (`error_response`)."""

from __future__ import annotations

import asyncio
import json
import logging
from http import HTTPStatus
from typing import Final

from replay.fake.faults import ErrorType
from replay.fake.http_request import HTTP_TOKEN
from replay.fake.model import FakeResponse
from replay.fake.sse import error_body

__all__ = ["error_response", "send_response"]

logger = logging.getLogger("replay.fake.server")  # the server's log: one logger for all it says

# The server owns the framing of every response; the same headers from a script would contradict it.
_FRAMING_HEADERS: Final = frozenset({"content-length", "transfer-encoding", "connection", "keep-alive"})
_REASONS: Final = {529: "Overloaded"}


async def send_response(
    writer: asyncio.StreamWriter, response: FakeResponse, *, version: str, method: str, keep_alive: bool
) -> bool:
    """Write one response; returns whether the connection may carry another request."""
    chunked = version == "HTTP/1.1"
    streamed = response.drop_after or _is_event_stream(response.headers)
    body = b"".join(response.chunks)
    if response.drop_after or (streamed and not chunked):
        keep_alive = False  # a drop ends the connection; an HTTP/1.0 stream ends where the connection does
    try:
        head = _encode_head(response, streamed=streamed, chunked=chunked, length=len(body), keep_alive=keep_alive)
    except ValueError as exc:
        logger.error("Cannot send the fake model's response: %s", exc)
        response = error_response(500, ErrorType.API_ERROR, f"The fake model's response cannot be sent: {exc}")
        return await send_response(writer, response, version=version, method=method, keep_alive=keep_alive)
    writer.write(head)
    if method.upper() == "HEAD":
        await writer.drain()
        return keep_alive
    if not streamed:
        writer.write(body)
        await writer.drain()
        return keep_alive
    for chunk in response.chunks:
        if chunk:  # an empty chunk would read as the end of the body
            writer.write(b"%x\r\n%b\r\n" % (len(chunk), chunk) if chunked else chunk)
            await writer.drain()
    if response.drop_after:
        return False  # closed without the terminating chunk: the client sees an incomplete body
    if chunked:
        writer.write(b"0\r\n\r\n")
        await writer.drain()
    return keep_alive


def _encode_head(response: FakeResponse, *, streamed: bool, chunked: bool, length: int, keep_alive: bool) -> bytes:
    headers = [(name, value) for name, value in response.headers if name.lower() not in _FRAMING_HEADERS]
    if not streamed:
        headers.append(("content-length", str(length)))
    elif chunked:
        headers.append(("transfer-encoding", "chunked"))
    if not keep_alive:
        headers.append(("connection", "close"))
    lines = [f"HTTP/1.1 {response.status} {_reason(response.status)}"]
    for name, value in headers:
        if not HTTP_TOKEN.fullmatch(name) or any(char in value for char in "\r\n\0"):
            raise ValueError(f"the header {name!r}: {value!r} cannot be sent over HTTP/1.1")
        lines.append(f"{name}: {value}")
    try:
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    except UnicodeEncodeError:
        raise ValueError(f"a response header is not Latin-1 text: {headers!r}") from None


def error_response(status: int, error_type: ErrorType, message: str) -> FakeResponse:
    """An error the server itself makes; `x-should-retry: false` keeps clients from retrying it."""
    body = json.dumps(error_body(error_type, message), separators=(",", ":"), ensure_ascii=False).encode()
    headers = [("content-type", "application/json"), ("x-should-retry", "false")]
    return FakeResponse(status=status, headers=headers, chunks=[body])


def _is_event_stream(headers: list[tuple[str, str]]) -> bool:
    return any(
        name.lower() == "content-type" and value.lower().startswith("text/event-stream") for name, value in headers
    )


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return _REASONS.get(status, "Unknown")
