"""Retries inside the model call: which errors, how long to wait, when to fall back.

Pure pieces the loop composes: nothing here sleeps, reads a clock or touches the global RNG.
The caller passes the session's seeded ``random.Random``, so a replay computes the same delays
and (with an injected sleep) never really waits.
"""

from __future__ import annotations

import copy
import dataclasses
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, assert_never

from engine.messages import AssistantMessage, Message
from engine.model_errors import ModelError, ModelErrorKind

__all__ = [
    "MAX_RETRY_AFTER_S",
    "RetryState",
    "fallback_warning_text",
    "is_retryable",
    "retry_delay_s",
    "retry_message_text",
    "should_fall_back",
    "strip_thinking_signatures",
]

# A server's retry-after is obeyed as sent, up to this: a longer wait (a misconfigured or
# hostile header) would hang a session for longer than any user would sit through.
MAX_RETRY_AFTER_S: Final = 600.0

_THINKING_TYPES: Final = frozenset({"thinking", "redacted_thinking"})


def is_retryable(error: ModelError) -> bool:
    """Whether the same request may succeed if sent again: 408, 409, 429, 5xx (and overloaded
    ``error`` events mid-stream) and connection faults; ``x-should-retry`` overrides all of it,
    except that a harness failure (a cassette miss) is never retried."""
    if error.kind is ModelErrorKind.HARNESS:
        return False
    if error.should_retry is not None:
        return error.should_retry
    return _kind_is_retryable(error.kind)


def _kind_is_retryable(kind: ModelErrorKind) -> bool:
    match kind:
        case (
            ModelErrorKind.OVERLOADED
            | ModelErrorKind.RATE_LIMITED
            | ModelErrorKind.SERVER_ERROR
            | ModelErrorKind.REQUEST_TIMEOUT
            | ModelErrorKind.CONFLICT
            | ModelErrorKind.CONNECTION_FAILED
            | ModelErrorKind.CONNECTION_DROPPED
        ):
            return True
        case (
            ModelErrorKind.PROMPT_TOO_LONG
            | ModelErrorKind.MEDIA_TOO_LARGE
            | ModelErrorKind.MAX_OUTPUT_TOKENS
            | ModelErrorKind.AUTHENTICATION
            | ModelErrorKind.INVALID_REQUEST
            | ModelErrorKind.HARNESS
        ):
            # Sending the same request again gets the same answer: these need a change first.
            return False
        case _:
            assert_never(kind)


def retry_delay_s(
    attempt: int,
    *,
    error: ModelError,
    rng: random.Random,
    base_s: float = 0.5,
    max_s: float = 32.0,
    jitter: float = 0.25,
) -> float:
    """Seconds to wait before retry number ``attempt`` (from 1): the server's retry-after when
    it sent one (capped at ``MAX_RETRY_AFTER_S``), else ``base_s·2^(attempt−1)`` capped at
    ``max_s``, plus up to ``jitter`` of that drawn from ``rng``."""
    if attempt < 1:
        raise ValueError(f"The retry attempt is counted from 1; got {attempt}.")
    if error.retry_after_s is not None:
        return min(max(error.retry_after_s, 0.0), MAX_RETRY_AFTER_S)
    # The exponent is bounded so a very late attempt cannot overflow a float; it is capped anyway.
    backoff = min(base_s * 2.0 ** min(attempt - 1, 64), max_s)
    return backoff + jitter * backoff * rng.random()


@dataclass(frozen=True)
class RetryState:
    """How one model call's retries stand: failed attempts so far, and how many of the latest
    in a row were overloaded. Start a fresh one for each model call and after a fallback."""

    attempt: int = 0
    consecutive_overloaded: int = 0

    def next(self, error: ModelError) -> RetryState:
        """The state after another failed attempt with ``error``."""
        overloaded = error.kind is ModelErrorKind.OVERLOADED
        return RetryState(
            attempt=self.attempt + 1,
            consecutive_overloaded=self.consecutive_overloaded + 1 if overloaded else 0,
        )


def should_fall_back(state: RetryState, *, threshold: int, fallback_model: str | None, current_model: str) -> bool:
    """True once ``threshold`` overloaded errors came in a row and a different model is configured."""
    if threshold < 1:
        raise ValueError(f"The overloaded-errors threshold for model fallback must be at least 1; got {threshold}.")
    has_fallback = fallback_model is not None and fallback_model != current_model
    return has_fallback and state.consecutive_overloaded >= threshold


def retry_message_text(error: ModelError, attempt: int, max_retries: int, delay_s: float) -> str:
    """The text of the ``system/api_error`` message yielded before a retry, e.g.
    ``API error (529 overloaded_error: Overloaded) · retrying in 1.1 s (attempt 2 of 10)``."""
    return f"API error ({_describe(error)}) · retrying in {delay_s:.1f} s (attempt {attempt} of {max_retries})"


def _describe(error: ModelError) -> str:
    # Connection faults have neither status nor error type: the engine's kind names them.
    label = " ".join(str(part) for part in (error.status, error.error_type) if part is not None)
    return f"{label or error.kind.value}: {error.message}"


def fallback_warning_text(new_model: str, old_model: str) -> str:
    """The warning yielded when the loop switches models after repeated overloaded errors."""
    return f"Switched to {new_model} due to high demand for {old_model}"


def strip_thinking_signatures(messages: Sequence[Message]) -> list[Message]:
    """``messages`` without thinking or redacted_thinking blocks in assistant messages, for a
    request to a fallback model (a signature is bound to the model that produced it).

    Changed messages are copies with the same uuids; an assistant message left with no content
    is dropped; the inputs are never mutated.
    """
    stripped: list[Message] = []
    for message in messages:
        if not isinstance(message, AssistantMessage) or not _has_thinking(message):
            stripped.append(message)
            continue
        kept = [copy.deepcopy(b) for b in message.content if b.get("type") not in _THINKING_TYPES]
        if kept:
            payload = {key: copy.deepcopy(value) for key, value in message.message.items() if key != "content"}
            stripped.append(dataclasses.replace(message, message={**payload, "content": kept}))
    return stripped


def _has_thinking(message: AssistantMessage) -> bool:
    return any(block.get("type") in _THINKING_TYPES for block in message.content)
