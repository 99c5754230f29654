"""Recording sessions into cassettes through vcrpy's ``httpx2`` patching.

``CassetteRecorder`` hands out an ``httpx2.AsyncClient`` for the engine's ``AnthropicModel``.
Depending on the record mode, its requests are answered from the cassette, or sent for real
(to the API, or to the local fake server) while vcrpy captures them, secrets scrubbed before
anything is kept. vcrpy cannot keep a response whose body breaks off (it saves nothing when the
read fails), so the recorder watches the bytes below vcrpy as well: a connection dropped
mid-body, or one that never answered, is recorded as a fault and replays as the same fault. The
cassette is written once, atomically, when the recorder closes.
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import json
import os
import ssl
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx2

from replay.cassette._io import load_cassette, save_cassette
from replay.cassette._model import Cassette, CassetteError
from replay.cassette.fingerprints import Normalizer, fingerprint_with_body, parse_body
from replay.cassette.interaction import Interaction, encode_sse_event, parse_sse
from replay.cassette.placeholders import path_replacements, replace_paths
from replay.cassette.record_mode import RecordMode, RecordModeError, parse_record_mode
from replay.cassette.rewrite import CassetteRewrite, DivergenceHook, RewriteCounts
from replay.cassette.scrub import RequestBodyScrub, scrub_bytes, scrub_vcr_request, scrub_vcr_response
from replay.cassette.transport import (
    CONNECTION_FAILED_MESSAGE,
    CassetteMismatchError,
    CassettePlayer,
    CassetteTransport,
    LoggedRequest,
    replay_response,
    request_path,
)
from replay.storage.stale_folders import ScratchKind, scratch_prefix

__all__ = ["CassetteNotFoundError", "CassetteRecorder", "RecordMode", "RecordModeError", "parse_record_mode"]

FAULT_KEY = "x_agent_replay_fault"


class CassetteNotFoundError(FileNotFoundError):
    """Record mode ``none`` (or a replay) with no cassette to read."""


@dataclass
class _Capture:
    """What arrived below vcrpy for the request in flight."""

    status: int | None = None
    reason: str = ""
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytearray = field(default_factory=bytearray)


_CAPTURE: contextvars.ContextVar[_Capture | None] = contextvars.ContextVar("agent_replay_capture", default=None)


class CassetteRecorder:
    """A cassette opened for a session: ``with CassetteRecorder(path, mode=...) as recorder:``
    then ``recorder.async_client()`` for the model. On close, what was recorded is saved. In
    mode rewrite, ``on_divergence`` is called once before the first request goes upstream (see
    `replay.cassette.rewrite`), and ``rewrite_counts`` says what was kept, re-recorded and pruned."""

    def __init__(
        self,
        path: Path,
        *,
        mode: RecordMode | str = RecordMode.NONE,
        workspace: Path | None = None,
        session_dir: Path | None = None,
        strict: bool = False,
        stored_base_url: tuple[str, str] | None = None,
        on_divergence: DivergenceHook | None = None,
    ) -> None:
        self.path = Path(path)
        # (actual, stored): e.g. the loopback fake server's URL, whose port changes on every run,
        # saved as a fixed name so a re-recording is byte-identical.
        self.stored_base_url = stored_base_url
        self.mode = parse_record_mode(mode)
        self.workspace, self.session_dir = workspace, session_dir
        self.strict = strict
        self.player: CassettePlayer | None = None
        # Record mode rewrite: the splice of the old cassette and the new recording, and once
        # the recorder has closed, what it did (kept, re-recorded, pruned).
        self.rewrite: CassetteRewrite | None = None
        self.rewrite_counts: RewriteCounts | None = None
        self._on_divergence = on_divergence
        self._existing: Cassette | None = None
        self._vcr_context: Any = None
        self._vcr_cassette: Any = None
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self._collected: dict[str, Any] | None = None
        self._clients: list[httpx2.AsyncClient] = []
        # Each recorded request's body is scrubbed once, not once by us and thrice by vcrpy.
        self._scrub_body = RequestBodyScrub()
        # Every request of the session in order, answered from the cassette or recorded.
        self.request_log: list[LoggedRequest] = []
        # The session clock the logged requests are stamped with; set it before the first
        # request (None: no session clock, as in a live recording).
        self.clock: Callable[[], float] | None = None

    @property
    def recording(self) -> bool:
        """Whether requests not in the cassette go to the network."""
        return self._vcr_cassette is not None

    def __enter__(self) -> CassetteRecorder:
        exists = self.path.exists()
        if self.mode is RecordMode.NONE and not exists:
            raise CassetteNotFoundError(
                f"Cassette {self.path} does not exist and record mode is 'none', which never touches the network; "
                "record it first with record mode 'once' or 'all'."
            )
        if self.mode is RecordMode.REWRITE:
            self._existing = load_cassette(self.path) if exists else None
            self.rewrite = CassetteRewrite(
                self._existing,
                normalizer=self._live_normalizer(),
                on_divergence=self._on_divergence,
            )
            self._start_vcr()
            return self
        if exists and not self.mode.replaces:
            self._existing = load_cassette(self.path)
            self.player = CassettePlayer.from_cassette(
                self._existing, workspace=self.workspace, session_dir=self.session_dir, strict=self.strict
            )
            self.player.clock = self.now
            if self.mode is not RecordMode.NEW_EPISODES:
                self.request_log = self.player.log
        if self.mode is RecordMode.NEW_EPISODES or self.mode.replaces or not exists:
            self._start_vcr()
        return self

    def _start_vcr(self) -> None:
        # vcrpy patches httpx2 and captures each interaction; the file itself is ours to write
        # (atomically, in our format), so vcrpy's persister only hands the interactions over.
        # Imported here: a replay never records, and vcrpy (with the requests and httpx it
        # patches) is about 0.12 s of every `replay verify` start.
        import vcr

        self._scratch = tempfile.TemporaryDirectory(prefix=scratch_prefix(ScratchKind.RECORD))
        my_vcr = vcr.VCR(
            record_mode="all",
            before_record_request=functools.partial(scrub_vcr_request, scrub_body=self._scrub_body),
            before_record_response=scrub_vcr_response,
            decode_compressed_response=True,
        )
        my_vcr.register_persister(_HandOver(self))
        self._vcr_context = my_vcr.use_cassette(str(Path(self._scratch.name) / "scratch.yaml"))
        self._vcr_cassette = self._vcr_context.__enter__()

    def now(self) -> float | None:
        """The session clock's reading, for stamping a request (None without a clock)."""
        return None if self.clock is None else self.clock()

    def normalize_body(self, body: dict[str, Any]) -> dict[str, Any]:
        """``body`` as this cassette's fingerprints read it (the workspace, session folder, temp
        folders, home, uuids and timestamps as placeholders): what a fake model counts tokens
        from, so a count does not move with the folder a session runs in."""
        normalized: dict[str, Any] = json.loads(self._body_normalizer.body(body))
        return normalized

    def _live_normalizer(self) -> Normalizer:
        # This run's folders, and the existing cassette's temp folder (`Cassette.replay_normalizer`).
        if self._existing is None:
            return Normalizer.for_paths(workspace=self.workspace, session_dir=self.session_dir)
        return self._existing.replay_normalizer(workspace=self.workspace, session_dir=self.session_dir)

    @functools.cached_property
    def _body_normalizer(self) -> Normalizer:
        # One for the session: it remembers the values it normalized, and a loop re-sends them.
        return Normalizer.for_paths(workspace=self.workspace, session_dir=self.session_dir)

    def async_client(self, **kwargs: Any) -> httpx2.AsyncClient:
        """An ``httpx2.AsyncClient`` for ``AnthropicModel(http_client=...)``."""
        transport: httpx2.AsyncBaseTransport
        if self.recording:
            transport = self.recording_transport()
        else:
            assert self.player is not None
            transport = CassetteTransport(self.player)
        client = httpx2.AsyncClient(transport=transport, **kwargs)
        self._clients.append(client)
        return client

    def recording_transport(
        self,
        inner: httpx2.AsyncHTTPTransport | None = None,
        *,
        send: Callable[[httpx2.Request], Awaitable[httpx2.Response]] | None = None,
    ) -> RecordingTransport:
        """While recording: a transport that answers what the cassette has (``new_episodes``) and
        sends the rest through ``inner`` (by ``send``, default ``inner.handle_async_request``)."""
        if not self.recording:
            raise RuntimeError(f"The recorder of {self.path} is not recording (record mode {self.mode.value}).")
        return RecordingTransport(
            self.player,
            self._vcr_cassette,
            inner,
            send=send,
            normalizer=self._live_normalizer(),  # read as the cassette's kept requests are
            log=self.request_log,
            rewrite=self.rewrite,
            clock=self.now,
            scrub_body=self._scrub_body,
        )

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        # Whatever happened in the session, what was recorded is kept.
        if self._vcr_context is not None:
            self._vcr_context.__exit__(exc_type, exc, tb)
            self._vcr_context = None
            self._save()
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None
        if exc_type is None and self.player is not None and not self.recording:
            self.player.finish()

    def _save(self) -> None:
        from replay.cassette._vcr import interactions_from_vcr  # see _start_vcr

        collected = self._collected or {"requests": [], "responses": []}
        recorded = interactions_from_vcr(collected["requests"], collected["responses"])
        if self.rewrite is not None:
            self.rewrite_counts = self.rewrite.counts(len(recorded))
            if self._existing is not None and not self.rewrite_counts.changed:
                return  # the cassette is what it was: not touched
        elif not recorded and not self.mode.replaces:
            return
        kept: list[Interaction] = []
        recorded_paths: dict[str, str] = {}
        as_before = False
        if self._existing is not None and self.mode in (RecordMode.NEW_EPISODES, RecordMode.REWRITE):
            kept = list(self._existing.interactions) if self.rewrite is None else self.rewrite.kept
            recorded_paths = dict(self._existing.recorded_paths)
            as_before = bool(kept) and self._existing.normalizer().legacy  # nothing kept: a fresh cassette
        replacements = path_replacements(workspace=self.workspace, session_dir=self.session_dir)
        recorded = [self._stored_uri(replace_paths(interaction, replacements)) for interaction in recorded]
        try:
            interactions = [*kept, *recorded]
            save_cassette(Cassette(interactions, recorded_paths=recorded_paths, temp_as_before=as_before), self.path)
        except CassetteError as err:
            raise err.for_source(str(self.path)) from None

    def _stored_uri(self, interaction: Interaction) -> Interaction:
        if self.stored_base_url is None:
            return interaction
        actual, stored = (base.rstrip("/") for base in self.stored_base_url)
        uri = interaction.request.uri
        if not uri.startswith(actual):
            return interaction
        request = dataclasses.replace(interaction.request, uri=stored + uri[len(actual) :])
        return Interaction(request, interaction.response)

    def unplayed(self) -> list[int]:
        return self.player.unplayed() if self.player is not None else []


class _HandOver:
    """A vcrpy persister that writes nothing: it hands the recorded interactions to the recorder."""

    def __init__(self, recorder: CassetteRecorder) -> None:
        self._recorder = recorder

    def load_cassette(self, cassette_path: str, serializer: Any) -> Any:
        from vcr.persisters.filesystem import CassetteNotFoundError as VcrNotFound

        raise VcrNotFound(cassette_path)

    def save_cassette(self, cassette_path: str, cassette_dict: dict[str, Any], serializer: Any) -> None:
        self._recorder._collected = cassette_dict


class RecordingTransport(httpx2.AsyncBaseTransport):
    """Answers from the cassette what it can (``new_episodes``; ``rewrite`` until the first
    divergence) and sends the rest over real HTTP, where vcrpy records it; faults below vcrpy
    are recorded here."""

    def __init__(
        self,
        player: CassettePlayer | None,
        vcr_cassette: Any,
        inner: httpx2.AsyncHTTPTransport | None = None,
        *,
        send: Callable[[httpx2.Request], Awaitable[httpx2.Response]] | None = None,
        normalizer: Normalizer | None = None,
        log: list[LoggedRequest] | None = None,
        rewrite: CassetteRewrite | None = None,
        clock: Callable[[], float | None] | None = None,
        scrub_body: Callable[[bytes], bytes] = scrub_bytes,
    ) -> None:
        self.player = player
        self._scrub_body = scrub_body
        self.rewrite = rewrite
        self.clock = clock
        self._normalizer = normalizer or Normalizer()
        self.log: list[LoggedRequest] = log if log is not None else []
        self._vcr_cassette = vcr_cassette
        self.inner = inner or httpx2.AsyncHTTPTransport(verify=_ssl_context(*_ssl_environment()))
        if not isinstance(self.inner._pool, _CapturingPool):
            self.inner._pool = _CapturingPool(self.inner._pool)
        # How a request goes out (through vcrpy's patch of httpx2): the inner transport, unless
        # the caller already sits in its place (the pytest plugin's interception of every client).
        self._send = send or self.inner.handle_async_request

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = await request.aread()
        path = request_path(request)
        key, normalized = fingerprint_with_body(
            request.method, path, parse_body(self._scrub_body(body)), normalizer=self._normalizer
        )
        logged = LoggedRequest(path, key, body=normalized, at=self.clock() if self.clock is not None else None)
        if self.rewrite is not None:
            kept = self.rewrite.answer(request.method, path, body, key=key)
            if kept is not None:
                self.log.append(dataclasses.replace(logged, answered=kept.response.began))
                return replay_response(kept, request, sync=False)
        elif self.player is not None:
            try:
                interaction = self.player.match(request.method, path, body)
            except CassetteMismatchError:
                pass  # a new episode: record it
            else:
                self.log.append(self.player.log[-1])
                return replay_response(interaction, request, sync=False)
        self.log.append(logged)
        entry = len(self.log) - 1
        capture = _Capture()
        token = _CAPTURE.set(capture)
        try:
            response = await self._send(request)
            self.log[entry] = dataclasses.replace(logged, answered=response.status_code < 400)
            return response
        except httpx2.TransportError as exc:
            self.log[entry] = dataclasses.replace(logged, answered=capture.status is not None and capture.status < 400)
            if capture.status is None:
                self._record_fault(request, body, capture, {"kind": "connection_failed"})
                # The live session sees exactly what its replay will: the cassette keeps no error text.
                raise httpx2.ConnectError(CONNECTION_FAILED_MESSAGE, request=request) from exc
            events = parse_sse(bytes(capture.body)) if _is_event_stream(capture.headers) else None
            if events is not None:
                fault = {"kind": "dropped_connection", "after_events": len(events)}
                chunks = [encode_sse_event(e) for e in events]
            else:
                fault = {"kind": "dropped_connection", "after_bytes": len(capture.body)}
                chunks = [bytes(capture.body)] if capture.body else []
            self._record_fault(request, body, capture, fault)
            # The live session sees exactly what its replay will: what arrived, then the drop.
            return httpx2.Response(
                capture.status,
                headers=capture.headers,
                stream=_BrokenStream(chunks, exc),
                request=request,
            )
        finally:
            _CAPTURE.reset(token)

    def _record_fault(self, request: httpx2.Request, body: bytes, capture: _Capture, fault: dict[str, Any]) -> None:
        headers: dict[str, list[str]] = {}
        for name, value in capture.headers:
            headers.setdefault(name, []).append(value)
        response = {
            "status": {"code": capture.status or 0, "message": capture.reason},
            "headers": headers,
            "body": {"string": bytes(capture.body)},
            FAULT_KEY: fault,
        }
        from vcr.request import Request as VcrRequest  # see _start_vcr

        vcr_request = VcrRequest(request.method, str(request.url), body, dict(request.headers))
        self._vcr_cassette.append(vcr_request, response)

    async def aclose(self) -> None:
        await self.inner.aclose()


def _ssl_environment() -> tuple[str | None, str | None]:
    return os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")


@functools.lru_cache(maxsize=4)
def _ssl_context(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    """httpx2's default context (it reads the two variables, the key here), made once a process:
    loading the CA store costs 25 ms of CPU, which every recording paid for its transport even
    when it only talks to the fake server on loopback. A context is safe to share."""
    return httpx2.create_ssl_context()


class _CapturingPool:
    """Wraps httpcore's connection pool to keep a copy of each response's bytes as they arrive."""

    def __init__(self, pool: Any) -> None:
        self._pool = pool

    async def handle_async_request(self, request: Any) -> Any:
        response = await self._pool.handle_async_request(request)
        capture = _CAPTURE.get()
        if capture is not None:
            capture.status = response.status
            capture.reason = (response.extensions.get("reason_phrase") or b"").decode("ascii", "replace")
            capture.headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in response.headers]
            response.stream = _CapturingStream(response.stream, capture)
        return response

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pool, name)


class _CapturingStream:
    def __init__(self, stream: Any, capture: _Capture) -> None:
        self._stream, self._capture = stream, capture

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            self._capture.body.extend(chunk)
            yield chunk

    async def aclose(self) -> None:
        if hasattr(self._stream, "aclose"):
            await self._stream.aclose()


class _BrokenStream(httpx2.AsyncByteStream):
    def __init__(self, chunks: list[bytes], error: Exception) -> None:
        self._chunks, self._error = chunks, error

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk
        raise self._error


def _is_event_stream(headers: list[tuple[str, str]]) -> bool:
    return any(k.lower() == "content-type" and "text/event-stream" in v for k, v in headers)
