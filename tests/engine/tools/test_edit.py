"""Edit: exact string replacement, unique unless replace_all."""

from __future__ import annotations

import os
from pathlib import Path

import jsonschema
import pytest

from engine.tools import (
    EditTool,
    PermissionBehavior,
    ToolError,
    ToolUseContext,
    WorkspaceEscapeError,
)
from tests.engine.tools.hang_guard import run_guarded


@pytest.fixture
def ctx(tmp_path: Path) -> ToolUseContext:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "app.py").write_text("x = 1\ny = 1\nz = 2\n")
    return ToolUseContext(workspace_root=workspace, session_dir=tmp_path / "session")


def app_py(ctx: ToolUseContext) -> str:
    return (ctx.workspace_root / "app.py").read_text()


async def test_a_unique_string_is_replaced_and_confirmed(ctx: ToolUseContext) -> None:
    result = await EditTool().call({"file_path": "app.py", "old_string": "z = 2", "new_string": "z = 3"}, ctx)
    assert (result.content, result.is_error) == ("The file app.py has been updated successfully.", False)
    assert app_py(ctx) == "x = 1\ny = 1\nz = 3\n"


async def test_a_string_that_is_not_found_is_an_error(ctx: ToolUseContext) -> None:
    with pytest.raises(ToolError, match=r"^String to replace not found in app\.py\."):
        await EditTool().call({"file_path": "app.py", "old_string": "w = 0", "new_string": "w = 1"}, ctx)
    assert app_py(ctx) == "x = 1\ny = 1\nz = 2\n"


async def test_a_string_that_is_not_unique_is_an_error_without_replace_all(ctx: ToolUseContext) -> None:
    expected = r"^Found 2 matches of old_string in app\.py, but replace_all is false\."
    with pytest.raises(ToolError, match=expected):
        await EditTool().call({"file_path": "app.py", "old_string": "= 1", "new_string": "= 5"}, ctx)
    assert app_py(ctx) == "x = 1\ny = 1\nz = 2\n"


async def test_replace_all_replaces_every_occurrence(ctx: ToolUseContext) -> None:
    result = await EditTool().call(
        {"file_path": "app.py", "old_string": "= 1", "new_string": "= 5", "replace_all": True}, ctx
    )
    assert result.content == "The file app.py has been updated successfully (2 replacements)."
    assert app_py(ctx) == "x = 5\ny = 5\nz = 2\n"


async def test_identical_old_and_new_strings_are_an_error(ctx: ToolUseContext) -> None:
    with pytest.raises(ToolError, match=r"^No changes to make"):
        await EditTool().call({"file_path": "app.py", "old_string": "z = 2", "new_string": "z = 2"}, ctx)


async def test_an_empty_old_string_creates_a_new_file(ctx: ToolUseContext) -> None:
    result = await EditTool().call({"file_path": "new/mod.py", "old_string": "", "new_string": "pass\n"}, ctx)
    assert result.content == "File created successfully at: new/mod.py"
    assert (ctx.workspace_root / "new" / "mod.py").read_text() == "pass\n"


async def test_an_empty_old_string_on_a_non_empty_file_is_an_error(ctx: ToolUseContext) -> None:
    with pytest.raises(ToolError, match=r"^Cannot create app\.py: it already exists and is not empty\."):
        await EditTool().call({"file_path": "app.py", "old_string": "", "new_string": "pass\n"}, ctx)


async def test_editing_a_missing_file_is_an_error(ctx: ToolUseContext) -> None:
    with pytest.raises(ToolError, match=r"^File does not exist: gone\.py\."):
        await EditTool().call({"file_path": "gone.py", "old_string": "a", "new_string": "b"}, ctx)


async def test_editing_outside_the_workspace_is_refused(ctx: ToolUseContext) -> None:
    with pytest.raises(WorkspaceEscapeError):
        await EditTool().call({"file_path": "../app.py", "old_string": "a", "new_string": "b"}, ctx)


async def test_editing_records_the_new_mtime(ctx: ToolUseContext) -> None:
    await EditTool().call({"file_path": "app.py", "old_string": "z = 2", "new_string": "z = 3"}, ctx)
    path = (ctx.workspace_root / "app.py").resolve()
    assert ctx.read_file_state == {str(path): path.stat().st_mtime}


async def test_permission_is_asked_inside_and_denied_outside(ctx: ToolUseContext) -> None:
    tool_input = {"old_string": "a", "new_string": "b"}
    inside = await EditTool().check_permissions({"file_path": "app.py", **tool_input}, ctx)
    outside = await EditTool().check_permissions({"file_path": "/etc/hosts", **tool_input}, ctx)
    assert inside.behavior is PermissionBehavior.ASK
    assert outside.behavior is PermissionBehavior.DENY


@pytest.mark.parametrize(
    "bad_input",
    [
        {"file_path": "a", "old_string": "x"},
        {"file_path": "a", "old_string": "x", "new_string": "y", "replace_all": "yes"},
        {"file_path": "a", "old_string": "x", "new_string": "y", "extra": 1},
    ],
    ids=["missing-new_string", "non-boolean-replace_all", "unknown-key"],
)
def test_the_schema_rejects_bad_input(bad_input: dict[str, object]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad_input, EditTool.input_schema)


def test_editing_a_fifo_is_refused_without_blocking(ctx: ToolUseContext) -> None:
    os.mkfifo(ctx.workspace_root / "pipe")
    with pytest.raises(ToolError, match=r"^Cannot edit pipe: it is a FIFO \(named pipe\), not a regular file\.$"):
        run_guarded(lambda: EditTool().call({"file_path": "pipe", "old_string": "a", "new_string": "b"}, ctx))


async def test_a_file_over_16_mib_is_refused_before_it_is_read(ctx: ToolUseContext) -> None:
    with open(ctx.workspace_root / "sparse.img", "wb") as sparse:
        sparse.truncate(3 * 2**30)  # costs no disk; reading it would cost 3 GB of memory
    with pytest.raises(
        ToolError, match=r"^Cannot edit sparse\.img: it is 3,221,225,472 bytes; Edit works on files up to 16 MiB\.$"
    ):
        await EditTool().call({"file_path": "sparse.img", "old_string": "a", "new_string": "b"}, ctx)
