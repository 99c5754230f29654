"""A session without tool hooks: ``run_tool_use`` skips running none of them, so what it
uses in their place must be exactly what running no hooks gives."""

from __future__ import annotations

import pytest

from engine.hooks import HookEvent, HookInput, run_tool_hooks
from engine.hooks.outcomes import fold_tool_answers
from engine.orchestration.tool_call import NO_HOOKS_RUN


@pytest.mark.parametrize("event", [HookEvent.PRE_TOOL_USE, HookEvent.POST_TOOL_USE])
async def test_no_hooks_run_is_what_running_no_hooks_gives(event: HookEvent) -> None:
    hook_input = HookInput(event=event, tool_name="Echo", tool_use_id="toolu_1", tool_input={"text": "hi"})
    assert await run_tool_hooks((), hook_input) == NO_HOOKS_RUN
    assert fold_tool_answers(event, []) == NO_HOOKS_RUN
