"""Time-based microcompact: after a long pause, old results of compactable tools are cleared,
all but the most recent few."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from engine.compact.microcompact import CLEARED_TOOL_RESULT, microcompact
from engine.tokens import estimate_message_tokens
from tests.engine.compact.builders import (
    Conversation,
    frozen_copy,
    result_content,
    uuids,
)

GAP = 60.0


def bash_rounds(count: int) -> Conversation:
    chat = Conversation()
    chat.user("go")
    for n in range(1, count + 1):
        chat.tool_round(f"t{n}", "Bash", {"command": f"echo {n}"}, result=f"output {n} " * 50)
    return chat


def later(chat: Conversation, minutes: float) -> datetime:
    """``minutes`` after the last response (the start of the history when there is none)."""
    has_response = any(m.type == "assistant" for m in chat.messages)
    return (chat.last_response_time if has_response else chat.last_time) + timedelta(minutes=minutes)


def test_within_the_gap_nothing_changes() -> None:
    chat = bash_rounds(8)
    result = microcompact(chat.messages, now=later(chat, GAP), gap_minutes=GAP, keep_recent=5)
    assert (result.messages, result.cleared_ids, result.tokens_freed) == (chat.messages, [], 0)


def test_after_the_gap_all_but_the_most_recent_results_are_cleared() -> None:
    chat = bash_rounds(8)
    result = microcompact(chat.messages, now=later(chat, GAP + 1), gap_minutes=GAP, keep_recent=5)
    assert result.cleared_ids == ["t1", "t2", "t3"]


def test_a_cleared_result_reads_exactly_the_cleared_marker() -> None:
    chat = bash_rounds(3)
    result = microcompact(chat.messages, now=later(chat, GAP + 1), gap_minutes=GAP, keep_recent=1)
    assert result_content(result.messages, "t1") == "[Old tool result content cleared]" == CLEARED_TOOL_RESULT


def test_the_most_recent_results_keep_their_content() -> None:
    chat = bash_rounds(8)
    result = microcompact(chat.messages, now=later(chat, GAP + 1), gap_minutes=GAP, keep_recent=5)
    kept = [f"t{n}" for n in range(4, 9)]
    assert [result_content(result.messages, i) for i in kept] == [result_content(chat.messages, i) for i in kept]


def test_results_of_other_tools_are_never_cleared() -> None:
    chat = Conversation()
    chat.user("go")
    chat.tool_round("t1", "WebFetch", {"url": "https://example.com"}, result="page " * 50)
    chat.tool_round("t2", "Read", {"file_path": "a.md"}, result="text " * 50)
    result = microcompact(chat.messages, now=later(chat, GAP + 1), gap_minutes=GAP, keep_recent=0)
    assert result.cleared_ids == ["t2"]


def test_already_cleared_results_count_as_cleared_not_as_recent() -> None:
    chat = Conversation()
    chat.user("go")
    for n in range(1, 5):
        chat.tool_round(f"t{n}", "Grep", {"pattern": "x"}, result=f"match {n} " * 20)
    chat.tool_round("t5", "Grep", {"pattern": "x"}, result=CLEARED_TOOL_RESULT)
    result = microcompact(chat.messages, now=later(chat, GAP + 1), gap_minutes=GAP, keep_recent=2)
    assert result.cleared_ids == ["t1", "t2"]


def test_tokens_freed_is_what_the_cleared_results_no_longer_cost() -> None:
    chat = bash_rounds(3)
    result = microcompact(chat.messages, now=later(chat, GAP + 1), gap_minutes=GAP, keep_recent=1)
    assert result.tokens_freed == estimate_message_tokens(chat.messages) - estimate_message_tokens(result.messages)
    assert result.tokens_freed > 0


def test_rewritten_messages_keep_their_uuids_and_the_input_is_never_changed() -> None:
    chat = bash_rounds(4)
    before = frozen_copy(chat.messages)
    result = microcompact(chat.messages, now=later(chat, GAP + 1), gap_minutes=GAP, keep_recent=1)
    assert (uuids(result.messages), chat.messages) == (uuids(before), before)


def test_the_gap_runs_from_the_last_response_not_from_a_later_api_error() -> None:
    chat = bash_rounds(3)
    now = later(chat, GAP + 1)
    chat.pause(30)
    chat.api_error()  # 30 minutes after the last response: within the gap of ``now``
    result = microcompact(chat.messages, now=now, gap_minutes=GAP, keep_recent=1)
    assert result.cleared_ids == ["t1", "t2"]


def test_a_history_without_a_response_is_unchanged() -> None:
    chat = Conversation()
    chat.user("go")
    result = microcompact(chat.messages, now=later(chat, GAP * 10), gap_minutes=GAP, keep_recent=0)
    assert result.messages == chat.messages


def test_a_negative_keep_recent_is_refused() -> None:
    with pytest.raises(ValueError, match="keep_recent"):
        microcompact([], now=later(Conversation(), 0), gap_minutes=GAP, keep_recent=-1)
