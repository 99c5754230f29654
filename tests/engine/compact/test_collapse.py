"""Context collapse: old rounds are staged over a threshold, committed by a drain, and shown
folded by the projection, which never breaks the request."""

from __future__ import annotations

import pytest

from engine.compact.collapse import ContextCollapse, collapsed_text
from engine.compact.rounds import group_into_rounds
from engine.messages import UserMessage
from engine.normalize import normalize_messages_for_api
from tests.engine.compact.builders import Conversation, frozen_copy, text, uuids
from tests.engine.conftest import assert_pairing

OVER = {"token_count": 1_001, "threshold": 1_000}


def session(rounds: int) -> Conversation:
    """A prompt, then ``rounds`` rounds: a remark, a Read, its result."""
    chat = Conversation()
    chat.user("tidy the notes")
    for n in range(1, rounds + 1):
        chat.tool_round(f"t{n}", "Read", {"file_path": f"notes{n}.md"}, result=f"note {n}", say=f"reading {n}")
    return chat


def staged_and_drained(chat: Conversation, *, keep_rounds: int = 2) -> ContextCollapse:
    collapse = ContextCollapse()
    collapse.stage(chat.messages, **OVER, keep_rounds=keep_rounds)
    collapse.drain()
    return collapse


def test_under_the_threshold_nothing_is_staged() -> None:
    collapse = ContextCollapse()
    assert collapse.stage(session(5).messages, token_count=1_000, threshold=1_000, keep_rounds=2) == 0
    assert collapse.staged == ()


def test_over_the_threshold_the_old_rounds_are_staged_as_one_span() -> None:
    chat = session(5)
    rounds = group_into_rounds(chat.messages)
    collapse = ContextCollapse()
    assert collapse.stage(chat.messages, **OVER, keep_rounds=2) == 1
    assert list(collapse.staged[0].uuids) == uuids(rounds[1] + rounds[2] + rounds[3])


def test_rounds_already_staged_are_not_staged_again() -> None:
    chat = session(5)
    collapse = ContextCollapse()
    collapse.stage(chat.messages, **OVER, keep_rounds=2)
    assert collapse.stage(chat.messages, **OVER, keep_rounds=2) == 0


def test_rounds_that_grow_old_later_make_a_new_span() -> None:
    chat = session(5)
    collapse = ContextCollapse()
    collapse.stage(chat.messages, **OVER, keep_rounds=2)
    chat.tool_round("t6", "Bash", {"command": "ls"})
    rounds = group_into_rounds(chat.messages)
    assert collapse.stage(chat.messages, **OVER, keep_rounds=2) == 1
    assert list(collapse.staged[1].uuids) == uuids(rounds[4])


def test_a_history_with_no_old_round_stages_nothing() -> None:
    assert ContextCollapse().stage(session(2).messages, **OVER, keep_rounds=2) == 0


def test_drain_commits_every_staged_span_and_says_how_many() -> None:
    chat = session(5)
    collapse = ContextCollapse()
    collapse.stage(chat.messages, **OVER, keep_rounds=2)
    assert (collapse.drain(), len(collapse.committed), collapse.staged) == (1, 1, ())


def test_drain_with_nothing_staged_commits_nothing() -> None:
    assert ContextCollapse().drain() == 0


def test_a_staged_span_is_not_folded_until_it_is_drained() -> None:
    chat = session(5)
    collapse = ContextCollapse()
    collapse.stage(chat.messages, **OVER, keep_rounds=2)
    assert collapse.project(chat.messages) == chat.messages


def test_a_committed_span_becomes_one_meta_user_message_with_its_first_uuid() -> None:
    chat = session(5)
    rounds = group_into_rounds(chat.messages)
    projected = staged_and_drained(chat).project(chat.messages)
    fold = projected[1]
    assert isinstance(fold, UserMessage) and fold.is_meta
    assert uuids(projected) == [*uuids(rounds[0]), rounds[1][0].uuid, *uuids(rounds[4] + rounds[5])]


def test_the_fold_names_the_tool_calls_and_counts_the_replies() -> None:
    chat = session(5)
    fold = staged_and_drained(chat).project(chat.messages)[1]
    assert fold.message["content"] == [
        text("[Collapsed 9 messages: Read notes1.md, Read notes2.md, Read notes3.md, 3 assistant replies]")
    ]


def test_collapsed_text_reads_as_a_one_line_summary() -> None:
    chat = Conversation()
    chat.tool_round("t1", "Read", {"file_path": "notes.md"}, say="Reading the notes.")
    chat.tool_round("t2", "Bash", {"command": "ls"}, say="Listing.")
    assert collapsed_text(chat.messages) == "[Collapsed 6 messages: Read notes.md, Bash ls, 2 assistant replies]"


def test_the_projection_is_a_valid_request() -> None:
    chat = session(5)
    chat.response(text("All tidy."))
    api = normalize_messages_for_api(staged_and_drained(chat, keep_rounds=3).project(chat.messages))
    assert_pairing(api)
    assert [m["role"] for m in api] == ["user", "assistant", "user", "assistant", "user", "assistant"]


def test_the_projection_is_the_same_on_every_pass() -> None:
    chat = session(5)
    collapse = staged_and_drained(chat)
    assert collapse.project(chat.messages) == collapse.project(chat.messages)


def test_a_projection_projects_to_itself() -> None:
    chat = session(5)
    collapse = staged_and_drained(chat)
    projected = collapse.project(chat.messages)
    assert collapse.project(projected) == projected


def test_staging_reads_a_projection_as_it_reads_the_full_history() -> None:
    chat = session(5)
    on_full, on_projection = staged_and_drained(chat), staged_and_drained(chat)
    chat.tool_round("t6", "Bash", {"command": "ls"})
    on_full.stage(chat.messages, **OVER, keep_rounds=2)
    on_projection.stage(on_projection.project(chat.messages), **OVER, keep_rounds=2)
    assert on_full.staged == on_projection.staged


def test_two_committed_spans_fold_in_history_order() -> None:
    chat = session(5)
    collapse = staged_and_drained(chat)
    chat.tool_round("t6", "Bash", {"command": "ls"})
    collapse.stage(chat.messages, **OVER, keep_rounds=2)
    collapse.drain()
    projected = collapse.project(chat.messages)
    assert [m.uuid for m in projected[1:3]] == [span.first_uuid for span in collapse.committed]


def test_projecting_never_changes_the_input() -> None:
    chat = session(5)
    before = frozen_copy(chat.messages)
    staged_and_drained(chat).project(chat.messages)
    assert chat.messages == before


def test_keeping_no_round_is_refused() -> None:
    with pytest.raises(ValueError, match="keep_rounds"):
        ContextCollapse().stage([], **OVER, keep_rounds=0)


def test_old_rounds_on_either_side_of_a_staged_span_make_separate_spans() -> None:
    chat = session(6)
    rounds = group_into_rounds(chat.messages)
    collapse = ContextCollapse()
    # A first pass saw the history without round 1 (as after a snip), and staged rounds 2-3.
    collapse.stage(rounds[0] + [m for r in rounds[2:] for m in r], **OVER, keep_rounds=3)
    assert collapse.stage(chat.messages, **OVER, keep_rounds=1) == 2
    assert [list(span.uuids) for span in collapse.staged[1:]] == [uuids(rounds[1]), uuids(rounds[4] + rounds[5])]
