"""The fake model over real HTTP on loopback, so the unmodified SDK (or curl) can talk to it.

`FakeModelServer` speaks just enough HTTP/1.1 for a Messages API client: keep-alive, Content-Length
and chunked request bodies, JSON answers with Content-Length, and SSE answers with
`Transfer-Encoding: chunked`, one chunk per event, flushed as it goes. A scripted dropped connection
closes the socket without the terminating zero-length chunk, so the client sees a real incomplete body.

    with FakeModelServer(FakeModel(load_scenario("scenario.yaml"))) as server:
        client = anthropic.Anthropic(api_key="sk-ant-test", base_url=server.url, max_retries=0)
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import re
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum, StrEnum
from http import HTTPStatus
from typing import Final
from urllib.parse import urlsplit

from replay.fake.faults import ErrorType
from replay.fake.model import FakeModel, FakeResponse, ScenarioExhaustedError
from replay.fake.sse import error_body

__all__ = ["AuthStyle", "FakeModelServer"]

logger = logging.getLogger(__name__)

_LINE_LIMIT: Final = 64 * 1024  # the longest request line or header line
_MAX_HEADERS: Final = 100
_MAX_BODY: Final = 64 * 1024 * 1024
_START_TIMEOUT: Final = 10.0
_STOP_TIMEOUT: Final = 5.0
_SHUTDOWN_GRACE: Final = 1.0
_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_VERSIONS: Final = ("HTTP/1.0", "HTTP/1.1")
# The server owns the framing of every response; the same headers from a script would contradict it.
_FRAMING_HEADERS: Final = frozenset({"content-length", "transfer-encoding", "connection", "keep-alive"})
_REASONS: Final = {529: "Overloaded"}


class AuthStyle(StrEnum):
    """How a request presented its API key (the server accepts any key)."""

    BEARER = "bearer"
    X_API_KEY = "x-api-key"
    NONE = "none"


class _Phase(Enum):
    NEW = "new"
    RUNNING = "running"
    STOPPED = "stopped"


class FakeModelServer:
    """Serves a FakeModel over HTTP/1.1 on loopback: in a background thread (`start`) or in the current loop."""

    def __init__(
        self,
        fake_model: FakeModel,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        require_auth: bool = True,
        allow_remote: bool = False,
    ) -> None:
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValueError(f"port must be an integer from 0 to 65535 (0 picks a free port), not {port!r}.")
        if not allow_remote and not _is_loopback(host):
            raise ValueError(
                f"FakeModelServer serves only loopback addresses (127.0.0.1, ::1, localhost), not {host!r}: "
                "the fake model checks no keys. Pass allow_remote=True to serve another address anyway."
            )
        self.fake_model = fake_model
        # "localhost" may resolve to both ::1 and 127.0.0.1, and port 0 would then bind two different ports.
        self.host = "127.0.0.1" if host == "localhost" else host
        self.port = port
        self.require_auth = require_auth
        self.auth_styles: Counter[AuthStyle] = Counter()
        """How many requests presented each auth style."""
        self.connections_accepted = 0
        """How many TCP connections the server has accepted (keep-alive reuses one for many requests)."""
        self._phase = _Phase.NEW
        self._url: str | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_requested: asyncio.Event | None = None
        self._connections: dict[asyncio.Task[None], asyncio.StreamWriter] = {}

    @property
    def url(self) -> str:
        """The base URL to give a client, e.g. `http://127.0.0.1:54321` (still readable after stop)."""
        if self._url is None:
            raise RuntimeError("The fake model server has no URL yet: call start() or serve_forever() first.")
        return self._url

    def start(self) -> str:
        """Bind (a free port when port=0), serve in a background thread with its own loop, and return the URL."""
        self._begin()
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            try:
                asyncio.run(self._serve(on_ready=lambda _url: ready.set()))
            except BaseException as exc:  # the thread must report, never die silently
                if ready.is_set():
                    logger.exception("The fake model server thread failed.")
                else:
                    failure.append(exc)
                    ready.set()

        self._thread = threading.Thread(target=run, name=f"FakeModelServer({self.host}:{self.port})", daemon=True)
        self._thread.start()
        if not ready.wait(_START_TIMEOUT):
            with contextlib.suppress(RuntimeError):
                self.stop()
            raise RuntimeError(f"The fake model server did not start within {_START_TIMEOUT:g} s.")
        if failure:
            self._thread.join()
            self._phase = _Phase.STOPPED
            raise failure[0]
        return self.url

    def stop(self) -> None:
        """Close the listening socket and every open connection, and join the thread; safe to call twice."""
        if self._phase is not _Phase.RUNNING:
            self._phase = _Phase.STOPPED
            return
        self._phase = _Phase.STOPPED
        if self._loop is not None and self._stop_requested is not None:
            try:
                self._loop.call_soon_threadsafe(self._stop_requested.set)
            except RuntimeError:  # the loop has already closed
                pass
        if self._thread is not None:
            self._thread.join(_STOP_TIMEOUT)
            if self._thread.is_alive():
                raise RuntimeError(f"The fake model server at {self._url} did not stop within {_STOP_TIMEOUT:g} s.")

    async def serve_forever(self, *, on_ready: Callable[[str], None] | None = None) -> None:
        """Serve in the current event loop until cancelled (or stop() is called); `on_ready` gets the URL."""
        self._begin()
        try:
            await self._serve(on_ready=on_ready or (lambda _url: None))
        finally:
            self._phase = _Phase.STOPPED

    def __enter__(self) -> FakeModelServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _begin(self) -> None:
        if self._phase is not _Phase.NEW:
            raise RuntimeError(
                f"This FakeModelServer is {self._phase.value}; a server starts once. Create a new one to serve again."
            )
        self._phase = _Phase.RUNNING

    # --- the serving loop --------------------------------------------------------------------

    async def _serve(self, *, on_ready: Callable[[str], None]) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop_requested = asyncio.Event()
        if self._phase is _Phase.STOPPED:  # stop() came before this coroutine ran
            self._stop_requested.set()
        server = await asyncio.start_server(self._handle_connection, self.host, self.port, limit=_LINE_LIMIT)
        try:
            port = server.sockets[0].getsockname()[1]
            self._url = _base_url(self.host, port)
            logger.info("The fake model server listens on %s.", self._url)
            on_ready(self._url)
            await self._stop_requested.wait()
        finally:
            server.close()
            await asyncio.sleep(0)  # let connections accepted just now register, so they are closed too
            await self._close_connections()
            await server.wait_closed()
            logger.info("The fake model server at %s has stopped.", self._url)

    async def _close_connections(self) -> None:
        tasks = list(self._connections)
        for task, writer in list(self._connections.items()):
            writer.transport.abort()
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=_SHUTDOWN_GRACE)

    async def _handle_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections[task] = writer
        self.connections_accepted += 1
        peer = writer.get_extra_info("peername")
        try:
            await self._serve_connection(reader, writer)
            writer.close()
            await writer.wait_closed()
        except asyncio.CancelledError:
            pass  # stop() aborted this connection; nothing more can be sent
        except OSError as exc:
            logger.info("The client at %s disconnected mid-exchange (%s); the server carries on.", peer, exc)
        except Exception:
            logger.exception("The fake model server failed on the connection from %s; it carries on.", peer)
        finally:
            del self._connections[task]
            if not writer.transport.is_closing():
                writer.transport.abort()

    async def _serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Answer requests one after another until the client or a response ends the connection."""
        while True:
            try:
                request = await _read_request(reader, writer)
            except _BadRequest as bad:
                logger.info("Rejected a malformed request with %d: %s", bad.status, bad.message)
                response = _error_response(bad.status, bad.error_type, bad.message)
                await _send(writer, response, version="HTTP/1.1", method="GET", keep_alive=False)
                return
            if request is None:
                return
            response = self._answer(request)
            keep_alive = _wants_keep_alive(request)
            if not await _send(writer, response, version=request.version, method=request.method, keep_alive=keep_alive):
                return

    def _answer(self, request: _Request) -> FakeResponse:
        style = _auth_style(request.headers)
        self.auth_styles[style] += 1
        if style is AuthStyle.NONE and self.require_auth:
            message = (
                "The fake model server needs an API key: send `Authorization: Bearer <key>` or `x-api-key: <key>` "
                "(any key is accepted), or start the server with require_auth=False."
            )
            return _error_response(401, ErrorType.AUTHENTICATION_ERROR, message)
        path = request.path
        try:
            return self.fake_model.respond(request.method, path, request.headers, request.body)
        except ScenarioExhaustedError as exc:
            logger.warning("Answered %s %s with 500: %s", request.method, path, exc)
            return _error_response(500, ErrorType.API_ERROR, str(exc))
        except Exception as exc:
            logger.exception("The fake model failed to answer %s %s; answered 500.", request.method, path)
            message = f"The fake model failed to answer {request.method} {path}: {type(exc).__name__}: {exc}"
            return _error_response(500, ErrorType.API_ERROR, message)


# --- reading requests ------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class _Request:
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


class _BadRequest(Exception):
    def __init__(
        self, message: str, *, status: int = 400, error_type: ErrorType = ErrorType.INVALID_REQUEST_ERROR
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.error_type = error_type


async def _read_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> _Request | None:
    """The next request on the connection, or None when the client closed it between requests."""
    line = await _read_line(reader, too_long=_BadRequest("The request line is too long.", status=414))
    while line in (b"\r\n", b"\n"):  # RFC 9112 §2.2: ignore an empty line before the request line
        line = await _read_line(reader, too_long=_BadRequest("The request line is too long.", status=414))
    if not line.endswith(b"\n"):
        return None  # closed before (or in the middle of) a request line
    parts = line.rstrip(b"\r\n").decode("latin-1").split(" ")
    if len(parts) != 3 or not _TOKEN.fullmatch(parts[0]) or not parts[1]:
        raise _BadRequest(f"Malformed request line {line[:100]!r}; expected `METHOD /path HTTP/1.1`.")
    method, target, version = parts
    if version not in _VERSIONS:
        raise _BadRequest(f"Unsupported HTTP version {version!r}; this server speaks HTTP/1.1.", status=505)
    headers = await _read_headers(reader)
    if headers.get("expect", "").lower() == "100-continue" and version == "HTTP/1.1":
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        await writer.drain()
    body = await _read_body(reader, headers)
    return _Request(method=method, target=target, version=version, headers=headers, body=body)


async def _read_line(reader: asyncio.StreamReader, *, too_long: _BadRequest) -> bytes:
    try:
        return await reader.readline()
    except ValueError:  # the line is longer than the reader's limit
        raise too_long from None


async def _read_headers(reader: asyncio.StreamReader) -> dict[str, str]:
    headers: dict[str, str] = {}
    for _ in range(_MAX_HEADERS + 1):
        too_long = _BadRequest("A request header line is too long.", status=431)
        line = await _read_line(reader, too_long=too_long)
        if not line.endswith(b"\n"):
            raise _BadRequest("The connection closed in the middle of the request headers.")
        if line in (b"\r\n", b"\n"):
            return headers
        text = line.rstrip(b"\r\n").decode("latin-1")
        name, colon, value = text.partition(":")
        if not colon or not _TOKEN.fullmatch(name):
            raise _BadRequest(f"Malformed request header line {text[:100]!r}; expected `Name: value`.")
        key = name.lower()
        value = value.strip(" \t")
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    raise _BadRequest(f"Too many request headers; at most {_MAX_HEADERS} are accepted.", status=431)


async def _read_body(reader: asyncio.StreamReader, headers: Mapping[str, str]) -> bytes:
    transfer_encoding = headers.get("transfer-encoding")
    if transfer_encoding is not None:
        if "content-length" in headers:
            raise _BadRequest("A request may not have both Transfer-Encoding and Content-Length.")
        if transfer_encoding.strip().lower() != "chunked":
            raise _BadRequest(f"Unsupported Transfer-Encoding {transfer_encoding!r}; send chunked or Content-Length.")
        return await _read_chunked_body(reader)
    length_text = headers.get("content-length")
    if length_text is None:
        return b""
    values = {value.strip() for value in length_text.split(",")}
    if len(values) != 1 or not next(iter(values)).isdigit():
        raise _BadRequest(f"Invalid Content-Length {length_text!r}.")
    length = int(values.pop())
    _check_body_size(length)
    try:
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError:
        raise _BadRequest(f"The connection closed before the {length}-byte request body arrived.") from None


async def _read_chunked_body(reader: asyncio.StreamReader) -> bytes:
    body = bytearray()
    while True:
        line = await _read_line(reader, too_long=_BadRequest("A chunk-size line is too long."))
        size_text = line.split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise _BadRequest(f"Malformed chunk-size line {line[:40]!r} in a chunked request body.") from None
        if size < 0 or not line.endswith(b"\n"):
            raise _BadRequest(f"Malformed chunk-size line {line[:40]!r} in a chunked request body.")
        if size == 0:
            break
        _check_body_size(len(body) + size)
        try:
            body += await reader.readexactly(size)
            if await reader.readexactly(2) != b"\r\n":
                raise _BadRequest("A chunk of the request body does not end with CRLF.")
        except asyncio.IncompleteReadError:
            raise _BadRequest("The connection closed in the middle of a chunked request body.") from None
    await _read_headers(reader)  # trailers: read and ignored
    return bytes(body)


def _check_body_size(length: int) -> None:
    if length > _MAX_BODY:
        message = f"The request body has {length} bytes; this server accepts at most {_MAX_BODY}."
        raise _BadRequest(message, status=413, error_type=ErrorType.REQUEST_TOO_LARGE)


def _wants_keep_alive(request: _Request) -> bool:
    tokens = {token.strip().lower() for token in request.headers.get("connection", "").split(",")}
    if request.version == "HTTP/1.1":
        return "close" not in tokens
    return "keep-alive" in tokens


def _auth_style(headers: Mapping[str, str]) -> AuthStyle:
    scheme, _, key = headers.get("authorization", "").strip().partition(" ")
    if scheme.lower() == "bearer" and key.strip():
        return AuthStyle.BEARER
    if headers.get("x-api-key", "").strip():
        return AuthStyle.X_API_KEY
    return AuthStyle.NONE


# --- writing responses -----------------------------------------------------------------------


async def _send(
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
        response = _error_response(500, ErrorType.API_ERROR, f"The fake model's response cannot be sent: {exc}")
        return await _send(writer, response, version=version, method=method, keep_alive=keep_alive)
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
        if not _TOKEN.fullmatch(name) or any(char in value for char in "\r\n\0"):
            raise ValueError(f"the header {name!r}: {value!r} cannot be sent over HTTP/1.1")
        lines.append(f"{name}: {value}")
    try:
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    except UnicodeEncodeError:
        raise ValueError(f"a response header is not Latin-1 text: {headers!r}") from None


def _error_response(status: int, error_type: ErrorType, message: str) -> FakeResponse:
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


# --- addresses -------------------------------------------------------------------------------


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name other than localhost: resolving it is no proof it stays local


def _base_url(host: str, port: int) -> str:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return f"http://{host}:{port}"
    if address.is_unspecified:  # bound to every interface (allow_remote): loopback reaches it too
        address = ipaddress.ip_address("::1" if address.version == 6 else "127.0.0.1")
    return f"http://[{address}]:{port}" if address.version == 6 else f"http://{address}:{port}"
