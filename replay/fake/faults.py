"""The faults a scenario turn can inject instead of an answer: an HTTP error, a stream that
breaks with an error event, drops, or sends an event that is not JSON, and a connection reset
before any byte of the response."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from replay.fake.blocks import Block, Match, ScenarioError, Turn, check_match, count_message_events, is_int, to_enum

__all__ = [
    "DropConnection",
    "ErrorType",
    "Fault",
    "FaultKind",
    "HttpError",
    "MalformedEvent",
    "ResetConnection",
    "StreamError",
    "TurnOrFault",
    "check_fault_reach",
]


class ErrorType(StrEnum):
    """The API's `error.type` values for the HTTP errors a scenario can inject."""

    INVALID_REQUEST_ERROR = "invalid_request_error"
    AUTHENTICATION_ERROR = "authentication_error"
    BILLING_ERROR = "billing_error"
    PERMISSION_ERROR = "permission_error"
    NOT_FOUND_ERROR = "not_found_error"
    REQUEST_TOO_LARGE = "request_too_large"
    RATE_LIMIT_ERROR = "rate_limit_error"
    API_ERROR = "api_error"
    TIMEOUT_ERROR = "timeout_error"
    OVERLOADED_ERROR = "overloaded_error"


class FaultKind(StrEnum):
    """The `fault:` names a scenario turn can use instead of content."""

    HTTP_ERROR = "http_error"
    STREAM_ERROR = "stream_error"
    DROP_CONNECTION = "drop_connection"
    MALFORMED_EVENT = "malformed_event"
    RESET_CONNECTION = "reset_connection"


@dataclass(frozen=True, kw_only=True)
class HttpError:
    """An HTTP error response (e.g. 429 with retry-after, 400 prompt too long, 529 overloaded)."""

    status: int
    error_type: ErrorType
    message: str
    headers: Mapping[str, str] = field(default_factory=dict)
    match: Match | None = None

    def __post_init__(self) -> None:
        check_match(self.match)
        if not is_int(self.status) or not 400 <= self.status <= 599:
            raise ScenarioError(f"status {self.status!r} is not an HTTP error status; expected 400-599.")
        object.__setattr__(self, "error_type", to_enum(ErrorType, self.error_type, "error_type"))
        object.__setattr__(self, "headers", dict(self.headers))


@dataclass(frozen=True, kw_only=True)
class StreamError:
    """A 200 stream that sends `after_events` events of `content`'s rendering, then an `error` event."""

    content: tuple[Block, ...] = ()
    after_events: int
    error_type: ErrorType = ErrorType.OVERLOADED_ERROR
    message: str = "Overloaded"
    match: Match | None = None

    def __post_init__(self) -> None:
        check_match(self.match)
        object.__setattr__(self, "content", tuple(self.content))
        check_after_events(self.after_events)
        object.__setattr__(self, "error_type", to_enum(ErrorType, self.error_type, "error_type"))


@dataclass(frozen=True, kw_only=True)
class DropConnection:
    """A 200 stream that sends `after_events` events of `content`'s rendering, then drops."""

    content: tuple[Block, ...] = ()
    after_events: int
    match: Match | None = None

    def __post_init__(self) -> None:
        check_match(self.match)
        object.__setattr__(self, "content", tuple(self.content))
        check_after_events(self.after_events)


@dataclass(frozen=True, kw_only=True)
class MalformedEvent:
    """A 200 stream that sends `after_events` events of `content`'s rendering, then an event whose
    data is not JSON: what a client gets from a broken server (the SDK cannot parse it)."""

    content: tuple[Block, ...] = ()
    after_events: int
    match: Match | None = None

    def __post_init__(self) -> None:
        check_match(self.match)
        object.__setattr__(self, "content", tuple(self.content))
        check_after_events(self.after_events)


@dataclass(frozen=True, kw_only=True)
class ResetConnection:
    """The connection is reset before any byte of the response: the request gets no answer at
    all (no status, no headers), as when a server or a middlebox refuses it."""

    match: Match | None = None

    def __post_init__(self) -> None:
        check_match(self.match)


Fault = HttpError | StreamError | DropConnection | MalformedEvent | ResetConnection
TurnOrFault = Turn | Fault


def check_after_events(after_events: object) -> None:
    if not is_int(after_events) or after_events < 0:  # type: ignore[operator]
        raise ScenarioError(f"'after_events' must be a non-negative integer, not {after_events!r}.")


def check_fault_reach(fault: StreamError | DropConnection | MalformedEvent) -> None:
    available = count_message_events(fault.content)
    if fault.after_events > available:
        raise ScenarioError(
            f"'after_events' is {fault.after_events}, but the fault's content renders only {available} events."
        )
