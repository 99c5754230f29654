"""`HttpServer`: a server's life on ``h11`` — binding, serving in a background thread with its own
event loop (`start`/`stop`) or in the current loop (`serve_forever`), one task per connection
with keep-alive, and closing every connection on stop. A subclass answers requests (`handle`)
and says how to refuse a malformed one (`bad_request_response`).

    class Hello(HttpServer):
        async def handle(self, request: Request, response: ResponseWriter) -> None:
            await response.send(200, [("content-type", "text/plain")], b"hello")
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import ipaddress
import logging
import threading
from collections.abc import Callable
from enum import Enum
from typing import Final

import h11

from replay.http.connection import HEAD_LIMIT, BadRequest, Request, ResponseWriter, read_request

__all__ = ["HttpServer"]

logger = logging.getLogger(__name__)

_START_TIMEOUT: Final = 10.0
_STOP_TIMEOUT: Final = 5.0
_SHUTDOWN_GRACE: Final = 1.0
_LINGER: Final = 2.0


class _Phase(Enum):
    NEW = "new"
    RUNNING = "running"
    STOPPED = "stopped"


class HttpServer(abc.ABC):
    """Serves `handle` over HTTP/1.1: in a background thread (`start`) or in the current loop."""

    label = "The HTTP server"
    """How log lines and errors name this server ("The fake model server")."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValueError(f"port must be an integer from 0 to 65535 (0 picks a free port), not {port!r}.")
        # "localhost" may resolve to both ::1 and 127.0.0.1, and port 0 would then bind two different ports.
        self.host = "127.0.0.1" if host == "localhost" else host
        self.port = port
        self.connections_accepted = 0
        """How many TCP connections the server has accepted (keep-alive reuses one for many requests)."""
        self._phase = _Phase.NEW
        self._url: str | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_requested: asyncio.Event | None = None
        self._connections: dict[asyncio.Task[None], asyncio.StreamWriter] = {}

    # --- what a subclass provides ----------------------------------------------------------------

    @abc.abstractmethod
    async def handle(self, request: Request, response: ResponseWriter) -> None:
        """Answer one request through ``response`` (start, write, end — or drop)."""

    def bad_request_response(self, bad: BadRequest) -> tuple[list[tuple[str, str]], bytes]:
        """The headers and body refusing a malformed request (the status is ``bad.status``)."""
        return [("content-type", "text/plain; charset=utf-8")], f"{bad.message}\n".encode()

    async def closing(self) -> None:
        """Called in the serving loop once every connection is closed, before the loop ends."""

    # --- life ------------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The base URL to give a client, e.g. `http://127.0.0.1:54321` (still readable after stop)."""
        if self._url is None:
            raise RuntimeError(f"{self.label} has no URL yet: call start() or serve_forever() first.")
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
                    logger.exception("%s thread failed.", self.label)
                else:
                    failure.append(exc)
                    ready.set()

        name = f"{type(self).__name__}({self.host}:{self.port})"
        self._thread = threading.Thread(target=run, name=name, daemon=True)
        self._thread.start()
        if not ready.wait(_START_TIMEOUT):
            with contextlib.suppress(RuntimeError):
                self.stop()
            raise RuntimeError(f"{self.label} did not start within {_START_TIMEOUT:g} s.")
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
            with contextlib.suppress(RuntimeError):  # the loop has already closed
                self._loop.call_soon_threadsafe(self._stop_requested.set)
        if self._thread is not None:
            self._thread.join(_STOP_TIMEOUT)
            if self._thread.is_alive():
                raise RuntimeError(f"{self.label} at {self._url} did not stop within {_STOP_TIMEOUT:g} s.")

    async def serve_forever(self, *, on_ready: Callable[[str], None] | None = None) -> None:
        """Serve in the current event loop until cancelled (or stop() is called); `on_ready` gets the URL."""
        self._begin()
        try:
            await self._serve(on_ready=on_ready or (lambda _url: None))
        finally:
            self._phase = _Phase.STOPPED

    def __enter__(self) -> HttpServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _begin(self) -> None:
        if self._phase is not _Phase.NEW:
            raise RuntimeError(
                f"This {type(self).__name__} is {self._phase.value}; a server starts once. "
                "Create a new one to serve again."
            )
        self._phase = _Phase.RUNNING

    # --- the serving loop ------------------------------------------------------------------------

    async def _serve(self, *, on_ready: Callable[[str], None]) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop_requested = asyncio.Event()
        if self._phase is _Phase.STOPPED:  # stop() came before this coroutine ran
            self._stop_requested.set()
        server = await asyncio.start_server(self._handle_connection, self.host, self.port)
        try:
            port = server.sockets[0].getsockname()[1]
            self._url = base_url(self.host, port)
            logger.info("%s listens on %s.", self.label, self._url)
            on_ready(self._url)
            await self._stop_requested.wait()
        finally:
            server.close()
            await asyncio.sleep(0)  # let connections accepted just now register, so they are closed too
            await self._close_connections()
            await server.wait_closed()
            await self.closing()
            logger.info("%s at %s has stopped.", self.label, self._url)

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
            logger.info("The client at %s disconnected mid-exchange (%s); %s carries on.", peer, exc, self.label)
        except Exception:
            logger.exception("%s failed on the connection from %s; it carries on.", self.label, peer)
        finally:
            del self._connections[task]
            if not writer.transport.is_closing():
                writer.transport.abort()

    async def _serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Answer requests one after another until the client or a response ends the connection."""
        connection = h11.Connection(h11.SERVER, max_incomplete_event_size=HEAD_LIMIT)
        while True:
            try:
                request = await read_request(connection, reader, writer)
            except BadRequest as bad:
                logger.info("Rejected a malformed request with %d: %s", bad.status, bad.message)
                if connection.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                    headers, body = self.bad_request_response(bad)
                    refusal = ResponseWriter(connection, writer, method="GET", keep_alive=False)
                    await refusal.send(bad.status, headers, body)
                    await _linger(reader, writer)
                return
            if request is None:
                return
            response = ResponseWriter(connection, writer, method=request.method)
            await self.handle(request, response)
            if response.dropped:
                return
            if not response.finished:
                raise RuntimeError(f"{type(self).__name__}.handle returned without ending or dropping the response.")
            if connection.our_state is not h11.DONE or connection.their_state is not h11.DONE:
                return  # Connection: close, an HTTP/1.0 client, or a body that ends with the connection
            connection.start_next_cycle()


async def _linger(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """After a refusal: half-close, and discard what the client still sends for a moment, so that
    closing with its data unread does not reset the connection before it has read the refusal."""
    if writer.can_write_eof():
        writer.write_eof()
    with contextlib.suppress(OSError, TimeoutError):
        async with asyncio.timeout(_LINGER):
            while await reader.read(65536):
                pass


def base_url(host: str, port: int) -> str:
    """``http://host:port`` (brackets for IPv6; loopback for an unspecified address)."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return f"http://{host}:{port}"
    if address.is_unspecified:  # bound to every interface (allow_remote): loopback reaches it too
        address = ipaddress.ip_address("::1" if address.version == 6 else "127.0.0.1")
    return f"http://[{address}]:{port}" if address.version == 6 else f"http://{address}:{port}"
