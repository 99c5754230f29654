"""What a cassette holds: recorded HTTP interactions, with bodies kept as parsed data.

Requests keep their JSON body as data (so a review diff reads like the request) and responses
keep server-sent events as a list of ``(event, data)`` pairs. ``RecordedResponse.chunks()``
turns a response back into the bytes a client reads, one chunk per event, and a recorded fault
(a connection dropped mid-body) is part of the response, so a replay fails at the same place.

A loaded cassette keeps an event stream as those bytes (`EncodedEvents`) and parses it into
events only when ``body`` is read: a replay never reads it, and parsed events cost several
times their text in memory.
"""

from __future__ import annotations

import base64
import json
import re
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from itertools import accumulate
from typing import Any, Final
from urllib.parse import urlsplit

from replay.cassette.decoded_on_read import DecodedOnRead
from replay.storage.parsed_json import parsed_encoder

__all__ = [
    "BodyKind",
    "EncodedEvents",
    "FaultKind",
    "Interaction",
    "RecordedFault",
    "RecordedRequest",
    "RecordedResponse",
    "SseEvent",
    "encode_sse_event",
    "encoded_event",
    "encoded_events",
    "encoded_raw_events",
    "parse_sse",
]


class BodyKind(StrEnum):
    """How a response body is stored."""

    EMPTY = "empty"
    SSE = "sse"
    JSON = "json"
    TEXT = "text"
    BINARY = "binary"  # base64 in the file


class FaultKind(StrEnum):
    # The body stopped part-way: the events (or bytes) before the cut arrived.
    DROPPED_CONNECTION = "dropped_connection"
    # No response at all (refused, reset, timed out before the status line): status 0.
    CONNECTION_FAILED = "connection_failed"


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One server-sent event: its name and its data (parsed JSON, or the raw text)."""

    event: str | None
    data: Any


@dataclass(frozen=True, kw_only=True)
class RecordedFault:
    """The connection failed after ``after_events`` complete events (or ``after_bytes`` bytes of
    a body that is not an event stream)."""

    kind: FaultKind
    after_events: int | None = None
    after_bytes: int | None = None


@dataclass(frozen=True, kw_only=True)
class RecordedRequest:
    """A request as sent (secrets scrubbed, volatile headers dropped)."""

    method: str
    uri: str
    headers: Mapping[str, str] = field(default_factory=dict)
    # Parsed JSON when the body is JSON, the text otherwise, None when empty.
    body: Any = None

    @property
    def path(self) -> str:
        parts = urlsplit(self.uri)
        return parts.path + (f"?{parts.query}" if parts.query else "")

    def body_bytes(self) -> bytes:
        if self.body is None:
            return b""
        if isinstance(self.body, str):
            return self.body.encode("utf-8")
        return json.dumps(self.body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


@dataclass(frozen=True, slots=True)
class EncodedEvents:
    """An event stream as the chunks a client reads, one per event (`encode_sse_event`), given
    as a response's ``body``: it becomes its list of `SseEvent` at the first read of ``body``.
    Made by `encoded_events`, which only makes one when the events read back exactly.

    Kept as the chunks joined, with where each ends (`of`): a bytes object per chunk would cost
    about 45 bytes beside its text, and an answer has one per event."""

    data: bytes
    ends: array[int]  # "I": each chunk's end in ``data``

    @classmethod
    def of(cls, chunks: Sequence[bytes]) -> EncodedEvents:
        return cls(b"".join(chunks), array("I", accumulate(map(len, chunks))))

    @property
    def chunks(self) -> tuple[bytes, ...]:
        data, start, chunks = self.data, 0, []
        for end in self.ends:
            chunks.append(data[start:end])
            start = end
        return tuple(chunks)

    def events(self) -> list[SseEvent]:
        return [_decode_chunk(chunk) for chunk in self.chunks]


# The response body: event streams may be kept as `EncodedEvents`, decoded at the first read.
_BODY: Final = DecodedOnRead(EncodedEvents, EncodedEvents.events)


@dataclass(frozen=True, kw_only=True)
class RecordedResponse:
    """A response as received, and the fault that cut it short, if any."""

    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    kind: BodyKind = BodyKind.EMPTY
    # list[SseEvent] for SSE (given as `EncodedEvents` by the loader, parsed when read), the
    # JSON value, the text, or base64 text for binary.
    body: Any = field(default=_BODY)
    fault: RecordedFault | None = None
    # The chunks a client reads, encoded at the first replay and kept: a response is replayed
    # as often as it is requested, and encoding its events is most of a replay's own cost.
    _chunks: tuple[bytes, ...] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def began(self) -> bool:
        """Whether the model began answering: not an HTTP error, not a connection that failed
        (the API writes the prompt cache only once a response begins)."""
        failed = self.fault is not None and self.fault.kind is FaultKind.CONNECTION_FAILED
        return self.status < 400 and not failed

    def chunks(self) -> list[bytes]:
        """The body as a client reads it: one chunk per event for an event stream. A fault's
        cut is applied: only what arrived before it is returned."""
        chunks = self._chunks
        if chunks is None:
            chunks = self._encode_chunks()
            # Encoded events are cut from their one bytes object again at each replay (cheap),
            # not kept a bytes object per chunk; anything else is kept once encoded.
            if type(_BODY.stored(self)) is not EncodedEvents:
                # Frozen: the cache is the one field set after construction (``replace`` resets it).
                object.__setattr__(self, "_chunks", chunks)
        return list(chunks)

    def _all_chunks(self) -> tuple[bytes, ...]:
        # Every event's chunk, from the encoded events when the body was never parsed.
        raw = _BODY.stored(self)
        if type(raw) is EncodedEvents:
            return raw.chunks
        return tuple(encode_sse_event(e) for e in self.body)

    def _encode_chunks(self) -> tuple[bytes, ...]:
        if self.kind is BodyKind.SSE:
            chunks = self._all_chunks()
            if self.fault is not None and self.fault.after_events is not None:
                chunks = chunks[: self.fault.after_events]
            return chunks
        data = self.body_bytes()
        if self.fault is not None and self.fault.after_bytes is not None:
            data = data[: self.fault.after_bytes]
        return (data,) if data else ()

    def body_bytes(self) -> bytes:
        """The whole body (ignoring any fault)."""
        if self.kind is BodyKind.EMPTY:
            return b""
        if self.kind is BodyKind.SSE:
            return b"".join(self._all_chunks())
        if self.kind is BodyKind.JSON:
            return json.dumps(self.body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        if self.kind is BodyKind.TEXT:
            return str(self.body).encode("utf-8")
        return base64.b64decode(self.body)


@dataclass(frozen=True)
class Interaction:
    """One request and the response it got."""

    request: RecordedRequest
    response: RecordedResponse


def encode_sse_event(event: SseEvent) -> bytes:
    """``event: X\\ndata: ...\\n\\n`` — always with the ``event:`` line, which the SDK needs."""
    data = event.data if isinstance(event.data, str) else _COMPACT.encode(event.data)
    lines = [f"event: {event.event}"] if event.event is not None else []
    lines.extend(f"data: {line}" for line in data.split("\n"))
    return ("\n".join(lines) + "\n\n").encode("utf-8")


# What ``json.dumps(value, ensure_ascii=False, separators=(",", ":"))`` builds on every call.
_COMPACT: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
# The same for the data of events a cassette's load decodes (`replay.storage.parsed_json`).
_compact_json: Final = parsed_encoder(_COMPACT)
# A chunk `encode_sse_event` writes for data that is a JSON object or array (compact JSON holds
# no line break): what `encoded_events` accepts, and all that `_decode_chunk` has to read.
_ONE_LINE_EVENT: Final = re.compile(rb"(?:event: ([^\n\r]*)\n)?data: ([\[{][^\n\r]*)\n\n")


def encoded_event(name: Any, data: Any) -> bytes | None:
    """`encode_sse_event` of the event ``name``, ``data`` when it reads back as the same event
    (`EncodedEvents`), else None: data that is a JSON object or array (read back parsed), a name
    that is None or a string without line breaks — every event the API sends."""
    if type(data) is not dict and type(data) is not list:
        return None
    if name is not None and (type(name) is not str or "\n" in name or "\r" in name):
        return None
    encoded = _compact_json(data)
    text = f"data: {encoded}\n\n" if name is None else f"event: {name}\ndata: {encoded}\n\n"
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: left as events, as ever
        return None


def encoded_events(events: Sequence[SseEvent]) -> EncodedEvents | None:
    """``events`` as `EncodedEvents`, or None when one of them would not read back the same
    (`encoded_event`)."""
    chunks = []
    for event in events:
        chunk = encoded_event(event.event, event.data)
        if chunk is None:
            return None
        chunks.append(chunk)
    return EncodedEvents.of(chunks)


_EVENT_KEYS: Final = frozenset(("event", "data"))


def encoded_raw_events(events: list[Any]) -> EncodedEvents | None:
    """`encoded_events` of events as a cassette's document holds them (mappings of ``event``
    and ``data`` only), or None when one is not such a mapping or would not read back the same."""
    chunks = []
    for event in events:
        if type(event) is not dict or not event.keys() <= _EVENT_KEYS:
            return None
        chunk = encoded_event(event.get("event"), event.get("data", ""))
        if chunk is None:
            return None
        chunks.append(chunk)
    return EncodedEvents.of(chunks)


def encoded_events_from_chunks(chunks: Sequence[bytes]) -> EncodedEvents | None:
    """`EncodedEvents` of chunks given as they are (a compiled copy's), or None unless each is
    a chunk `encoded_events` could have made."""
    for chunk in chunks:
        if type(chunk) is not bytes or _ONE_LINE_EVENT.fullmatch(chunk) is None:
            return None
    return EncodedEvents.of(chunks)


def _decode_chunk(chunk: bytes) -> SseEvent:
    found = _ONE_LINE_EVENT.fullmatch(chunk)
    if found is None:  # only `encoded_events_from_chunks` makes these: never happens
        raise ValueError(f"not an encoded event: {chunk[:60]!r}")
    name = found.group(1)
    text = found.group(2).decode("utf-8")
    try:
        data: Any = json.loads(text)
    except ValueError:
        data = text
    return SseEvent(None if name is None else name.decode("utf-8"), data)


def parse_sse(body: bytes) -> list[SseEvent] | None:
    """The events of an event-stream body, or None if it does not parse as one. Complete
    events only: a trailing incomplete event (a cut body) is left out."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    events: list[SseEvent] = []
    for block in text.replace("\r\n", "\n").split("\n\n")[:-1]:
        if not block.strip():
            continue
        name: str | None = None
        data_lines: list[str] = []
        for line in block.split("\n"):
            if line.startswith(":"):
                continue
            key, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if key == "event":
                name = value
            elif key == "data":
                data_lines.append(value)
            else:
                return None
        raw = "\n".join(data_lines)
        data: Any = raw
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = None
        # Only objects and arrays are kept as data: re-encoding any other JSON value as data
        # could change its text (a JSON string would lose its quotes).
        if isinstance(parsed, (dict, list)):
            data = parsed
        events.append(SseEvent(name, data))
    return events
