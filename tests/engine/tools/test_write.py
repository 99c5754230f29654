"""Write: create or overwrite a workspace file, byte for byte."""

from __future__ import annotations

import os
from pathlib import Path

import jsonschema
import pytest

from engine.tools import (
    PermissionBehavior,
    ToolError,
    ToolUseContext,
    WorkspaceEscapeError,
    WriteTool,
)
from tests.engine.tools.hang_guard import run_guarded


@pytest.fixture
def ctx(tmp_path: Path) -> ToolUseContext:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    return ToolUseContext(workspace_root=workspace, session_dir=tmp_path / "session")


async def test_writing_a_new_file_creates_its_folders_and_confirms(ctx: ToolUseContext) -> None:
    result = await WriteTool().call({"file_path": "src/pkg/app.py", "content": "print(1)\n"}, ctx)
    assert (result.content, result.is_error) == ("File created successfully at: src/pkg/app.py", False)
    assert (ctx.workspace_root / "src" / "pkg" / "app.py").read_text() == "print(1)\n"


async def test_overwriting_an_existing_file_says_so(ctx: ToolUseContext) -> None:
    (ctx.workspace_root / "a.txt").write_text("old")
    result = await WriteTool().call({"file_path": "a.txt", "content": "new"}, ctx)
    assert result.content == "The file a.txt has been overwritten successfully."
    assert (ctx.workspace_root / "a.txt").read_text() == "new"


async def test_content_is_written_byte_for_byte(ctx: ToolUseContext) -> None:
    await WriteTool().call({"file_path": "crlf.txt", "content": "a\r\nb\nc"}, ctx)
    assert (ctx.workspace_root / "crlf.txt").read_bytes() == b"a\r\nb\nc"


async def test_writing_records_the_new_mtime(ctx: ToolUseContext) -> None:
    await WriteTool().call({"file_path": "a.txt", "content": "x"}, ctx)
    path = (ctx.workspace_root / "a.txt").resolve()
    assert ctx.read_file_state == {str(path): path.stat().st_mtime}


async def test_writing_onto_a_directory_is_a_tool_error(ctx: ToolUseContext) -> None:
    (ctx.workspace_root / "src").mkdir()
    with pytest.raises(ToolError, match=r"^Cannot write src: it is a directory\.$"):
        await WriteTool().call({"file_path": "src", "content": "x"}, ctx)


async def test_writing_outside_the_workspace_is_refused_and_writes_nothing(ctx: ToolUseContext, tmp_path: Path) -> None:
    with pytest.raises(WorkspaceEscapeError):
        await WriteTool().call({"file_path": "../escaped.txt", "content": "x"}, ctx)
    assert not (tmp_path / "escaped.txt").exists()


async def test_permission_is_asked_inside_and_denied_outside(ctx: ToolUseContext) -> None:
    inside = await WriteTool().check_permissions({"file_path": "a.txt", "content": ""}, ctx)
    outside = await WriteTool().check_permissions({"file_path": "../a.txt", "content": ""}, ctx)
    assert inside == inside.ask("Write wants to write the file a.txt.")
    assert outside.behavior is PermissionBehavior.DENY


def test_write_is_neither_read_only_nor_concurrency_safe() -> None:
    assert (WriteTool.is_read_only, WriteTool().is_concurrency_safe({})) == (False, False)


@pytest.mark.parametrize(
    "bad_input",
    [
        {"file_path": "a.txt"},
        {"content": "x"},
        {"file_path": "a.txt", "content": None},
        {"file_path": "a", "content": "", "mode": "a"},
    ],
    ids=["missing-content", "missing-file_path", "null-content", "unknown-key"],
)
def test_the_schema_rejects_bad_input(bad_input: dict[str, object]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad_input, WriteTool.input_schema)


@pytest.mark.parametrize("reader", [False, True], ids=["no-reader", "with-a-reader"])
def test_writing_to_a_fifo_is_refused_without_blocking(ctx: ToolUseContext, reader: bool) -> None:
    # With no reader, opening a FIFO for writing waits for one for ever; with one, it would
    # feed the content to whoever reads.
    os.mkfifo(ctx.workspace_root / "pipe")
    held = os.open(ctx.workspace_root / "pipe", os.O_RDONLY | os.O_NONBLOCK) if reader else None
    try:
        with pytest.raises(ToolError, match=r"^Cannot write pipe: it is a FIFO \(named pipe\), not a regular file\.$"):
            run_guarded(lambda: WriteTool().call({"file_path": "pipe", "content": "x"}, ctx))
    finally:
        if held is not None:
            os.close(held)
    assert ctx.read_file_state == {}
