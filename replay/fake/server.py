"""The fake model over real HTTP on loopback, so the unmodified SDK (or curl) can talk to it.

`FakeModelServer` owns the server's life: binding (loopback only unless told otherwise), serving
in a background thread with its own event loop (`start`/`stop`) or in the current loop
(`serve_forever`), one task per connection and keep-alive, the API-key check, and closing every
connection on stop. It speaks just enough HTTP/1.1 for a Messages API client: requests are read
by `replay.fake.http_request` (Content-Length and chunked bodies) and answers written by
`replay.fake.http_response` (JSON with Content-Length, SSE with ``Transfer-Encoding: chunked``,
one chunk per event; a scripted dropped connection closes the socket without the terminating
zero-length chunk, so the client sees a real incomplete body).

    with FakeModelServer(FakeModel(load_scenario("scenario.yaml"))) as server:
        client = anthropic.Anthropic(api_key="sk-ant-test", base_url=server.url, max_retries=0)
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from enum import Enum, StrEnum
from typing import Final

from replay.fake.faults import ErrorType
from replay.fake.http_request import LINE_LIMIT, BadRequest, HttpRequest, read_request, wants_keep_alive
from replay.fake.http_response import error_response, send_response
from replay.fake.model import FakeModel, FakeResponse, ScenarioExhaustedError
from replay.loopback import is_loopback

__all__ = ["AuthStyle", "FakeModelServer"]

logger = logging.getLogger(__name__)

_START_TIMEOUT: Final = 10.0
_STOP_TIMEOUT: Final = 5.0
_SHUTDOWN_GRACE: Final = 1.0


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
        if not allow_remote and not is_loopback(host):
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
        server = await asyncio.start_server(self._handle_connection, self.host, self.port, limit=LINE_LIMIT)
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
                request = await read_request(reader, writer)
            except BadRequest as bad:
                logger.info("Rejected a malformed request with %d: %s", bad.status, bad.message)
                response = error_response(bad.status, bad.error_type, bad.message)
                await send_response(writer, response, version="HTTP/1.1", method="GET", keep_alive=False)
                return
            if request is None:
                return
            response = self._answer(request)
            keep_alive = wants_keep_alive(request)
            if not await send_response(
                writer, response, version=request.version, method=request.method, keep_alive=keep_alive
            ):
                return

    def _answer(self, request: HttpRequest) -> FakeResponse:
        style = _auth_style(request.headers)
        self.auth_styles[style] += 1
        if style is AuthStyle.NONE and self.require_auth:
            message = (
                "The fake model server needs an API key: send `Authorization: Bearer <key>` or `x-api-key: <key>` "
                "(any key is accepted), or start the server with require_auth=False."
            )
            return error_response(401, ErrorType.AUTHENTICATION_ERROR, message)
        path = request.path
        try:
            return self.fake_model.respond(request.method, path, request.headers, request.body)
        except ScenarioExhaustedError as exc:
            logger.warning("Answered %s %s with 500: %s", request.method, path, exc)
            return error_response(500, ErrorType.API_ERROR, str(exc))
        except Exception as exc:
            logger.exception("The fake model failed to answer %s %s; answered 500.", request.method, path)
            message = f"The fake model failed to answer {request.method} {path}: {type(exc).__name__}: {exc}"
            return error_response(500, ErrorType.API_ERROR, message)


def _auth_style(headers: Mapping[str, str]) -> AuthStyle:
    scheme, _, key = headers.get("authorization", "").strip().partition(" ")
    if scheme.lower() == "bearer" and key.strip():
        return AuthStyle.BEARER
    if headers.get("x-api-key", "").strip():
        return AuthStyle.X_API_KEY
    return AuthStyle.NONE


# --- addresses -------------------------------------------------------------------------------


def _base_url(host: str, port: int) -> str:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return f"http://{host}:{port}"
    if address.is_unspecified:  # bound to every interface (allow_remote): loopback reaches it too
        address = ipaddress.ip_address("::1" if address.version == 6 else "127.0.0.1")
    return f"http://[{address}]:{port}" if address.version == 6 else f"http://{address}:{port}"
