"""vcrpy integration: the native format as a vcrpy serializer, and an atomic persister.

vcrpy's pipeline (vcr/serialize.py): on save, ``serialize(cassette_dict, serializer)`` turns its
``requests`` (``vcr.request.Request``) and ``responses`` into ``{"version": 1, "interactions":
[{"request": ..., "response": ...}]}`` (bodies decoded to str where they are UTF-8) and hands
that dict to ``serializer.serialize``; on load, ``serializer.deserialize(text)`` must give that
dict back, and vcrpy rebuilds Requests with ``Request(**request_dict)`` (so a request dict has
exactly method, uri, body and headers) and turns str bodies back into bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any, Final

import vcr
from vcr.persisters.filesystem import CassetteDecodeError, CassetteNotFoundError
from vcr.serialize import deserialize as vcr_deserialize
from vcr.serialize import serialize as vcr_serialize

from replay.cassette._content import FormatProblem
from replay.cassette._io import loads_cassette, render_cassette
from replay.cassette._model import MAX_CASSETTE_BYTES, RECORDED_PATH_KEYS, Cassette, CassetteError
from replay.cassette._vcrpy import (
    VCRPY_FORMAT_VERSION,
    interactions_from_vcr_objects,
    interactions_from_vcrpy,
    interactions_to_vcrpy,
)
from replay.cassette.interaction import Interaction
from replay.storage.atomic import FileWriteError, atomic_write_text

__all__ = ["SERIALIZER_NAME", "AgentReplaySerializer", "AtomicPersister", "interactions_from_vcr", "register_with_vcr"]

SERIALIZER_NAME: Final = "agent_replay"
_UNNAMED: Final = "the cassette given to the agent_replay serializer"
_RECORDING: Final = "the recording"


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

    def serialize(self, cassette_dict: Mapping[str, Any]) -> str:
        """Native YAML for vcrpy's version-1 dict."""
        try:
            interactions = interactions_from_vcrpy(cassette_dict)
        except FormatProblem as problem:
            raise CassetteError(
                _UNNAMED, f"cannot be written: {problem.where}: {problem.problem}; {problem.remedy}."
            ) from None
        metadata = cassette_dict.get("metadata") or {}
        cassette = Cassette(
            interactions=interactions, recorded_paths=dict(self.recorded_paths), metadata=dict(metadata)
        )
        return render_cassette(cassette, _UNNAMED)

    def deserialize(self, cassette_string: str) -> dict[str, Any]:
        """vcrpy's version-1 dict for a native or vcrpy cassette text."""
        cassette = loads_cassette(cassette_string, source_name=_UNNAMED)
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


def register_with_vcr(my_vcr: vcr.VCR, *, recorded_paths: Mapping[str, str] | None = None) -> None:
    """Register `AgentReplaySerializer` as ``"agent_replay"`` and `AtomicPersister` on ``my_vcr``."""
    my_vcr.register_serializer(SERIALIZER_NAME, AgentReplaySerializer(recorded_paths=recorded_paths))
    my_vcr.register_persister(AtomicPersister)
