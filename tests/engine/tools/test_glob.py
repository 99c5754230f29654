"""Glob: workspace files matching a pattern, sorted, relative to the workspace root."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import jsonschema
import pytest

from engine.tools import (
    GlobTool,
    PermissionBehavior,
    ToolError,
    ToolUseContext,
    WorkspaceEscapeError,
)
from engine.tools.glob import INLINE_WALK_ENTRIES, compile_glob


@pytest.fixture
def ctx(tmp_path: Path) -> ToolUseContext:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    return ToolUseContext(workspace_root=workspace, session_dir=tmp_path / "session")


def make_files(root: Path, *relative_paths: str) -> None:
    for relative in relative_paths:
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text("")


async def glob(ctx: ToolUseContext, **tool_input: object) -> str:
    result = await GlobTool().call(dict(tool_input), ctx)
    assert not result.is_error
    assert isinstance(result.content, str)
    return result.content


async def test_matches_are_sorted_workspace_relative_paths(ctx: ToolUseContext) -> None:
    # Created out of order, so the result's order cannot come from creation order.
    make_files(ctx.workspace_root, "src/z.py", "b.py", "src/a.py", "a.py", "src/sub/m.py", "notes.txt")
    assert await glob(ctx, pattern="**/*.py") == "a.py\nb.py\nsrc/a.py\nsrc/sub/m.py\nsrc/z.py"


async def test_a_pattern_without_a_double_star_stays_in_one_folder(ctx: ToolUseContext) -> None:
    make_files(ctx.workspace_root, "top.py", "src/nested.py")
    assert await glob(ctx, pattern="*.py") == "top.py"


async def test_path_narrows_the_search_but_results_stay_workspace_relative(ctx: ToolUseContext) -> None:
    make_files(ctx.workspace_root, "top.py", "src/a.py", "src/sub/b.py")
    assert await glob(ctx, pattern="**/*.py", path="src") == "src/a.py\nsrc/sub/b.py"


async def test_brace_alternatives_match_either(ctx: ToolUseContext) -> None:
    make_files(ctx.workspace_root, "ui/a.ts", "ui/b.tsx", "ui/c.js")
    assert await glob(ctx, pattern="**/*.{ts,tsx}") == "ui/a.ts\nui/b.tsx"


async def test_no_match_says_no_files_found(ctx: ToolUseContext) -> None:
    assert await glob(ctx, pattern="**/*.rs") == "No files found"


async def test_more_than_100_matches_are_cut_with_a_note(ctx: ToolUseContext) -> None:
    make_files(ctx.workspace_root, *(f"f{n:03}.txt" for n in range(105)))
    lines = (await glob(ctx, pattern="*.txt")).split("\n")
    assert (len(lines), lines[0], lines[99], lines[100]) == (
        101,
        "f000.txt",
        "f099.txt",
        "(Results are truncated. Consider using a more specific path or pattern.)",
    )


async def test_a_folder_too_big_to_walk_on_the_loop_is_searched_all_the_same(ctx: ToolUseContext) -> None:
    # Past INLINE_WALK_ENTRIES the walk starts again in a worker thread: the answer is the same.
    make_files(ctx.workspace_root, *(f"deep/f{n:04}.txt" for n in range(INLINE_WALK_ENTRIES + 10)), "deep/x.py")
    assert await glob(ctx, pattern="**/*.py") == "deep/x.py"
    assert (await glob(ctx, pattern="deep/f02*.txt")).split("\n")[:2] == ["deep/f0200.txt", "deep/f0201.txt"]


async def test_links_out_of_the_workspace_are_never_listed(ctx: ToolUseContext, tmp_path: Path) -> None:
    make_files(tmp_path, "outside/secret.py")
    make_files(ctx.workspace_root, "mine.py")
    (ctx.workspace_root / "dir-link").symlink_to(tmp_path / "outside")
    (ctx.workspace_root / "file-link.py").symlink_to(tmp_path / "outside" / "secret.py")
    assert await glob(ctx, pattern="**/*.py") == "mine.py"


async def test_fifos_sockets_and_links_to_them_are_not_listed(ctx: ToolUseContext) -> None:
    make_files(ctx.workspace_root, "a.txt")
    os.mkfifo(ctx.workspace_root / "pipe.txt")
    socket.socket(socket.AF_UNIX).bind(str(ctx.workspace_root / "sock.txt"))
    (ctx.workspace_root / "link.txt").symlink_to("pipe.txt")
    assert await glob(ctx, pattern="*.txt") == "a.txt"


async def test_version_control_internals_are_skipped(ctx: ToolUseContext) -> None:
    make_files(ctx.workspace_root, ".git/config", "app.cfg")
    assert await glob(ctx, pattern="**/*") == "app.cfg"


@pytest.mark.parametrize("pattern", ["../*.py", "/etc/*", "src/../../x"])
async def test_patterns_that_could_leave_the_workspace_are_refused(ctx: ToolUseContext, pattern: str) -> None:
    with pytest.raises(ToolError, match=r"must be relative and must not contain '\.\.'"):
        await GlobTool().call({"pattern": pattern}, ctx)


async def test_a_search_path_outside_the_workspace_is_refused(ctx: ToolUseContext) -> None:
    with pytest.raises(WorkspaceEscapeError):
        await GlobTool().call({"pattern": "*", "path": ".."}, ctx)


async def test_permission_is_allowed_inside_and_denied_outside(ctx: ToolUseContext) -> None:
    assert (await GlobTool().check_permissions({"pattern": "*"}, ctx)).behavior is PermissionBehavior.ALLOW
    denied = await GlobTool().check_permissions({"pattern": "*", "path": "/"}, ctx)
    assert denied.behavior is PermissionBehavior.DENY


def test_glob_is_read_only_and_concurrency_safe() -> None:
    assert (GlobTool.is_read_only, GlobTool().is_concurrency_safe({"pattern": "*"})) == (True, True)


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("**/*.py", "a.py", True),
        ("**/*.py", "a/b/c.py", True),
        ("*.py", "a/b.py", False),
        ("src/**", "src/a/b", True),
        ("src/**/test_*.py", "src/test_x.py", True),
        ("?.txt", "ab.txt", False),
        ("[ab].txt", "b.txt", True),
        ("[!ab].txt", "c.txt", True),
        ("[!ab].txt", "a.txt", False),
        ("*.{js,jsx}", "x.jsx", True),
        ("*.{js,jsx}", "x.ts", False),
        ("file[1].txt", "file1.txt", True),
        ("a+b(c).txt", "a+b(c).txt", True),
    ],
)
def test_compile_glob_semantics(pattern: str, path: str, matches: bool) -> None:
    assert bool(compile_glob(pattern).match(path)) is matches


@pytest.mark.parametrize(
    "bad_input",
    [{}, {"pattern": ""}, {"pattern": "*", "path": 1}, {"pattern": "*", "sort": "mtime"}],
    ids=["missing-pattern", "empty-pattern", "non-string-path", "unknown-key"],
)
def test_the_schema_rejects_bad_input(bad_input: dict[str, object]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad_input, GlobTool.input_schema)
