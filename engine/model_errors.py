"""Model-call failures in the engine's terms: ``ModelError``, its kinds, and ``classify_error``.

Every exception the SDK or the transport raises during a model call becomes one ``ModelError``
whose ``kind`` says what the loop can do about it (recover, retry, surface). Re-exported from
``engine.model``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import anthropic
import httpx2

__all__ = ["ModelError", "ModelErrorKind", "StreamBreak", "classify_error"]

JsonDict = dict[str, Any]


class ModelErrorKind(StrEnum):
    """What went wrong with a model call, in the terms the loop acts on."""

    PROMPT_TOO_LONG = "prompt_too_long"
    MEDIA_TOO_LARGE = "media_too_large"
    MAX_OUTPUT_TOKENS = "max_output_tokens"
    OVERLOADED = "overloaded"
    RATE_LIMITED = "rate_limited"
    SERVER_ERROR = "server_error"
    # 408: the server gave up waiting for the request (or a timeout_error event mid-stream).
    REQUEST_TIMEOUT = "request_timeout"
    # 409: a lock timeout on the server's side; the same request may well succeed next time.
    CONFLICT = "conflict"
    CONNECTION_DROPPED = "connection_dropped"
    CONNECTION_FAILED = "connection_failed"
    AUTHENTICATION = "authentication"
    INVALID_REQUEST = "invalid_request"
    # A failure inside the transport that is not a network fault (a cassette miss, a fake
    # model whose script ran out): never retried, never read as a fault of the API.
    HARNESS = "harness"


class StreamBreak(StrEnum):
    """How a response stream that had begun (a 200 with events) was cut short."""

    ERROR_EVENT = "error_event"  # the server sent an `error` event
    MALFORMED_EVENT = "malformed_event"  # an event whose data is not JSON
    DROPPED = "dropped"  # the connection closed


@dataclass(eq=False)
class ModelError(Exception):
    """A failed model call, classified into the engine's terms."""

    kind: ModelErrorKind
    message: str
    status: int | None = None
    retry_after_s: float | None = None
    # The server's ``x-should-retry`` header (None when it sent none); connection faults set True.
    should_retry: bool | None = None
    request_id: str | None = None
    error_type: str | None = None
    cause: BaseException | None = field(default=None, repr=False)
    # Set when the failure cut short a stream that had begun; None for a request that failed
    # before any of its response arrived.
    stream_break: StreamBreak | None = None

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


_PROMPT_TOO_LONG = re.compile(r"prompt is too long", re.IGNORECASE)
_MEDIA_TOO_LARGE = re.compile(
    r"image exceeds|image dimensions exceed|image.*too large|pdf.*(too large|pages)|document.*too large", re.IGNORECASE
)


def classify_error(exc: BaseException, *, mid_stream: bool = False) -> ModelError:
    """Map an SDK or transport exception to a ``ModelError``; ``mid_stream`` when it was raised
    while a response stream was read (the error then says how the stream broke)."""
    error = _classify(exc, mid_stream=mid_stream)
    if mid_stream and error.stream_break is None:
        error.stream_break = _stream_break(exc, error)
    return error


def _stream_break(exc: BaseException, error: ModelError) -> StreamBreak | None:
    if isinstance(exc, anthropic.APIStatusError):
        return StreamBreak.ERROR_EVENT
    if error.kind is ModelErrorKind.CONNECTION_DROPPED:
        return StreamBreak.DROPPED
    # The SDK parses each event's data with json.loads: a decode error is a malformed event.
    # The kind stays HARNESS (it is not an answer the API gives; nothing retries it by default).
    if isinstance(exc, json.JSONDecodeError):
        return StreamBreak.MALFORMED_EVENT
    return None


def _classify(exc: BaseException, *, mid_stream: bool) -> ModelError:
    if isinstance(exc, ModelError):
        return exc
    if isinstance(exc, anthropic.APIStatusError):
        return _classify_status(exc)
    if isinstance(exc, anthropic.APIConnectionError):
        cause = exc.__cause__
        # The SDK wraps anything the transport raises as "Connection error."; only genuine
        # network failures are connection faults. Anything else (a cassette miss) is surfaced
        # as itself, so the user sees the miss rather than a retried "network" error.
        if cause is not None and not isinstance(cause, (httpx2.TransportError, OSError)):
            return ModelError(ModelErrorKind.HARNESS, str(cause) or type(cause).__name__, cause=cause)
        kind = ModelErrorKind.CONNECTION_FAILED
        return ModelError(kind, f"Connection error: {cause or exc}", should_retry=True, cause=exc)
    if isinstance(exc, (httpx2.TransportError, OSError)):
        kind = ModelErrorKind.CONNECTION_DROPPED if mid_stream else ModelErrorKind.CONNECTION_FAILED
        return ModelError(kind, f"Connection dropped mid-stream: {exc}", should_retry=True, cause=exc)
    return ModelError(ModelErrorKind.HARNESS, f"{type(exc).__name__}: {exc}", cause=exc)


def _classify_status(exc: anthropic.APIStatusError) -> ModelError:
    status = exc.status_code
    error_type = exc.type
    message = exc.api_message or str(exc)
    headers = exc.response.headers
    should_retry_header = headers.get("x-should-retry")
    should_retry = None if should_retry_header is None else should_retry_header == "true"
    common: JsonDict = {
        "status": status,
        "should_retry": should_retry,
        "request_id": exc.request_id,
        "error_type": error_type,
        "cause": exc,
    }
    kind = _status_kind(status, error_type, message)
    if "retry-after" in headers or "retry-after-ms" in headers:
        common["retry_after_s"] = _retry_after(headers)
    return ModelError(kind, message, **common)


def _status_kind(status: int, error_type: str | None, message: str) -> ModelErrorKind:
    # An error event inside a 200 stream has status 200: its type is all there is to go on.
    if error_type == "overloaded_error" or status == 529:
        return ModelErrorKind.OVERLOADED
    if status == 429 or error_type == "rate_limit_error":
        return ModelErrorKind.RATE_LIMITED
    if _MEDIA_TOO_LARGE.search(message):
        return ModelErrorKind.MEDIA_TOO_LARGE
    if _PROMPT_TOO_LONG.search(message) or status == 413 or error_type == "request_too_large":
        # A 413 is the request as a whole being too large: the same remedy as a long prompt.
        return ModelErrorKind.PROMPT_TOO_LONG
    if status in (401, 403):
        return ModelErrorKind.AUTHENTICATION
    if status == 408:
        return ModelErrorKind.REQUEST_TIMEOUT
    if status == 409:
        return ModelErrorKind.CONFLICT
    if status >= 500 or error_type == "api_error":
        return ModelErrorKind.SERVER_ERROR
    if error_type == "timeout_error":
        return ModelErrorKind.REQUEST_TIMEOUT
    return ModelErrorKind.INVALID_REQUEST


def _retry_after(headers: httpx2.Headers) -> float | None:
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return float(value) * scale
        except ValueError:
            continue
    return None
