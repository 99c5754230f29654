"""Small real tools whose timing a test controls: they report when they start and finish and
wait on events the test sets, so concurrency is shown without timing anything."""

from __future__ import annotations

import asyncio
from typing import Any

from engine.tools.base import Tool, ToolResult, ToolUseContext

JsonDict = dict[str, Any]


class Journal:
    """What happened, in order: ("start", label) and ("end", label)."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, str]] = []
        self.gates: dict[str, asyncio.Event] = {}

    def gate(self, label: str) -> asyncio.Event:
        return self.gates.setdefault(label, asyncio.Event())


class ProbeTool(Tool):
    """A read-only tool: journals its start, waits for its label's gate (if the input asks),
    opens the gates the input names, journals its end."""

    input_schema: JsonDict = {
        "type": "object",
        "properties": {
            "label": {"type": "string"},
            "wait_for": {"type": "string"},
            "opens": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["label"],
        "additionalProperties": False,
    }

    def __init__(self, journal: Journal, *, name: str = "Probe", read_only: bool = True) -> None:
        self.name = name
        self.description = f"{name}: a test probe"
        self.is_read_only = read_only
        self.journal = journal

    async def call(self, tool_input: JsonDict, ctx: ToolUseContext) -> ToolResult:
        label = tool_input["label"]
        self.journal.entries.append(("start", label))
        for opened in tool_input.get("opens", []):
            self.journal.gate(opened).set()
        if "wait_for" in tool_input:
            await asyncio.wait_for(self.journal.gate(tool_input["wait_for"]).wait(), timeout=5)
        self.journal.entries.append(("end", label))
        return ToolResult(f"{self.name} {label} done")


def probe(label: str, *, name: str = "Probe", **extra: Any) -> JsonDict:
    """A scripted tool_use block for a probe."""
    return {"tool_use": {"name": name, "input": {"label": label, **extra}}}
