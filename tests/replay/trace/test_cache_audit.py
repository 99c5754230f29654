"""The cache audit reads a session's request bodies, in order, and says per request what the
prompt cache read, wrote and left uncached, and where and why a prefix that an earlier request
cached stopped being a prefix: each cause is shown here on request bodies as the engine sends
them (system blocks, tools sorted by name, one breakpoint on the last message's last block)."""

from __future__ import annotations

import copy
from typing import Any

from replay.prompt_cache import minimum_cacheable_tokens
from replay.trace.cache_audit import (
    AuditedRequest,
    Shaping,
    audit_requests,
    count_cache_marks,
    shaping_of,
)
from replay.trace.request_cache import BreakCause, CacheBreak, RequestCache

MODEL = "claude-sonnet-4-6"
MARK = {"type": "ephemeral"}
# Long enough for the system prompt alone to be cacheable (over 1024 tokens for this model).
SYSTEM = "You are a careful coding agent working in the user's repository. " * 80


def tool(name: str, *fields: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {field: {"type": "string"} for field in fields}, "required": [*fields]}
    return {"name": name, "description": f"The {name} tool.", "input_schema": schema}


TOOLS = [tool("Glob", "pattern"), tool("Read", "file_path"), tool("Write", "file_path", "content")]


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def tool_use(tool_id: str, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}]}


def tool_result(tool_id: str, content: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": content}]}


def body(
    messages: list[dict[str, Any]], *, system: str = SYSTEM, tools: list[dict[str, Any]] = TOOLS, model: str = MODEL
) -> dict[str, Any]:
    """A request as the engine builds it: the last system block and the last message's last
    block carry the two breakpoints."""
    messages = copy.deepcopy(messages)
    messages[-1]["content"][-1]["cache_control"] = MARK
    return {
        "model": model,
        "max_tokens": 8000,
        "system": [{"type": "text", "text": system, "cache_control": MARK}],
        "tools": copy.deepcopy(tools),
        "messages": messages,
        "stream": True,
    }


FIRST = [user("List the Python files.")]
SECOND = [*FIRST, tool_use("toolu_1", "Glob", {"pattern": "**/*.py"}), tool_result("toolu_1", "app.py\nutil.py")]
THIRD = [*SECOND, tool_use("toolu_2", "Read", {"file_path": "app.py"}), tool_result("toolu_2", "print('hi')\n")]


def audit(*bodies: dict[str, Any] | AuditedRequest) -> list[RequestCache]:
    return audit_requests([b if isinstance(b, AuditedRequest) else AuditedRequest(body=b) for b in bodies])


def the_break(*bodies: dict[str, Any] | AuditedRequest) -> CacheBreak | None:
    return audit(*bodies)[-1].cache_break


def test_the_first_request_writes_its_prefix_and_leaves_the_rest_uncached() -> None:
    (first,) = audit(body(FIRST))
    assert first.marks == 2
    assert first.read == 0
    assert first.written == first.prefix > minimum_cacheable_tokens(MODEL)
    assert first.uncached > 0
    assert first.cache_break is None


def test_a_request_whose_prefix_extends_the_cached_one_reads_it_and_writes_the_rest() -> None:
    first, second, third = audit(body(FIRST), body(SECOND), body(THIRD))
    assert second.read == first.prefix
    assert second.written == second.prefix - first.prefix
    assert third.read == second.prefix
    assert second.cache_break is None and third.cache_break is None


def test_a_changed_system_prompt_breaks_at_its_text_unexpectedly() -> None:
    found = the_break(body(FIRST), body(SECOND, system=SYSTEM + "Today is Tuesday."))
    assert found == CacheBreak(path="system[0].text", cause=BreakCause.SYSTEM_PROMPT_CHANGED)
    assert not found.expected


def test_the_same_tools_in_another_order_are_a_reordered_tool_list() -> None:
    found = the_break(body(FIRST), body(SECOND, tools=list(reversed(TOOLS))))
    assert found is not None
    assert found.path.startswith("tools[0].")
    assert found.cause is BreakCause.TOOLS_REORDERED and not found.expected


def test_a_tool_schema_rendered_differently_breaks_inside_its_input_schema() -> None:
    rerendered = copy.deepcopy(TOOLS)
    rerendered[1]["input_schema"]["additionalProperties"] = False
    found = the_break(body(FIRST), body(SECOND, tools=rerendered))
    assert found == CacheBreak(path="tools[1].input_schema.additionalProperties", cause=BreakCause.SCHEMA_RERENDERED)
    assert not found.expected


def test_a_tool_added_to_the_list_is_a_changed_tool_list_at_the_first_block_that_moved() -> None:
    found = the_break(body(FIRST), body(SECOND, tools=[TOOLS[0], tool("Grep", "pattern"), *TOOLS[1:]]))
    assert found is not None
    assert found.path.startswith("tools[1].")
    assert found.cause is BreakCause.TOOLS_CHANGED


def test_a_tool_input_resent_with_a_field_the_model_never_produced_is_a_backfill_leak() -> None:
    leaked = copy.deepcopy(THIRD)
    leaked[1]["content"][0]["input"]["path"] = "<workspace>"
    found = the_break(body(SECOND), body(leaked))
    assert found == CacheBreak(path="messages[1].content[0].input.path", cause=BreakCause.BACKFILL_LEAK)
    assert not found.expected


def test_an_earlier_message_changed_with_nothing_to_explain_it_is_history_rewritten() -> None:
    rewritten = copy.deepcopy(THIRD)
    rewritten[2]["content"][0]["content"] = "app.py\nutil.py\nsetup.py"
    found = the_break(body(SECOND), body(rewritten))
    assert found == CacheBreak(path="messages[2].content[0].content", cause=BreakCause.HISTORY_REWRITTEN)


def test_a_compact_boundary_since_the_previous_request_is_an_expected_break() -> None:
    compacted = [user("Summary of the conversation so far: two Python files."), user("Continue.")]
    found = the_break(body(THIRD), AuditedRequest(body=body(compacted), shaped=frozenset({Shaping.BOUNDARY})))
    assert found == CacheBreak(path="messages[0].content[0].text", cause=BreakCause.COMPACTION)
    assert found.expected


def test_a_tool_result_cleared_by_microcompact_is_an_expected_break() -> None:
    cleared = copy.deepcopy(THIRD)
    cleared[2]["content"][0]["content"] = "[Old tool result content cleared]"
    found = the_break(body(THIRD), AuditedRequest(body=body(cleared), shaped=frozenset({Shaping.IN_PLACE})))
    assert found == CacheBreak(path="messages[2].content[0].content", cause=BreakCause.MICROCOMPACT)
    assert found.expected


def test_a_fallback_model_has_its_own_cache_an_expected_break() -> None:
    first, second = audit(body(FIRST), body(FIRST, model="claude-opus-4-1"))
    assert second.cache_break == CacheBreak(path="model", cause=BreakCause.MODEL_CHANGED)
    assert second.cache_break.expected
    assert second.read == 0 and second.written == first.written


def test_a_prefix_that_outlived_its_ttl_between_prompts_expired_while_the_user_was_idle() -> None:
    _, second = audit(
        AuditedRequest(body=body(FIRST), at=0.0),
        AuditedRequest(body=body([*FIRST, user("And the tests?")]), at=301.0, opens_prompt=True),
    )
    assert second.cache_break == CacheBreak(path="messages[0].content[0]", cause=BreakCause.IDLE_EXPIRED)
    assert second.cache_break.expected
    assert second.read == 0


def test_a_prefix_that_outlived_its_ttl_between_passes_of_one_prompt_is_an_unexpected_expiry() -> None:
    found = the_break(AuditedRequest(body=body(FIRST), at=0.0), AuditedRequest(body=body(SECOND), at=301.0))
    assert found == CacheBreak(path="messages[0].content[0]", cause=BreakCause.TTL_EXPIRED)
    assert not found.expected


def test_within_the_ttl_the_prefix_is_read_on_the_session_clock() -> None:
    first, second = audit(AuditedRequest(body=body(FIRST), at=0.0), AuditedRequest(body=body(SECOND), at=299.0))
    assert second.read == first.prefix and second.cache_break is None


def test_a_request_without_a_time_is_treated_as_sent_at_once() -> None:
    first, second = audit(AuditedRequest(body=body(FIRST), at=10.0), AuditedRequest(body=body(SECOND)))
    assert second.read == first.prefix


def test_a_prefix_below_the_models_minimum_is_never_cached_so_nothing_can_break() -> None:
    first, second = audit(body(FIRST, system="Be brief.", tools=[]), body(SECOND, system="Be briefer.", tools=[]))
    assert first.prefix < minimum_cacheable_tokens(MODEL)
    assert first.written == 0 and second.read == 0
    assert second.cache_break is None


def test_a_summary_request_is_judged_against_the_previous_summary_request_not_the_main_one() -> None:
    summary = body([*SECOND, user("Summarize the conversation.")], tools=[])
    first, summarized, second = audit(
        AuditedRequest(body=body(FIRST)),
        AuditedRequest(body=summary, purpose="compact"),
        AuditedRequest(body=body(SECOND)),
    )
    assert summarized.cache_break is None
    assert second.cache_break is None and second.read == first.prefix


def test_a_summary_request_on_the_conversations_prefix_is_judged_against_the_main_request() -> None:
    # It offers the main request's tools and extends its messages (compact_request: conversation_prefix).
    def summary(messages: list[dict[str, Any]]) -> AuditedRequest:
        extended = body([*messages[:-1], {**messages[-1], "content": [*messages[-1]["content"]]}])
        extended["messages"][-1]["content"].append({"type": "text", "text": "Summarize the conversation."})
        return AuditedRequest(body=extended, purpose="compact")

    compacted = [user("Summary of the conversation so far: two Python files."), user("Continue.")]
    audited = audit(
        AuditedRequest(body=body(SECOND)),
        summary(SECOND),
        AuditedRequest(body=body(compacted), shaped=frozenset({Shaping.BOUNDARY})),
        summary([*compacted, tool_use("toolu_3", "Glob", {"pattern": "*"}), tool_result("toolu_3", "a.py")]),
    )
    first_summary, second_summary = audited[1], audited[3]
    assert first_summary.cache_break is None and first_summary.read > 0
    # The second summary starts with the compacted conversation, not with the first summary.
    assert second_summary.cache_break is None and second_summary.read > 0


def test_a_request_never_answered_reads_writes_and_bills_nothing_and_its_retry_writes() -> None:
    failed, retried = audit(AuditedRequest(body=body(FIRST), answered=False), AuditedRequest(body=body(FIRST)))
    assert (failed.read, failed.written, failed.uncached) == (0, 0, 0)
    assert failed.marks == 2 and failed.prefix == retried.prefix
    assert retried.written == retried.prefix


def test_marks_are_counted_wherever_they_are() -> None:
    marked = body(SECOND)
    marked["tools"][-1]["cache_control"] = MARK
    marked["cache_control"] = MARK
    assert count_cache_marks(body(SECOND)) == 2
    assert count_cache_marks(marked) == 4
    assert count_cache_marks({"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}) == 0


def test_what_a_compaction_event_did_to_the_history() -> None:
    assert shaping_of({"tier": "autocompact", "boundary": True}) is Shaping.BOUNDARY
    assert shaping_of({"tier": "manual", "boundary": True}) is Shaping.BOUNDARY
    assert shaping_of({"tier": "collapse", "drained": 2}) is Shaping.BOUNDARY
    assert shaping_of({"tier": "microcompact", "cleared": ["toolu_1"]}) is Shaping.IN_PLACE
    assert shaping_of({"tier": "snip", "removed": 2}) is Shaping.IN_PLACE
    assert shaping_of({"tier": "tool_result_budget", "replaced": ["toolu_1"]}) is Shaping.IN_PLACE
    assert shaping_of({"tier": "autocompact", "failed": "summary failed"}) is None


def test_the_audit_round_trips_through_json() -> None:
    first, second = audit(body(FIRST), body(SECOND, system="x" + SYSTEM))
    for cache in (first, second):
        assert RequestCache.from_json(cache.to_json()) == cache
    assert second.to_json()["break"] == {"path": "system[0].text", "cause": "system_prompt_changed", "expected": False}
