"""``StreamingToolExecutor.wait_closed``: it waits for every started call's task, and a query
whose tools all finished closes its executors without handing the event loop a turn each."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx2
import pytest

from engine.deps import QueryDeps
from engine.messages import AssistantMessage
from engine.model import AnthropicModel
from engine.orchestration import StreamingToolExecutor, ToolRunContext
from engine.tools import ToolUseContext
from engine.tools.permissions import allow_all
from replay.fake.model import FakeModel, FakeModelTransport
from replay.fake.scenario import Scenario
from tests.engine.probe_tools import Journal, ProbeTool


def _executor(tmp_path: Path, journal: Journal) -> StreamingToolExecutor:
    rctx = ToolRunContext(
        tools={"Probe": ProbeTool(journal)},
        tool_ctx=ToolUseContext(workspace_root=tmp_path / "workspace", session_dir=tmp_path / "session"),
        # The model is never called: an executor only runs tools.
        deps=QueryDeps.deterministic(
            AnthropicModel(http_client=httpx2.AsyncClient(transport=FakeModelTransport(FakeModel(Scenario(turns=())))))
        ),
        can_use_tool=allow_all,
    )
    return StreamingToolExecutor(rctx)


def _call(label: str, **extra: Any) -> tuple[dict[str, Any], AssistantMessage]:
    block = {"type": "tool_use", "id": f"toolu_{label}", "name": "Probe", "input": {"label": label, **extra}}
    assistant = AssistantMessage(
        uuid=f"a-{label}", timestamp="t", message={"id": "msg_1", "role": "assistant", "content": [block]}
    )
    return block, assistant


async def test_closing_after_every_call_finished_never_suspends(tmp_path: Path) -> None:
    journal = Journal()
    executor = _executor(tmp_path, journal)
    for label in ("a", "b"):
        executor.add_tool(*_call(label))
    runs = [run async for run in executor.results()]
    assert [run.tool_use_id for run in runs] == ["toolu_a", "toolu_b"]
    closing = executor.wait_closed()
    with pytest.raises(StopIteration):
        closing.send(None)  # done on its first step: nothing left to wait for


async def test_closing_waits_for_a_call_still_running_when_it_was_discarded(tmp_path: Path) -> None:
    journal = Journal()
    executor = _executor(tmp_path, journal)
    executor.add_tool(*_call("slow", wait_for="never"))
    executor.add_tool(*_call("quick"))
    await asyncio.sleep(0)  # the first call starts and waits on its gate
    assert executor.running
    executor.discard("stopped")
    await executor.wait_closed()
    assert not executor.running
    assert ("end", "slow") not in journal.entries
