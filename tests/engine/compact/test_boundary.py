"""The compact boundary and the summary message that open a compacted history."""

from __future__ import annotations

from engine.compact.boundary import (
    CompactTrigger,
    compact_boundary,
    format_summary,
    summary_message,
)
from engine.deps import QueryDeps, SeededUuids
from engine.messages import SystemSubtype

FIRST_TICK = "2026-01-01T00:00:00.001Z"  # the deterministic clock's first reading


def deps() -> QueryDeps:
    return QueryDeps.deterministic(object())  # type: ignore[arg-type] - no model call is made


def test_the_boundary_is_a_compact_boundary_system_message_with_its_metadata() -> None:
    boundary = compact_boundary(deps(), trigger=CompactTrigger.AUTO, pre_tokens=170_000, logical_parent_uuid="m0042")
    assert (boundary.subtype, boundary.content, boundary.compact_metadata) == (
        SystemSubtype.COMPACT_BOUNDARY,
        "Conversation compacted",
        {"trigger": "auto", "pre_tokens": 170_000},
    )


def test_the_boundary_starts_a_fresh_chain_and_points_back_logically() -> None:
    boundary = compact_boundary(deps(), trigger=CompactTrigger.MANUAL, pre_tokens=1, logical_parent_uuid="m0042")
    assert (boundary.parent_uuid, boundary.logical_parent_uuid) == (None, "m0042")


def test_the_boundary_takes_its_uuid_and_time_from_the_deps() -> None:
    boundary = compact_boundary(deps(), trigger=CompactTrigger.AUTO, pre_tokens=1, logical_parent_uuid=None)
    assert (boundary.uuid, boundary.timestamp) == (SeededUuids(0)(), FIRST_TICK)


def test_the_boundary_record_names_the_trigger_as_text() -> None:
    record = compact_boundary(deps(), trigger=CompactTrigger.MANUAL, pre_tokens=5, logical_parent_uuid="x").to_record()
    assert record["compact_metadata"] == {"trigger": "manual", "pre_tokens": 5}


def test_the_summary_is_a_user_message_marked_as_compact_summary_not_meta() -> None:
    summary = summary_message(deps(), "Summary of the work.")
    assert (summary.is_compact_summary, summary.is_meta, summary.message["role"]) == (True, False, "user")


def test_the_summary_says_the_session_continues_then_gives_the_summary() -> None:
    summary = summary_message(deps(), "We fixed the parser.")
    assert summary.content == (
        "This session is being continued from a previous conversation that ran out of context. "
        "The conversation is summarized below:\nWe fixed the parser."
    )


def test_the_analysis_scratchpad_is_dropped_and_the_summary_tags_become_a_heading() -> None:
    answer = "<analysis>\nLet me think.\n</analysis>\n\n<summary>\n1. Primary Request: fix it.\n</summary>"
    assert format_summary(answer) == "Summary:\n1. Primary Request: fix it."
