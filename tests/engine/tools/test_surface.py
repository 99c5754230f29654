"""The public surface of engine.tools: what it exports and the built-in tool set."""

from __future__ import annotations

import jsonschema
import pytest

import engine.tools
from engine.tools import ReadTool, Tool, default_tools, tools_by_name


def test_every_name_in_all_is_exported() -> None:
    missing = [name for name in engine.tools.__all__ if not hasattr(engine.tools, name)]
    assert missing == []


def test_default_tools_are_the_six_built_ins_in_order() -> None:
    assert [tool.name for tool in default_tools()] == ["Read", "Write", "Edit", "Bash", "Glob", "Grep"]


def test_default_tools_are_fresh_instances_each_time() -> None:
    assert all(a is not b for a, b in zip(default_tools(), default_tools(), strict=True))


@pytest.mark.parametrize("tool", default_tools(), ids=lambda tool: tool.name)
def test_each_schema_is_a_valid_closed_json_schema(tool: Tool) -> None:
    jsonschema.Draft202012Validator.check_schema(tool.input_schema)
    assert tool.input_schema["additionalProperties"] is False


@pytest.mark.parametrize("tool", default_tools(), ids=lambda tool: tool.name)
def test_each_tool_describes_itself_to_the_api(tool: Tool) -> None:
    expected = {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}
    assert tool.api_schema() == expected
    assert tool.description


def test_tools_by_name_keys_tools_by_their_name() -> None:
    tools = default_tools()
    assert tools_by_name(tools) == {tool.name: tool for tool in tools}


def test_two_tools_with_one_name_are_refused() -> None:
    with pytest.raises(ValueError, match=r"^Two tools are named 'Read'; tool names must be unique"):
        tools_by_name([ReadTool(), ReadTool()])
