"""Tool input limits: an input over 1 MiB of JSON, or a path over 4,096 bytes, is refused before
the tool runs, with a short error that does not echo the input."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.tools import ReadTool, ToolError, ToolUseContext, WriteTool, resolve_in_workspace
from engine.tools.input_limits import MAX_PATH_BYTES, MAX_TOOL_INPUT_BYTES, input_limit_problem
from tests.engine.conftest import make_session

DONE = {"content": [{"text": "Done."}]}


def tool_use(name: str, tool_input: dict[str, object]) -> dict[str, object]:
    # Scripted usage: the fake model's estimate for megabytes of input would trigger a compaction.
    return {
        "content": [{"tool_use": {"name": name, "input": tool_input, "id": "toolu_big"}}],
        "usage": {"input_tokens": 100, "output_tokens": 30},
    }


async def test_a_10_mb_write_is_refused_with_a_short_error_and_writes_nothing(session_root: Path) -> None:
    tool_input = {"file_path": "big.txt", "content": "x" * 10_000_000}
    session = make_session(session_root, [tool_use("Write", tool_input), DONE])

    result = await session.submit("go")

    block = session.tool_results()["toolu_big"]
    assert block["is_error"] is True
    assert block["content"] == (
        "InputValidationError: the input is 10,000,036 bytes of JSON; "
        "tool inputs are limited to 1,048,576 bytes (1 MiB)."
    )
    assert not (session.workspace / "big.txt").exists()
    assert result.result == "Done."


async def test_a_10_mb_file_path_is_refused_without_echoing_it(session_root: Path) -> None:
    session = make_session(session_root, [tool_use("Read", {"file_path": "a" * 10_000_000}), DONE])

    await session.submit("go")

    content = session.tool_results()["toolu_big"]["content"]
    assert content.startswith("InputValidationError: the input is 10,000,016 bytes of JSON;")
    assert len(content) < 200


@pytest.mark.parametrize(
    ("name", "field"),
    [("Read", "file_path"), ("Write", "file_path"), ("Edit", "file_path"), ("Glob", "path"), ("Grep", "path")],
)
async def test_a_path_over_4096_bytes_is_refused_with_its_length_only(
    session_root: Path, name: str, field: str
) -> None:
    tool_input: dict[str, object] = {
        "Read": {"file_path": ""},
        "Write": {"file_path": "", "content": "x"},
        "Edit": {"file_path": "", "old_string": "a", "new_string": "b"},
        "Glob": {"pattern": "*"},
        "Grep": {"pattern": "x"},
    }[name]
    tool_input[field] = "d/" * 2_500  # 5,000 bytes
    session = make_session(session_root, [tool_use(name, tool_input), DONE])

    await session.submit("go")

    block = session.tool_results()["toolu_big"]
    assert block["is_error"] is True
    assert block["content"] == (f"InputValidationError: {field} is 5,000 bytes long; paths are limited to 4,096 bytes.")


def test_the_path_limit_counts_utf8_bytes_not_characters() -> None:
    just_fits = {"file_path": "é" * (MAX_PATH_BYTES // 2)}
    one_over = {"file_path": "é" * (MAX_PATH_BYTES // 2) + "x"}

    assert input_limit_problem(ReadTool(), just_fits) is None
    assert input_limit_problem(ReadTool(), one_over) == (
        "file_path is 4,097 bytes long; paths are limited to 4,096 bytes."
    )


def test_an_input_of_exactly_1_mib_of_json_is_accepted() -> None:
    overhead = len('{"file_path":"a","content":""}')
    exactly = {"file_path": "a", "content": "x" * (MAX_TOOL_INPUT_BYTES - overhead)}
    one_more = {"file_path": "a", "content": "x" * (MAX_TOOL_INPUT_BYTES - overhead + 1)}
    assert input_limit_problem(WriteTool(), exactly) is None
    assert input_limit_problem(WriteTool(), one_more) == (
        "the input is 1,048,577 bytes of JSON; tool inputs are limited to 1,048,576 bytes (1 MiB)."
    )


async def test_a_schema_error_about_a_long_value_is_cut_short(session_root: Path) -> None:
    session = make_session(session_root, [tool_use("Read", {"file_path": "a", "offset": "9" * 500_000}), DONE])

    await session.submit("go")

    content = session.tool_results()["toolu_big"]["content"]
    assert content.startswith("InputValidationError: '99999")
    assert content.endswith("… (message cut)")
    assert len(content) < 600


def test_the_workspace_refuses_a_long_path_itself_without_echoing_it(tmp_path: Path) -> None:
    # Whatever reaches the file tools without the input check (a hook's rewrite is checked too).
    with pytest.raises(ToolError) as refused:
        resolve_in_workspace("a" * 10_000_000, tmp_path)
    assert str(refused.value) == "The path is 10,000,000 bytes long; paths are limited to 4,096 bytes."


async def test_a_read_of_a_too_long_path_says_so_briefly(tmp_path: Path) -> None:
    ctx = ToolUseContext(workspace_root=tmp_path, session_dir=tmp_path / "s")
    with pytest.raises(ToolError) as refused:
        await ReadTool().call({"file_path": "a/" * 5_000}, ctx)
    assert len(str(refused.value)) < 200
