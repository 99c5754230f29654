"""Counterexample from the property suite (test_properties.py, invariant 5): with read-only tools
running in parallel, the transcript depends on which one finishes first.

Shrunk from generated runs such as one turn calling Glob three times: the results are yielded
in call order, but each result message draws its uuid and timestamp from the session's seeded
deps when its tool finishes (engine/orchestration/tool_call.py, ``_result_message`` inside each running
task). Glob and Grep finish in a worker thread, so the order varies from run to run: a recorded
session replayed from its cassette wrote another transcript in about one run in three. Here the
test decides the order with gated probe tools, so the difference shows every time.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.engine.conftest import make_session
from tests.engine.probe_tools import Journal, ProbeTool, probe

DONE = {"content": [{"text": "Done."}]}
TURN = {"content": [probe("one", wait_for="one"), probe("two", wait_for="two")]}


async def transcript_when_finishing(root: Path, first: str, then: str) -> bytes:
    """The transcript of one session in which probe ``first`` finishes before probe ``then``."""
    journal = Journal()
    session = make_session(root, [TURN, DONE], tools=[ProbeTool(journal)])

    async def release_in_order() -> None:
        while sum(kind == "start" for kind, _ in journal.entries) < 2:
            await asyncio.sleep(0)
        journal.gate(first).set()
        while ("end", first) not in journal.entries:
            await asyncio.sleep(0)
        journal.gate(then).set()

    releaser = asyncio.create_task(release_in_order())
    result = await asyncio.wait_for(session.submit("go"), timeout=5)
    await releaser
    assert result.result == "Done."
    return session.transcript_bytes().replace(str(root).encode(), b"<root>")


async def test_the_transcript_does_not_depend_on_which_parallel_tool_finishes_first(tmp_path: Path) -> None:
    in_call_order = await transcript_when_finishing(tmp_path / "a", "one", "two")
    reversed_order = await transcript_when_finishing(tmp_path / "b", "two", "one")

    assert in_call_order == reversed_order
