"""The retry policy inside the model call: what is retried, how long to wait, when to fall back."""

from __future__ import annotations

import copy
import random

import pytest

from engine.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    SystemSubtype,
    UserMessage,
)
from engine.model import ModelError, ModelErrorKind
from engine.retry import (
    MAX_RETRY_AFTER_S,
    RetryState,
    fallback_warning_text,
    is_retryable,
    retry_delay_s,
    retry_message_text,
    should_fall_back,
    strip_thinking_signatures,
)

TIMESTAMP = "2026-01-01T00:00:00.000Z"


def error(
    kind: ModelErrorKind,
    status: int | None = None,
    *,
    should_retry: bool | None = None,
    retry_after_s: float | None = None,
    error_type: str | None = None,
    message: str = "failed",
) -> ModelError:
    return ModelError(
        kind,
        message,
        status=status,
        should_retry=should_retry,
        retry_after_s=retry_after_s,
        error_type=error_type,
    )


OVERLOADED = error(ModelErrorKind.OVERLOADED, 529, error_type="overloaded_error", message="Overloaded")
SERVER_ERROR = error(ModelErrorKind.SERVER_ERROR, 500, error_type="api_error")


# --- what is retried -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "model_error"),
    [
        ("408 request timeout", error(ModelErrorKind.REQUEST_TIMEOUT, 408)),
        ("409 conflict", error(ModelErrorKind.CONFLICT, 409)),
        ("429 rate limited", error(ModelErrorKind.RATE_LIMITED, 429)),
        ("500 server error", SERVER_ERROR),
        ("503 server error", error(ModelErrorKind.SERVER_ERROR, 503)),
        ("529 overloaded", OVERLOADED),
        ("overloaded error event in a 200 stream", error(ModelErrorKind.OVERLOADED, 200)),
        ("connection failed", error(ModelErrorKind.CONNECTION_FAILED, should_retry=True)),
        ("connection dropped", error(ModelErrorKind.CONNECTION_DROPPED, should_retry=True)),
        ("connection failed without the flag", error(ModelErrorKind.CONNECTION_FAILED)),
        ("400 with x-should-retry: true", error(ModelErrorKind.INVALID_REQUEST, 400, should_retry=True)),
        ("prompt too long with x-should-retry: true", error(ModelErrorKind.PROMPT_TOO_LONG, 400, should_retry=True)),
        ("401 with x-should-retry: true", error(ModelErrorKind.AUTHENTICATION, 401, should_retry=True)),
    ],
)
def test_retryable(case: str, model_error: ModelError) -> None:
    assert is_retryable(model_error), case


@pytest.mark.parametrize(
    ("case", "model_error"),
    [
        ("529 with x-should-retry: false", error(ModelErrorKind.OVERLOADED, 529, should_retry=False)),
        ("429 with x-should-retry: false", error(ModelErrorKind.RATE_LIMITED, 429, should_retry=False)),
        ("connection fault with x-should-retry: false", error(ModelErrorKind.CONNECTION_FAILED, should_retry=False)),
        ("prompt too long", error(ModelErrorKind.PROMPT_TOO_LONG, 400)),
        ("413 request too large", error(ModelErrorKind.PROMPT_TOO_LONG, 413)),
        ("media too large", error(ModelErrorKind.MEDIA_TOO_LARGE, 400)),
        ("invalid request", error(ModelErrorKind.INVALID_REQUEST, 400)),
        ("401 authentication", error(ModelErrorKind.AUTHENTICATION, 401)),
        ("403 permission", error(ModelErrorKind.AUTHENTICATION, 403)),
        ("prompt too long on a 500", error(ModelErrorKind.PROMPT_TOO_LONG, 500)),
        ("max output tokens", error(ModelErrorKind.MAX_OUTPUT_TOKENS)),
        ("harness failure", error(ModelErrorKind.HARNESS)),
        ("harness failure even with should_retry", error(ModelErrorKind.HARNESS, should_retry=True)),
    ],
)
def test_not_retryable(case: str, model_error: ModelError) -> None:
    assert not is_retryable(model_error), case


# --- how long to wait ------------------------------------------------------------------------


def test_without_jitter_the_backoff_doubles_from_half_a_second() -> None:
    rng = random.Random(0)
    delays = [retry_delay_s(n, error=SERVER_ERROR, rng=rng, jitter=0.0) for n in range(1, 7)]
    assert delays == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0]


def test_the_backoff_is_capped_at_32_seconds() -> None:
    rng = random.Random(0)
    delays = [retry_delay_s(n, error=SERVER_ERROR, rng=rng, jitter=0.0) for n in (7, 8, 20, 5000)]
    assert delays == [32.0, 32.0, 32.0, 32.0]


def test_base_and_cap_are_options() -> None:
    rng = random.Random(0)
    delays = [retry_delay_s(n, error=SERVER_ERROR, rng=rng, base_s=1.0, max_s=3.0, jitter=0.0) for n in (1, 2, 3)]
    assert delays == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("attempt", [1, 2, 3, 6, 7, 10])
def test_jitter_adds_at_most_a_quarter_of_the_backoff(attempt: int) -> None:
    backoff = min(0.5 * 2 ** (attempt - 1), 32.0)
    rng = random.Random(attempt)
    for _ in range(200):
        delay = retry_delay_s(attempt, error=SERVER_ERROR, rng=rng)
        assert backoff <= delay <= backoff * 1.25


def test_the_same_seed_gives_the_same_delays() -> None:
    def delays(seed: int) -> list[float]:
        rng = random.Random(seed)
        return [retry_delay_s(n, error=OVERLOADED, rng=rng) for n in range(1, 11)]

    assert delays(7) == delays(7)
    assert delays(7) != delays(8)


def test_the_jitter_is_drawn_from_the_given_rng() -> None:
    expected = 2.0 + 0.25 * 2.0 * random.Random(3).random()
    assert retry_delay_s(3, error=SERVER_ERROR, rng=random.Random(3)) == expected


def test_retry_after_is_used_as_sent_without_jitter() -> None:
    rate_limited = error(ModelErrorKind.RATE_LIMITED, 429, retry_after_s=7.0)
    assert retry_delay_s(1, error=rate_limited, rng=random.Random(0)) == 7.0
    assert retry_delay_s(9, error=rate_limited, rng=random.Random(0)) == 7.0


def test_retry_after_may_exceed_the_backoff_cap() -> None:
    rate_limited = error(ModelErrorKind.RATE_LIMITED, 429, retry_after_s=90.0)
    assert retry_delay_s(1, error=rate_limited, rng=random.Random(0)) == 90.0


def test_retry_after_is_capped_at_ten_minutes() -> None:
    rate_limited = error(ModelErrorKind.RATE_LIMITED, 429, retry_after_s=86_400.0)
    assert MAX_RETRY_AFTER_S == 600.0
    assert retry_delay_s(1, error=rate_limited, rng=random.Random(0)) == MAX_RETRY_AFTER_S


def test_a_negative_retry_after_means_no_wait() -> None:
    rate_limited = error(ModelErrorKind.RATE_LIMITED, 429, retry_after_s=-3.0)
    assert retry_delay_s(1, error=rate_limited, rng=random.Random(0)) == 0.0


def test_retry_after_leaves_the_rng_untouched() -> None:
    rng = random.Random(5)
    retry_delay_s(1, error=error(ModelErrorKind.RATE_LIMITED, 429, retry_after_s=2.0), rng=rng)
    assert rng.random() == random.Random(5).random()


def test_attempts_are_counted_from_one() -> None:
    with pytest.raises(ValueError, match="counted from 1; got 0"):
        retry_delay_s(0, error=SERVER_ERROR, rng=random.Random(0))


# --- retry state and model fallback ----------------------------------------------------------


def test_a_fresh_state_has_no_attempts() -> None:
    assert RetryState() == RetryState(attempt=0, consecutive_overloaded=0)


def test_each_failure_counts_an_attempt_and_overloaded_errors_in_a_row() -> None:
    state = RetryState().next(OVERLOADED).next(OVERLOADED)
    assert state == RetryState(attempt=2, consecutive_overloaded=2)


def test_another_error_breaks_the_overloaded_run_but_still_counts_as_an_attempt() -> None:
    state = RetryState().next(OVERLOADED).next(OVERLOADED).next(SERVER_ERROR).next(OVERLOADED)
    assert state == RetryState(attempt=4, consecutive_overloaded=1)


def test_an_overloaded_error_event_mid_stream_counts_as_overloaded() -> None:
    mid_stream = error(ModelErrorKind.OVERLOADED, 200, error_type="overloaded_error")
    assert RetryState().next(mid_stream).consecutive_overloaded == 1


def test_next_returns_a_new_state() -> None:
    state = RetryState()
    state.next(OVERLOADED)
    assert state == RetryState()


def _overloaded_times(count: int) -> RetryState:
    state = RetryState()
    for _ in range(count):
        state = state.next(OVERLOADED)
    return state


def test_fallback_after_the_threshold_of_overloaded_errors_in_a_row() -> None:
    kwargs = {"threshold": 3, "fallback_model": "claude-haiku-4-5", "current_model": "claude-sonnet-4-6"}
    assert [should_fall_back(_overloaded_times(n), **kwargs) for n in range(5)] == [False, False, False, True, True]


def test_no_fallback_without_a_fallback_model() -> None:
    state = _overloaded_times(3)
    assert not should_fall_back(state, threshold=3, fallback_model=None, current_model="claude-sonnet-4-6")


def test_no_fallback_to_the_model_already_in_use() -> None:
    state = _overloaded_times(3)
    model = "claude-sonnet-4-6"
    assert not should_fall_back(state, threshold=3, fallback_model=model, current_model=model)


def test_no_fallback_when_the_overloaded_run_was_broken() -> None:
    state = _overloaded_times(2).next(SERVER_ERROR).next(OVERLOADED)
    assert not should_fall_back(state, threshold=3, fallback_model="claude-haiku-4-5", current_model="m")


def test_a_fallback_threshold_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1; got 0"):
        should_fall_back(RetryState(), threshold=0, fallback_model="claude-haiku-4-5", current_model="m")


# --- texts -----------------------------------------------------------------------------------


def test_the_retry_message_names_the_error_the_wait_and_the_attempt() -> None:
    text = retry_message_text(OVERLOADED, 2, 10, 1.1)
    assert text == "API error (529 overloaded_error: Overloaded) · retrying in 1.1 s (attempt 2 of 10)"


def test_the_retry_message_rounds_the_wait_to_a_tenth_of_a_second() -> None:
    rate_limited = error(ModelErrorKind.RATE_LIMITED, 429, error_type="rate_limit_error", message="Too many requests")
    text = retry_message_text(rate_limited, 1, 10, 0.5625)
    assert text == "API error (429 rate_limit_error: Too many requests) · retrying in 0.6 s (attempt 1 of 10)"


def test_the_retry_message_of_a_connection_fault_names_its_kind() -> None:
    dropped = error(ModelErrorKind.CONNECTION_DROPPED, should_retry=True, message="Connection dropped mid-stream: x")
    text = retry_message_text(dropped, 3, 10, 2.0)
    assert text == (
        "API error (connection_dropped: Connection dropped mid-stream: x) · retrying in 2.0 s (attempt 3 of 10)"
    )


def test_the_fallback_warning_names_both_models() -> None:
    text = fallback_warning_text("claude-haiku-4-5", "claude-sonnet-4-6")
    assert text == "Switched to claude-haiku-4-5 due to high demand for claude-sonnet-4-6"


# --- stripping thinking for a fallback model -------------------------------------------------


def _user(content: str) -> UserMessage:
    return UserMessage(uuid=f"u-{content}", timestamp=TIMESTAMP, message={"role": "user", "content": content})


def _assistant(uuid: str, *blocks: dict[str, object]) -> AssistantMessage:
    return AssistantMessage(
        uuid=uuid,
        timestamp=TIMESTAMP,
        parent_uuid="parent",
        request_id="req_1",
        message={"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": list(blocks)},
    )


THINKING = {"type": "thinking", "thinking": "hmm", "signature": "sig-bound-to-model"}
REDACTED = {"type": "redacted_thinking", "data": "opaque"}
TEXT = {"type": "text", "text": "answer"}
TOOL_USE = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "a"}}


def test_thinking_and_redacted_thinking_are_removed_from_assistant_messages() -> None:
    stripped = strip_thinking_signatures([_assistant("a1", THINKING, TEXT, REDACTED, TOOL_USE)])
    assert [m.message["content"] for m in stripped] == [[TEXT, TOOL_USE]]  # type: ignore[attr-defined]


def test_a_stripped_message_keeps_its_uuid_and_every_other_field() -> None:
    original = _assistant("a1", THINKING, TEXT)
    (stripped,) = strip_thinking_signatures([original])
    assert isinstance(stripped, AssistantMessage)
    assert (stripped.uuid, stripped.parent_uuid, stripped.request_id) == ("a1", "parent", "req_1")
    assert {k: v for k, v in stripped.message.items() if k != "content"} == {
        k: v for k, v in original.message.items() if k != "content"
    }


def test_an_assistant_message_with_only_thinking_is_dropped() -> None:
    messages: list[Message] = [
        _user("q"),
        _assistant("a1", THINKING),
        _assistant("a2", REDACTED),
        _assistant("a3", TEXT),
    ]
    assert [m.uuid for m in strip_thinking_signatures(messages)] == ["u-q", "a3"]


def test_other_messages_pass_through_unchanged() -> None:
    system = SystemMessage(uuid="s1", timestamp=TIMESTAMP, subtype=SystemSubtype.WARNING, content="careful")
    messages: list[Message] = [_user("q"), system, _assistant("a1", TEXT)]
    assert strip_thinking_signatures(messages) == messages


def test_stripping_never_mutates_the_input() -> None:
    messages: list[Message] = [_user("q"), _assistant("a1", THINKING, TEXT), _assistant("a2", THINKING)]
    before = copy.deepcopy(messages)
    stripped = strip_thinking_signatures(messages)
    assert messages == before
    stripped[-1].message["content"].append({"type": "text", "text": "later"})  # type: ignore[attr-defined]
    stripped[-1].message["content"][0]["text"] = "changed"  # type: ignore[attr-defined]
    assert messages == before
