"""The tool-result budget over many passes gives what walking every turn on every pass gives,
although a pass skips the start the last pass returned and the turns already settled: across
growth, snipping and compaction (a history that no longer starts the same), copies of messages
(as microcompact makes) and results large enough to be replaced."""

from __future__ import annotations

import copy
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.compact.tool_result_budget import (
    MIN_REPLACEABLE_CHARS,
    BudgetResult,
    ContentReplacementState,
    _apply_decisions,
    _decide_turn,
    apply_tool_result_budget,
)
from engine.messages import AssistantMessage, Message, UserMessage
from engine.tools import ToolUseContext
from tests.engine.compact.builders import Conversation, tool_result, tool_use

LIMIT = 3 * MIN_REPLACEABLE_CHARS


def plain_budget(messages: list[Message], state: ContentReplacementState, *, ctx: ToolUseContext) -> BudgetResult:
    """The budget as first written: every turn of the history walked on every pass."""
    out = list(messages)
    replaced_ids: list[str] = []
    turns: list[list[int]] = []
    turn: list[int] = []
    for index, message in enumerate(out):
        if isinstance(message, UserMessage):
            turn.append(index)
        elif turn and isinstance(message, AssistantMessage) and not message.is_api_error_message:
            turns.append(turn)
            turn = []
    if turn:
        turns.append(turn)
    for group in turns:
        if any(out[i].uuid not in state.settled for i in group):
            replaced_ids.extend(_decide_turn([out[i] for i in group], state, limit_chars=LIMIT, ctx=ctx))
            state.settled.update(out[i].uuid for i in group)
        if state.replacements:
            for index in group:
                message = out[index]
                assert isinstance(message, UserMessage)
                out[index] = _apply_decisions(message, state)
    return BudgetResult(messages=out, replaced_ids=replaced_ids)


STEPS = st.lists(
    st.tuples(
        st.sampled_from(["round", "split", "late", "prompt", "error", "system", "snip", "copy", "pass"]),
        st.integers(0, 3),
        st.integers(0, 40),
    ),
    max_size=25,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(STEPS)
def test_every_pass_equals_walking_every_turn(tmp_path: Path, steps: list[tuple[str, int, int]]) -> None:
    ctx = ToolUseContext(workspace_root=tmp_path / "workspace", session_dir=tmp_path / "session")
    chat = Conversation()
    chat.user("go")
    history: list[Message] = list(chat.messages)
    fast, plain = ContentReplacementState(), ContentReplacementState()
    ids = iter(f"t{n}" for n in range(10**6))
    for kind, count, where in steps:
        before = len(chat.messages)
        if kind in ("round", "split", "snip"):
            calls = [next(ids) for _ in range(count + 1)]
            big = [(MIN_REPLACEABLE_CHARS + 1) * (1 + (where + n) % 3) for n in range(len(calls))]
            sizes = [size if (where + n) % 2 else 10 for n, size in enumerate(big)]
            chat.response(*(tool_use(i) for i in calls))
            results = [tool_result(i, i + ":" + "x" * size) for i, size in zip(calls, sizes, strict=True)]
            if kind == "split":
                chat.user(results[:1])
                chat.system()
                chat.user(results[1:] or "and")
            else:
                chat.user(results)
        elif kind == "late":
            # More results joining the turn an earlier pass settled: they count against its total.
            late = next(ids)
            chat.user([tool_result(late, late + ":" + "z" * (MIN_REPLACEABLE_CHARS + 1) * (1 + where % 3))])
        elif kind == "prompt":
            chat.user(f"p{where}")
        elif kind == "error":
            chat.api_error()
        elif kind == "system":
            chat.system()
        history.extend(chat.messages[before:])
        if kind == "snip" and history:
            # A new round, then the start cut off (as snip and compaction do): what the last pass
            # returned no longer starts the history, and the new results may sit inside its length.
            history = history[where % 4 :]
        elif kind == "copy" and history:
            index = where % len(history)
            history[index] = copy.copy(history[index])  # the same message, another object
        got = apply_tool_result_budget(history, fast, limit_chars=LIMIT, ctx=ctx)
        expected = plain_budget(history, plain, ctx=ctx)
        assert got.messages == expected.messages
        assert got.replaced_ids == expected.replaced_ids
        assert (fast.decisions, fast.replacements, fast.settled) == (
            plain.decisions,
            plain.replacements,
            plain.settled,
        )
        history = list(got.messages)  # the next pass starts from what shaping returned, as the loop does


def test_a_pass_over_the_history_the_last_pass_returned_decides_only_what_is_new(tmp_path: Path) -> None:
    ctx = ToolUseContext(workspace_root=tmp_path / "workspace", session_dir=tmp_path / "session")
    chat = Conversation()
    chat.user("go")
    chat.tool_round("t1")
    state = ContentReplacementState()
    first = apply_tool_result_budget(chat.messages, state, limit_chars=LIMIT, ctx=ctx)
    chat.tool_round("t2", result="y" * (LIMIT + MIN_REPLACEABLE_CHARS))
    second = apply_tool_result_budget([*first.messages, *chat.messages[-2:]], state, limit_chars=LIMIT, ctx=ctx)
    assert second.replaced_ids == ["t2"] and state.decisions == {"t1": False, "t2": True}
