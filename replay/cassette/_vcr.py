"""vcrpy integration: the native format as a vcrpy serializer, and an atomic persister.

vcrpy's pipeline (vcr/serialize.py): on save, ``serialize(cassette_dict, serializer)`` turns its
``requests`` (``vcr.request.Request``) and ``responses`` into ``{"version": 1, "interactions":
[{"request": ..., "response": ...}]}`` (bodies decoded to str where they are UTF-8) and hands
that dict to ``serializer.serialize``; on load, ``serializer.deserialize(text)`` must give that
dict back, and vcrpy rebuilds Requests with ``Request(**request_dict)`` (so a request dict has
exactly method, uri, body and headers) and turns str bodies back into bytes.

vcrpy's default ``match_on`` compares scheme, host and port, so a cassette recorded against one
base URL (a loopback port, a proxy) never plays against another. `FingerprintMatcher`, registered
as ``"agent_replay"``, matches as `CassetteTransport` does: the project's fingerprint of method,
path and normalized body, never scheme, host or port.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import vcr
from vcr.persisters.filesystem import CassetteDecodeError, CassetteNotFoundError
from vcr.serialize import deserialize as vcr_deserialize
from vcr.serialize import serialize as vcr_serialize

from replay.cassette._content import FormatProblem
from replay.cassette._io import loads_cassette, render_cassette
from replay.cassette._model import MAX_CASSETTE_BYTES, RECORDED_PATH_KEYS, Cassette, CassetteError, normalizer_for
from replay.cassette._vcrpy import (
    VCRPY_FORMAT_VERSION,
    interactions_from_vcr_objects,
    interactions_from_vcrpy,
    interactions_to_vcrpy,
)
from replay.cassette.fingerprints import Normalizer, fingerprint, parse_body
from replay.cassette.interaction import Interaction
from replay.cassette.scrub import scrub_bytes
from replay.storage.atomic import FileWriteError, atomic_write_text

__all__ = [
    "MATCHER_NAME",
    "SERIALIZER_NAME",
    "AgentReplaySerializer",
    "AtomicPersister",
    "FingerprintMatcher",
    "interactions_from_vcr",
    "register_with_vcr",
    "request_key",
]

SERIALIZER_NAME: Final = "agent_replay"
MATCHER_NAME: Final = "agent_replay"
_UNNAMED: Final = "the cassette given to the agent_replay serializer"
_RECORDING: Final = "the recording"
_MATCHER_CACHE_LIMIT: Final = 4096


def interactions_from_vcr(requests: Sequence[Any], responses: Sequence[Mapping[str, Any]]) -> list[Interaction]:
    """Interactions from vcrpy's in-memory cassette (``vcr.request.Request`` objects and response
    dicts, as a persister's ``save_cassette`` receives them): bodies parsed, compression undone."""
    try:
        return interactions_from_vcr_objects(requests, responses)
    except FormatProblem as problem:
        raise CassetteError(
            _RECORDING, f"cannot be stored: {problem.where}: {problem.problem}; {problem.remedy}."
        ) from None


class AgentReplaySerializer:
    """A vcrpy serializer that writes the native format (scrubbed) and reads native or plain
    vcrpy cassettes. ``recorded_paths`` are the session's folders, stored in what it writes."""

    def __init__(self, *, recorded_paths: Mapping[str, str] | None = None) -> None:
        paths = dict(recorded_paths or {})
        unknown = sorted(set(paths) - set(RECORDED_PATH_KEYS))
        if unknown:
            raise ValueError(f"unknown recorded_paths keys {unknown}; expected {', '.join(RECORDED_PATH_KEYS)}.")
        self.recorded_paths = paths
        # (method, uri, body bytes) of each request read -> its fingerprint under the normalizer
        # of the cassette it came from (which vcrpy's request dicts cannot carry).
        self.loaded_fingerprints: dict[bytes, str] = {}
        # The same keys -> whether the cassette it came from records no temp folder: a live
        # request compared with such a one is read as before (`Normalizer.legacy`). Kept per
        # request, as the fingerprints are: a cassette stays in use while another is loaded
        # (nested cassettes, several files merged into one).
        self.loaded_as_before: dict[bytes, bool] = {}

    def serialize(self, cassette_dict: Mapping[str, Any]) -> str:
        """Native YAML for vcrpy's version-1 dict."""
        try:
            interactions = interactions_from_vcrpy(cassette_dict)
        except FormatProblem as problem:
            raise CassetteError(
                _UNNAMED, f"cannot be written: {problem.where}: {problem.problem}; {problem.remedy}."
            ) from None
        metadata = cassette_dict.get("metadata") or {}
        # Written the new way, whatever was loaded: every fingerprint is computed again as it is
        # saved, so the cassette reads alike (which requests vcrpy kept, it does not say).
        cassette = Cassette(
            interactions=interactions, recorded_paths=dict(self.recorded_paths), metadata=dict(metadata)
        )
        return render_cassette(cassette, _UNNAMED)

    def deserialize(self, cassette_string: str) -> dict[str, Any]:
        """vcrpy's version-1 dict for a native or vcrpy cassette text."""
        cassette = loads_cassette(cassette_string, source_name=_UNNAMED)
        as_before = cassette.normalizer().legacy
        for interaction, key in zip(cassette.interactions, cassette.fingerprints(), strict=True):
            request = interaction.request
            loaded = request_key(request.method, request.uri, request.body_bytes())
            self.loaded_fingerprints[loaded] = key
            self.loaded_as_before[loaded] = as_before
        document: dict[str, Any] = {
            "version": VCRPY_FORMAT_VERSION,
            "interactions": interactions_to_vcrpy(cassette.interactions),
        }
        if cassette.metadata:
            document["metadata"] = cassette.metadata
        return document


class AtomicPersister:
    """vcrpy's FilesystemPersister, with writes that never leave a half-written cassette."""

    @classmethod
    def load_cassette(cls, cassette_path: str | PathLike[str], serializer: Any) -> Any:
        """vcrpy's ``(requests, responses[, metadata])``; a missing or empty file is
        `CassetteNotFoundError`, a file that is not UTF-8 `CassetteDecodeError` (as vcrpy does)."""
        path = Path(cassette_path)
        if not path.is_file():
            raise CassetteNotFoundError()
        if path.stat().st_size > MAX_CASSETTE_BYTES:
            raise CassetteError(str(path), "is over the cassette size limit; check that it is a cassette.")
        try:
            data = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as err:
            raise CassetteDecodeError(f"Can't read the cassette {path}: it is not UTF-8 text.") from err
        if not data.strip():
            raise CassetteNotFoundError()
        try:
            return vcr_deserialize(data, serializer)
        except CassetteError as err:
            raise err.for_source(str(path)) from None

    @staticmethod
    def save_cassette(cassette_path: str | PathLike[str], cassette_dict: Mapping[str, Any], serializer: Any) -> None:
        """Serialize with ``serializer`` and write atomically."""
        path = Path(cassette_path)
        try:
            data = vcr_serialize(cassette_dict, serializer)
        except CassetteError as err:
            raise err.for_source(str(path)) from None
        try:
            atomic_write_text(path, data)
        except FileWriteError as err:
            raise CassetteError(err.source, err.problem) from None


class FingerprintMatcher:
    """A vcrpy matcher: two requests match when their fingerprints are equal (method, path and
    query without ``beta=true``, normalized body), whatever their scheme, host and port. A
    request read by ``serializer`` has the fingerprint its cassette's folders give it; any other
    is scrubbed and normalized against ``recorded_paths``, the folders of this run."""

    def __init__(
        self, *, recorded_paths: Mapping[str, str] | None = None, serializer: AgentReplaySerializer | None = None
    ) -> None:
        # This run's folders, read the new way; and as before, for a request compared with one
        # from a cassette that records no temp folder.
        read = normalizer_for(dict(recorded_paths or {}))
        self._normalizers = {
            False: Normalizer(read.roots, read.home, temp=read.temp),
            True: Normalizer(read.roots, read.home, legacy=True),
        }
        self._serializer = serializer
        # vcrpy compares a live request with each stored one in turn: each request object's
        # fingerprint is computed once (the entry holds the request, so its id stays its own).
        self._computed: dict[int, tuple[Any, Any, str, bool]] = {}
        # Each request object's `request_key`, the same way: one SHA-256 of its body, not one a comparison.
        self._keys: dict[int, tuple[Any, Any, bytes]] = {}
        self.__name__ = MATCHER_NAME  # vcrpy names the matchers that failed by it

    def __call__(self, r1: Any, r2: Any) -> None:
        """vcrpy's matcher protocol: an ``AssertionError`` saying why the two differ."""
        # vcrpy passes the live request, then the stored one: read both as the stored one's
        # cassette reads its own.
        as_before = self._as_before(r2)
        first, second = self.fingerprint_of(r1, as_before=as_before), self.fingerprint_of(r2, as_before=as_before)
        assert first == second, f"fingerprint {first[:12]} != {second[:12]} (method, path, query or body differ)"

    def _as_before(self, request: Any) -> bool:
        if self._serializer is None or not self._serializer.loaded_as_before:
            return False
        return self._serializer.loaded_as_before.get(self._key_of(request), False)

    def _key_of(self, request: Any) -> bytes:
        raw = request.body_bytes if hasattr(request, "body_bytes") else request.body
        cached = self._keys.get(id(request))
        if cached is not None and cached[0] is request and cached[1] is raw:
            return cached[2]
        body = raw.encode("utf-8") if isinstance(raw, str) else (raw or b"")
        key = request_key(request.method, request.uri, body)
        if len(self._keys) >= _MATCHER_CACHE_LIMIT:
            self._keys.clear()
        self._keys[id(request)] = (request, raw, key)
        return key

    def fingerprint_of(self, request: Any, *, as_before: bool = False) -> str:
        """The fingerprint of a ``vcr.request.Request`` (``as_before``: read as a cassette that
        records no temp folder reads it)."""
        raw = request.body_bytes if hasattr(request, "body_bytes") else request.body
        cached = self._computed.get(id(request))
        if cached is not None and cached[0] is request and cached[1] is raw and cached[3] is as_before:
            return cached[2]
        key = None
        if self._serializer is not None:
            key = self._serializer.loaded_fingerprints.get(self._key_of(request))
        if key is None:
            body = raw.encode("utf-8") if isinstance(raw, str) else (raw or b"")
            parts = urlsplit(request.uri)
            path = parts.path + (f"?{parts.query}" if parts.query else "")
            normalizer = self._normalizers[as_before]
            key = fingerprint(request.method, path, parse_body(scrub_bytes(body)), normalizer=normalizer)
        if len(self._computed) >= _MATCHER_CACHE_LIMIT:
            self._computed.clear()
        self._computed[id(request)] = (request, raw, key, as_before)
        return key


def request_key(method: str, uri: str, body: bytes) -> bytes:
    """A short key for one request as sent: its method, URI and body bytes."""
    digest = hashlib.sha256(f"{method.upper()} {uri}\n".encode())
    digest.update(body)
    return digest.digest()


def register_with_vcr(my_vcr: vcr.VCR, *, recorded_paths: Mapping[str, str] | None = None) -> None:
    """Register `AgentReplaySerializer` as ``"agent_replay"``, `FingerprintMatcher` as the matcher
    ``"agent_replay"`` (use it with ``match_on=["agent_replay"]``) and `AtomicPersister` on ``my_vcr``."""
    serializer = AgentReplaySerializer(recorded_paths=recorded_paths)
    my_vcr.register_serializer(SERIALIZER_NAME, serializer)
    my_vcr.register_matcher(MATCHER_NAME, FingerprintMatcher(recorded_paths=recorded_paths, serializer=serializer))
    my_vcr.register_persister(AtomicPersister)
