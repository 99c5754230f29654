"""Writing a scenario back to the YAML shape ``load_scenario`` reads, so a script built in Python
can be kept as a file (a recorded bundle keeps its ``scenario.yaml``)."""

from __future__ import annotations

import dataclasses
from typing import Any

from replay.fake.blocks import Block, Match, TextBlock, ThinkingBlock, ToolUseBlock, Turn
from replay.fake.faults import FaultKind, HttpError, MalformedEvent, ResetConnection, StreamError, TurnOrFault
from replay.fake.scenario import SCENARIO_VERSION, Scenario

__all__ = ["scenario_to_document"]


def scenario_to_document(scenario: Scenario) -> dict[str, Any]:
    """The scenario in the shape ``load_scenario`` reads (defaults left out), so a script built
    in Python can be kept as a file."""
    document: dict[str, Any] = {"version": SCENARIO_VERSION}
    if scenario.name is not None:
        document["name"] = scenario.name
    if scenario.model is not None:
        document["model"] = scenario.model
    if scenario.prompts:
        document["prompts"] = list(scenario.prompts)
    if scenario.settings:
        document["settings"] = dict(scenario.settings)
    if scenario.session:
        document["session"] = dict(scenario.session)
    document["turns"] = [_with_match(_turn_document(turn), turn.match) for turn in scenario.turns]
    return document


def _with_match(item: dict[str, Any], match: Match | None) -> dict[str, Any]:
    if match is None:
        return item
    written: dict[str, Any] = {name: getattr(value, "value", value) for name, value in match.predicates()}
    if match.repeat:
        written["repeat"] = True
    return {**item, "match": written}


def _turn_document(turn: TurnOrFault) -> dict[str, Any]:
    if isinstance(turn, Turn):
        item: dict[str, Any] = {"content": [_block_document(b) for b in turn.content]}
        if turn.stop_reason is not None:
            item["stop_reason"] = turn.stop_reason.value
        if turn.usage is not None:
            item["usage"] = {f.name: getattr(turn.usage, f.name) for f in dataclasses.fields(turn.usage)}
        return item
    if isinstance(turn, HttpError):
        item = {
            "fault": "http_error",
            "status": turn.status,
            "error_type": turn.error_type.value,
            "message": turn.message,
        }
        if turn.headers:
            item["headers"] = dict(turn.headers)
        return item
    if isinstance(turn, ResetConnection):
        return {"fault": FaultKind.RESET_CONNECTION.value}
    if isinstance(turn, StreamError):
        return {
            "fault": "stream_error",
            "after_events": turn.after_events,
            "error_type": turn.error_type.value,
            "message": turn.message,
            "content": [_block_document(b) for b in turn.content],
        }
    return {
        "fault": "malformed_event" if isinstance(turn, MalformedEvent) else "drop_connection",
        "after_events": turn.after_events,
        "content": [_block_document(b) for b in turn.content],
    }


def _block_document(block: Block) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"text": block.text}
    if isinstance(block, ToolUseBlock):
        tool_use: dict[str, Any] = {"name": block.name, "input": dict(block.input)}
        if block.id is not None:
            tool_use["id"] = block.id
        return {"tool_use": tool_use}
    if isinstance(block, ThinkingBlock):
        return {"thinking": block.thinking, "signature": block.signature}
    return {"redacted_thinking": block.data}
