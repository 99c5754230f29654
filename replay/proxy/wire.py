"""What the proxy puts on the wire and what it keeps of it: SSE events in the bytes a replay
gives (`event_chunk`, `EventSplitter`), recorded responses played back with their event
boundaries and faults (`play`), and what an upstream exchange becomes in the cassette
(`recorded_interaction`, through the cassette package's own vcrpy-shape reader, so a proxied
recording is classified, decoded and scrubbed exactly as every other recording)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from replay.cassette import FAULT_KEY, Interaction, RecordedFaultKind, RecordedResponse, interactions_from_vcr
from replay.cassette.interaction import BodyKind, SseEvent, encode_sse_event, parse_sse
from replay.http.connection import ResponseWriter

__all__ = ["HOP_BY_HOP", "EventSplitter", "event_chunk", "is_event_stream", "play", "recorded_interaction"]

# Headers about one connection, never forwarded (RFC 9110 §7.6.1), and the framing the proxy redoes.
HOP_BY_HOP: Final = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "content-encoding",
        "accept-encoding",
    }
)
_EVENT_END: Final = re.compile(rb"\r?\n\r?\n")


def event_chunk(event: SseEvent) -> bytes:
    """One event as the proxy sends it, recording or replaying alike: its data as compact JSON
    with sorted keys (how a cassette stores it), so a replay gives byte for byte what the
    recording run's client read."""
    data = event.data
    if isinstance(data, (dict, list)):
        data = json.loads(json.dumps(data, sort_keys=True))
    return encode_sse_event(SseEvent(event.event, data))


class EventSplitter:
    """Cuts a byte stream at event boundaries (a blank line): `feed` gives the chunks to send
    for the complete events so far, `rest` what is left when the stream ends."""

    def __init__(self) -> None:
        self._pending = b""
        self.events = 0
        """How many complete events have been cut off so far."""

    def feed(self, data: bytes) -> list[bytes]:
        self._pending += data
        chunks: list[bytes] = []
        while (end := _EVENT_END.search(self._pending)) is not None:
            block, self._pending = self._pending[: end.end()], self._pending[end.end() :]
            events = parse_sse(block)
            if events:
                chunks.extend(event_chunk(event) for event in events)
                self.events += len(events)
            elif block.strip():
                chunks.append(block)  # not an event this proxy understands: passed on as it came
        return chunks

    def rest(self) -> bytes:
        return self._pending


def is_event_stream(headers: Iterable[tuple[str, str]]) -> bool:
    return any(name.lower() == "content-type" and "text/event-stream" in value.lower() for name, value in headers)


async def play(response: ResponseWriter, recorded: RecordedResponse) -> None:
    """A recorded response on the wire: one chunk per event, and a recorded fault happens again
    (the connection is closed where it was cut, or before any response for a failed one)."""
    fault = recorded.fault
    if fault is not None and fault.kind is RecordedFaultKind.CONNECTION_FAILED:
        await response.drop()
        return
    if recorded.kind is BodyKind.SSE:
        chunks = [event_chunk(event) for event in recorded.body]
        if fault is not None and fault.after_events is not None:
            chunks = chunks[: fault.after_events]
    else:
        chunks = recorded.chunks()
    streamed = recorded.kind is BodyKind.SSE or fault is not None
    length = None if streamed else sum(len(chunk) for chunk in chunks)
    await response.start(recorded.status, list(recorded.headers.items()), length=length)
    for chunk in chunks:
        await response.write(chunk)
    if fault is not None:
        await response.drop()
    else:
        await response.end()


@dataclass(frozen=True)
class _SentRequest:
    """The request as forwarded, in the shape the cassette package reads vcrpy's requests."""

    method: str
    uri: str
    body: bytes
    headers: Mapping[str, str]


def recorded_interaction(
    *,
    method: str,
    uri: str,
    request_headers: Mapping[str, str],
    body: bytes,
    status: int,
    reason: str,
    response_headers: Iterable[tuple[str, str]],
    received: bytes,
    fault: Mapping[str, Any] | None,
) -> Interaction:
    """The interaction to store for one forwarded exchange (scrubbed when the cassette is saved)."""
    headers: dict[str, list[str]] = {}
    for name, value in response_headers:
        headers.setdefault(name.lower(), []).append(value)
    response: dict[str, Any] = {
        "status": {"code": status, "message": reason},
        "headers": headers,
        "body": {"string": received},
    }
    if fault is not None:
        response[FAULT_KEY] = dict(fault)
    (interaction,) = interactions_from_vcr([_SentRequest(method, uri, body, request_headers)], [response])
    return interaction
