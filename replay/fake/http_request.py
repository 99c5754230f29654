"""Reading HTTP/1.1 requests off a connection, for the loopback fake model server: the request
line, headers (names lower-cased, repeats joined), and a body by Content-Length or chunked
(trailers read and ignored), with ``Expect: 100-continue`` answered. Every limit is enforced
here: a line longer than `LINE_LIMIT`, more than 100 headers or a body over 64 MiB is a
`BadRequest` carrying the status to answer with (414, 431, 413 or 400; 505 for another HTTP
version)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

from replay.fake.faults import ErrorType

__all__ = ["HTTP_TOKEN", "LINE_LIMIT", "BadRequest", "HttpRequest", "read_request", "wants_keep_alive"]

LINE_LIMIT: Final = 64 * 1024  # the longest request line or header line
_MAX_HEADERS: Final = 100
_MAX_BODY: Final = 64 * 1024 * 1024
# A method or a header name (RFC 9110 token).
HTTP_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_VERSIONS: Final = ("HTTP/1.0", "HTTP/1.1")


@dataclass(frozen=True, kw_only=True)
class HttpRequest:
    """One request as read off the connection."""

    method: str
    target: str
    version: str
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
    """A request the server refuses, with the status and error type to answer with."""

    def __init__(
        self, message: str, *, status: int = 400, error_type: ErrorType = ErrorType.INVALID_REQUEST_ERROR
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.error_type = error_type


async def read_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> HttpRequest | None:
    """The next request on the connection, or None when the client closed it between requests."""
    line = await _read_line(reader, too_long=BadRequest("The request line is too long.", status=414))
    while line in (b"\r\n", b"\n"):  # RFC 9112 §2.2: ignore an empty line before the request line
        line = await _read_line(reader, too_long=BadRequest("The request line is too long.", status=414))
    if not line.endswith(b"\n"):
        return None  # closed before (or in the middle of) a request line
    parts = line.rstrip(b"\r\n").decode("latin-1").split(" ")
    if len(parts) != 3 or not HTTP_TOKEN.fullmatch(parts[0]) or not parts[1]:
        raise BadRequest(f"Malformed request line {line[:100]!r}; expected `METHOD /path HTTP/1.1`.")
    method, target, version = parts
    if version not in _VERSIONS:
        raise BadRequest(f"Unsupported HTTP version {version!r}; this server speaks HTTP/1.1.", status=505)
    headers = await _read_headers(reader)
    if headers.get("expect", "").lower() == "100-continue" and version == "HTTP/1.1":
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        await writer.drain()
    body = await _read_body(reader, headers)
    return HttpRequest(method=method, target=target, version=version, headers=headers, body=body)


async def _read_line(reader: asyncio.StreamReader, *, too_long: BadRequest) -> bytes:
    try:
        return await reader.readline()
    except ValueError:  # the line is longer than the reader's limit
        raise too_long from None


async def _read_headers(reader: asyncio.StreamReader) -> dict[str, str]:
    headers: dict[str, str] = {}
    for _ in range(_MAX_HEADERS + 1):
        too_long = BadRequest("A request header line is too long.", status=431)
        line = await _read_line(reader, too_long=too_long)
        if not line.endswith(b"\n"):
            raise BadRequest("The connection closed in the middle of the request headers.")
        if line in (b"\r\n", b"\n"):
            return headers
        text = line.rstrip(b"\r\n").decode("latin-1")
        name, colon, value = text.partition(":")
        if not colon or not HTTP_TOKEN.fullmatch(name):
            raise BadRequest(f"Malformed request header line {text[:100]!r}; expected `Name: value`.")
        key = name.lower()
        value = value.strip(" \t")
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    raise BadRequest(f"Too many request headers; at most {_MAX_HEADERS} are accepted.", status=431)


async def _read_body(reader: asyncio.StreamReader, headers: Mapping[str, str]) -> bytes:
    transfer_encoding = headers.get("transfer-encoding")
    if transfer_encoding is not None:
        if "content-length" in headers:
            raise BadRequest("A request may not have both Transfer-Encoding and Content-Length.")
        if transfer_encoding.strip().lower() != "chunked":
            raise BadRequest(f"Unsupported Transfer-Encoding {transfer_encoding!r}; send chunked or Content-Length.")
        return await _read_chunked_body(reader)
    length_text = headers.get("content-length")
    if length_text is None:
        return b""
    values = {value.strip() for value in length_text.split(",")}
    if len(values) != 1 or not next(iter(values)).isdigit():
        raise BadRequest(f"Invalid Content-Length {length_text!r}.")
    length = int(values.pop())
    _check_body_size(length)
    try:
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError:
        raise BadRequest(f"The connection closed before the {length}-byte request body arrived.") from None


async def _read_chunked_body(reader: asyncio.StreamReader) -> bytes:
    body = bytearray()
    while True:
        line = await _read_line(reader, too_long=BadRequest("A chunk-size line is too long."))
        size_text = line.split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise BadRequest(f"Malformed chunk-size line {line[:40]!r} in a chunked request body.") from None
        if size < 0 or not line.endswith(b"\n"):
            raise BadRequest(f"Malformed chunk-size line {line[:40]!r} in a chunked request body.")
        if size == 0:
            break
        _check_body_size(len(body) + size)
        try:
            body += await reader.readexactly(size)
            if await reader.readexactly(2) != b"\r\n":
                raise BadRequest("A chunk of the request body does not end with CRLF.")
        except asyncio.IncompleteReadError:
            raise BadRequest("The connection closed in the middle of a chunked request body.") from None
    await _read_headers(reader)  # trailers: read and ignored
    return bytes(body)


def _check_body_size(length: int) -> None:
    if length > _MAX_BODY:
        message = f"The request body has {length} bytes; this server accepts at most {_MAX_BODY}."
        raise BadRequest(message, status=413, error_type=ErrorType.REQUEST_TOO_LARGE)


def wants_keep_alive(request: HttpRequest) -> bool:
    tokens = {token.strip().lower() for token in request.headers.get("connection", "").split(",")}
    if request.version == "HTTP/1.1":
        return "close" not in tokens
    return "keep-alive" in tokens
