"""Secrets never reach disk: scrubbing interactions (headers, bodies, SSE events, vcrpy's
records) before a cassette is written. Scanning a written file is `secret_scan`; undoing a
compressed body's encoding is `content_encoding`.

What is dropped, what is redacted, and why:

- Secret headers (`SECRET_HEADERS`: credentials, cookies, the organization id) are dropped from
  requests and responses.
- Volatile request headers (`x-stainless-*`, ``user-agent``, ``host``, ``content-length``, ...)
  vary by machine, attempt and SDK version and never take part in matching, so they are
  dropped too: a re-recorded cassette then differs only where the conversation did.
- Volatile response headers (``date``, ``content-length``, ``transfer-encoding``, ``cf-*``,
  ``x-envoy-*``, ``server-timing``, ``via``, ``alt-svc``, ...) are dropped for the same reason.
  ``anthropic-ratelimit-*`` (remaining counts and reset timestamps of the recording account) are
  dropped as well: they change on every recording, neither the SDK nor the engine reads them,
  and a fake 429 carries ``retry-after``, which is kept. ``request-id``, ``retry-after``,
  ``x-should-retry`` and ``content-type`` are kept: the SDK reads them.
- Every text that is kept (bodies, SSE data, URLs, header values) goes through the one
  redaction pass of `replay.redact.redactor`: the recording environment's credentials and whatever the
  detect-secrets plugins find become ``[REDACTED:<kind>]`` placeholders.

A request body scrubbed here is what a cassette stores and fingerprints, so a replay transport
must scrub an incoming request the same way (`scrub_request`) before fingerprinting it.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from replay.cassette.content_encoding import decode_content_encoding
from replay.cassette.interaction import BodyKind, Interaction, RecordedRequest, RecordedResponse, SseEvent
from replay.redact.redactor import Redactor, current_redactor

__all__ = [
    "REDACTED",
    "SECRET_HEADERS",
    "VOLATILE_REQUEST_HEADERS",
    "VOLATILE_REQUEST_HEADER_PREFIXES",
    "VOLATILE_RESPONSE_HEADERS",
    "VOLATILE_RESPONSE_HEADER_PREFIXES",
    "RequestBodyScrub",
    "keeps_request_header",
    "keeps_response_header",
    "scrub_bytes",
    "scrub_interaction",
    "scrub_interactions",
    "scrub_request",
    "scrub_response",
    "scrub_sse_events",
    "scrub_text",
    "scrub_value",
    "scrub_vcr_request",
    "scrub_vcr_response",
]

REDACTED: Final = "REDACTED"

SECRET_HEADERS: Final = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "cookie",
        "set-cookie",
        "anthropic-organization-id",
    }
)
VOLATILE_REQUEST_HEADERS: Final = frozenset(
    {
        "user-agent",
        "host",
        "content-length",
        "accept-encoding",
        "traceparent",
        "tracestate",
        "connection",
        "idempotency-key",
    }
)
VOLATILE_REQUEST_HEADER_PREFIXES: Final = ("x-stainless-",)
VOLATILE_RESPONSE_HEADERS: Final = frozenset(
    {
        "date",
        "content-length",
        "connection",
        "keep-alive",
        "transfer-encoding",
        "server",
        "server-timing",
        "via",
        "alt-svc",
        "strict-transport-security",
        "x-robots-tag",
    }
)
VOLATILE_RESPONSE_HEADER_PREFIXES: Final = ("cf-", "x-envoy-", "anthropic-ratelimit-")

# ---------------------------------------------------------------------------------------------
# Texts and values


def scrub_text(text: str) -> str:
    """``text`` with every secret (`replay.redact.redactor`) replaced by its placeholder."""
    return current_redactor().redact_text(text)


def scrub_bytes(data: bytes) -> bytes:
    """``data`` with every secret replaced, for bodies that are not text."""
    return current_redactor().redact_bytes(data)


def scrub_value(value: Any, memo: ScrubMemo | None = None) -> Any:
    """A JSON value with every string (keys too) scrubbed: a copy, or the value itself when it
    holds nothing to scrub. With a ``memo`` (for one pass over many values) each distinct string
    is redacted once: a session's requests re-send its history, so a cassette's strings are
    mostly repeats, and redacting each anew made saving O(n²)."""
    return current_redactor().redact_value(value, memo)


# A string's scrubbed form, or None when scrubbing leaves it as it is.
ScrubMemo = dict[str, str | None]


# ---------------------------------------------------------------------------------------------
# Headers


def keeps_request_header(name: str) -> bool:
    """Whether a request header may be stored: neither secret nor volatile."""
    lowered = name.lower()
    return (
        lowered not in SECRET_HEADERS
        and lowered not in VOLATILE_REQUEST_HEADERS
        and not lowered.startswith(VOLATILE_REQUEST_HEADER_PREFIXES)
    )


def keeps_response_header(name: str) -> bool:
    """Whether a response header may be stored: neither secret nor volatile."""
    lowered = name.lower()
    return (
        lowered not in SECRET_HEADERS
        and lowered not in VOLATILE_RESPONSE_HEADERS
        and not lowered.startswith(VOLATILE_RESPONSE_HEADER_PREFIXES)
    )


def _scrub_headers(headers: Mapping[str, str], *, keep: Callable[[str], bool]) -> dict[str, str]:
    return {name: scrub_text(value) for name, value in headers.items() if keep(name)}


# ---------------------------------------------------------------------------------------------
# Interactions


def scrub_request(request: RecordedRequest, memo: ScrubMemo | None = None) -> RecordedRequest:
    """The request as a cassette stores it: secret and volatile headers gone, texts scrubbed
    (``memo``: see `scrub_value`)."""
    return replace(
        request,
        uri=scrub_text(request.uri),
        headers=_scrub_headers(request.headers, keep=keeps_request_header),
        body=scrub_value(request.body, memo),
    )


def scrub_response(response: RecordedResponse, memo: ScrubMemo | None = None) -> RecordedResponse:
    """The response as a cassette stores it: secret and volatile headers gone, body scrubbed
    (``memo``: see `scrub_value`)."""
    body: Any = response.body
    if response.kind is BodyKind.SSE:
        body = scrub_sse_events(response.body, memo)
    elif response.kind in (BodyKind.JSON, BodyKind.TEXT):
        body = scrub_value(response.body, memo)
    elif response.kind is BodyKind.BINARY:
        body = base64.b64encode(scrub_bytes(base64.b64decode(response.body))).decode("ascii")
    return replace(response, headers=_scrub_headers(response.headers, keep=keeps_response_header), body=body)


# The streamed field of each delta type: a content block's text arrives in pieces.
_DELTA_FIELDS: Final = {"text_delta": "text", "input_json_delta": "partial_json", "thinking_delta": "thinking"}


def scrub_sse_events(events: Sequence[SseEvent], memo: ScrubMemo | None = None) -> list[SseEvent]:
    """A stream's events scrubbed. A content block's deltas are redacted as one text (a secret
    may be split across two deltas), keeping one delta per event, so the answer the SDK puts
    together is the answer redacted whole, as the next request (which carries it) is; every
    other value of an event is scrubbed on its own."""
    pieces: dict[int, str] = {}
    for (_, delta_field), positions in delta_streams(events).items():
        texts = [events[p].data["delta"][delta_field] for p in positions]
        pieces.update(zip(positions, current_redactor().redact_pieces(texts), strict=True))
    scrubbed = []
    for position, event in enumerate(events):
        if position not in pieces:
            scrubbed.append(SseEvent(event.event, scrub_value(event.data, memo)))
            continue
        delta_field = _delta_field(event.data)
        assert delta_field is not None
        delta = {k: v if k == delta_field else scrub_value(v, memo) for k, v in event.data["delta"].items()}
        delta[delta_field] = pieces[position]
        data = {k: delta if k == "delta" else scrub_value(v, memo) for k, v in event.data.items()}
        scrubbed.append(SseEvent(event.event, data))
    return scrubbed


def delta_streams(events: Sequence[SseEvent]) -> dict[tuple[Any, str], list[int]]:
    """The positions of each content block's streamed deltas, by (block index, the delta's text
    field): the pieces of one text each."""
    streams: dict[tuple[Any, str], list[int]] = {}
    for position, event in enumerate(events):
        delta_field = _delta_field(event.data)
        if delta_field is not None:
            streams.setdefault((event.data.get("index"), delta_field), []).append(position)
    return streams


def _delta_field(data: Any) -> str | None:
    if not isinstance(data, Mapping) or data.get("type") != "content_block_delta":
        return None
    delta = data.get("delta")
    if not isinstance(delta, Mapping):
        return None
    delta_field = _DELTA_FIELDS.get(str(delta.get("type")))
    return delta_field if delta_field is not None and isinstance(delta.get(delta_field), str) else None


def scrub_interaction(interaction: Interaction, memo: ScrubMemo | None = None) -> Interaction:
    """Both halves scrubbed; the input is not changed (``memo``: see `scrub_value`)."""
    return Interaction(scrub_request(interaction.request, memo), scrub_response(interaction.response, memo))


def scrub_interactions(interactions: Iterable[Interaction]) -> list[Interaction]:
    """`scrub_interaction` of each, as a cassette is written: each distinct string redacted once
    (the memo lives for this one call, so it holds no memory after)."""
    memo: ScrubMemo = {}
    return [scrub_interaction(interaction, memo) for interaction in interactions]


# ---------------------------------------------------------------------------------------------
# vcrpy hooks (before_record_request / before_record_response)


class RequestBodyScrub:
    """`scrub_bytes` for one recorder's request bodies, remembering the last body and its result:
    vcrpy scrubs a recorded request three times (`scrub_vcr_request`: as it looks the request up,
    and as it keeps it), and the recorder once more to fingerprint it, each a pass over the whole
    history the request carries. A recorder's own, so no body outlives it."""

    def __init__(self) -> None:
        self._last: tuple[Redactor, bytes, bytes] | None = None

    def __call__(self, body: bytes) -> bytes:
        redactor = current_redactor()
        last = self._last
        if last is not None and last[0] is redactor and last[1] == body:
            return last[2]
        scrubbed = redactor.redact_bytes(body)
        self._last = (redactor, body, scrubbed)
        return scrubbed


def scrub_vcr_request(request: Any, scrub_body: Callable[[bytes], bytes] | None = None) -> Any:
    """A scrubbed copy of a ``vcr.request.Request``; usable as vcrpy's ``before_record_request``
    (``scrub_body``: a `RequestBodyScrub` to share)."""
    scrubbed = copy.copy(request)
    scrubbed.uri = scrub_text(request.uri)
    scrubbed.headers = {
        name: scrub_text(value) for name, value in request.headers.items() if keeps_request_header(name)
    }
    # httpx (the only client recorded here) gives bytes; file-like and iterator bodies of other
    # clients are left to vcrpy's own filters.
    body = request.body
    if isinstance(body, (bytes, str)):
        raw = body.encode("utf-8") if isinstance(body, str) else body
        # Without NUL bytes `scrub_bytes` is `_scrub_raw`: both redact the UTF-8 text as text.
        scrubbed.body = scrub_body(raw) if scrub_body is not None and b"\x00" not in raw else _scrub_raw(raw)
    return scrubbed


def scrub_vcr_response(response: dict[str, Any]) -> dict[str, Any]:
    """A scrubbed copy of a vcrpy response dict (``headers: {name: [values]}``, ``body:
    {"string": bytes}``); usable as vcrpy's ``before_record_response``. A compressed body is
    decoded first (a key inside gzip bytes cannot be found), and its content-encoding dropped."""
    scrubbed = dict(response)
    headers: dict[str, list[str]] = {name: list(_as_list(values)) for name, values in response["headers"].items()}
    body = (response.get("body") or {}).get("string")
    encoding = _pop_header(headers, "content-encoding")
    if isinstance(body, str):
        body = body.encode("utf-8")
    if encoding and isinstance(body, bytes):
        body = decode_content_encoding(body, ", ".join(encoding))
        _pop_header(headers, "content-length")
    elif encoding:
        headers["content-encoding"] = encoding
    scrubbed["headers"] = {
        name: [scrub_text(v) for v in values] for name, values in headers.items() if keeps_response_header(name)
    }
    streamed = any("event-stream" in v.lower() for k, vs in headers.items() if k.lower() == "content-type" for v in vs)
    if body is not None and not streamed:
        scrubbed["body"] = {**response["body"], "string": _scrub_raw(body)}
    elif body is not None:
        # A stream is redacted by the cassette writer (`scrub_sse_events`), a content block's
        # deltas as one text: redacting each raw event alone would miss a secret split across
        # two and redact pieces the whole answer does not have. This body stays in memory.
        scrubbed["body"] = {**response["body"], "string": body}
    return scrubbed


def _scrub_raw(body: bytes) -> bytes:
    try:
        return scrub_text(body.decode("utf-8")).encode("utf-8")
    except UnicodeDecodeError:
        return scrub_bytes(body)


def _as_list(values: str | Iterable[str]) -> list[str]:
    return [values] if isinstance(values, str) else list(values)


def _pop_header(headers: dict[str, list[str]], name: str) -> list[str]:
    for key in [k for k in headers if k.lower() == name]:
        return headers.pop(key)
    return []
