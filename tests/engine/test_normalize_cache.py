"""IncrementalNormalizer equals normalize_messages_for_api on every history, growing or not."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.messages import (
    AssistantMessage,
    AttachmentMessage,
    Message,
    SystemMessage,
    SystemSubtype,
    UserMessage,
)
from engine.normalize import normalize_messages_for_api
from engine.normalize_cache import IncrementalNormalizer
from engine.prompt_cache import has_cache_mark, place_message_breakpoint

_counter = iter(range(10**9))


def _uuid() -> str:
    return f"u{next(_counter)}"


def user(content: Any) -> UserMessage:
    return UserMessage(uuid=_uuid(), timestamp="t", message={"role": "user", "content": content})


def assistant(blocks: list[dict[str, Any]], response: str, *, error: bool = False) -> AssistantMessage:
    return AssistantMessage(
        uuid=_uuid(),
        timestamp="t",
        is_api_error_message=error,
        message={"id": response, "role": "assistant", "content": blocks},
    )


@st.composite
def histories(draw: Any) -> list[Message]:
    messages: list[Message] = [user("start")]
    open_ids: list[str] = []
    for step in range(draw(st.integers(0, 25))):
        kind = draw(
            st.sampled_from(
                [
                    "text",
                    "tool",
                    "result",
                    "orphan",
                    "prompt",
                    "thinking",
                    "blank",
                    "system",
                    "error",
                    "attachment",
                    "same_response",
                    "marked_prompt",
                ]
            )
        )
        response = f"msg_{step}"
        if kind == "text":
            messages.append(assistant([{"type": "text", "text": f"t{step}"}], response))
        elif kind == "tool":
            tool_id = f"toolu_{step}"
            open_ids.append(tool_id)
            messages.append(assistant([{"type": "tool_use", "id": tool_id, "name": "X", "input": {}}], response))
        elif kind == "result" and open_ids:
            tool_id = open_ids.pop(draw(st.integers(0, len(open_ids) - 1)))
            messages.append(user([{"type": "tool_result", "tool_use_id": tool_id, "content": "ok"}]))
        elif kind == "orphan":
            messages.append(user([{"type": "tool_result", "tool_use_id": f"gone_{step}", "content": "?"}]))
        elif kind == "prompt":
            messages.append(user(f"p{step}"))
        elif kind == "thinking":
            messages.append(assistant([{"type": "thinking", "thinking": "hm", "signature": "s"}], response))
        elif kind == "blank":
            messages.append(assistant([{"type": "text", "text": "  "}], response))
        elif kind == "system":
            messages.append(SystemMessage(uuid=_uuid(), timestamp="t", subtype=SystemSubtype.WARNING, content="w"))
        elif kind == "error":
            messages.append(assistant([{"type": "text", "text": "API Error"}], response, error=True))
        elif kind == "attachment":
            messages.append(
                AttachmentMessage(
                    uuid=_uuid(), timestamp="t", attachment={"type": "queued_command", "prompt": f"q{step}"}
                )
            )
        elif kind == "marked_prompt":
            messages.append(user([{"type": "text", "text": f"m{step}", "cache_control": {"type": "ephemeral"}}]))
        elif kind == "same_response" and isinstance(messages[-1], AssistantMessage):
            messages.append(assistant([{"type": "text", "text": "more"}], messages[-1].message["id"]))
    return messages


def render(attachment: dict[str, Any]) -> str | None:
    return attachment.get("prompt")


@settings(max_examples=300, deadline=None)
@given(histories(), st.booleans())
def test_a_growing_history_normalizes_exactly_as_from_scratch(history: list[Message], thinking: bool) -> None:
    normalizer = IncrementalNormalizer(thinking_enabled=thinking, render_attachment=render)
    for end in range(1, len(history) + 1):
        expected = normalize_messages_for_api(history[:end], thinking_enabled=thinking, render_attachment=render)
        assert normalizer(history[:end]) == expected


@settings(max_examples=150, deadline=None)
@given(histories(), histories())
def test_a_history_that_is_not_an_extension_starts_over(first: list[Message], second: list[Message]) -> None:
    normalizer = IncrementalNormalizer()
    normalizer(first)
    assert normalizer(second) == normalize_messages_for_api(second)


def _assert_unmarked_prefix_is_sound(normalizer: IncrementalNormalizer, view: list[dict[str, Any]]) -> None:
    prefix = normalizer.unmarked_prefix
    assert len(prefix) <= len(view)
    assert all(entry is view[index] and not has_cache_mark(entry) for index, entry in enumerate(prefix))
    # Placing the marks with the prefix vouched for gives the very body placing from scratch gives.
    for skip in (False, True):
        assert place_message_breakpoint(view, "1h", skip_cache_write=skip, unmarked=prefix) == (
            place_message_breakpoint(view, "1h", skip_cache_write=skip)
        )


@settings(max_examples=200, deadline=None)
@given(histories(), histories(), st.integers(0, 30))
def test_the_unmarked_prefix_is_always_unmarked_and_leading(
    first: list[Message], second: list[Message], cut: int
) -> None:
    """Across a growing history, a rewrite that does not extend it (as compaction, snipping and
    microcompact make), growth again, the same history twice and a cut: the view equals
    normalizing from scratch, and what it vouches for holds no mark and leads the view."""
    normalizer = IncrementalNormalizer(render_attachment=render)
    earlier: list[tuple[list[dict[str, Any]], Sequence[dict[str, Any]]]] = []
    for history in (first, second, [*second, *first[:cut]], second[cut:]):
        for end in [*range(1, len(history) + 1), len(history), cut]:  # each pass, then twice the same
            view = normalizer(history[:end])
            assert view == normalize_messages_for_api(history[:end], render_attachment=render)
            _assert_unmarked_prefix_is_sound(normalizer, view)
            earlier.append((view, normalizer.unmarked_prefix))
    # A request keeps the prefix it was built with while later calls grow it or start over:
    # placing its marks still gives what placing from scratch gives.
    for view, prefix in earlier:
        assert place_message_breakpoint(view, None, unmarked=prefix) == place_message_breakpoint(view, None)


async def test_the_user_context_never_leaks_into_the_shared_view(tmp_path: Any) -> None:
    from engine import EngineSettings
    from tests.engine.conftest import make_session

    turns = [{"content": [{"tool_use": {"name": "Glob", "input": {"pattern": "*"}}}]}] * 3 + [
        {"content": [{"text": "ok"}]}
    ]
    session = make_session(tmp_path, turns, settings=EngineSettings(user_context="Today is Monday."), files={"a": "a"})
    await session.submit("go")
    for body in session.requests:
        assert str(body["messages"]).count("Today is Monday.") == 1
