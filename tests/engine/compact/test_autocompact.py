"""Autocompact: when to compact, and the compaction itself — a real summary request through the
SDK and the fake model, retried on prompt-too-long by dropping the oldest rounds."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2
import pytest

from engine.compact.autocompact import (
    COMPACT_PROMPT,
    COMPACT_SYSTEM_PROMPT,
    AutoCompactTracking,
    CompactionError,
    build_summary_request,
    compact_conversation,
    should_autocompact,
)
from engine.compact.boundary import SUMMARY_PREAMBLE, CompactTrigger
from engine.deps import QueryDeps
from engine.messages import Message
from engine.model import AnthropicModel, ModelErrorKind, QuerySource
from engine.settings import EngineSettings
from engine.tokens import estimate_message_tokens, token_count_with_estimation
from replay.fake.model import FakeModel, FakeModelTransport
from replay.fake.scenario import Scenario
from tests.engine.compact.builders import (
    Conversation,
    frozen_copy,
    image,
    text,
    tool_result,
    tool_use,
    uuids,
)
from tests.engine.conftest import assert_pairing

JsonDict = dict[str, Any]
MODEL = "claude-sonnet-4-6"
SETTINGS = EngineSettings()
SUMMARY = {"content": [{"text": "<analysis>thinking</analysis>\n<summary>The notes were tidied.</summary>"}]}
PROMPT_TOO_LONG = {
    "fault": "http_error",
    "status": 400,
    "error_type": "invalid_request_error",
    "message": "prompt is too long: 210000 tokens > 200000 maximum",
}
SERVER_ERROR = {"fault": "http_error", "status": 500, "error_type": "api_error", "message": "Internal server error"}

Summarizer = Callable[..., tuple[QueryDeps, FakeModel]]


@pytest.fixture
async def summarizer() -> AsyncIterator[Summarizer]:
    """Deterministic deps whose model is the real SDK over a fake model playing ``turns``."""
    clients: list[httpx2.AsyncClient] = []

    def build(*turns: JsonDict) -> tuple[QueryDeps, FakeModel]:
        fake = FakeModel(Scenario.from_list(list(turns)))
        client = httpx2.AsyncClient(transport=FakeModelTransport(fake))
        clients.append(client)
        return QueryDeps.deterministic(AnthropicModel(http_client=client)), fake

    yield build
    for client in clients:
        await client.aclose()


def session(rounds: int) -> Conversation:
    """A prompt, then ``rounds`` rounds of a Read and its result; the last message is a result."""
    chat = Conversation()
    chat.user("tidy the notes")
    for n in range(1, rounds + 1):
        chat.tool_round(f"t{n}", "Read", {"file_path": f"notes{n}.md"}, result=f"note {n} " * 40)
    return chat


def bodies(fake: FakeModel) -> list[JsonDict]:
    return [r.json for r in fake.requests if r.path.endswith("/v1/messages")]


async def compact(deps: QueryDeps, messages: list[Message], **options: Any) -> Any:
    options.setdefault("trigger", CompactTrigger.AUTO)
    return await compact_conversation(messages, deps=deps, settings=SETTINGS, model=MODEL, **options)


# --- when --------------------------------------------------------------------------------------


def test_autocompact_starts_at_the_threshold() -> None:
    threshold = SETTINGS.autocompact_threshold
    tracking = AutoCompactTracking()
    assert (
        should_autocompact(threshold - 1, SETTINGS, tracking),
        should_autocompact(threshold, SETTINGS, tracking),
    ) == (
        False,
        True,
    )


def test_autocompact_can_be_turned_off() -> None:
    settings = EngineSettings(autocompact=False)
    assert not should_autocompact(10**9, settings, AutoCompactTracking())


def test_context_collapse_suppresses_autocompact() -> None:
    settings = EngineSettings(context_collapse=True)
    assert not should_autocompact(10**9, settings, AutoCompactTracking())


def test_after_three_failures_in_a_row_autocompact_stops_trying() -> None:
    tracking = AutoCompactTracking().failed().failed()
    assert should_autocompact(10**9, SETTINGS, tracking)
    assert not should_autocompact(10**9, SETTINGS, tracking.failed())


def test_a_success_closes_the_circuit_breaker_and_restarts_the_turn_count() -> None:
    tracking = AutoCompactTracking(consecutive_failures=2, turn_counter=5).succeeded(turn_id="turn-1")
    assert tracking == AutoCompactTracking(consecutive_failures=0, compacted=True, turn_counter=0, turn_id="turn-1")


def test_turns_are_counted_only_after_a_compaction() -> None:
    assert AutoCompactTracking().next_turn().turn_counter == 0
    assert AutoCompactTracking(compacted=True).next_turn().turn_counter == 1


# --- the summary request -----------------------------------------------------------------------


async def test_the_summary_is_one_request_through_the_model_client(summarizer: Summarizer) -> None:
    deps, fake = summarizer(SUMMARY)
    result = await compact(deps, session(3).messages)
    assert (len(bodies(fake)), result.summary_requests) == (1, 1)


async def test_the_summary_request_has_no_tools_and_the_summarizer_system_prompt(summarizer: Summarizer) -> None:
    deps, fake = summarizer(SUMMARY)
    await compact(deps, session(3).messages)
    body = bodies(fake)[0]
    assert ("tools" in body, body["system"], body["max_tokens"], body["model"]) == (
        False,
        [{"type": "text", "text": COMPACT_SYSTEM_PROMPT, "cache_control": {"type": "ephemeral"}}],
        SETTINGS.summary_max_output_tokens,
        MODEL,
    )


async def test_the_summary_prompt_comes_last(summarizer: Summarizer) -> None:
    deps, fake = summarizer(SUMMARY)
    await compact(deps, session(3).messages)
    last = bodies(fake)[0]["messages"][-1]
    assert (last["role"], last["content"][-1]) == ("user", {"type": "text", "text": COMPACT_PROMPT})


async def test_the_summary_request_keeps_the_pairing_and_the_alternation(summarizer: Summarizer) -> None:
    deps, fake = summarizer(SUMMARY)
    await compact(deps, session(3).messages)
    messages = bodies(fake)[0]["messages"]
    assert_pairing(messages)
    assert [m["role"] for m in messages] == ["user", "assistant"] * 3 + ["user"]


async def test_a_history_ending_with_tool_results_gets_the_prompt_in_that_same_user_turn(
    summarizer: Summarizer,
) -> None:
    deps, fake = summarizer(SUMMARY)
    await compact(deps, session(1).messages)
    last = bodies(fake)[0]["messages"][-1]
    assert [block["type"] for block in last["content"]] == ["tool_result", "text"]


async def test_a_history_ending_with_an_answer_gets_the_prompt_as_a_new_user_turn(summarizer: Summarizer) -> None:
    chat = session(1)
    chat.response(text("Done."))
    deps, fake = summarizer(SUMMARY)
    await compact(deps, chat.messages)
    messages = bodies(fake)[0]["messages"]
    assert (messages[-2]["role"], messages[-1]["content"]) == ("assistant", [{"type": "text", "text": COMPACT_PROMPT}])


async def test_images_are_sent_to_the_summarizer_as_placeholders(summarizer: Summarizer) -> None:
    chat = Conversation()
    chat.user([text("what is in this picture?"), image()])
    chat.response(text("A cat."))
    deps, fake = summarizer(SUMMARY)
    await compact(deps, chat.messages)
    assert bodies(fake)[0]["messages"][0]["content"][1] == {"type": "text", "text": "[image]"}


def test_the_summary_request_is_made_as_a_compaction_query() -> None:
    request = build_summary_request(session(1).messages, settings=SETTINGS, model=MODEL)
    assert request.query_source is QuerySource.COMPACT


# --- the rebuilt history -----------------------------------------------------------------------


async def test_the_new_history_is_the_boundary_then_the_summary(summarizer: Summarizer) -> None:
    deps, _ = summarizer(SUMMARY)
    result = await compact(deps, session(3).messages)
    assert result.messages == [result.boundary, result.summary]


async def test_the_boundary_points_back_at_the_last_message_before_it(summarizer: Summarizer) -> None:
    chat = session(3)
    deps, _ = summarizer(SUMMARY)
    result = await compact(deps, chat.messages)
    assert result.boundary.logical_parent_uuid == chat.messages[-1].uuid


async def test_the_boundary_records_the_trigger_and_the_tokens_before(summarizer: Summarizer) -> None:
    chat = session(3)
    deps, _ = summarizer(SUMMARY)
    result = await compact(deps, chat.messages, trigger=CompactTrigger.MANUAL)
    expected = {"trigger": "manual", "pre_tokens": token_count_with_estimation(chat.messages)}
    assert (result.boundary.compact_metadata, result.pre_tokens) == (expected, expected["pre_tokens"])


async def test_the_summary_carries_the_model_answer_without_its_analysis(summarizer: Summarizer) -> None:
    deps, _ = summarizer(SUMMARY)
    result = await compact(deps, session(3).messages)
    assert result.summary.content == SUMMARY_PREAMBLE + "Summary:\nThe notes were tidied."


async def test_kept_messages_never_start_with_a_tool_result_whose_tool_use_was_summarized(
    summarizer: Summarizer,
) -> None:
    chat = session(3)
    deps, _ = summarizer(SUMMARY)
    result = await compact(deps, chat.messages, keep_recent_messages=1)
    assert uuids(result.kept) == uuids(chat.messages[-2:])


async def test_kept_messages_are_left_out_of_the_summary_request(summarizer: Summarizer) -> None:
    deps, fake = summarizer(SUMMARY)
    await compact(deps, session(3).messages, keep_recent_messages=2)
    assert "t3" not in json.dumps(bodies(fake)[0]["messages"])


async def test_post_tokens_is_the_estimate_of_the_new_history(summarizer: Summarizer) -> None:
    deps, _ = summarizer(SUMMARY)
    result = await compact(deps, session(3).messages, keep_recent_messages=2)
    assert result.post_tokens == estimate_message_tokens([result.summary, *result.kept])


async def test_compaction_never_changes_the_input(summarizer: Summarizer) -> None:
    chat = session(3)
    before = frozen_copy(chat.messages)
    deps, _ = summarizer(SUMMARY)
    await compact(deps, chat.messages, keep_recent_messages=2)
    assert chat.messages == before


# --- failures and the prompt-too-long retry ----------------------------------------------------


async def test_a_too_long_summary_request_is_retried_shorter_each_time(summarizer: Summarizer) -> None:
    deps, fake = summarizer(PROMPT_TOO_LONG, PROMPT_TOO_LONG, SUMMARY)
    result = await compact(deps, session(4).messages)
    sizes = [len(json.dumps(body["messages"])) for body in bodies(fake)]
    assert (result.summary_requests, len(sizes)) == (3, 3)
    assert sizes[0] > sizes[1] > sizes[2]


async def test_each_retry_drops_the_oldest_round_and_keeps_the_prompt(summarizer: Summarizer) -> None:
    deps, fake = summarizer(PROMPT_TOO_LONG, PROMPT_TOO_LONG, SUMMARY)
    await compact(deps, session(4).messages)
    third = bodies(fake)[2]["messages"]
    tool_ids = [b["id"] for m in third for b in m["content"] if b["type"] == "tool_use"]
    assert (third[0]["content"][0]["text"], tool_ids) == ("tidy the notes", ["t3", "t4"])


async def test_retried_requests_keep_the_pairing(summarizer: Summarizer) -> None:
    deps, fake = summarizer(PROMPT_TOO_LONG, SUMMARY)
    await compact(deps, session(3).messages)
    assert_pairing(bodies(fake)[1]["messages"])


async def test_too_long_four_times_is_a_compaction_error(summarizer: Summarizer) -> None:
    deps, fake = summarizer(*[PROMPT_TOO_LONG] * 4)
    with pytest.raises(CompactionError, match="still too long") as caught:
        await compact(deps, session(6).messages)
    assert (len(bodies(fake)), caught.value.cause.kind) == (4, ModelErrorKind.PROMPT_TOO_LONG)


async def test_too_long_with_no_round_left_to_drop_is_a_compaction_error(summarizer: Summarizer) -> None:
    chat = Conversation()
    chat.user("x" * 1_000)
    deps, fake = summarizer(PROMPT_TOO_LONG)
    with pytest.raises(CompactionError, match="no older round"):
        await compact(deps, chat.messages)
    assert len(bodies(fake)) == 1


async def test_any_other_model_error_is_a_compaction_error_after_one_request(summarizer: Summarizer) -> None:
    deps, fake = summarizer(SERVER_ERROR)
    with pytest.raises(CompactionError) as caught:
        await compact(deps, session(3).messages)
    assert (len(bodies(fake)), caught.value.cause.kind) == (1, ModelErrorKind.SERVER_ERROR)


async def test_an_empty_summary_is_a_compaction_error(summarizer: Summarizer) -> None:
    deps, _ = summarizer({"content": [{"text": "  "}]})
    with pytest.raises(CompactionError, match="no text"):
        await compact(deps, session(3).messages)


async def test_nothing_to_summarize_is_a_compaction_error_without_a_request(summarizer: Summarizer) -> None:
    deps, fake = summarizer(SUMMARY)
    chat = session(1)
    with pytest.raises(CompactionError, match="nothing to compact"):
        await compact(deps, chat.messages, keep_recent_messages=len(chat.messages))
    assert bodies(fake) == []


def test_an_unanswered_tool_use_is_answered_in_the_summary_request_too() -> None:
    chat = Conversation()
    chat.user("go")
    chat.response(tool_use("t1"), tool_use("t2"))
    chat.user([tool_result("t1")])  # t2 was never answered (an abort)
    assert_pairing(build_summary_request(chat.messages, settings=SETTINGS, model=MODEL).messages)
