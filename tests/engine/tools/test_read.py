"""Read: a workspace text file, numbered like `cat -n`, windowed by offset and limit."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

from engine.tools import (
    PermissionBehavior,
    ReadTool,
    ToolError,
    ToolUseContext,
    WorkspaceEscapeError,
)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolUseContext:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    return ToolUseContext(workspace_root=workspace, session_dir=tmp_path / "session")


async def read(ctx: ToolUseContext, **tool_input: object) -> str:
    result = await ReadTool().call(dict(tool_input), ctx)
    assert not result.is_error
    assert isinstance(result.content, str)
    return result.content


async def test_lines_are_numbered_like_cat_n(ctx: ToolUseContext) -> None:
    (ctx.workspace_root / "a.txt").write_text("alpha\nbeta\n")
    assert await read(ctx, file_path="a.txt") == "     1\talpha\n     2\tbeta"


async def test_crlf_line_endings_are_shown_as_plain_lines(ctx: ToolUseContext) -> None:
    (ctx.workspace_root / "a.txt").write_bytes(b"alpha\r\nbeta")
    assert await read(ctx, file_path="a.txt") == "     1\talpha\n     2\tbeta"


async def test_offset_and_limit_select_a_window_numbered_from_the_offset(ctx: ToolUseContext) -> None:
    (ctx.workspace_root / "a.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    assert await read(ctx, file_path="a.txt", offset=3, limit=2) == (
        "     3\tline 3\n     4\tline 4\n\n(Showing lines 3-4 of 10. Use offset and limit to read the rest.)"
    )


async def test_a_file_longer_than_the_default_limit_says_how_to_read_the_rest(ctx: ToolUseContext) -> None:
    (ctx.workspace_root / "long.txt").write_text("x\n" * 2001)
    text = await read(ctx, file_path="long.txt")
    assert text.endswith("  2000\tx\n\n(Showing lines 1-2000 of 2001. Use offset and limit to read the rest.)")


async def test_an_offset_past_the_end_gives_a_warning_not_an_error(ctx: ToolUseContext) -> None:
    (ctx.workspace_root / "a.txt").write_text("one\ntwo\n")
    assert await read(ctx, file_path="a.txt", offset=5) == (
        "<system-reminder>Warning: the file a.txt exists but is shorter than the provided offset (5). "
        "The file has 2 lines.</system-reminder>"
    )


async def test_an_empty_file_gives_a_warning(ctx: ToolUseContext) -> None:
    (ctx.workspace_root / "empty.txt").write_text("")
    assert "exists but its contents are empty" in await read(ctx, file_path="empty.txt")


async def test_very_long_lines_are_truncated_with_a_marker(ctx: ToolUseContext) -> None:
    (ctx.workspace_root / "wide.txt").write_text("y" * 2500)
    assert await read(ctx, file_path="wide.txt") == "     1\t" + "y" * 2000 + " … (line truncated)"


async def test_reading_records_the_files_mtime(ctx: ToolUseContext) -> None:
    path = ctx.workspace_root / "a.txt"
    path.write_text("alpha\n")
    await read(ctx, file_path="a.txt")
    assert ctx.read_file_state == {str(path.resolve()): path.stat().st_mtime}


async def test_a_missing_file_is_a_tool_error_naming_it(ctx: ToolUseContext) -> None:
    with pytest.raises(ToolError, match=r"^File does not exist: nope\.txt\."):
        await ReadTool().call({"file_path": "nope.txt"}, ctx)


async def test_a_directory_is_a_tool_error(ctx: ToolUseContext) -> None:
    (ctx.workspace_root / "src").mkdir()
    with pytest.raises(ToolError, match=r"^src is a directory, not a file\."):
        await ReadTool().call({"file_path": "src"}, ctx)


async def test_a_binary_file_is_a_tool_error(ctx: ToolUseContext) -> None:
    (ctx.workspace_root / "blob.bin").write_bytes(b"\x89PNG\0\0\0")
    with pytest.raises(ToolError, match=r"^Cannot read blob\.bin: it is a binary file"):
        await ReadTool().call({"file_path": "blob.bin"}, ctx)


async def test_an_undecodable_file_is_a_tool_error(ctx: ToolUseContext) -> None:
    (ctx.workspace_root / "latin1.txt").write_bytes("café".encode("latin-1"))
    expected = r"^Cannot read latin1\.txt: it is not valid UTF-8 text \(undecodable byte at offset 3\)"
    with pytest.raises(ToolError, match=expected):
        await ReadTool().call({"file_path": "latin1.txt"}, ctx)


async def test_a_failed_read_records_nothing(ctx: ToolUseContext) -> None:
    with pytest.raises(ToolError):
        await ReadTool().call({"file_path": "nope.txt"}, ctx)
    assert ctx.read_file_state == {}


async def test_reading_outside_the_workspace_is_refused(ctx: ToolUseContext) -> None:
    with pytest.raises(WorkspaceEscapeError):
        await ReadTool().call({"file_path": "../secret.txt"}, ctx)


async def test_permission_is_allowed_inside_and_denied_outside(ctx: ToolUseContext) -> None:
    inside = await ReadTool().check_permissions({"file_path": "a.txt"}, ctx)
    outside = await ReadTool().check_permissions({"file_path": "/etc/passwd"}, ctx)
    assert inside.behavior is PermissionBehavior.ALLOW
    assert outside.behavior is PermissionBehavior.DENY
    assert "outside the workspace" in outside.reason


def test_read_is_read_only_concurrency_safe_and_unlimited() -> None:
    tool = ReadTool()
    assert (tool.is_read_only, tool.is_concurrency_safe({"file_path": "a"}), tool.max_result_size_chars) == (
        True,
        True,
        None,
    )


@pytest.mark.parametrize(
    "bad_input",
    [
        {},
        {"file_path": 3},
        {"file_path": "a", "offset": -1},
        {"file_path": "a", "limit": 0},
        {"file_path": "a", "x": 1},
    ],
    ids=["missing-file_path", "non-string-path", "negative-offset", "zero-limit", "unknown-key"],
)
def test_the_schema_rejects_bad_input(bad_input: dict[str, object]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad_input, ReadTool.input_schema)
