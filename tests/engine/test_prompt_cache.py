"""Prompt-cache breakpoints: where the engine puts its ``cache_control`` marks, and what keeps
the request prefix byte-stable for the session (the real SDK against the fake model)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import EngineSettings, TraceKind, default_tools
from engine.model import AnthropicModel, ModelRequest
from engine.prompt_cache import (
    MAX_CACHE_MARKS,
    PromptCacheState,
    TooManyCacheMarksError,
    count_cache_marks,
    has_cache_mark,
    place_message_breakpoint,
)
from replay.fake.model import FakeModel, FakeModelTransport
from replay.fake.scenario import Scenario
from tests.engine.conftest import Session, make_session

JsonDict = dict[str, Any]
EPHEMERAL = {"type": "ephemeral"}
DONE = {"content": [{"text": "Done."}]}
SUMMARY = {"content": [{"text": "Summary: we listed the files."}]}


def tool_turn(name: str, tool_input: JsonDict, **usage: int) -> JsonDict:
    turn: JsonDict = {"content": [{"text": "looking"}, {"tool_use": {"name": name, "input": tool_input}}]}
    if usage:
        turn["usage"] = {"output_tokens": 10, **usage}
    return turn


def message_marks(body: JsonDict) -> list[tuple[int, int]]:
    """(message index, block index) of every marked message block."""
    return [
        (m, b)
        for m, message in enumerate(body["messages"])
        if isinstance(message["content"], list)
        for b, block in enumerate(message["content"])
        if "cache_control" in block
    ]


def multi_turn_session(tmp_path: Path, **settings: Any) -> Session:
    turns = [tool_turn("Read", {"file_path": "a.txt"}), tool_turn("Glob", {"pattern": "*"}), DONE, DONE]
    session = make_session(
        tmp_path,
        turns,
        settings=EngineSettings(system_prompt="You help.", **settings),
        files={"a.txt": "hello\n"},
    )
    return session


async def test_every_request_marks_the_last_system_block_and_the_last_messages_last_block(tmp_path: Path) -> None:
    session = multi_turn_session(tmp_path)
    await session.submit("read a.txt then list")
    await session.submit("and again?")

    assert len(session.requests) == 4
    for body in session.requests:
        assert 1 <= count_cache_marks(body) <= MAX_CACHE_MARKS
        assert body["system"] == [{"type": "text", "text": "You help.", "cache_control": EPHEMERAL}]
        last = len(body["messages"]) - 1
        assert message_marks(body) == [(last, len(body["messages"][last]["content"]) - 1)]


async def test_the_history_and_the_transcript_hold_no_marks(tmp_path: Path) -> None:
    session = multi_turn_session(tmp_path)
    await session.submit("read a.txt then list")
    await session.submit("and again?")

    assert "cache_control" not in json.dumps([m.to_record() for m in session.engine.mutable_messages])
    assert b"cache_control" not in session.transcript_bytes()


async def test_the_compaction_summary_request_marks_the_second_to_last_message(tmp_path: Path) -> None:
    settings = EngineSettings(context_window=20_000, max_output_tokens=1_000)
    turns = [tool_turn("Glob", {"pattern": "*"}, input_tokens=7_000), SUMMARY, DONE]
    session = make_session(tmp_path, turns, settings=settings, files={"a.txt": "a"})
    await session.submit("list the files")

    summary = session.requests[1]
    assert len(summary["messages"]) >= 2
    second_to_last = len(summary["messages"]) - 2
    assert message_marks(summary) == [(second_to_last, len(summary["messages"][second_to_last]["content"]) - 1)]
    assert summary["system"][-1]["cache_control"] == EPHEMERAL


def test_placing_the_marks_twice_gives_the_same_body() -> None:
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "one"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "two"}]},
        {"role": "user", "content": [{"type": "text", "text": "three"}]},
    ]
    request = ModelRequest(model="claude-sonnet-4-6", messages=messages, max_tokens=10, system="S")
    once = request.params()
    # Sending the marked body again (an earlier mark left in place) clears that mark first.
    again = ModelRequest(model="claude-sonnet-4-6", messages=once["messages"], max_tokens=10, system=once["system"])
    assert again.params() == once == request.params()
    assert messages[2]["content"][0] == {"type": "text", "text": "three"}  # the input is never marked


def test_a_message_marked_earlier_loses_its_mark_when_a_message_follows() -> None:
    marked = {"role": "user", "content": [{"type": "text", "text": "one", "cache_control": EPHEMERAL}]}
    follow = [marked, {"role": "assistant", "content": [{"type": "text", "text": "two"}]}]
    body = ModelRequest(model="claude-sonnet-4-6", messages=follow, max_tokens=10).params()
    assert message_marks(body) == [(1, 0)]


def test_a_thinking_block_is_never_marked() -> None:
    thinking = {"type": "thinking", "thinking": "hmm", "signature": "sig"}
    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": [thinking]}]
    body = ModelRequest(model="claude-sonnet-4-6", messages=messages, max_tokens=10).params()
    assert message_marks(body) == []


async def test_tools_are_sent_sorted_by_name(tmp_path: Path) -> None:
    session = multi_turn_session(tmp_path)
    await session.submit("read a.txt then list")

    names = [tool["name"] for tool in session.requests[0]["tools"]]
    assert names == sorted(names) and set(names) == {tool.name for tool in default_tools()}


async def test_a_schema_changed_after_its_first_render_is_sent_as_first_rendered(tmp_path: Path) -> None:
    session = multi_turn_session(tmp_path)
    await session.submit("read a.txt then list")
    first = session.requests[0]["tools"]
    read = session.engine.tools["Read"]
    read.input_schema = {**read.input_schema, "description": "re-rendered"}
    await session.submit("and again?")

    assert all(body["tools"] == first for body in session.requests)


async def test_the_ttl_and_betas_are_sent_on_every_request(tmp_path: Path) -> None:
    session = multi_turn_session(tmp_path, prompt_cache_ttl="1h", betas=("context-1m-2025-08-07",))
    await session.submit("read a.txt then list")
    await session.submit("and again?")

    marked = {"type": "ephemeral", "ttl": "1h"}
    for body in session.requests:
        assert body["system"][-1]["cache_control"] == marked
        (index, block) = message_marks(body)[0]
        assert body["messages"][index]["content"][block]["cache_control"] == marked
    headers = [r.headers.get("anthropic-beta") for r in session.fake.requests]
    assert headers == ["context-1m-2025-08-07"] * 4


def test_betas_and_ttl_once_sent_stay_latched() -> None:
    state = PromptCacheState()
    assert state.latch(betas=("a",), ttl="1h") == (("a",), "1h")
    assert state.latch(betas=("b",), ttl=None) == (("a", "b"), "1h")
    assert state.latch(betas=(), ttl="5m") == (("a", "b"), "1h")


def test_a_ttl_other_than_5m_or_1h_is_refused() -> None:
    with pytest.raises(ValueError, match="prompt_cache_ttl must be '5m' or '1h'"):
        EngineSettings(prompt_cache_ttl="2h")  # type: ignore[arg-type]


async def test_more_than_four_marks_is_refused_before_anything_is_sent() -> None:
    fake = FakeModel(Scenario.from_list([DONE]))
    model = AnthropicModel(http_client=httpx2.AsyncClient(transport=FakeModelTransport(fake)))
    tools = [{"name": f"T{i}", "input_schema": {"type": "object"}, "cache_control": EPHEMERAL} for i in range(4)]
    request = ModelRequest(model="claude-sonnet-4-6", messages=[{"role": "user", "content": "hi"}], max_tokens=10)
    request = ModelRequest(model=request.model, messages=request.messages, max_tokens=10, tools=tools)

    with pytest.raises(TooManyCacheMarksError, match="5 cache_control marks; the API accepts at most 4"):
        async for _ in model.stream(request):
            pass
    assert fake.requests == []


async def test_autocompact_counts_cache_reads_toward_the_threshold(tmp_path: Path) -> None:
    # Almost all of the 7,000 input tokens are cache reads: the threshold (6,000 here) is still passed.
    settings = EngineSettings(context_window=20_000, max_output_tokens=1_000)
    usage = {"input_tokens": 5, "cache_creation_input_tokens": 95, "cache_read_input_tokens": 6_900}
    turns = [tool_turn("Glob", {"pattern": "*"}, **usage), SUMMARY, DONE]
    session = make_session(tmp_path, turns, settings=settings, files={"a.txt": "a"})
    await session.submit("list the files")

    (event,) = [e.data for e in session.engine.trace if e.kind is TraceKind.COMPACTION]
    assert event["tier"] == "autocompact" and event["tokens_before"] >= 7_000


def test_counting_skips_only_the_messages_that_are_the_very_objects_known_to_hold_no_mark() -> None:
    clean = {"role": "user", "content": [{"type": "text", "text": "a"}]}
    marked = {"role": "user", "content": [{"type": "text", "text": "b", "cache_control": EPHEMERAL}]}
    body = {"messages": [clean, marked]}
    assert count_cache_marks(body) == 1
    assert count_cache_marks(body, unmarked=[clean]) == 1  # a shorter list vouches for its positions only
    assert count_cache_marks(body, unmarked=[clean, dict(marked)]) == 1  # an equal copy is no promise


def test_a_request_counts_the_marks_of_every_message_its_placing_copied() -> None:
    marked = [
        {"role": "user", "content": [{"type": "text", "text": f"m{i}", "cache_control": EPHEMERAL}]} for i in range(5)
    ]
    body = ModelRequest(model="claude-sonnet-4-6", messages=marked, max_tokens=10, system="S").params()
    assert count_cache_marks(body) == 2  # the earlier marks cleared: the system's and the last message's
    assert all(message is not original for message, original in zip(body["messages"], marked, strict=True))


_api_messages = st.lists(
    st.fixed_dictionaries(
        {
            "role": st.sampled_from(["user", "assistant"]),
            "content": st.one_of(
                st.just("plain"),
                st.lists(
                    st.one_of(
                        st.just({"type": "text", "text": "a"}),
                        st.just({"type": "text", "text": "b", "cache_control": EPHEMERAL}),
                        st.just({"type": "thinking", "thinking": "t", "signature": "s"}),
                    ),
                    max_size=3,
                ),
            ),
        }
    ),
    max_size=8,
)


@settings(max_examples=300, deadline=None)
@given(_api_messages, st.integers(0, 8), st.booleans(), st.sampled_from(["exact", "copy", "shifted"]))
def test_placing_with_a_vouched_prefix_gives_the_body_placing_from_scratch_gives(
    messages: list[JsonDict], length: int, skip: bool, vouching: str
) -> None:
    """The unmarked prefix only ever skips messages that are the very objects known to hold no
    mark; an equal copy or a prefix of other objects is walked as if nothing were vouched for."""
    leading = []
    for message in messages[:length]:
        if has_cache_mark(message):
            break
        leading.append(message)
    unmarked = {
        "exact": leading,
        "copy": [dict(m) for m in leading],
        "shifted": [{"role": "user", "content": "x"}, *leading],
    }[vouching]
    expected = place_message_breakpoint(messages, "5m", skip_cache_write=skip)
    assert place_message_breakpoint(messages, "5m", skip_cache_write=skip, unmarked=unmarked) == expected
