"""The instants a user can interrupt at, as the loop hands them to whoever drives
``submit_message``: each is an item the caller sees, and an abort taken on it has one outcome.

- ``tools_running`` (a trace event per batch): the batch's tools have been called and none of
  its results is handed out; every call of the batch is answered "Interrupted by user".
- ``pass`` (the trace event that starts each pass): the request is not sent yet; an abort
  there sends nothing and ends ``aborted_streaming``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine import Terminal, TraceEvent, TraceKind, UserMessage
from tests.engine.conftest import assert_next_request_valid, make_session
from tests.engine.probe_tools import Journal, ProbeTool, probe

DONE = {"content": [{"text": "Done."}]}


def tools_of(journal: Journal) -> list[ProbeTool]:
    return [ProbeTool(journal), ProbeTool(journal, name="Mutate", read_only=False)]


async def test_each_batch_is_announced_running_after_the_results_before_it_and_before_its_own(
    session_root: Path,
) -> None:
    journal = Journal()
    turn = {"content": [probe("a"), probe("b"), probe("c", name="Mutate"), probe("d")]}
    session = make_session(session_root, [turn, DONE], tools=tools_of(journal))

    await session.submit("go")

    kinds = (TraceKind.TOOL_BATCH, TraceKind.TOOLS_RUNNING, TraceKind.TOOL_CALL)
    order = [(e.kind, e.data.get("batch")) for e in session.engine.trace if e.kind in kinds]
    batch, running, call = kinds
    assert order == [
        (batch, None),
        (batch, None),
        (batch, None),
        (running, 1),
        (call, None),
        (call, None),
        (running, 2),
        (call, None),
        (running, 3),
        (call, None),
    ]


async def test_when_a_batch_is_announced_running_each_of_its_tools_has_been_called(session_root: Path) -> None:
    journal = Journal()
    # Batch 2's probes wait for a gate nobody opens: only the abort ends them.
    turn = {
        "content": [
            probe("first", name="Mutate"),
            probe("x", wait_for="never"),
            probe("y", wait_for="never"),
            probe("after", name="Mutate"),
        ]
    }
    session = make_session(session_root, [turn, DONE], tools=tools_of(journal))
    seen: list[list[tuple[str, str]]] = []

    def abort_when_batch_two_runs(item: Any, engine: Any) -> None:
        if isinstance(item, TraceEvent) and item.kind is TraceKind.TOOLS_RUNNING and item.data["batch"] == 2:
            seen.append(list(journal.entries))
            engine.abort()

    result = await session.submit("go", on_output=abort_when_batch_two_runs)

    assert seen == [[("start", "first"), ("end", "first"), ("start", "x"), ("start", "y")]]
    assert result.terminal_reason is Terminal.ABORTED_TOOLS
    contents = [b["content"] for b in session.tool_results().values()]
    assert contents == ["Mutate first done", "Interrupted by user", "Interrupted by user", "Interrupted by user"]
    assert ("start", "after") not in journal.entries  # the batch after it never starts
    assert_next_request_valid(session)


async def test_an_abort_as_a_pass_begins_sends_nothing_and_ends_aborted_streaming(session_root: Path) -> None:
    journal = Journal()
    session = make_session(session_root, [{"content": [probe("a")]}, DONE], tools=tools_of(journal))
    passes: list[int] = []

    def abort_at_the_second_pass(item: Any, engine: Any) -> None:
        if isinstance(item, TraceEvent) and item.kind is TraceKind.PASS:
            passes.append(item.turn)
            if len(passes) == 2:
                engine.abort()

    result = await session.submit("go", on_output=abort_at_the_second_pass)

    assert result.terminal_reason is Terminal.ABORTED_STREAMING and result.num_turns == 2
    assert len(session.requests) == 1  # the second pass's request was never sent
    assert len(session.trace(TraceKind.MODEL_CALL)) == 1
    last = session.engine.mutable_messages[-1]
    assert isinstance(last, UserMessage) and last.content[0]["text"] == "[Request interrupted by user]"
    # The script's second turn is still there for the next prompt.
    after = await session.submit("and now?")
    assert after.terminal_reason is Terminal.COMPLETED and after.result == "Done."
    assert_next_request_valid(session)
