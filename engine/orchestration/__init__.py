"""Running the tools a model asked for.

Consecutive concurrency-safe calls run together (up to a limit); an unsafe call runs alone.
The ``StreamingToolExecutor`` starts each call as soon as its tool_use block is complete, while
the model is still streaming, and hands results back in tool_use order whatever order they
finish in. ``run_tools`` is the same executor fed all calls at once.

The modules: ``batching`` (checking a call before it runs, and which calls run together),
``plain_schema`` (a quick yes for an input that plainly satisfies a flat schema), ``tool_call``
(one call through lookup, validation, hooks, permissions, the call and its size limits) and
``executor`` (the streaming executor that schedules calls and hands out results).
"""

from engine.orchestration.batching import ToolBatch, group_batches, partition_tool_calls
from engine.orchestration.executor import StreamingToolExecutor, run_tools
from engine.orchestration.tool_call import (
    INTERRUPTED_TOOL_RESULT,
    PermissionCallback,
    PermissionDenial,
    ToolRun,
    ToolRunContext,
)

__all__ = [
    "INTERRUPTED_TOOL_RESULT",
    "PermissionCallback",
    "PermissionDenial",
    "StreamingToolExecutor",
    "ToolBatch",
    "ToolRun",
    "ToolRunContext",
    "group_batches",
    "partition_tool_calls",
    "run_tools",
]
