"""The deterministic fake model: a scenario played as byte-exact Messages API responses.

`FakeModel.respond` is the HTTP-framework-free core (method, path, headers, body in; status,
headers and body chunks out). `FakeModelTransport` and `SyncFakeModelTransport` serve it to an
`httpx2` client in-process, so the real `anthropic` SDK does all the parsing.

Exceptions::

    FakeModelError              anything the fake model cannot answer
    └── ScenarioExhaustedError  a request arrived after the script's last turn
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final, Protocol, assert_never

import httpx2

from replay.fake.blocks import RequestPurpose, ToolUseBlock, Turn
from replay.fake.faults import DropConnection, ErrorType, HttpError, MalformedEvent, ResetConnection, StreamError
from replay.fake.matching import accepts, describe_turns, last_user_text, purpose_of, unanswered_message
from replay.fake.scenario import Scenario
from replay.fake.sse import (
    SseEvent,
    encode_sse,
    error_body,
    render_message_events,
    render_message_json,
)
from replay.prompt_cache.cache import CacheUsage, PromptCache
from replay.prompt_cache.prefixes import estimate_request_tokens, estimate_tokens

__all__ = [
    "CONNECTION_RESET_MESSAGE",
    "DEFAULT_MODEL",
    "DROPPED_CONNECTION_MESSAGE",
    "FakeModel",
    "FakeModelError",
    "FakeModelTransport",
    "FakeResponse",
    "ReceivedRequest",
    "Route",
    "ScenarioExhaustedError",
    "SyncFakeModelTransport",
    "frozen_clock",
]

DEFAULT_MODEL: Final = "claude-sonnet-4-6"
SSE_CONTENT_TYPE: Final = "text/event-stream; charset=utf-8"
JSON_CONTENT_TYPE: Final = "application/json"
# The exact words httpcore gives the SDK when a server closes a chunked body early.
DROPPED_CONNECTION_MESSAGE: Final = (
    "peer closed connection without sending complete message body (incomplete chunked read)"
)
# A reset reaches httpcore as a ReadError with no words of its own; in-process it says what happened.
CONNECTION_RESET_MESSAGE: Final = "Connection reset by peer before any byte of the response."
_LAST_USER_TEXT_LIMIT: Final = 200


class Route(StrEnum):
    """The API paths the fake model serves (all with POST)."""

    MESSAGES = "/v1/messages"
    COUNT_TOKENS = "/v1/messages/count_tokens"


class FakeModelError(Exception):
    """The fake model cannot answer a request."""


class ScenarioExhaustedError(FakeModelError):
    """A POST /v1/messages that no scripted turn accepts: ``request`` (numbered from 1, as turns
    are) found none of the script's ``turns`` left for it. ``purpose`` and ``model`` say what it
    was; ``last_user_message`` is its last user message, shortened; ``turns_left`` are the
    unplayed (or repeating) matched turns that did not accept it, as (number, match) in script
    order; ``positional`` says the script has no matched turn (its turns answer requests in order)."""

    def __init__(
        self,
        message: str,
        *,
        turns: int,
        request: int,
        last_user_message: str,
        purpose: RequestPurpose | None = None,
        model: str | None = None,
        turns_left: tuple[tuple[int, str], ...] = (),
        positional: bool = True,
    ) -> None:
        super().__init__(message)
        self.turns, self.request, self.last_user_message = turns, request, last_user_message
        self.purpose, self.model, self.turns_left, self.positional = purpose, model, turns_left, positional

    def describe_turns_left(self) -> str:
        """``turn 2 (match: purpose: compact) and turn 5 (match: model: "claude-haiku")``."""
        return describe_turns(self.turns_left)


@dataclass(frozen=True, kw_only=True)
class FakeResponse:
    """A framework-free response: for SSE one event per chunk; `drop_after` drops the connection
    after the chunks; `reset` resets it before any byte (status and headers are not sent)."""

    status: int
    headers: list[tuple[str, str]]
    chunks: list[bytes] = field(default_factory=list)
    drop_after: bool = False
    reset: bool = False


@dataclass(frozen=True, kw_only=True)
class ReceivedRequest:
    """A request the fake model received; `json` is the parsed body, or None when it is not JSON."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    json: Any


class SentRequest(Protocol):
    """A request as a client sent it (a rewrite's kept request, say)."""

    @property
    def method(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def body(self) -> bytes: ...


def frozen_clock() -> float:
    """The fake model's default clock: time stands still, so a cache entry never expires."""
    return 0.0


def as_sent(body: dict[str, Any]) -> dict[str, Any]:
    """The fake model's default view of a body for counting tokens: the body itself."""
    return body


class FakeModel:
    """Plays a scenario: a POST /v1/messages gets the first unplayed turn whose ``match`` accepts
    it, else the next turn without one (so a script without matches plays in order: the n-th
    request gets the n-th turn); count_tokens consumes none.

    It keeps a prompt cache (`replay.prompt_cache`) across conversations, as the API's outlives
    one: a request's ``cache_control`` breakpoints write and read it, and a turn that pins no usage
    reports the split. ``clock`` (seconds; never the wall clock unless a caller passes it) says
    when entries expire; a recording sets it to the session's clock. ``normalize`` is the body
    its token counts and cache are computed from; a recording sets it to the fingerprints'
    normalization, so a temp folder's name (its length varies with the process id) or the
    machine's home moves no count."""

    def __init__(
        self,
        scenario: Scenario,
        *,
        model_name_default: str = DEFAULT_MODEL,
        clock: Callable[[], float] = frozen_clock,
        normalize: Callable[[dict[str, Any]], dict[str, Any]] = as_sent,
    ) -> None:
        self.scenario = scenario
        self.model_name_default = model_name_default
        self.clock = clock
        self.normalize = normalize
        self.prompt_cache = PromptCache()
        self.requests: list[ReceivedRequest] = []
        self._message_requests = 0
        # The turns played (indexes into the script) and the next turn without `match` to play.
        self._played: set[int] = set()
        self._next_positional = 0
        # Where the current conversation's requests start in `requests` (request ids count from it).
        self._conversation_start = 0
        self._last_turn_was_answer = False
        self.exhausted: ScenarioExhaustedError | None = None
        """The first request the script had no turn for (a recording of such a run is refused)."""
        # The loopback server may call respond from several threads; turns must stay in order.
        self._lock = threading.Lock()

    @property
    def turns_played(self) -> int:
        """How many scripted turns have been served (a repeating turn counts once)."""
        return len(self._played)

    @property
    def turns_remaining(self) -> int:
        """How many scripted turns no request has reached yet."""
        return len(self.scenario.turns) - self.turns_played

    @property
    def last_turn_was_answer(self) -> bool:
        """Whether the last turn played was a complete answer (not a fault a client may retry)."""
        return self._last_turn_was_answer

    def reset(self) -> None:
        """Start the scenario again from its first turn, as for a new conversation: message and
        request ids count from 1 again, so a second run gets the same bytes as the first.
        `requests` keeps every request received."""
        with self._lock:
            self._message_requests = 0
            self._played.clear()
            self._next_positional = 0
            self._conversation_start = len(self.requests)
            self._last_turn_was_answer = False

    def fast_forward(self, requests: Iterable[SentRequest]) -> None:
        """Serve these requests and discard the answers: the model is then exactly where it would
        be had it answered them. It is record mode rewrite's divergence hook as it stands
        (``on_divergence=fake_model.fast_forward``): the scenario plays on after the kept requests."""
        for request in requests:
            try:
                self.respond(request.method, request.path, {}, request.body)
            except ScenarioExhaustedError:
                pass  # the server answered it with an error, and the turn counts all the same

    def respond(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> FakeResponse:
        """Answer one HTTP request; raises ScenarioExhaustedError when the script has no turn left."""
        with self._lock:
            parsed = _parse_json(body)
            self.requests.append(
                ReceivedRequest(
                    method=method,
                    path=path,
                    headers={key.lower(): value for key, value in headers.items()},
                    body=body,
                    json=parsed,
                )
            )
            request_id = f"req_fake_{len(self.requests) - self._conversation_start:04d}"
            route = path.split("?", 1)[0]
            if method.upper() == "POST" and route == Route.COUNT_TOKENS:
                counted = (
                    estimate_request_tokens(self.normalize(parsed))
                    if isinstance(parsed, dict)
                    else estimate_tokens(body)
                )
                return _json_response(200, {"input_tokens": counted}, request_id=request_id)
            if method.upper() == "POST" and route == Route.MESSAGES:
                if not isinstance(parsed, dict):
                    message = "The request body is not a JSON object."
                    return _error_response(400, ErrorType.INVALID_REQUEST_ERROR, message, request_id=request_id)
                return self._play_next_turn(parsed, request_id=request_id)
            message = (
                f"Not Found: the fake model serves POST {Route.MESSAGES} and POST {Route.COUNT_TOKENS}, "
                f"not {method} {path}."
            )
            return _error_response(404, ErrorType.NOT_FOUND_ERROR, message, request_id=request_id)

    def _play_next_turn(self, request: dict[str, Any], *, request_id: str) -> FakeResponse:
        self._message_requests += 1
        # Ids count the requests, whichever turn answers: a repeating turn's answers stay unique.
        number = self._message_requests
        index = self._select(request)
        if index is None:
            exhausted = self._exhausted(number, request)
            self.exhausted = self.exhausted or exhausted
            raise exhausted
        self._played.add(index)
        turn = self.scenario.turns[index]
        self._last_turn_was_answer = isinstance(turn, Turn)
        streaming = request.get("stream") is True
        counted = self.normalize(request)
        input_tokens = estimate_request_tokens(counted)
        cached = None
        if not isinstance(turn, HttpError | ResetConnection):
            # The API writes the cache once a response begins, so a turn that fails before it
            # leaves the cache as it was.
            requested = request.get("model")
            model = requested if isinstance(requested, str) else self._model_name(request)
            cached = self.prompt_cache.use(counted, model=model, total_tokens=input_tokens, now=self.clock())
        render = _Renderer(
            message_id=f"msg_fake_{number:04d}",
            model=self._model_name(request),
            input_tokens=input_tokens,
            cached=cached,
            tool_id_prefix=f"toolu_fake_{number:04d}",
        )
        match turn:
            case HttpError(status=status, error_type=error_type, message=message, headers=extra):
                return _error_response(status, error_type, message, request_id=request_id, extra_headers=extra)
            case StreamError(content=content, after_events=after, error_type=error_type, message=message):
                if not streaming:
                    status = 529 if error_type is ErrorType.OVERLOADED_ERROR else 500
                    return _error_response(status, error_type, message, request_id=request_id)
                chunks = render.event_chunks(Turn(content=content))[:after]
                chunks.append(encode_sse(SseEvent.ERROR, error_body(error_type, message)))
                return _sse_response(chunks, request_id=request_id)
            case MalformedEvent(content=content, after_events=after):
                if not streaming:
                    return FakeResponse(
                        status=200,
                        headers=_headers(JSON_CONTENT_TYPE, request_id),
                        chunks=[b'{"type": "message", "content": [not json'],
                    )
                chunks = render.event_chunks(Turn(content=content))[:after]
                chunks.append(b"event: content_block_delta\ndata: {not json\n\n")
                return _sse_response(chunks, request_id=request_id)
            case DropConnection(content=content, after_events=after):
                if not streaming:
                    return FakeResponse(status=200, headers=_headers(JSON_CONTENT_TYPE, request_id), drop_after=True)
                chunks = render.event_chunks(Turn(content=content))[:after]
                return _sse_response(chunks, request_id=request_id, drop_after=True)
            case ResetConnection():
                return FakeResponse(status=0, headers=[], reset=True)
            case Turn():
                if streaming:
                    return _sse_response(render.event_chunks(turn), request_id=request_id)
                return _json_response(200, render.message_json(turn), request_id=request_id)
        assert_never(turn)

    def matched_turn_for(self, request: Mapping[str, Any]) -> int | None:
        """The number of the matched turn left that would answer this request body, or None
        (the turns without `match` are not asked)."""
        with self._lock:
            index = self._matched_index(request)
        return None if index is None else index + 1

    def _matched_index(self, request: Mapping[str, Any]) -> int | None:
        for index, turn in enumerate(self.scenario.turns):
            match = turn.match
            if match is not None and (match.repeat or index not in self._played) and accepts(match, request):
                return index
        return None

    def _select(self, request: Mapping[str, Any]) -> int | None:
        """The first matched turn left that accepts the request, else the next turn without match."""
        matched = self._matched_index(request)
        if matched is not None:
            return matched
        turns = self.scenario.turns
        while self._next_positional < len(turns) and turns[self._next_positional].match is not None:
            self._next_positional += 1
        if self._next_positional == len(turns):
            return None
        self._next_positional += 1
        return self._next_positional - 1

    def _model_name(self, request: Mapping[str, Any]) -> str:
        requested = request.get("model")
        return self.scenario.model or (requested if isinstance(requested, str) else self.model_name_default)

    def _exhausted(self, number: int, request: Mapping[str, Any]) -> ScenarioExhaustedError:
        turns = self.scenario.turns
        count = len(turns)
        script = f"The scenario {self.scenario.name!r}" if self.scenario.name else "The scenario"
        last = last_user_text(request, limit=_LAST_USER_TEXT_LIMIT)
        purpose = purpose_of(request)
        requested = request.get("model")
        model = requested if isinstance(requested, str) else None
        left = tuple(
            (index + 1, turn.match.describe())
            for index, turn in enumerate(turns)
            if turn.match is not None and (turn.match.repeat or index not in self._played)
        )
        what = f"request {number} to POST {Route.MESSAGES} (purpose {purpose}, model {model or 'not given'})"
        message = unanswered_message(script, count=count, request=what, last_user_message=last, turns_left=left)
        return ScenarioExhaustedError(
            message,
            turns=count,
            request=number,
            last_user_message=last,
            purpose=purpose,
            model=model,
            turns_left=left,
            positional=all(turn.match is None for turn in turns),
        )


@dataclass(frozen=True, kw_only=True)
class _Renderer:
    """Renders one request's turn with its deterministic ids and estimated input tokens."""

    message_id: str
    model: str
    input_tokens: int
    cached: CacheUsage | None
    tool_id_prefix: str

    def event_chunks(self, turn: Turn) -> list[bytes]:
        resolved = self._resolve(turn)
        events = render_message_events(
            resolved, message_id=self.message_id, model=self.model, input_tokens=self.input_tokens, cached=self.cached
        )
        return [encode_sse(event, data) for event, data in events]

    def message_json(self, turn: Turn) -> dict[str, Any]:
        return render_message_json(
            self._resolve(turn),
            message_id=self.message_id,
            model=self.model,
            input_tokens=self.input_tokens,
            cached=self.cached,
        )

    def _resolve(self, turn: Turn) -> Turn:
        content = tuple(
            dataclasses.replace(block, id=f"{self.tool_id_prefix}_{index}")
            if isinstance(block, ToolUseBlock) and block.id is None
            else block
            for index, block in enumerate(turn.content)
        )
        return dataclasses.replace(turn, content=content)


class FakeModelTransport(httpx2.AsyncBaseTransport):
    """An async httpx2 transport that answers every request from a FakeModel."""

    def __init__(self, fake_model: FakeModel) -> None:
        self.fake_model = fake_model

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = await request.aread()
        answer = self.fake_model.respond(request.method, request.url.raw_path.decode("ascii"), request.headers, body)
        if answer.reset:
            raise httpx2.ReadError(CONNECTION_RESET_MESSAGE, request=request)
        return httpx2.Response(answer.status, headers=answer.headers, stream=_AsyncChunks(answer), request=request)


class SyncFakeModelTransport(httpx2.BaseTransport):
    """A sync httpx2 transport that answers every request from a FakeModel."""

    def __init__(self, fake_model: FakeModel) -> None:
        self.fake_model = fake_model

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        body = request.read()
        answer = self.fake_model.respond(request.method, request.url.raw_path.decode("ascii"), request.headers, body)
        if answer.reset:
            raise httpx2.ReadError(CONNECTION_RESET_MESSAGE, request=request)
        return httpx2.Response(answer.status, headers=answer.headers, stream=_SyncChunks(answer), request=request)


class _AsyncChunks(httpx2.AsyncByteStream):
    def __init__(self, answer: FakeResponse) -> None:
        self._answer = answer

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._answer.chunks:
            yield chunk
        if self._answer.drop_after:
            raise httpx2.RemoteProtocolError(DROPPED_CONNECTION_MESSAGE)


class _SyncChunks(httpx2.SyncByteStream):
    def __init__(self, answer: FakeResponse) -> None:
        self._answer = answer

    def __iter__(self) -> Iterator[bytes]:
        yield from self._answer.chunks
        if self._answer.drop_after:
            raise httpx2.RemoteProtocolError(DROPPED_CONNECTION_MESSAGE)


def _headers(content_type: str, request_id: str, extra: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    return [("content-type", content_type), ("request-id", request_id), *(extra or {}).items()]


def _json_response(
    status: int, data: Mapping[str, Any], *, request_id: str, extra_headers: Mapping[str, str] | None = None
) -> FakeResponse:
    chunk = json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()
    return FakeResponse(status=status, headers=_headers(JSON_CONTENT_TYPE, request_id, extra_headers), chunks=[chunk])


def _error_response(
    status: int, error_type: ErrorType, message: str, *, request_id: str, extra_headers: Mapping[str, str] | None = None
) -> FakeResponse:
    return _json_response(status, error_body(error_type, message), request_id=request_id, extra_headers=extra_headers)


def _sse_response(chunks: list[bytes], *, request_id: str, drop_after: bool = False) -> FakeResponse:
    return FakeResponse(
        status=200, headers=_headers(SSE_CONTENT_TYPE, request_id), chunks=chunks, drop_after=drop_after
    )


def _parse_json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:  # includes UnicodeDecodeError
        return None
