"""The tool-result budget: per API user turn, the largest fresh results go to files until the
turn fits; every decision is frozen so later requests repeat the same bytes."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.compact.tool_result_budget import (
    MIN_REPLACEABLE_CHARS,
    ContentReplacementState,
    apply_tool_result_budget,
)
from engine.messages import Message
from engine.tools import GrepTool, ToolUseContext, apply_result_size_limit
from tests.engine.compact.builders import (
    Conversation,
    frozen_copy,
    image,
    text,
    tool_result,
    tool_use,
    uuids,
)

LIMIT = 10_000


@pytest.fixture
def ctx(tmp_path: Path) -> ToolUseContext:
    return ToolUseContext(workspace_root=tmp_path / "workspace", session_dir=tmp_path / "session")


def one_turn(*sizes: int) -> Conversation:
    """A prompt, then one response calling a tool per size, then one message with the results."""
    chat = Conversation()
    chat.user("go")
    ids = [f"t{n}" for n in range(1, len(sizes) + 1)]
    chat.response(*(tool_use(i) for i in ids))
    chat.user([tool_result(i, f"{i}:" + "x" * (size - len(i) - 1)) for i, size in zip(ids, sizes, strict=True)])
    return chat


def contents(messages: list[Message]) -> dict[str, object]:
    return {
        block["tool_use_id"]: block["content"]
        for m in messages
        if isinstance(getattr(m, "content", None), list)
        for block in m.content  # type: ignore[attr-defined]
        if block.get("type") == "tool_result"
    }


def test_a_turn_within_the_limit_is_unchanged_and_every_result_is_kept(ctx: ToolUseContext) -> None:
    chat = one_turn(4_000, 5_000)
    state = ContentReplacementState()
    result = apply_tool_result_budget(chat.messages, state, limit_chars=LIMIT, ctx=ctx)
    assert (result.messages, result.replaced_ids, state.decisions) == (chat.messages, [], {"t1": False, "t2": False})


def test_over_the_limit_the_largest_results_are_replaced_until_the_turn_fits(ctx: ToolUseContext) -> None:
    chat = one_turn(3_000, 8_000, 4_000)
    result = apply_tool_result_budget(chat.messages, ContentReplacementState(), limit_chars=LIMIT, ctx=ctx)
    assert result.replaced_ids == ["t2"]


def test_a_replaced_result_is_saved_whole_and_its_preview_names_the_file(ctx: ToolUseContext) -> None:
    chat = one_turn(3_000, 9_000)
    original = contents(chat.messages)["t2"]
    result = apply_tool_result_budget(chat.messages, ContentReplacementState(), limit_chars=LIMIT, ctx=ctx)
    assert (ctx.session_dir / "tool-results" / "t2.txt").read_text() == original
    assert "tool-results/t2.txt" in contents(result.messages)["t2"]


def test_the_replaced_message_keeps_its_uuid(ctx: ToolUseContext) -> None:
    chat = one_turn(3_000, 9_000)
    result = apply_tool_result_budget(chat.messages, ContentReplacementState(), limit_chars=LIMIT, ctx=ctx)
    assert uuids(result.messages) == uuids(chat.messages)


def test_the_input_messages_are_never_changed(ctx: ToolUseContext) -> None:
    chat = one_turn(3_000, 9_000)
    before = frozen_copy(chat.messages)
    apply_tool_result_budget(chat.messages, ContentReplacementState(), limit_chars=LIMIT, ctx=ctx)
    assert chat.messages == before


def test_a_result_kept_under_the_limit_stays_kept_when_a_later_result_pushes_the_turn_over(
    ctx: ToolUseContext,
) -> None:
    chat = Conversation()
    chat.user("go")
    chat.response(tool_use("t1"), tool_use("t2"))
    chat.user([tool_result("t1", "a" * 8_000)])
    state = ContentReplacementState()
    apply_tool_result_budget(chat.messages, state, limit_chars=LIMIT, ctx=ctx)
    chat.user([tool_result("t2", "b" * 3_000)])  # the same API turn, now 11,000 characters
    result = apply_tool_result_budget(chat.messages, state, limit_chars=LIMIT, ctx=ctx)
    assert (contents(result.messages)["t1"], result.replaced_ids) == ("a" * 8_000, ["t2"])


def test_a_replaced_result_shows_the_same_text_on_every_later_call(ctx: ToolUseContext) -> None:
    chat = one_turn(3_000, 9_000)
    state = ContentReplacementState()
    first = apply_tool_result_budget(chat.messages, state, limit_chars=LIMIT, ctx=ctx)
    chat.tool_round("t9", result="later")
    second = apply_tool_result_budget(chat.messages, state, limit_chars=LIMIT, ctx=ctx)
    assert contents(second.messages)["t2"] == contents(first.messages)["t2"] == state.replacements["t2"]


def test_a_later_call_reports_no_new_replacement_and_saves_nothing_again(ctx: ToolUseContext) -> None:
    chat = one_turn(3_000, 9_000)
    state = ContentReplacementState()
    apply_tool_result_budget(chat.messages, state, limit_chars=LIMIT, ctx=ctx)
    (ctx.session_dir / "tool-results" / "t2.txt").unlink()
    second = apply_tool_result_budget(chat.messages, state, limit_chars=LIMIT, ctx=ctx)
    assert (second.replaced_ids, (ctx.session_dir / "tool-results" / "t2.txt").exists()) == ([], False)


def test_applying_the_budget_to_its_own_output_changes_nothing(ctx: ToolUseContext) -> None:
    chat = one_turn(3_000, 9_000)
    state = ContentReplacementState()
    first = apply_tool_result_budget(chat.messages, state, limit_chars=LIMIT, ctx=ctx)
    again = apply_tool_result_budget(first.messages, state, limit_chars=LIMIT, ctx=ctx)
    assert again.messages == first.messages


def test_the_limit_applies_per_turn_not_to_the_whole_history(ctx: ToolUseContext) -> None:
    chat = Conversation()
    chat.user("go")
    chat.tool_round("t1", result="a" * 8_000)
    chat.tool_round("t2", result="b" * 8_000)
    result = apply_tool_result_budget(chat.messages, ContentReplacementState(), limit_chars=LIMIT, ctx=ctx)
    assert result.replaced_ids == []


def test_results_split_over_consecutive_user_messages_are_one_turn(ctx: ToolUseContext) -> None:
    chat = Conversation()
    chat.user("go")
    chat.response(tool_use("t1"), tool_use("t2"))
    chat.user([tool_result("t1", "a" * 6_000)])
    chat.user([tool_result("t2", "b" * 7_000)])
    result = apply_tool_result_budget(chat.messages, ContentReplacementState(), limit_chars=LIMIT, ctx=ctx)
    assert result.replaced_ids == ["t2"]


def test_a_result_with_an_image_is_kept_as_it_is(ctx: ToolUseContext) -> None:
    chat = Conversation()
    chat.user("go")
    chat.response(tool_use("t1"))
    chat.user([tool_result("t1", [text("c" * 15_000), image()])])
    state = ContentReplacementState()
    result = apply_tool_result_budget(chat.messages, state, limit_chars=LIMIT, ctx=ctx)
    assert (result.replaced_ids, state.decisions) == ([], {"t1": False})


def test_a_result_its_tool_already_saved_is_never_saved_over(ctx: ToolUseContext) -> None:
    full = "line\n" * 5_000
    preview = apply_result_size_limit(GrepTool(), "t1", full, ctx)  # the tool's own size limit
    chat = Conversation()
    chat.user("go")
    chat.response(tool_use("t1"))
    chat.user([tool_result("t1", preview)])
    apply_tool_result_budget(chat.messages, ContentReplacementState(), limit_chars=100, ctx=ctx)
    assert (ctx.session_dir / "tool-results" / "t1.txt").read_text() == full


def test_a_decision_once_made_cannot_be_made_again() -> None:
    state = ContentReplacementState()
    state.keep("t1")
    with pytest.raises(ValueError, match="t1"):
        state.replace("t1", "preview")


def test_a_result_no_longer_than_its_preview_would_be_is_never_replaced(ctx: ToolUseContext) -> None:
    chat = one_turn(MIN_REPLACEABLE_CHARS, MIN_REPLACEABLE_CHARS)
    result = apply_tool_result_budget(chat.messages, ContentReplacementState(), limit_chars=100, ctx=ctx)
    assert result.replaced_ids == []
