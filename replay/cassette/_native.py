"""The native document: `Cassette` <-> the plain data that is written as YAML.

Key order in the file is fixed, so the same interactions always give the same bytes: the format's
own keys in reading order (``method``, ``uri``, ``fingerprint``, ``headers``, ``body``), every
mapping of recorded data (bodies, headers, event data) sorted, and the content table in order of
first use (a new turn appends at the end, so a re-recorded session diffs where it changed).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from replay.cassette._content import ContentReader, ContentWriter, FormatProblem, sorted_data
from replay.cassette._model import CASSETTE_FORMAT_VERSION, RECORDED_PATH_KEYS, Cassette, normalizer_for
from replay.cassette.fingerprints import (
    Normalizer,
    canonical_json,
    canonical_json_of_parsed,
    fingerprint,
    home_folder,
    route_key,
)
from replay.cassette.interaction import (
    BodyKind,
    EncodedEvents,
    FaultKind,
    Interaction,
    RecordedFault,
    RecordedRequest,
    RecordedResponse,
    SseEvent,
    encoded_events,
    encoded_events_from_chunks,
    encoded_raw_events,
)
from replay.cassette.machine_folders import with_machine_folders
from replay.storage.strict_yaml import FlowMap

__all__ = [
    "FORMAT_MARKER",
    "compact_interaction",
    "compiled_line",
    "decode_native",
    "encode_native",
    "interaction_from_line",
]

FORMAT_MARKER = "agent_replay_cassette"

_TOP_KEYS = (FORMAT_MARKER, "recorded_paths", "metadata", "content", "interactions")
_REQUEST_KEYS = ("method", "uri", "fingerprint", "headers", "body")
_RESPONSE_KEYS = ("status", "headers", "kind", "body", "events", "fault")
_FAULT_KEYS = ("kind", "after_events", "after_bytes")
_SHARED_LENGTH = 160  # characters: a URI or a header value is shared, a message is not
# An event whose data is at most this long in JSON, on one line, is written on one line.
_ONE_LINE_EVENT = 160


# ---------------------------------------------------------------------------------------------
# Writing


def encode_native(cassette: Cassette) -> dict[str, Any]:
    """The document for ``cassette`` (already scrubbed). Raises `FormatProblem`."""
    recorded_paths = with_machine_folders(cassette)
    normalizer = normalizer_for(recorded_paths)
    writer = ContentWriter()
    interactions = []
    for index, interaction in enumerate(cassette.interactions):
        request = interaction.request
        encoded_request: dict[str, Any] = {
            "method": request.method,
            "uri": request.uri,
            "fingerprint": fingerprint(request.method, request.path, request.body, normalizer=normalizer),
            "headers": _headers(request.headers),
        }
        if request.body is not None:
            encoded_request["body"] = writer.encode_body(index, request.body)
        _check_decoded(interaction.response.headers, f"interactions[{index}].response.headers")
        interactions.append({"request": encoded_request, "response": _encode_response(interaction.response)})
    document: dict[str, Any] = {FORMAT_MARKER: CASSETTE_FORMAT_VERSION}
    if recorded_paths:
        document["recorded_paths"] = dict(sorted(recorded_paths.items()))
    if cassette.metadata:
        document["metadata"] = sorted_data(cassette.metadata)
    document["content"] = writer.table
    document["interactions"] = interactions
    return document


def _headers(headers: Mapping[str, str]) -> dict[str, str]:
    return FlowMap((name, headers[name]) for name in sorted(headers))


def _encode_response(response: RecordedResponse) -> dict[str, Any]:
    encoded: dict[str, Any] = {
        "status": response.status,
        "headers": _headers(response.headers),
        "kind": response.kind.value,
    }
    if response.kind is BodyKind.SSE:
        encoded["events"] = [_encode_event(event) for event in response.body]
    elif response.kind is not BodyKind.EMPTY:
        # A response keeps its key order: a tool input is replayed exactly as the model wrote it.
        encoded["body"] = response.body
    if response.fault is not None:
        fault: dict[str, Any] = {"kind": response.fault.kind.value}
        if response.fault.after_events is not None:
            fault["after_events"] = response.fault.after_events
        if response.fault.after_bytes is not None:
            fault["after_bytes"] = response.fault.after_bytes
        encoded["fault"] = FlowMap(fault)
    return encoded


def _encode_event(event: SseEvent) -> dict[str, Any]:
    encoded: dict[str, Any] = {} if event.event is None else {"event": event.event}
    encoded["data"] = event.data
    text = canonical_json(event.data)
    # A short event reads best on one line; a multi-line string reads best as a literal block.
    if len(text) <= _ONE_LINE_EVENT and "\\n" not in text:
        return FlowMap(encoded)
    return encoded


# ---------------------------------------------------------------------------------------------
# Reading


def decode_native(
    document: Mapping[str, Any],
    *,
    json_data: bool = False,
    compiled: bool = False,
    fingerprints: list[str] | None = None,
    compiled_lines: list[str] | None = None,
    interactions: Iterable[Any] | None = None,
    count: int | None = None,
) -> Cassette:
    """The cassette in ``document``, its format version already checked. Raises `FormatProblem`.

    ``json_data``: the document is known to hold JSON values only (no check for bytes or
    non-string keys). ``compiled``: it is a compiled copy, whose content keys were checked when
    it was compiled. ``fingerprints``: each interaction's fingerprint, computed and checked
    against the stored ones when it was compiled (used when there is one per interaction).
    ``compiled_lines``: each decoded interaction's line of a compiled copy is appended to it.
    ``interactions``: the raw interactions, one at a time, instead of the document's list
    (``count`` says how many there should be, for ``fingerprints``).

    Each interaction of the document is dropped from it once decoded (the caller's document is
    consumed): the raw and the decoded cassette never both exist whole."""
    _check_keys(document, _TOP_KEYS, "the top level")
    recorded_paths = _mapping(document.get("recorded_paths", {}), "recorded_paths")
    for key, value in recorded_paths.items():
        if key not in RECORDED_PATH_KEYS or not isinstance(value, str) or not os.path.isabs(value):
            raise FormatProblem(
                f"recorded_paths.{key}", f"expected {', '.join(RECORDED_PATH_KEYS)}, each an absolute path"
            )
    metadata = _mapping(document.get("metadata", {}), "metadata")
    table = _mapping(document.get("content", {}), "content")
    if not json_data:
        for key, value in table.items():
            _check_data(value, f"content[{key}]")
    reader = ContentReader(table, keys_checked=compiled)
    raw_interactions: Iterable[Any] = document.get("interactions", []) if interactions is None else interactions
    if interactions is None and not isinstance(raw_interactions, list):
        raise FormatProblem("interactions", "must be a list")
    if count is None and isinstance(raw_interactions, list):
        count = len(raw_interactions)
    known = fingerprints if fingerprints is not None and len(fingerprints) == count else None
    recording = normalizer_for(dict(recorded_paths))
    normalizer = _Memoized(recording.roots, temp=recording.temp, legacy=recording.legacy)
    interactions: list[Interaction] = []
    computed_fingerprints: list[str] = []
    shared = _Shared()
    for index, raw in enumerate(raw_interactions):
        where = f"interactions[{index}]"
        raw = _mapping(raw, where)
        _check_keys(raw, ("request", "response"), where)
        request, stored = _decode_request(
            index, _mapping(raw.get("request"), f"{where}.request"), reader, where, json_data, shared
        )
        if known is not None and index < len(known):
            computed = known[index]
        else:
            computed = fingerprint(request.method, request.path, request.body, normalizer=normalizer)
            _check_stored(stored, computed, request, normalizer, where)
        interactions.append(Interaction(request, _decode_response(raw, where, json_data, shared)))
        computed_fingerprints.append(computed)
        if compiled_lines is not None:
            compiled_lines.append(compiled_line(raw))
        if isinstance(raw_interactions, list):
            raw_interactions[index] = None
    return Cassette(
        interactions=interactions,
        recorded_paths=dict(recorded_paths),
        metadata=dict(metadata),
        computed_fingerprints=computed_fingerprints,
        fingerprints_home=home_folder(),  # what they were computed under (a compiled copy's too)
    )


@dataclass(frozen=True)
class _Memoized(Normalizer):
    """A normalizer that reads each message, tool list and system prompt object once (the content
    table gives every request of a session the same objects) and each repeated scalar once."""

    _texts: dict[Any, tuple[Any, str]] = field(default_factory=dict, compare=False, hash=False, repr=False)

    def value(self, value: Any) -> str:
        if type(value) is dict or type(value) is list:
            key: Any = id(value)  # the object itself, kept alive below so that its id stays its own
        elif type(value) is float:
            key = (float, repr(value))  # by its text: 0.0 == -0.0, and their canonical texts differ
        else:
            key = (type(value), value)  # the same model name, token limit and flag in every request
        known = self._texts.get(key)
        if known is None or (type(key) is int and known[0] is not value):
            # A decoded body holds JSON's types only, and no cycle (YAML aliases are refused).
            known = self._texts[key] = (value, self.json_text(canonical_json_of_parsed(value)))
        return known[1]


def _check_stored(
    stored: str | None, computed: str, request: RecordedRequest, normalizer: Normalizer, where: str
) -> None:
    if stored is None or stored == computed or _stored_before_query_normalizing(stored, request, normalizer):
        return
    # A cassette that does not record its temp folder is read under this process's: entries of
    # another TMPDIR's in its bodies (a cassette written before it recorded one) disagree too.
    temp = ""
    if normalizer.legacy:
        temp = f", or this process's TMPDIR ({tempfile.gettempdir()}) is not the recording's"
    raise FormatProblem(
        where,
        f"the fingerprint index disagrees with its bodies (stored {stored[:12]}…, computed {computed[:12]}…)",
        f"the request was edited after recording{temp}; re-record the cassette, or delete that fingerprint "
        "line to accept the edit",
    )


def _stored_before_query_normalizing(stored: str, request: RecordedRequest, normalizer: Normalizer) -> bool:
    # A cassette written before ``beta=true`` left the fingerprint stores it with the whole query.
    return route_key(request.path) != request.path and stored == fingerprint(
        request.method, request.path, request.body, normalizer=normalizer, whole_query=True
    )


def _decode_request(
    index: int,
    raw: Mapping[str, Any],
    reader: ContentReader,
    where: str,
    json_data: bool,
    shared: _Shared,
) -> tuple[RecordedRequest, str | None]:
    where = f"{where}.request"
    _check_keys(raw, _REQUEST_KEYS, where)
    method = _str(raw, "method", where)
    uri = _str(raw, "uri", where)
    stored = raw.get("fingerprint")
    if stored is not None and not isinstance(stored, str):
        raise FormatProblem(f"{where}.fingerprint", "must be a hex string")
    headers = shared.headers(_str_mapping(raw.get("headers", {}), f"{where}.headers"))
    body = raw.get("body")
    if not json_data:
        _check_data(body, f"{where}.body")
    body = reader.decode_body(index, body, f"{where}.body")
    if type(body) is dict:  # its keys and short values (the model's name) are the same in every request
        body = {shared.string(key): shared.string(value) for key, value in body.items()}
    request = RecordedRequest(method=shared.string(method), uri=shared.string(uri), headers=headers, body=body)
    return request, stored


def _decode_response(interaction: Mapping[str, Any], where: str, json_data: bool, shared: _Shared) -> RecordedResponse:
    where = f"{where}.response"
    raw = _mapping(interaction.get("response"), where)
    _check_keys(raw, _RESPONSE_KEYS, where)
    status = raw.get("status")
    fault = _decode_fault(raw["fault"], f"{where}.fault") if "fault" in raw else None
    # A connection that failed before any response has no status: 0 marks it.
    no_response = fault is not None and fault.kind is FaultKind.CONNECTION_FAILED and status == 0
    if not isinstance(status, int) or isinstance(status, bool) or not (100 <= status <= 599 or no_response):
        raise FormatProblem(
            f"{where}.status", f"must be an HTTP status code (0 only with a connection_failed fault), not {status!r}"
        )
    headers = _str_mapping(raw.get("headers", {}), f"{where}.headers")
    _check_decoded(headers, f"{where}.headers")
    headers = {shared.string(name): shared.string(value) for name, value in headers.items()}
    try:
        kind = BodyKind(raw.get("kind", "empty"))
    except ValueError:
        choices = ", ".join(k.value for k in BodyKind)
        raise FormatProblem(f"{where}.kind", f"is {raw.get('kind')!r}; expected one of {choices}") from None
    body: Any = None
    if kind is BodyKind.SSE:
        if "body" in raw:
            raise FormatProblem(where, "an sse response keeps its body as events:, not body:")
        body = raw.get("events", [])
        if type(body) is not EncodedEvents:  # else `compact_interaction` checked and encoded them
            events = _list(raw, "events", where)
            decoded = [_decode_event(event, f"{where}.events[{n}]", json_data) for n, event in enumerate(events)]
            body = encoded_events(decoded) or decoded
    else:
        if "events" in raw:
            raise FormatProblem(where, f"only an sse response has events:, and this one is {kind.value}")
        if kind is BodyKind.EMPTY and "body" in raw:
            raise FormatProblem(where, "an empty response has no body:")
        body = raw.get("body")
        if not json_data:
            _check_data(body, f"{where}.body")
        if kind in (BodyKind.TEXT, BodyKind.BINARY) and not isinstance(body, str):
            raise FormatProblem(f"{where}.body", f"a {kind.value} body must be a string")
    return RecordedResponse(status=status, headers=headers, kind=kind, body=body, fault=fault)


def compiled_line(raw: Mapping[str, Any]) -> str:
    """A checked interaction as JSON (a compiled copy's line): as in the document, but for
    encoded events, which are written as ``{"$chunks": [text, ...]}``."""
    response = raw["response"]
    events = response.get("events")
    if type(events) is EncodedEvents:
        response = {**response, "events": {"$chunks": [chunk.decode("utf-8") for chunk in events.chunks]}}
    return json.dumps({**raw, "response": response}, ensure_ascii=False, separators=(",", ":"))


def interaction_from_line(line: bytes) -> dict[str, Any]:
    """A compiled copy's line as the raw interaction `decode_native` reads. Raises
    `FormatProblem` (or ValueError) when it is not one `compiled_line` writes."""
    raw = json.loads(line)
    response = raw.get("response") if type(raw) is dict else None
    events = response.get("events") if type(response) is dict else None
    if type(events) is dict:
        chunks = events.get("$chunks")
        encoded = (
            encoded_events_from_chunks([c.encode("utf-8") for c in chunks if type(c) is str])
            if type(chunks) is list and len(events) == 1
            else None
        )
        if encoded is None or len(encoded.ends) != len(chunks):
            raise FormatProblem("a compiled copy", "its events are not encoded events")
        response["events"] = encoded
    return raw


def compact_interaction(raw: dict[str, Any]) -> dict[str, Any]:
    """An interaction of a document being parsed (plain JSON data), with its response's events
    as `EncodedEvents` when they are valid and read back exactly (else left for `decode_native`
    to decode, or to report). Called as each interaction is parsed, so that the parsed events
    of the whole cassette never exist at once."""
    response = raw.get("response")
    if type(response) is not dict or response.get("kind") != BodyKind.SSE.value:
        return raw
    events = response.get("events")
    if type(events) is not list:
        return raw
    # What `_decode_event` accepts, then what `encoded_event` can encode exactly.
    encoded = encoded_raw_events(events)
    if encoded is not None:
        response["events"] = encoded
    return raw


def _decode_event(raw: Any, where: str, json_data: bool) -> SseEvent:
    raw = _mapping(raw, where)
    _check_keys(raw, ("event", "data"), where)
    name = raw.get("event")
    if name is not None and not isinstance(name, str):
        raise FormatProblem(f"{where}.event", "must be a string")
    data = raw.get("data", "")
    if not json_data:
        _check_data(data, f"{where}.data")
    return SseEvent(name, data)


def _decode_fault(raw: Any, where: str) -> RecordedFault:
    raw = _mapping(raw, where)
    _check_keys(raw, _FAULT_KEYS, where)
    try:
        kind = FaultKind(raw.get("kind"))
    except ValueError:
        choices = ", ".join(k.value for k in FaultKind)
        raise FormatProblem(f"{where}.kind", f"is {raw.get('kind')!r}; expected one of {choices}") from None
    counts: dict[str, int | None] = {}
    for key in ("after_events", "after_bytes"):
        value = raw.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise FormatProblem(f"{where}.{key}", "must be a non-negative integer")
        counts[key] = value
    return RecordedFault(kind=kind, **counts)


class _Shared:
    """One object per distinct short string and per distinct request headers while a cassette
    is decoded: a compiled copy's lines are parsed one at a time, so without this each request
    would hold its own "POST", URI, header names and body keys."""

    def __init__(self) -> None:
        self._strings: dict[str, str] = {}
        self._headers: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}

    def string(self, value: Any) -> Any:
        if type(value) is str and len(value) <= _SHARED_LENGTH:
            return self._strings.setdefault(value, value)
        return value

    def headers(self, headers: dict[str, str]) -> dict[str, str]:
        # Equal request headers are one dict: every request of a session sends the same.
        key = tuple(headers.items())
        found = self._headers.get(key)
        if found is None:
            found = self._headers[key] = {self.string(k): self.string(v) for k, v in key}
        return found


# ---------------------------------------------------------------------------------------------
# Small validators


def _check_keys(raw: Mapping[str, Any], allowed: tuple[str, ...], where: str) -> None:
    for key in raw:
        if key not in allowed:
            raise FormatProblem(where, f"unknown key {key!r}; expected keys are {', '.join(allowed)}")


def _mapping(raw: Any, where: str) -> Mapping[str, Any]:
    if type(raw) is not dict and not isinstance(raw, Mapping):  # a dict first: the ABC check is slow
        raise FormatProblem(where, f"must be a mapping, not {_type_name(raw)}")
    return raw


def _list(raw: Mapping[str, Any], key: str, where: str) -> list[Any]:
    value = raw.get(key, [])
    if not isinstance(value, list):
        raise FormatProblem(f"{where}.{key}", f"must be a list, not {_type_name(value)}")
    return value


def _str(raw: Mapping[str, Any], key: str, where: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str):
        raise FormatProblem(f"{where}.{key}", f"must be a string, not {_type_name(value)}")
    return value


def _str_mapping(raw: Any, where: str) -> dict[str, str]:
    mapping = _mapping(raw, where)
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()):
        raise FormatProblem(where, "must map header names to string values")
    return dict(mapping)


def _check_decoded(headers: Mapping[str, str], where: str) -> None:
    """A cassette keeps every body decoded; a content-encoding header would make the client try
    to decompress the replayed body and fail with an error that names neither file nor place."""
    for name, value in headers.items():
        if name.lower() == "content-encoding" and value.strip().lower() not in ("", "identity"):
            raise FormatProblem(
                where,
                f"has content-encoding: {value}, but a cassette keeps every body decoded, so the replayed body "
                "could not be decompressed",
                "remove that header (the body is already decoded), or re-record the cassette",
            )


def _check_data(value: Any, where: str) -> None:
    """JSON data only: what YAML can hold beyond it (bytes, non-string keys) never reaches a body."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, Mapping):
            if not all(isinstance(k, str) for k in item):
                raise FormatProblem(where, "mapping keys in recorded data must be strings")
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        elif item is not None and not isinstance(item, (str, int, float, bool)):
            raise FormatProblem(where, f"recorded data holds only JSON values, not {_type_name(item)}")


def _type_name(value: object) -> str:
    return "null" if value is None else type(value).__name__
