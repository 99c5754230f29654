"""An interrupt that meets concurrent tools gives one transcript, whatever the threads did.

Which calls are "Interrupted by user" (or cancelled by a failing sibling) is decided where results
are handed out, in tool_use order, never by which concurrent tool happened to finish first. Each
test runs the same session twice with gated probe tools, once with the sibling finishing before
the stopping point and once with it still running, and asserts byte-identical transcripts and
traces. Nothing is timed: the gates decide the order.
"""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

from engine import AssistantMessage, TraceEvent, TraceKind, default_tools
from engine.orchestration import INTERRUPTED_TOOL_RESULT
from tests.engine.conftest import Session, make_session
from tests.engine.probe_tools import Journal, ProbeTool, probe

DONE = {"content": [{"text": "Done."}]}
TWO_PROBES = {"content": [probe("one", wait_for="one"), probe("two", wait_for="two")]}

# What the consumer does on seeing an item: returns True once it has interrupted.
Reaction = Callable[[object, Session, Journal], Awaitable[bool]]


async def until(condition: Callable[[], bool]) -> None:
    """Yield to the loop until ``condition`` holds (the probes run on this loop)."""
    while not condition():
        await asyncio.sleep(0)


async def run_session(root: Path, turns: list, react: Reaction, *, tools_extra: bool = False) -> Session:
    journal = Journal()
    tools = [*default_tools(), ProbeTool(journal)] if tools_extra else [ProbeTool(journal)]
    session = make_session(root, turns, tools=tools)
    interrupted = False

    async def consume() -> None:
        nonlocal interrupted
        async for item in session.engine.submit_message("go"):
            session.outputs.append(item)
            if not interrupted:
                interrupted = await react(item, session, journal)

    await asyncio.wait_for(consume(), timeout=30)  # a guard against a hang, not a speed bound
    return session


def observed(session: Session, root: Path) -> tuple[bytes, list[tuple[str, int, dict]]]:
    """The transcript (paths made relative) and the trace, the two things a replay compares."""
    trace = [(e.kind.value, e.turn, e.data) for e in session.engine.trace if e.kind is not TraceKind.MODEL_CALL]
    return session.transcript_bytes().replace(str(root).encode(), b"<root>"), trace


def result_texts(session: Session) -> dict[str, str]:
    return {tool_id: block["content"] for tool_id, block in session.tool_results().items()}


def first_tool_call(item: object) -> bool:
    return isinstance(item, TraceEvent) and item.kind is TraceKind.TOOL_CALL


async def test_an_interrupt_after_the_first_parallel_result_interrupts_the_sibling_even_if_it_had_finished(
    tmp_path: Path,
) -> None:
    async def run(root: Path, *, sibling_done_before_abort: bool) -> Session:
        journals: list[Journal] = []

        async def react(item: object, session: Session, journal: Journal) -> bool:
            if not journals:
                journals.append(journal)
                asyncio.get_running_loop().create_task(release(journal))
            if first_tool_call(item):
                session.engine.abort()
                return True
            return False

        async def release(journal: Journal) -> None:
            await until(lambda: sum(kind == "start" for kind, _ in journal.entries) == 2)
            if sibling_done_before_abort:
                journal.gate("two").set()
                await until(lambda: ("end", "two") in journal.entries)
            journal.gate("one").set()  # otherwise "two" stays shut: it is still running at the abort

        session = await run_session(root, [TWO_PROBES, DONE], react)
        assert (("end", "two") in journals[0].entries) is sibling_done_before_abort
        return session

    finished = await run(tmp_path / "a", sibling_done_before_abort=True)
    running = await run(tmp_path / "b", sibling_done_before_abort=False)

    assert observed(finished, tmp_path / "a") == observed(running, tmp_path / "b")
    assert list(result_texts(finished).values()) == ["Probe one done", INTERRUPTED_TOOL_RESULT]
    assert finished.outputs[-1].terminal_reason.value == "aborted_tools"


async def test_an_interrupt_while_streaming_answers_every_streamed_call_even_one_that_had_finished(
    tmp_path: Path,
) -> None:
    async def run(root: Path, *, first_done_before_abort: bool) -> Session:
        async def react(item: object, session: Session, journal: Journal) -> bool:
            streamed = [
                o for o in session.outputs if isinstance(o, AssistantMessage) and o.content[0].get("type") == "tool_use"
            ]
            if len(streamed) < 2:
                return False
            await until(lambda: ("start", "one") in journal.entries)
            if first_done_before_abort:
                journal.gate("one").set()
                await until(lambda: ("end", "one") in journal.entries)
            session.engine.abort()
            return True

        return await run_session(root, [TWO_PROBES, DONE], react)

    finished = await run(tmp_path / "a", first_done_before_abort=True)
    running = await run(tmp_path / "b", first_done_before_abort=False)

    assert observed(finished, tmp_path / "a") == observed(running, tmp_path / "b")
    assert list(result_texts(finished).values()) == [INTERRUPTED_TOOL_RESULT, INTERRUPTED_TOOL_RESULT]
    assert finished.outputs[-1].terminal_reason.value == "aborted_streaming"


async def test_a_failing_bash_cancels_the_later_siblings_whether_or_not_they_had_finished(tmp_path: Path) -> None:
    # A read-only (so concurrent) Bash that blocks on a FIFO until the test opens it, then fails
    # on a missing file: the test decides whether the later sibling ("two") finishes before the
    # failure or is still running at it.
    failing_bash = {"tool_use": {"name": "Bash", "input": {"command": "cat gate.fifo does-not-exist"}, "id": "toolu_b"}}
    turn = {"content": [probe("one"), failing_bash, probe("two", wait_for="two")]}

    async def run(root: Path, *, later_done_before_failure: bool) -> Session:
        releasers: list[asyncio.Task[None]] = []

        async def react(item: object, session: Session, journal: Journal) -> bool:
            if not releasers:
                os.mkfifo(session.workspace / "gate.fifo")
                releasers.append(asyncio.get_running_loop().create_task(release(session, journal)))
            return False

        async def release(session: Session, journal: Journal) -> None:
            await until(lambda: ("start", "two") in journal.entries)
            if later_done_before_failure:
                journal.gate("two").set()
                await until(lambda: ("end", "two") in journal.entries)
            await open_and_close(session.workspace / "gate.fifo")

        session = await run_session(root, [turn, DONE], react, tools_extra=True)
        await releasers[0]
        return session

    finished = await run(tmp_path / "a", later_done_before_failure=True)
    running = await run(tmp_path / "b", later_done_before_failure=False)

    assert observed(finished, tmp_path / "a") == observed(running, tmp_path / "b")
    outcomes = [e.data["outcome"] for e in finished.trace(TraceKind.TOOL_CALL)]
    assert outcomes == ["success", "error", "cancelled"]
    assert list(result_texts(finished).values())[2] == "Cancelled: parallel tool call Bash(toolu_b) errored"


async def open_and_close(fifo: Path) -> None:
    """Let the reader of ``fifo`` see end-of-file, once it has opened it."""
    while True:
        try:
            descriptor = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno != errno.ENXIO:  # ENXIO: no reader yet
                raise
            await asyncio.sleep(0.01)
        else:
            os.close(descriptor)
            return
