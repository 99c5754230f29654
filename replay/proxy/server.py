"""`CassetteProxy`: a loopback HTTP server any process can point ``ANTHROPIC_BASE_URL`` at, which
answers from a cassette and, when the record mode allows, forwards what the cassette lacks to
the upstream (the real API, or a fake model server) and records it.

- Matching is the project's own: `CassettePlayer` and its fingerprint (method, path, normalized
  body), so a cassette recorded here replays under the SDK transports and the other way round.
- Recording forwards with ``httpx2`` and streams an event stream through as it arrives, one
  chunk per event, each event in the bytes a replay will give (`wire.event_chunk`); a
  connection the upstream drops mid-body is recorded as a fault and dropped for the client
  too. The cassette is saved atomically (scrubbed) after each recorded interaction, before the
  client's response ends (so a client that has read an answer whole finds it on disk), and
  again on stop if a save failed: a crash loses at most the interaction in flight, and the file
  is never half-written.
- A miss answers HTTP 599 with an Anthropic-shaped error body, ``x-should-retry: false``, whose
  message is the player's diagnosis (nearest recorded requests, where they differ, how to
  re-record), and logs it.
- Every request is one log line: fingerprint, method, path, outcome, status, milliseconds.
- Given what varies between its client's runs (``placeholders``: placeholder -> this run's value,
  e.g. the workspace folder as ``<workspace>``, the date), it matches as if those values were
  their placeholders, saves the placeholders in what it records, and puts this run's values back
  into what it plays: a client that runs in a new temp folder each time, on another day, replays
  a session recorded in another.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import httpx2

from replay.cassette import (
    Cassette,
    CassetteError,
    CassetteMismatchError,
    CassetteNotFoundError,
    CassettePlayer,
    Interaction,
    RecordMode,
    fingerprint,
    load_cassette,
    parse_record_mode,
    save_cassette,
)
from replay.cassette.fingerprints import Normalizer, parse_body
from replay.cassette.placeholders import Replacements, folder_replacements, replace_paths
from replay.cassette.rewrite import CassetteRewrite, DivergenceHook, RewriteCounts
from replay.cassette.scrub import SECRET_HEADERS, scrub_bytes
from replay.cassette.transport import RERECORD_HINT
from replay.http.connection import Request, ResponseWriter
from replay.http.server import HttpServer
from replay.loopback import is_loopback
from replay.proxy.wire import HOP_BY_HOP, EventSplitter, is_event_stream, play, recorded_interaction

__all__ = ["DEFAULT_UPSTREAM", "MISS_STATUS", "CassetteProxy", "ProxyOutcome", "ProxyRequest"]

# The modes that start the cassette afresh.
_AFRESH: Final = frozenset({RecordMode.ALL})

logger = logging.getLogger(__name__)

DEFAULT_UPSTREAM: Final = "https://api.anthropic.com"
MISS_STATUS: Final = 599
MISS_ERROR_TYPE: Final = "cassette_miss"
_PROXY_HINT: Final = (
    "To record what is missing, run again with record mode rewrite (keeps what matches up to the first request "
    "that differs, records from there and prunes the rest), new_episodes (keeps everything and records what is "
    "missing) or all (records everything anew): `replay proxy --record-mode rewrite ...` or `--record-mode "
    "new_episodes`, or for the replay_proxy fixture `pytest --record-mode=rewrite`."
)
_TIMEOUT: Final = httpx2.Timeout(600.0, connect=10.0)


class ProxyOutcome(StrEnum):
    """What the proxy did with a request."""

    MATCH = "match"  # answered from the cassette
    MISS = "miss"  # not in the cassette and not recorded: answered MISS_STATUS
    RECORDED = "recorded"  # forwarded to the upstream and recorded


@dataclass(frozen=True, kw_only=True)
class ProxyRequest:
    """One request the proxy answered: its log line's fields."""

    fingerprint: str
    method: str
    path: str
    outcome: ProxyOutcome
    status: int  # 0: no response (a recorded connection failure, or the upstream unreachable)
    milliseconds: float
    # What the client sent: its headers but the secret ones (credentials, cookies), and its body.
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    body: bytes = field(default=b"", repr=False)

    def line(self) -> str:
        """``3f2a9c1b7d4e POST /v1/messages recorded 200 41 ms``."""
        return (
            f"{self.fingerprint[:12]} {self.method} {self.path} {self.outcome} {self.status} {self.milliseconds:.0f} ms"
        )


class CassetteProxy(HttpServer):
    """Serves a cassette over HTTP on loopback, recording through to ``upstream`` as ``mode`` allows."""

    label = "The replay proxy"

    def __init__(
        self,
        cassette: Path,
        *,
        mode: RecordMode | str = RecordMode.NONE,
        upstream: str = DEFAULT_UPSTREAM,
        host: str = "127.0.0.1",
        port: int = 0,
        on_log: Callable[[str], None] | None = None,
        on_divergence: DivergenceHook | None = None,
        placeholders: Mapping[str, str | Path] | None = None,
        aliases: Sequence[tuple[str, str]] = (),
    ) -> None:
        super().__init__(host=host, port=port)
        if not is_loopback(host):
            raise ValueError(
                f"The replay proxy serves only loopback addresses (127.0.0.1, ::1, localhost), not {host!r}: "
                "it forwards whatever key its clients send."
            )
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"The upstream must be an http:// or https:// URL, not {upstream!r}.")
        self.cassette_path = Path(cassette)
        self.mode = parse_record_mode(mode)
        self.upstream = upstream.rstrip("/")
        self.on_log = on_log
        # What varies between the client's runs (placeholder -> value; a folder is a Path) and
        # other spellings of it (text -> placeholder): recorded and matched as placeholders,
        # played back as this run's values.
        self._replacements: Replacements = _replacements(placeholders or {}, aliases)
        self._restorations: Replacements = [(name, str(value)) for name, value in (placeholders or {}).items()]
        self._normalizer = Normalizer(tuple(self._replacements))
        self.requests: list[ProxyRequest] = []
        """Every request answered, in order (what the log lines say)."""
        self.misses: list[str] = []
        """The diagnosis of every request the cassette could not answer, in order."""
        exists = self.cassette_path.exists()
        if self.mode is RecordMode.NONE and not exists:
            raise CassetteNotFoundError(
                f"Cassette {self.cassette_path} does not exist and record mode 'none' never records; "
                "record it first with --record-mode once or all."
            )
        self._kept: Cassette | None = None
        self.player: CassettePlayer | None = None
        self.rewrite: CassetteRewrite | None = None
        """Record mode rewrite: answers in recorded order until the first request that differs,
        which and every later one is forwarded and recorded (``on_divergence`` is called first, to
        position an in-process upstream); the rest is pruned when the cassette is saved."""
        if exists and self.mode not in _AFRESH:
            self._kept = load_cassette(self.cassette_path)
            if self._kept.normalizer().legacy:  # it records no temp folder: read as it was written
                self._normalizer = Normalizer(tuple(self._replacements), legacy=True)
        if self.mode is RecordMode.REWRITE:
            self.rewrite = CassetteRewrite(self._kept, normalizer=self._normalizer, on_divergence=on_divergence)
        elif self._kept is not None:
            self.player = CassettePlayer(
                self._kept.interactions,
                name=str(self.cassette_path),
                fingerprints=self._kept.fingerprints(),
                recorded_normalizer=self._kept.normalizer(),
                normalizer=self._normalizer,
            )
        self.recording = self.mode in (RecordMode.NEW_EPISODES, RecordMode.ALL, RecordMode.REWRITE) or not exists
        """Whether requests the cassette lacks are forwarded and recorded."""
        self.recorded: list[Interaction] = []
        self._client: httpx2.AsyncClient | None = None
        self._unsaved = False
        self._save_lock = asyncio.Lock()

    # --- answering -------------------------------------------------------------------------------

    async def handle(self, request: Request, response: ResponseWriter) -> None:
        started = time.monotonic()
        key = fingerprint(
            request.method, request.path, parse_body(scrub_bytes(request.body)), normalizer=self._normalizer
        )
        outcome = ProxyOutcome.RECORDED

        def log_request() -> None:
            # Called just before the response's last bytes go out, so a client that has read
            # its whole answer finds the request in `requests` and in the log, never a moment later.
            entry = ProxyRequest(
                fingerprint=key,
                method=request.method,
                path=request.path,
                outcome=outcome,
                status=response.status or 0,
                milliseconds=(time.monotonic() - started) * 1000,
                # Kept for the caller to read; credentials never (a test's failure report prints them).
                headers={k: v for k, v in request.headers.items() if k.lower() not in SECRET_HEADERS},
                body=request.body,
            )
            self.requests.append(entry)
            logger.info("%s", entry.line())
            if self.on_log is not None:
                self.on_log(entry.line())

        response.before_complete = log_request
        try:
            if self.rewrite is not None:
                kept = self.rewrite.answer(request.method, request.path, request.body, key=key)
                if kept is not None:
                    outcome = ProxyOutcome.MATCH
                    await play(response, replace_paths(kept, self._restorations).response)
                    return
            elif self.player is not None:
                try:
                    interaction = self.player.match(request.method, request.path, request.body)
                except CassetteMismatchError as miss:
                    if not self.recording:
                        outcome = ProxyOutcome.MISS
                        await self._answer_miss(response, str(miss))
                        return
                else:
                    outcome = ProxyOutcome.MATCH
                    await play(response, replace_paths(interaction, self._restorations).response)
                    return
            await self._forward(request, response)
        finally:
            if response.before_complete is log_request:  # the response never completed: logged now
                response.before_complete = None
                log_request()

    async def _answer_miss(self, response: ResponseWriter, diagnosis: str) -> None:
        message = diagnosis.replace(RERECORD_HINT, _PROXY_HINT) if RERECORD_HINT in diagnosis else diagnosis
        if _PROXY_HINT not in message:
            message = f"{message}\n{_PROXY_HINT}"
        if self.on_log is not None:
            self.on_log(message)
        else:
            logger.warning("%s", message)
        self.misses.append(message)
        body = {"type": "error", "error": {"type": MISS_ERROR_TYPE, "message": message}}
        headers = [("content-type", "application/json"), ("x-should-retry", "false")]
        encoded = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        await response.send(MISS_STATUS, headers, encoded, reason="Cassette Miss")

    async def _forward(self, request: Request, response: ResponseWriter) -> None:
        """Send the request upstream, stream the answer to the client and record the exchange."""
        if self._client is None:
            host = urlsplit(self.upstream).hostname
            # A loopback upstream (a fake model server) is reached directly, whatever *_PROXY says.
            self._client = httpx2.AsyncClient(timeout=_TIMEOUT, trust_env=not is_loopback(host))
        uri = self.upstream + request.path
        headers = {name: value for name, value in request.headers.items() if name not in HOP_BY_HOP}
        headers["accept-encoding"] = "identity"  # the proxy splits events and stores plain bodies
        exchange: dict[str, Any] = {
            "method": request.method,
            "uri": uri,
            "request_headers": headers,
            "body": request.body,
        }
        outgoing = self._client.build_request(request.method, uri, headers=headers, content=request.body)
        try:
            upstream = await self._client.send(outgoing, stream=True)
        except httpx2.TransportError as exc:
            problem = f"The upstream {self.upstream} did not answer {request.method} {uri}: {exc!r}"
            logger.warning("%s", problem)
            if self.on_log is not None:
                self.on_log(problem)
            await self._record(
                exchange, status=0, reason="", headers=[], received=b"", fault={"kind": "connection_failed"}
            )
            await response.drop()
            return
        try:
            await self._relay(upstream, response, exchange)
        finally:
            await upstream.aclose()

    async def _relay(self, upstream: httpx2.Response, response: ResponseWriter, exchange: dict[str, Any]) -> None:
        headers = [(k, v) for k, v in upstream.headers.multi_items() if k.lower() not in HOP_BY_HOP]
        received = bytearray()
        fault: dict[str, Any] | None = None
        if is_event_stream(headers):
            await response.start(upstream.status_code, headers, length=None)
            splitter = EventSplitter()
            try:
                async for data in upstream.aiter_bytes():
                    received += data
                    for chunk in splitter.feed(data):
                        await response.write(chunk)
            except httpx2.TransportError:
                fault = {"kind": "dropped_connection", "after_events": splitter.events}
            else:
                await response.write(splitter.rest())
        else:
            try:
                async for data in upstream.aiter_bytes():
                    received += data
            except httpx2.TransportError:
                fault = {"kind": "dropped_connection", "after_bytes": len(received)}
                await response.start(upstream.status_code, headers, length=None)
                await response.write(bytes(received))
            else:
                await response.start(upstream.status_code, headers, length=len(received))
                await response.write(bytes(received))
        await self._record(
            exchange,
            status=upstream.status_code,
            reason=upstream.reason_phrase,
            headers=headers,
            received=bytes(received),
            fault=fault,
        )
        if fault is not None:
            await response.drop()
        else:
            await response.end()

    # --- the cassette ----------------------------------------------------------------------------

    async def _record(
        self,
        exchange: dict[str, Any],
        *,
        status: int,
        reason: str,
        headers: list[tuple[str, str]],
        received: bytes,
        fault: dict[str, Any] | None,
    ) -> None:
        """Keep the exchange and save the cassette, before the client's response ends: once a
        client has read a whole answer, the file on disk holds it."""
        try:
            interaction = recorded_interaction(
                **exchange, status=status, reason=reason, response_headers=headers, received=received, fault=fault
            )
        except CassetteError as exc:  # e.g. a binary request body: served, but not recorded
            logger.error("Not recorded: %s", exc)
            if self.on_log is not None:
                self.on_log(f"Not recorded: {exc}")
            return
        self.recorded.append(replace_paths(interaction, self._replacements))
        async with self._save_lock:
            try:
                await asyncio.to_thread(self.save)
            except Exception:  # the proxy carries on; the save on stop tries again
                logger.exception("The replay proxy could not save %s.", self.cassette_path)
                self._unsaved = True
            else:
                self._unsaved = False

    def save(self) -> None:
        """Write the cassette atomically: what was kept of the old one (``new_episodes``) and
        everything recorded so far, scrubbed."""
        kept = list(self._kept.interactions) if self._kept is not None and self.mode is RecordMode.NEW_EPISODES else []
        if self.rewrite is not None:
            kept = self.rewrite.kept
        paths = dict(self._kept.recorded_paths) if self._kept is not None else {}
        as_before = bool(kept) and self._kept is not None and self._kept.normalizer().legacy
        cassette = Cassette(interactions=[*kept, *self.recorded], recorded_paths=paths, temp_as_before=as_before)
        save_cassette(cassette, self.cassette_path)

    @property
    def rewrite_counts(self) -> RewriteCounts | None:
        """Record mode rewrite: the interactions kept, re-recorded and pruned so far."""
        return self.rewrite.counts(len(self.recorded)) if self.rewrite is not None else None

    async def closing(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        counts = self.rewrite_counts
        if counts is not None and counts.pruned and not counts.rerecorded:
            # The session followed the cassette and stopped early: nothing was recorded, so
            # nothing saved yet, but what it no longer requests is pruned now.
            self._unsaved = True
        if self._unsaved:
            async with self._save_lock:
                await asyncio.to_thread(self.save)  # a failure here reaches whoever stops the proxy


def _replacements(placeholders: Mapping[str, str | Path], aliases: Sequence[tuple[str, str]]) -> Replacements:
    """(text, placeholder) pairs for ``placeholders``' values (a folder in each of its
    spellings, a text as it is and JSON-escaped) and ``aliases``, longest first (so a folder
    inside another keeps its own placeholder)."""
    folders = {name: value for name, value in placeholders.items() if isinstance(value, Path)}
    texts = {
        (text, name)
        for name, value in placeholders.items()
        if not isinstance(value, Path)
        for text in (value, json.dumps(value)[1:-1])
        if text
    }
    return sorted({*aliases, *texts, *folder_replacements(folders)}, key=lambda pair: -len(pair[0]))
