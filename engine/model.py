"""The model client: one streamed Messages API call through the official SDK.

``AnthropicModel`` wraps ``anthropic.AsyncAnthropic`` over an injected ``httpx2.AsyncClient``,
so the transport (live HTTP, a recorder, a cassette, the fake model) is the only thing that
changes between a live session and a replay. It makes exactly one attempt (``max_retries=0``):
retrying belongs to the engine, so every attempt is a visible, recorded interaction.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

import anthropic
import httpx2

__all__ = [
    "AnthropicModel",
    "BlockComplete",
    "ModelClient",
    "ModelError",
    "ModelErrorKind",
    "ModelEvent",
    "ModelRequest",
    "QuerySource",
    "ResponseEnd",
    "StreamEvent",
    "classify_error",
]

JsonDict = dict[str, Any]


class QuerySource(StrEnum):
    """Why a request is made (the main loop, or the engine's own queries such as compaction)."""

    MAIN = "main"
    COMPACT = "compact"


class ModelErrorKind(StrEnum):
    PROMPT_TOO_LONG = "prompt_too_long"
    MEDIA_TOO_LARGE = "media_too_large"
    MAX_OUTPUT_TOKENS = "max_output_tokens"
    OVERLOADED = "overloaded"
    RATE_LIMITED = "rate_limited"
    SERVER_ERROR = "server_error"
    CONNECTION_DROPPED = "connection_dropped"
    CONNECTION_FAILED = "connection_failed"
    AUTHENTICATION = "authentication"
    INVALID_REQUEST = "invalid_request"
    # A failure inside the transport that is not a network fault (a cassette miss, a fake
    # model whose script ran out): never retried, never read as a fault of the API.
    HARNESS = "harness"


@dataclass(eq=False)
class ModelError(Exception):
    """A failed model call, classified into the engine's terms."""

    kind: ModelErrorKind
    message: str
    status: int | None = None
    retry_after_s: float | None = None
    should_retry: bool | None = None
    request_id: str | None = None
    error_type: str | None = None
    cause: BaseException | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True, kw_only=True)
class ModelRequest:
    """One Messages API request, in the API's own parameter names."""

    model: str
    messages: list[JsonDict]
    max_tokens: int
    system: str | list[JsonDict] | None = None
    tools: list[JsonDict] = field(default_factory=list)
    thinking: JsonDict | None = None
    query_source: QuerySource = QuerySource.MAIN
    # False for the streaming fallback: the same request, answered as one JSON message.
    stream: bool = True

    def params(self) -> JsonDict:
        """Keyword arguments for ``messages.create`` (empty options left out, so the body
        hashes the same whether or not a caller spelled out a default)."""
        params: JsonDict = {"model": self.model, "max_tokens": self.max_tokens, "messages": self.messages}
        if self.system:
            params["system"] = self.system
        if self.tools:
            params["tools"] = self.tools
        if self.thinking:
            params["thinking"] = self.thinking
        return params


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """A raw SDK stream event, passed through for observers (never recorded)."""

    event: Any


@dataclass(frozen=True, slots=True)
class BlockComplete:
    """A content block finished streaming: the engine wraps it in an assistant message."""

    message_id: str
    model: str
    block: JsonDict
    usage: JsonDict
    request_id: str | None


@dataclass(frozen=True, slots=True)
class ResponseEnd:
    """The response's final stop reason and cumulative usage (from ``message_delta``)."""

    message_id: str
    stop_reason: str | None
    stop_sequence: str | None
    usage: JsonDict


ModelEvent = StreamEvent | BlockComplete | ResponseEnd


class ModelClient(Protocol):
    """What the loop calls to talk to a model."""

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]: ...


class AnthropicModel:
    """``ModelClient`` over the official SDK; the HTTP client (and so the transport) is injected."""

    def __init__(
        self,
        *,
        http_client: httpx2.AsyncClient,
        api_key: str = "sk-ant-replay-placeholder",
        base_url: str | None = None,
        default_headers: Mapping[str, str] | None = None,
    ) -> None:
        self.client = anthropic.AsyncAnthropic(
            api_key=api_key,
            base_url=base_url,
            http_client=http_client,
            max_retries=0,
            default_headers=dict(default_headers or {}),
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        try:
            stream = await self.client.messages.create(**request.params(), stream=True)
        except Exception as exc:  # noqa: BLE001 - every failure is classified, none escapes raw
            raise classify_error(exc) from exc
        assembler = _ResponseAssembler(request_id=stream.response.headers.get("request-id"))
        try:
            async for event in stream:
                yield StreamEvent(event)
                completed = assembler.feed(event)
                if completed is not None:
                    yield completed
        except Exception as exc:  # noqa: BLE001
            raise classify_error(exc, mid_stream=True) from exc
        finally:
            await stream.close()


class _ResponseAssembler:
    """Builds content blocks from raw events, in the API's JSON shape, as they complete."""

    def __init__(self, *, request_id: str | None) -> None:
        self.request_id = request_id
        self.message_id = ""
        self.model = ""
        self.usage: JsonDict = {}
        self.blocks: dict[int, JsonDict] = {}
        self.partial_json: dict[int, list[str]] = {}

    def feed(self, event: Any) -> BlockComplete | ResponseEnd | None:
        kind = event.type
        if kind == "content_block_delta":
            self._apply_delta(event.index, event.delta)
        elif kind == "content_block_start":
            self.blocks[event.index] = _block_start(event.content_block.to_dict())
            if self.blocks[event.index]["type"] == "tool_use":
                self.partial_json[event.index] = []
        elif kind == "content_block_stop":
            return self._complete(event.index)
        elif kind == "message_start":
            message = event.message
            self.message_id, self.model = message.id, message.model
            self.usage = _usage_dict(message.usage)
        elif kind == "message_delta":
            # message_delta's usage is cumulative: later counts replace earlier ones.
            self.usage.update({k: v for k, v in _usage_dict(event.usage).items() if v is not None})
            return ResponseEnd(
                message_id=self.message_id,
                stop_reason=event.delta.stop_reason,
                stop_sequence=event.delta.stop_sequence,
                usage=dict(self.usage),
            )
        return None

    def _apply_delta(self, index: int, delta: Any) -> None:
        block = self.blocks[index]
        kind = delta.type
        if kind == "text_delta":
            block["text"] += delta.text
        elif kind == "input_json_delta":
            self.partial_json[index].append(delta.partial_json)
        elif kind == "thinking_delta":
            block["thinking"] += delta.thinking
        elif kind == "signature_delta":
            block["signature"] = delta.signature

    def _complete(self, index: int) -> BlockComplete:
        block = self.blocks.pop(index)
        if block["type"] == "tool_use":
            raw = "".join(self.partial_json.pop(index))
            block["input"] = json.loads(raw) if raw else block.get("input") or {}
        return BlockComplete(
            message_id=self.message_id,
            model=self.model,
            block=block,
            usage=dict(self.usage),
            request_id=self.request_id,
        )


def _block_start(block: JsonDict) -> JsonDict:
    """The block as the API accepts it back: only the fields a request may carry."""
    kind = block["type"]
    if kind == "text":
        return {"type": "text", "text": block.get("text", "")}
    if kind == "tool_use":
        return {"type": "tool_use", "id": block["id"], "name": block["name"], "input": block.get("input") or {}}
    if kind == "thinking":
        return {"type": "thinking", "thinking": block.get("thinking", ""), "signature": block.get("signature", "")}
    if kind == "redacted_thinking":
        return {"type": "redacted_thinking", "data": block["data"]}
    return copy.deepcopy(block)


def _usage_dict(usage: Any) -> JsonDict:
    if usage is None:
        return {}
    return {k: v for k, v in usage.to_dict().items() if v is not None and not isinstance(v, dict)}


_PROMPT_TOO_LONG = re.compile(r"prompt is too long", re.IGNORECASE)
_MEDIA_TOO_LARGE = re.compile(
    r"image exceeds|image dimensions exceed|image.*too large|pdf.*(too large|pages)|document.*too large", re.IGNORECASE
)


def classify_error(exc: BaseException, *, mid_stream: bool = False) -> ModelError:
    """Map an SDK or transport exception to a ``ModelError``."""
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
    if error_type == "overloaded_error" or status == 529:
        kind = ModelErrorKind.OVERLOADED
    elif status == 429 or error_type == "rate_limit_error":
        kind = ModelErrorKind.RATE_LIMITED
        common["retry_after_s"] = _retry_after(headers)
    elif _MEDIA_TOO_LARGE.search(message):
        kind = ModelErrorKind.MEDIA_TOO_LARGE
    elif _PROMPT_TOO_LONG.search(message) or status == 413 or error_type == "request_too_large":
        # A 413 is the request as a whole being too large: the same remedy as a long prompt.
        kind = ModelErrorKind.PROMPT_TOO_LONG
    elif status in (401, 403):
        kind = ModelErrorKind.AUTHENTICATION
    elif status >= 500 or error_type == "api_error":
        kind = ModelErrorKind.SERVER_ERROR
    else:
        kind = ModelErrorKind.INVALID_REQUEST
    if kind is not ModelErrorKind.RATE_LIMITED and "retry-after" in headers:
        common["retry_after_s"] = _retry_after(headers)
    return ModelError(kind, message, **common)


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
