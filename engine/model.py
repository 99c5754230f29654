"""The model client: one Messages API call through the official SDK, streamed or not.

``AnthropicModel`` wraps ``anthropic.AsyncAnthropic`` over an injected ``httpx2.AsyncClient``,
so the transport (live HTTP, a recorder, a cassette, the fake model) is the only thing that
changes between a live session and a replay. It makes exactly one attempt (``max_retries=0``):
retrying belongs to the engine, so every attempt is a visible, recorded interaction.
Failures are classified by ``engine.model_errors`` (re-exported here).
"""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

import anthropic
import httpx2

from engine.model_errors import ModelError, ModelErrorKind, StreamBreak, classify_error
from engine.prompt_cache import CacheTTL, check_cache_marks, place_message_breakpoint, system_blocks

__all__ = [
    "NON_STREAMING_TIMEOUT_S",
    "AnthropicModel",
    "BlockComplete",
    "ModelClient",
    "ModelError",
    "ModelErrorKind",
    "ModelEvent",
    "ModelRequest",
    "QuerySource",
    "ResponseEnd",
    "StreamBreak",
    "StreamEvent",
    "classify_error",
]

JsonDict = dict[str, Any]


class QuerySource(StrEnum):
    """Why a request is made (the main loop, or the engine's own queries such as compaction)."""

    MAIN = "main"
    COMPACT = "compact"


@dataclass(frozen=True, kw_only=True)
class ModelRequest:
    """One Messages API request, in the API's own parameter names. ``params()`` adds the
    prompt-cache marks (``engine.prompt_cache``) to the body it builds, never to ``messages``."""

    model: str
    messages: list[JsonDict]
    max_tokens: int
    system: str | list[JsonDict] | None = None
    tools: list[JsonDict] = field(default_factory=list)
    thinking: JsonDict | None = None
    query_source: QuerySource = QuerySource.MAIN
    # False for the streaming fallback: the same request, answered as one JSON message.
    stream: bool = True
    # Sent as the ``anthropic-beta`` header (latched for the session by the caller).
    betas: tuple[str, ...] = ()
    cache_ttl: CacheTTL | None = None
    # A side query that must not write a cache entry: the message mark goes one message earlier.
    skip_cache_write: bool = False
    # Whether the stream yields every raw SDK event as a ``StreamEvent``. Off, only the blocks
    # and the end come out: each raw event would cost a hop through the caller's generators.
    raw_events: bool = True
    # Messages known to hold no cache mark (the normalizer's settled view, the very objects):
    # placing the marks skips them when ``messages`` starts with them, and walks all otherwise.
    unmarked: Sequence[JsonDict] = field(default=(), compare=False, repr=False)

    def params(self) -> JsonDict:
        """Keyword arguments for ``messages.create`` (empty options left out, so the body
        hashes the same whether or not a caller spelled out a default), with the cache marks
        placed. Raises `TooManyCacheMarksError` when the body has more than the API accepts."""
        messages = place_message_breakpoint(
            self.messages, self.cache_ttl, skip_cache_write=self.skip_cache_write, unmarked=self.unmarked
        )
        params: JsonDict = {"model": self.model, "max_tokens": self.max_tokens, "messages": messages}
        system = system_blocks(self.system, self.cache_ttl)
        if system:
            params["system"] = system
        if self.tools:
            params["tools"] = self.tools
        if self.thinking:
            params["thinking"] = self.thinking
        # The messages placing left as they were had no mark: only the copies are counted.
        check_cache_marks(params, unmarked=self.messages)
        if self.betas:
            params["extra_headers"] = {"anthropic-beta": ",".join(self.betas)}
        return params


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """A raw SDK stream event, passed through for observers (never recorded)."""

    event: Any


@dataclass(frozen=True, slots=True)
class BlockComplete:
    """A content block is complete: the engine wraps it in an assistant message. ``usage`` is
    what was known then (``message_start``'s when streamed; the final usage when not)."""

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

# The SDK's own default timeout; a non-streamed response must arrive whole within it.
NON_STREAMING_TIMEOUT_S = 600.0


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
        non_streaming_timeout_s: float = NON_STREAMING_TIMEOUT_S,
    ) -> None:
        self.client = anthropic.AsyncAnthropic(
            api_key=api_key,
            base_url=base_url,
            http_client=http_client,
            max_retries=0,
            default_headers=dict(default_headers or {}),
        )
        self.non_streaming_timeout_s = non_streaming_timeout_s

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """The response as events: raw ``StreamEvent``s (streamed requests with ``raw_events``
        only), one ``BlockComplete`` per content block, then ``ResponseEnd``. Failures raise
        ``ModelError``."""
        if not request.stream:
            for completed in await self._create(request):
                yield completed
            return
        # Built outside the try: a body with too many cache marks is the engine's bug, raised as is.
        params = request.params()
        try:
            stream = await self.client.messages.create(**params, stream=True)
        except Exception as exc:
            raise classify_error(exc) from exc
        assembler = _ResponseAssembler(request_id=stream.response.headers.get("request-id"))
        raw_events = request.raw_events
        try:
            async for event in stream:
                if raw_events:
                    yield StreamEvent(event)
                completed = assembler.feed(event)
                if completed is not None:
                    yield completed
        except Exception as exc:
            raise classify_error(exc, mid_stream=True) from exc
        finally:
            await stream.close()

    async def count_tokens(self, request: ModelRequest) -> int:
        """The request's input tokens, from ``POST /v1/messages/count_tokens`` (same body
        minus ``max_tokens``). Failures raise ``ModelError``."""
        params = request.params()
        del params["max_tokens"]
        try:
            counted = await self.client.messages.count_tokens(**params)
        except Exception as exc:
            raise classify_error(exc) from exc
        return counted.input_tokens

    async def _create(self, request: ModelRequest) -> list[BlockComplete | ResponseEnd]:
        # An explicit timeout: without one the SDK refuses any non-streamed call whose
        # max_tokens suggests more than 10 minutes (over ~21,000), which the escalated
        # 64,000 of a max-output-tokens retry would be.
        params = request.params()
        try:
            message = await self.client.messages.create(**params, timeout=self.non_streaming_timeout_s)
        except Exception as exc:
            raise classify_error(exc) from exc
        usage = _usage_dict(message.usage)
        # ``_request_id`` is the SDK's documented (public despite the underscore) accessor.
        request_id = message._request_id
        events: list[BlockComplete | ResponseEnd] = [
            BlockComplete(
                message_id=message.id,
                model=message.model,
                block=_block_start(block.to_dict()),
                usage=dict(usage),
                request_id=request_id,
            )
            for block in message.content
        ]
        events.append(
            ResponseEnd(
                message_id=message.id,
                stop_reason=message.stop_reason,
                stop_sequence=message.stop_sequence,
                usage=dict(usage),
            )
        )
        return events


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
            delta = event.delta
            if delta.type == "text_delta":  # most events of a response: no call for them
                self.blocks[event.index]["text"] += delta.text
            else:
                self._apply_delta(event.index, delta)
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
