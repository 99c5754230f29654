"""One HTTP/1.1 connection over ``h11``: reading requests (with their limits) and writing
responses with full control of framing and flushing.

A request is read whole (`read_request`): head, then body by Content-Length or chunked,
``Expect: 100-continue`` answered. Every limit is enforced here: a head over `HEAD_LIMIT`
bytes or with more than `MAX_HEADERS` headers, a body over `MAX_BODY` bytes, or anything
``h11`` cannot parse is a `BadRequest` carrying the status to answer with (431, 413, 505 or
400).

A response is written through a `ResponseWriter`: `start` sends the head (the writer owns the
framing headers), each `write` is flushed as one chunk, `end` sends the terminating chunk, and
`drop` closes the connection without it, so the client sees a real incomplete body; `reset`,
before any byte of a response, aborts the connection with a TCP reset.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Final
from urllib.parse import urlsplit

import h11

__all__ = [
    "HEAD_LIMIT",
    "MAX_BODY",
    "MAX_HEADERS",
    "BadRequest",
    "Request",
    "ResponseWriter",
    "UnsendableResponse",
    "read_request",
    "reason_phrase",
]

HEAD_LIMIT: Final = 64 * 1024  # the request line and headers together
MAX_HEADERS: Final = 100
MAX_BODY: Final = 64 * 1024 * 1024
_READ_SIZE: Final = 64 * 1024
_VERSIONS: Final = ("1.0", "1.1")
# The writer owns the framing of every response; the same headers from a caller would contradict it.
FRAMING_HEADERS: Final = frozenset({"content-length", "transfer-encoding", "connection", "keep-alive"})
_REASONS: Final = {529: "Overloaded"}


@dataclass(frozen=True, kw_only=True)
class Request:
    """One request as read off the connection."""

    method: str
    target: str
    version: str  # "HTTP/1.1" or "HTTP/1.0"
    headers: dict[str, str]  # names lower-cased; repeated headers joined with ", "
    body: bytes

    @property
    def path(self) -> str:
        """The origin-form path and query, also for an absolute-form target (`http://host/v1/messages`)."""
        if self.target.startswith("/"):
            return self.target
        parts = urlsplit(self.target)
        if not parts.scheme:
            return self.target
        return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


class BadRequest(Exception):
    """A request the server refuses, with the status to answer with."""

    def __init__(self, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


class UnsendableResponse(ValueError):
    """A response head that cannot go on the wire (a header that is not Latin-1 or holds a line
    break); nothing was sent, so another response may still be."""


async def read_request(
    connection: h11.Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> Request | None:
    """The next request on the connection, or None when the client closed it between requests."""
    head: h11.Request | None = None
    body = bytearray()
    while True:
        try:
            event = connection.next_event()
        except h11.RemoteProtocolError as exc:
            raise _bad_request(exc, head) from None
        if event is h11.NEED_DATA:
            if connection.they_are_waiting_for_100_continue:
                writer.write(
                    connection.send(h11.InformationalResponse(status_code=100, headers=[], reason=b"Continue"))
                )
                await writer.drain()
            connection.receive_data(await reader.read(_READ_SIZE))
        elif isinstance(event, h11.Request):
            head = _check_head(event)
        elif isinstance(event, h11.Data):
            body += event.data
            _check_body_size(len(body))
        elif isinstance(event, h11.EndOfMessage):
            assert head is not None
            return Request(
                method=head.method.decode("latin-1"),
                target=head.target.decode("latin-1"),
                version=f"HTTP/{head.http_version.decode('ascii')}",
                headers=_joined(head.headers),
                body=bytes(body),
            )
        else:  # ConnectionClosed between requests (h11 raises for a close mid-request), or PAUSED
            return None


def _check_head(event: h11.Request) -> h11.Request:
    if event.http_version.decode("ascii") not in _VERSIONS:
        version = f"HTTP/{event.http_version.decode('ascii')}"
        raise BadRequest(f"Unsupported HTTP version {version!r}; this server speaks HTTP/1.1.", status=505)
    if len(event.headers) > MAX_HEADERS:
        raise BadRequest(f"Too many request headers; at most {MAX_HEADERS} are accepted.", status=431)
    for name, value in event.headers:
        if name == b"content-length":
            _check_body_size(int(value))
    return event


def _bad_request(exc: h11.RemoteProtocolError, head: h11.Request | None) -> BadRequest:
    if exc.error_status_hint == 431:
        return BadRequest(f"The request head is over {HEAD_LIMIT} bytes; send fewer or shorter headers.", status=431)
    where = "request head" if head is None else "request body"
    return BadRequest(f"Malformed {where}: {exc}.")


def _check_body_size(length: int) -> None:
    if length > MAX_BODY:
        raise BadRequest(f"The request body has {length} bytes; this server accepts at most {MAX_BODY}.", status=413)


def _joined(headers: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    joined: dict[str, str] = {}
    for raw_name, raw_value in headers:
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
        joined[name] = f"{joined[name]}, {value}" if name in joined else value
    return joined


def reason_phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return _REASONS.get(status, "Unknown")


class ResponseWriter:
    """Writes one response on the connection: `start`, then `write` chunk by chunk (each
    flushed), then `end` — or `drop` to cut the body short. `send` does all three for a body
    that is known whole."""

    def __init__(
        self, connection: h11.Connection, writer: asyncio.StreamWriter, *, method: str, keep_alive: bool = True
    ) -> None:
        self._connection = connection
        self._writer = writer
        self._head_only = method.upper() == "HEAD"
        self._keep_alive = keep_alive
        self.status: int | None = None
        """The status sent, once `start` has sent the head."""
        self.finished = False
        self.dropped = False
        self.before_complete: Callable[[], None] | None = None
        """Called once, just before the bytes that complete the response (or cut it) are sent:
        what a handler does here has happened before its client can see the whole answer."""
        self._remaining: int | None = None

    @property
    def started(self) -> bool:
        return self.status is not None

    async def start(
        self, status: int, headers: Iterable[tuple[str, str]], *, length: int | None = None, reason: str | None = None
    ) -> None:
        """Send the head: with Content-Length ``length``, or, for ``length=None``, a streamed body
        (chunked for HTTP/1.1, ending with the connection for HTTP/1.0). Framing headers in
        ``headers`` are replaced by the writer's own. `UnsendableResponse` when a header cannot
        be sent; then nothing was."""
        if self.started:
            raise RuntimeError("The response head was already sent.")
        fields = [(name, value) for name, value in headers if name.lower() not in FRAMING_HEADERS]
        if status in (204, 304):
            pass  # no body, and no framing header for one (RFC 9110 §8.6)
        elif length is not None:
            fields.append(("content-length", str(length)))
        else:
            fields.append(("transfer-encoding", "chunked"))  # h11 turns it into a close-delimited body for HTTP/1.0
        if not self._keep_alive:
            fields.append(("connection", "close"))
        try:
            encoded = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in fields]
            event = h11.Response(
                status_code=status, headers=encoded, reason=(reason or reason_phrase(status)).encode("latin-1")
            )
        except (UnicodeEncodeError, h11.LocalProtocolError) as exc:
            raise UnsendableResponse(f"the response head cannot be sent over HTTP/1.1 ({exc}): {fields!r}") from None
        self.status = status
        self._remaining = 0 if status in (204, 304) or self._head_only else length
        if self._remaining == 0:
            self._completing()
        await self._send(event)

    async def write(self, chunk: bytes) -> None:
        """Send ``chunk`` as one chunk of the body and flush it (an empty chunk sends nothing)."""
        if chunk and not self._head_only:
            if self._remaining is not None:
                self._remaining -= len(chunk)
                if self._remaining <= 0:
                    self._completing()
            await self._send(h11.Data(data=chunk))

    async def end(self) -> None:
        """End the body (the terminating zero-length chunk for a chunked one)."""
        self._completing()
        await self._send(h11.EndOfMessage())
        self.finished = True

    async def drop(self) -> None:
        """Close the connection without ending the body: the client sees an incomplete body (or,
        before `start`, no response at all)."""
        self.dropped = True
        self._completing()
        await self._writer.drain()
        self._writer.transport.close()

    async def reset(self) -> None:
        """Abort the connection with a TCP reset (RST) before any byte of a response: the client's
        read fails with "connection reset by peer", as when a server or a middlebox refuses the
        request."""
        if self.started:
            raise RuntimeError("The response head was already sent; a reset must come before it.")
        self.dropped = True
        self._completing()
        sock = self._writer.get_extra_info("socket")
        if sock is not None:
            # A zero linger time makes close() send RST instead of FIN.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self._writer.transport.abort()

    def _completing(self) -> None:
        hook, self.before_complete = self.before_complete, None
        if hook is not None:
            hook()

    async def send(
        self, status: int, headers: Iterable[tuple[str, str]], body: bytes, *, reason: str | None = None
    ) -> None:
        """A whole response with Content-Length."""
        await self.start(status, headers, length=len(body), reason=reason)
        await self.write(body)
        await self.end()

    async def _send(self, event: h11.Event) -> None:
        data = self._connection.send(event)
        if data:
            self._writer.write(data)
            await self._writer.drain()
