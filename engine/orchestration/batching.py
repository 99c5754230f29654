"""Which tool calls may run together. Each call is checked once before it runs (is there such a
tool, does its input pass the size limits and the schema, is it concurrency-safe), and
consecutive concurrency-safe calls form one batch; an unsafe call is a batch alone."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.orchestration.plain_schema import plainly_valid
from engine.tools.base import Tool
from engine.tools.input_limits import brief_message, input_limit_problem

__all__ = ["CallCheck", "ToolBatch", "check_call", "group_batches", "partition_tool_calls", "validation_error"]

JsonDict = dict[str, Any]


@dataclass(frozen=True)
class ToolBatch:
    """Tool calls that run together (``concurrent``) or one unsafe call alone."""

    concurrent: bool
    blocks: tuple[JsonDict, ...]


def partition_tool_calls(blocks: Sequence[JsonDict], tools: Mapping[str, Tool]) -> list[ToolBatch]:
    """Consecutive concurrency-safe calls form one batch; each unsafe call is a batch alone."""
    return group_batches([(block, check_call(block, tools).concurrency_safe) for block in blocks])


def group_batches(calls: Sequence[tuple[JsonDict, bool]]) -> list[ToolBatch]:
    """Batches from calls already marked concurrency-safe or not."""
    batches: list[ToolBatch] = []
    for block, safe in calls:
        if safe and batches and batches[-1].concurrent:
            batches[-1] = ToolBatch(True, (*batches[-1].blocks, block))
        else:
            batches.append(ToolBatch(safe, (block,)))
    return batches


@dataclass(frozen=True)
class CallCheck:
    """What is known about a call before it runs (computed once per call)."""

    tool: Tool | None
    problem: str | None
    concurrency_safe: bool


def check_call(block: JsonDict, tools: Mapping[str, Tool]) -> CallCheck:
    """Check a tool_use block against the tools: an unknown tool or invalid input is never
    concurrency-safe, and a tool whose safety check raises counts as unsafe."""
    tool = tools.get(block["name"])
    if tool is None:
        return CallCheck(None, None, False)
    problem = validation_error(tool, block["input"])
    if problem is not None:
        return CallCheck(tool, problem, False)
    try:
        safe = bool(tool.is_concurrency_safe(block["input"]))
    except Exception:
        safe = False
    return CallCheck(tool, None, safe)


_VALIDATORS: dict[int, Any] = {}


def validation_error(tool: Tool, tool_input: Any) -> str | None:
    """What is wrong with ``tool_input`` for ``tool`` (size limits first, then its schema), or
    None. The schema validators are built once per tool; an input that plainly satisfies a
    flat schema needs none (``plain_schema``)."""
    if (too_big := input_limit_problem(tool, tool_input)) is not None:
        return too_big  # before the schema: its messages quote values, however long
    if plainly_valid(tool.input_schema, tool_input):
        return None
    # Imported here: most inputs are plainly valid, and importing jsonschema (with `referencing`
    # and `attrs`) is 0.03 s, two fifths of the engine's own import beside the SDK's.
    import jsonschema

    validator = _VALIDATORS.get(id(tool))
    if validator is None or validator.schema is not tool.input_schema:
        validator = jsonschema.Draft202012Validator(tool.input_schema)
        _VALIDATORS[id(tool)] = validator
    error = jsonschema.exceptions.best_match(validator.iter_errors(tool_input))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return brief_message(f"{error.message}" + (f" (at {where})" if where else ""))
