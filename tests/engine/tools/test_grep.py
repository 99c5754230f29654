"""Grep: a Python-regex search over workspace files, in a deterministic order."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import jsonschema
import pytest

from engine.tools import GrepTool, ToolError, ToolUseContext, WorkspaceEscapeError
from tests.engine.tools.hang_guard import run_guarded


@pytest.fixture
def ctx(tmp_path: Path) -> ToolUseContext:
    root = tmp_path / "workspace"
    # Written out of order, so sorted output cannot come from creation order.
    files = {
        "src/z.py": "import os\nTODO: tidy\n",
        "README.md": "todo list\nnothing here\n",
        "src/a.py": "x = 1  # TODO\ny = 2\n# TODO again\n",
        "notes.txt": "no match\n",
    }
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    return ToolUseContext(workspace_root=root, session_dir=tmp_path / "session")


async def grep(ctx: ToolUseContext, **tool_input: object) -> str:
    result = await GrepTool().call(dict(tool_input), ctx)
    assert not result.is_error
    assert isinstance(result.content, str)
    return result.content


async def test_files_with_matches_is_the_default_and_is_sorted(ctx: ToolUseContext) -> None:
    assert await grep(ctx, pattern="TODO") == "Found 2 files\nsrc/a.py\nsrc/z.py"


async def test_content_mode_shows_path_line_number_and_line(ctx: ToolUseContext) -> None:
    assert await grep(ctx, pattern="TODO", output_mode="content") == (
        "src/a.py:1:x = 1  # TODO\nsrc/a.py:3:# TODO again\nsrc/z.py:2:TODO: tidy"
    )


async def test_count_mode_counts_matching_lines_per_file(ctx: ToolUseContext) -> None:
    assert await grep(ctx, pattern="TODO", output_mode="count") == (
        "src/a.py:2\nsrc/z.py:1\n\nFound 3 matching lines across 2 files."
    )


async def test_dash_i_makes_the_search_case_insensitive(ctx: ToolUseContext) -> None:
    assert await grep(ctx, pattern="todo", **{"-i": True}) == "Found 3 files\nREADME.md\nsrc/a.py\nsrc/z.py"


async def test_a_glob_without_a_slash_filters_by_file_name_at_any_depth(ctx: ToolUseContext) -> None:
    assert await grep(ctx, pattern="o", glob="*.md") == "Found 1 file\nREADME.md"


async def test_a_glob_with_a_slash_filters_by_relative_path(ctx: ToolUseContext) -> None:
    assert await grep(ctx, pattern="TODO", glob="src/z*") == "Found 1 file\nsrc/z.py"


async def test_path_can_name_a_single_file(ctx: ToolUseContext) -> None:
    assert await grep(ctx, pattern="TODO", path="src/z.py", output_mode="content") == "src/z.py:2:TODO: tidy"


async def test_binary_files_are_skipped(ctx: ToolUseContext) -> None:
    (ctx.workspace_root / "blob.bin").write_bytes(b"TODO\0\x01\x02")
    assert await grep(ctx, pattern="TODO") == "Found 2 files\nsrc/a.py\nsrc/z.py"


async def test_no_match_says_so_in_each_mode(ctx: ToolUseContext) -> None:
    assert (await grep(ctx, pattern="zebra"), await grep(ctx, pattern="zebra", output_mode="content")) == (
        "No files found",
        "No matches found",
    )


async def test_an_invalid_regex_is_a_tool_error_naming_it(ctx: ToolUseContext) -> None:
    with pytest.raises(ToolError, match=r"^Invalid regular expression '\(unclosed': missing \),"):
        await GrepTool().call({"pattern": "(unclosed"}, ctx)


async def test_a_missing_path_is_a_tool_error(ctx: ToolUseContext) -> None:
    with pytest.raises(ToolError, match=r"^Path does not exist: nowhere\.$"):
        await GrepTool().call({"pattern": "x", "path": "nowhere"}, ctx)


async def test_searching_outside_the_workspace_is_refused(ctx: ToolUseContext) -> None:
    with pytest.raises(WorkspaceEscapeError):
        await GrepTool().call({"pattern": "root", "path": "/etc"}, ctx)


def test_grep_is_read_only_concurrency_safe_and_limited_to_20000_chars() -> None:
    tool = GrepTool()
    assert (tool.is_read_only, tool.is_concurrency_safe({"pattern": "x"}), tool.max_result_size_chars) == (
        True,
        True,
        20_000,
    )


@pytest.mark.parametrize(
    "bad_input",
    [
        {},
        {"pattern": "x", "output_mode": "lines"},
        {"pattern": "x", "-i": "yes"},
        {"pattern": "x", "-n": True},
    ],
    ids=["missing-pattern", "unknown-output_mode", "non-boolean-i", "unknown-key"],
)
def test_the_schema_rejects_bad_input(bad_input: dict[str, object]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad_input, GrepTool.input_schema)


# Hostile workspaces: special files and files of gigabytes.


def test_fifos_and_sockets_are_skipped_and_never_opened(ctx: ToolUseContext) -> None:
    os.mkfifo(ctx.workspace_root / "pipe.txt")
    socket.socket(socket.AF_UNIX).bind(str(ctx.workspace_root / "sock.txt"))
    (ctx.workspace_root / "link-to-pipe.txt").symlink_to("pipe.txt")

    assert run_guarded(lambda: grep(ctx, pattern="TODO")) == "Found 2 files\nsrc/a.py\nsrc/z.py"


def test_a_fifo_named_as_the_path_finds_nothing(ctx: ToolUseContext) -> None:
    os.mkfifo(ctx.workspace_root / "pipe.txt")
    assert run_guarded(lambda: grep(ctx, pattern="x", path="pipe.txt")) == "No files found"


def test_a_large_file_is_searched_in_its_first_16_mib_only_with_bounded_memory(tmp_path: Path) -> None:
    # Peak memory of a fresh process, not time: either file whole would be 3 GB of it.
    root = tmp_path / "workspace"
    root.mkdir()
    with open(root / "sparse.img", "wb") as sparse:
        sparse.truncate(3 * 2**30)  # all NUL bytes: binary, skipped
    with open(root / "huge.log", "wb") as huge:
        huge.write(b"needle on line one\n" + b"." * 9_000 + b"\n")
        huge.truncate(3 * 2**30)  # a text head, then NUL bytes
    (root / "small.txt").write_text("a needle\n")
    script = textwrap.dedent(
        f"""
        import asyncio, resource
        from pathlib import Path
        from engine.tools import GrepTool, ToolUseContext
        ctx = ToolUseContext(workspace_root=Path({str(root)!r}), session_dir=Path({str(tmp_path)!r}) / "s")
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        result = asyncio.run(GrepTool().call({{"pattern": "needle", "output_mode": "content"}}, ctx))
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(result.content)
        print((after - before) // 1024)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, check=True)
    output, growth_mib = done.stdout.rstrip("\n").rsplit("\n", 1)
    assert output == (
        "huge.log:1:needle on line one\nsmall.txt:1:a needle\n\n"
        "(Files over 16 MiB were searched in their first 16 MiB only: huge.log.)"
    )
    assert int(growth_mib) < 300
