"""The demo session: a bundled scenario replayed against the fake model, printed as a
conversation and the loop's trace."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

from engine import (
    AnthropicModel,
    AssistantMessage,
    AttachmentMessage,
    QueryDeps,
    QueryEngine,
    QueryResult,
    SystemMessage,
    TraceEvent,
    TraceKind,
    UserMessage,
)
from replay.fake.model import FakeModel, FakeModelTransport
from replay.fake.scenario import load_scenario

__all__ = ["DEMO_DIR", "DemoRun", "describe", "run_demo"]

DEMO_DIR = Path(__file__).resolve().parents[2] / "cassettes" / "demo"
DEMO_PROMPT = "Review notes.md and config.toml, find open TODOs and write a summary."


@dataclass(frozen=True)
class DemoRun:
    """What the demo produced: every output in order, and the final result."""

    outputs: list[Any]
    result: QueryResult
    requests: int


async def run_demo(
    scenario_dir: Path = DEMO_DIR,
    *,
    prompt: str | None = None,
    on_output: Callable[[Any], None] | None = None,
) -> DemoRun:
    """Run the scenario in ``scenario_dir`` (``scenario.yaml`` and ``workspace/``) in a temp
    copy of its workspace, so the bundled files are never changed."""
    scenario = load_scenario(scenario_dir / "scenario.yaml")
    prompt = prompt or (scenario.prompts[0] if scenario.prompts else DEMO_PROMPT)
    fake = FakeModel(scenario)
    with tempfile.TemporaryDirectory(prefix="replay-demo-") as temp:
        workspace = Path(temp) / "workspace"
        source = scenario_dir / "workspace"
        if source.is_dir():
            shutil.copytree(source, workspace, symlinks=True)
        else:
            workspace.mkdir()
        async with httpx2.AsyncClient(transport=FakeModelTransport(fake)) as http_client:
            engine = QueryEngine(
                deps=QueryDeps.deterministic(AnthropicModel(http_client=http_client)),
                workspace=workspace,
                session_dir=Path(temp) / "session",
            )
            outputs: list[Any] = []
            async for item in engine.submit_message(prompt):
                outputs.append(item)
                if on_output is not None:
                    on_output(item)
            engine.close()
    result = outputs[-1]
    assert isinstance(result, QueryResult)
    return DemoRun(outputs=outputs, result=result, requests=len(fake.requests))


def describe(item: Any) -> str | None:
    """One readable line (or block) for an output, or None for what a reader need not see."""
    if isinstance(item, UserMessage):
        return _describe_user(item)
    if isinstance(item, AssistantMessage):
        return _describe_assistant(item)
    if isinstance(item, (SystemMessage, AttachmentMessage)):
        return f"  [{item.type.value}] {getattr(item, 'content', '') or getattr(item, 'attachment', '')}"
    if isinstance(item, TraceEvent):
        return _describe_trace(item)
    if isinstance(item, QueryResult):
        usage = item.usage
        return (
            f"\nresult: {item.subtype.value} · terminal {item.terminal_reason.value} · {item.num_turns} turns · "
            f"{usage['input_tokens']} in / {usage['output_tokens']} out tokens · ${item.total_cost_usd:.4f}"
        )
    return None


def _describe_user(message: UserMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return f"\nuser: {content}"
    lines = []
    for block in content:
        if block.get("type") == "tool_result":
            text = block["content"] if isinstance(block["content"], str) else "[content blocks]"
            flag = " (error)" if block.get("is_error") else ""
            first = text.splitlines()[0] if text else ""
            more = f" … ({len(text.splitlines())} lines)" if len(text.splitlines()) > 1 else ""
            lines.append(f"  ⤷ result {block['tool_use_id']}{flag}: {first}{more}")
        elif block.get("type") == "text":
            lines.append(f"\nuser: {block['text']}")
    return "\n".join(lines)


def _describe_assistant(message: AssistantMessage) -> str:
    lines = []
    for block in message.content:
        kind = block.get("type")
        if kind == "text":
            lines.append(f"assistant: {block['text']}")
        elif kind == "tool_use":
            lines.append(f"  ⤷ tool_use {block['id']}: {block['name']}({_compact(block['input'])})")
        elif kind == "thinking":
            lines.append(f"  (thinking: {block['thinking'][:60]}…)")
    return "\n".join(lines)


def _describe_trace(event: TraceEvent) -> str | None:
    data = event.data
    if event.kind is TraceKind.PASS:
        return f"  · pass {event.turn}: {data['transition'] or 'start'}"
    if event.kind is TraceKind.MODEL_CALL:
        outcome = data.get("error") or data.get("stop_reason")
        return f"  · model call: {data['messages']} messages, max_tokens {data['max_tokens']} → {outcome}"
    if event.kind is TraceKind.TOOL_BATCH:
        mode = "concurrent" if data["concurrent"] else "serial"
        return f"  · tool batch ({mode}): {', '.join(data['tools'])}"
    if event.kind is TraceKind.TERMINAL:
        return f"  · terminal: {data['reason']}"
    return None


def _compact(tool_input: dict[str, Any]) -> str:
    parts = []
    for key, value in tool_input.items():
        text = repr(value)
        parts.append(f"{key}={text if len(text) <= 40 else text[:37] + '…'}")
    return ", ".join(parts)
