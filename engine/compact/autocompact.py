"""Autocompact: when the context nears the window, the model summarizes it.

``should_autocompact`` decides (the threshold, collapse's suppression, the circuit breaker);
``compact_conversation`` does it. The summary is a real model call with query source
``compact``, streamed through the session's own ``ModelClient``, so it is recorded and replayed
like any other request. ``settings.compact_request`` says how it is built: a request of its own
(the summarizer's system prompt, no tools), or the conversation's own request with the
instruction appended, which reads the prompt cache the loop wrote. If the summary request is
itself too long, the oldest round is dropped from what is summarized and the request retried, at
most ``settings.compact_prompt_too_long_retries`` times. The new history is
``[boundary, summary, *kept]``; old messages leave memory (the transcript keeps them).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from engine.compact._content import replace_media
from engine.compact.boundary import CompactTrigger, compact_boundary, summary_message
from engine.compact.rounds import split_rounds
from engine.deps import QueryDeps
from engine.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    UserMessage,
    tool_use_blocks,
)
from engine.model import (
    BlockComplete,
    ModelError,
    ModelErrorKind,
    ModelRequest,
    QuerySource,
)
from engine.normalize import normalize_messages_for_api
from engine.settings import CompactRequest, EngineSettings
from engine.tokens import estimate_message_tokens, token_count_with_estimation

__all__ = [
    "COMPACT_PROMPT",
    "COMPACT_SYSTEM_PROMPT",
    "TRUNCATED_FOR_RETRY_MARKER",
    "AutoCompactTracking",
    "CompactionError",
    "CompactionResult",
    "ConversationRequest",
    "build_summary_request",
    "compact_conversation",
    "kept_messages_start",
    "should_autocompact",
]

COMPACT_SYSTEM_PROMPT = "You are a helpful AI assistant tasked with summarizing conversations."

COMPACT_PROMPT = """\
Your task is to create a detailed summary of the conversation so far, paying close attention to \
the user's explicit requests and your previous actions. This summary should capture the \
technical details, code patterns and decisions that are essential for continuing the work \
without losing context. Respond with text only: do not call any tools.

Before your final summary, wrap your analysis in <analysis> tags. In it, go through the \
conversation in order and identify the user's explicit requests and intents, your approach, \
key decisions, file names, code snippets, function signatures and edits, errors and how they \
were fixed, and any feedback the user gave, especially where they asked you to do something \
differently. Then check the summary for technical accuracy and completeness.

Your summary, inside <summary> tags, should have these sections:
1. Primary Request and Intent: everything the user explicitly asked for, in detail.
2. Key Technical Concepts: the technologies, frameworks and concepts discussed.
3. Files and Code Sections: the files examined, changed or created, why each matters, and the \
code that matters most.
4. Errors and Fixes: the errors met, how they were fixed, and what the user said about them.
5. Problem Solving: problems solved and troubleshooting still in progress.
6. All User Messages: every user message that is not a tool result.
7. Pending Tasks: what you were explicitly asked to do and have not done yet.
8. Current Work: precisely what was being worked on right before this summary, with file names \
and code.
9. Optional Next Step: the next step, only if it follows directly from the user's most recent \
request; quote the conversation to show where you left off."""

# The request the loop would send for these messages (system, tools, user context, cache marks
# as the loop places them): what a ``CONVERSATION_PREFIX`` summary request starts from.
ConversationRequest = Callable[[Sequence[Message]], ModelRequest]

# Stands first when a retry dropped the rounds before an assistant turn (the API wants a user turn first).
TRUNCATED_FOR_RETRY_MARKER = "[Earlier conversation truncated for compaction retry]"
_MEDIA_PLACEHOLDER = "[{kind}]"


class CompactionError(Exception):
    """A compaction failed and the history is unchanged. ``cause`` is the model error, if one
    was the reason; the caller counts the failure (the circuit breaker)."""

    def __init__(self, message: str, *, cause: ModelError | None = None, summary_requests: int = 0) -> None:
        super().__init__(message)
        self.cause = cause
        self.summary_requests = summary_requests


@dataclass(frozen=True)
class AutoCompactTracking:
    """What the loop remembers about autocompact between passes (``State.auto_compact_tracking``)."""

    consecutive_failures: int = 0
    # Whether this query has compacted, and how many turns ran since (for the trace).
    compacted: bool = False
    turn_counter: int = 0
    turn_id: str | None = None

    def succeeded(self, *, turn_id: str | None = None) -> AutoCompactTracking:
        """The tracking after a successful compaction: the breaker closes, the turn count restarts."""
        return AutoCompactTracking(compacted=True, turn_counter=0, turn_id=turn_id)

    def failed(self) -> AutoCompactTracking:
        """The tracking after a failed compaction: one failure closer to the circuit breaker."""
        return dataclasses.replace(self, consecutive_failures=self.consecutive_failures + 1)

    def next_turn(self) -> AutoCompactTracking:
        """The tracking for the next turn: turns are counted once this query has compacted."""
        return dataclasses.replace(self, turn_counter=self.turn_counter + 1) if self.compacted else self

    def circuit_open(self, settings: EngineSettings) -> bool:
        """True after ``settings.autocompact_max_failures`` failures in a row: stop trying."""
        return self.consecutive_failures >= settings.autocompact_max_failures


def should_autocompact(token_count: int, settings: EngineSettings, tracking: AutoCompactTracking) -> bool:
    """Compact now? Autocompact is on and not suppressed by context collapse, the count has
    reached the threshold, and the circuit breaker is closed."""
    if not settings.autocompact or settings.context_collapse:
        return False
    if tracking.circuit_open(settings):
        return False
    return token_count >= settings.autocompact_threshold


@dataclass(frozen=True)
class CompactionResult:
    """A finished compaction: the new history is ``messages``."""

    boundary: SystemMessage
    summary: UserMessage
    # Messages kept verbatim after the summary (never a tool_result without its tool_use).
    kept: list[Message]
    pre_tokens: int
    post_tokens: int
    # How many model calls the summary took (1, plus one per prompt-too-long retry).
    summary_requests: int

    @property
    def messages(self) -> list[Message]:
        return [self.boundary, self.summary, *self.kept]


async def compact_conversation(
    messages: Sequence[Message],
    *,
    deps: QueryDeps,
    settings: EngineSettings,
    model: str,
    trigger: CompactTrigger,
    keep_recent_messages: int = 0,
    conversation_request: ConversationRequest | None = None,
) -> CompactionResult:
    """Summarize ``messages`` (all but the last ``keep_recent_messages``, widened so no kept
    tool_result loses its tool_use) with one model call, retried on prompt-too-long by dropping
    the oldest round. ``conversation_request`` builds the loop's own request, which a
    ``CONVERSATION_PREFIX`` summary request extends. Raises ``CompactionError`` on failure;
    ``messages`` is never changed."""
    if keep_recent_messages < 0:
        raise ValueError(f"keep_recent_messages cannot be negative, not {keep_recent_messages}.")
    source = list(messages)
    start = kept_messages_start(source, keep_recent_messages)
    history, kept = source[:start], source[start:]
    if not normalize_messages_for_api(history):
        raise CompactionError("There is nothing to compact: no message before the kept ones reaches the model.")
    requests = 0
    while True:
        requests += 1
        try:
            request = build_summary_request(
                history, settings=settings, model=model, conversation_request=conversation_request
            )
            summary_text = await _stream_summary(deps, request)
            break
        except ModelError as error:
            history = _after_prompt_too_long(error, history, attempt=requests, settings=settings)
    if not summary_text.strip():
        raise CompactionError(
            "The summary request returned no text, so the conversation was not compacted.", summary_requests=requests
        )
    pre_tokens = token_count_with_estimation(source)
    boundary = compact_boundary(deps, trigger=trigger, pre_tokens=pre_tokens, logical_parent_uuid=source[-1].uuid)
    summary = summary_message(deps, summary_text)
    return CompactionResult(
        boundary=boundary,
        summary=summary,
        kept=kept,
        pre_tokens=pre_tokens,
        post_tokens=estimate_message_tokens([summary, *kept]),
        summary_requests=requests,
    )


def build_summary_request(
    history: Sequence[Message],
    *,
    settings: EngineSettings,
    model: str,
    conversation_request: ConversationRequest | None = None,
) -> ModelRequest:
    """The summary request, with the summary prompt as the last user turn, as
    ``settings.compact_request`` says: ``OWN_PROMPT``, the history as the API sees it (media as
    placeholders), the summarizer's system prompt and no tools; ``CONVERSATION_PREFIX``, the
    loop's own request for ``history`` (``conversation_request``: same system, tools, thinking
    and messages), so its prefix is one the loop cached. Either way the message cache mark goes
    on the second-to-last message: it reads what is cached and writes no entry of its own."""
    if settings.compact_request is CompactRequest.CONVERSATION_PREFIX:
        if conversation_request is None:
            raise ValueError("A conversation_prefix summary request needs the conversation's own request builder.")
        base = conversation_request(history)
        return dataclasses.replace(
            base,
            messages=_with_summary_prompt(base.messages),
            max_tokens=settings.summary_max_output_tokens,
            query_source=QuerySource.COMPACT,
            skip_cache_write=True,
        )
    without_media, _ = replace_media(history, lambda kind: _MEDIA_PLACEHOLDER.format(kind=kind))
    return ModelRequest(
        model=model,
        messages=_with_summary_prompt(normalize_messages_for_api(without_media)),
        max_tokens=settings.summary_max_output_tokens,
        system=COMPACT_SYSTEM_PROMPT,
        query_source=QuerySource.COMPACT,
        betas=settings.betas,
        cache_ttl=settings.prompt_cache_ttl,
        skip_cache_write=True,
    )


def _with_summary_prompt(api: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``api`` (never changed: the loop's view may be shared) with the summary prompt as the
    last user turn, and a user turn first when a retry left an assistant turn there."""
    messages = list(api)
    if messages and messages[0]["role"] == "assistant":
        messages.insert(0, {"role": "user", "content": [{"type": "text", "text": TRUNCATED_FOR_RETRY_MARKER}]})
    prompt = {"type": "text", "text": COMPACT_PROMPT}
    if messages and messages[-1]["role"] == "user":
        # Joining the last user turn keeps the roles alternating (it may hold tool results,
        # which must stay right after their tool_use).
        content = messages[-1]["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        messages[-1] = {**messages[-1], "content": [*blocks, prompt]}
    else:
        messages.append({"role": "user", "content": [prompt]})
    return messages


def kept_messages_start(messages: Sequence[Message], keep_recent_messages: int) -> int:
    """Where the kept tail begins: the last ``keep_recent_messages`` messages, moved earlier
    until no kept tool_result answers a tool_use before it and no response is split."""
    if keep_recent_messages == 0:
        return len(messages)
    start = max(len(messages) - keep_recent_messages, 0)
    while start > 0:
        earlier = _earliest_needed(messages, start)
        if earlier >= start:
            return start
        start = earlier
    return start


def _earliest_needed(messages: Sequence[Message], start: int) -> int:
    """The earliest index before ``start`` that the tail from ``start`` depends on (``start``
    itself when none): the tool_use of a kept tool_result, or a block of a kept response."""
    kept = messages[start:]
    answered = {
        block.get("tool_use_id")
        for m in kept
        if isinstance(m, UserMessage) and isinstance(m.content, list)
        for block in m.content
        if block.get("type") == "tool_result"
    }
    responses = {m.message.get("id") for m in kept if isinstance(m, AssistantMessage) and not m.is_api_error_message}
    responses.discard(None)
    for index, message in enumerate(messages[:start]):
        if not isinstance(message, AssistantMessage) or message.is_api_error_message:
            continue
        if message.message.get("id") in responses or any(b["id"] in answered for b in tool_use_blocks(message)):
            return index
    return start


def _after_prompt_too_long(
    error: ModelError, history: list[Message], *, attempt: int, settings: EngineSettings
) -> list[Message]:
    """The shorter history to retry with after ``error``, or the ``CompactionError`` to give up with."""
    if error.kind is not ModelErrorKind.PROMPT_TOO_LONG:
        raise CompactionError(
            f"The summary request failed ({error.kind.value}): {error}. The conversation was not compacted.",
            cause=error,
            summary_requests=attempt,
        ) from error
    retries = settings.compact_prompt_too_long_retries
    if attempt > retries:
        raise CompactionError(
            f"The summary request was still too long after dropping the oldest rounds {retries} times: "
            f"{error}. The conversation was not compacted.",
            cause=error,
            summary_requests=attempt,
        ) from error
    shorter = _drop_oldest_round(history)
    if shorter is None:
        raise CompactionError(
            f"The summary request is too long ({error}) and no older round is left to drop. "
            "The conversation was not compacted.",
            cause=error,
            summary_requests=attempt,
        ) from error
    return shorter


def _drop_oldest_round(history: Sequence[Message]) -> list[Message] | None:
    """``history`` without its oldest round (the prompt before the first response stays);
    None when there is no round to drop."""
    split = split_rounds(history)
    if not split.rounds:
        return None
    # A round's tool results travel with it, so no tool_use loses its tool_result.
    shorter = [*split.head, *(m for round_ in split.rounds[1:] for m in round_)]
    return shorter if normalize_messages_for_api(shorter) else None


async def _stream_summary(deps: QueryDeps, request: ModelRequest) -> str:
    """The text of the summary response, streamed through the session's model client."""
    parts: list[str] = []
    events = deps.call_model.stream(request)
    try:
        async for event in events:
            if isinstance(event, BlockComplete) and event.block.get("type") == "text":
                parts.append(event.block.get("text", ""))
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()
    return "\n".join(parts)
