"""Oversized results are saved under the session folder; the model gets a preview naming the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.tools import (
    GrepTool,
    ReadTool,
    ToolError,
    ToolUseContext,
    apply_result_size_limit,
    empty_result_text,
)


def make_ctx(tmp_path: Path, session_name: str = "session") -> ToolUseContext:
    return ToolUseContext(workspace_root=tmp_path / "workspace", session_dir=tmp_path / session_name)


LARGE = "".join(f"line {n:05}\n" for n in range(3_000))  # 33,000 chars, over Grep's 20,000


def test_a_result_within_the_limit_is_returned_unchanged_and_not_saved(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    assert apply_result_size_limit(GrepTool(), "toolu_1", "small", ctx) == "small"
    assert not (ctx.session_dir / "tool-results").exists()


def test_an_oversized_result_is_saved_whole_under_the_session_folder(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    apply_result_size_limit(GrepTool(), "toolu_1", LARGE, ctx)
    assert (ctx.session_dir / "tool-results" / "toolu_1.txt").read_text() == LARGE


def test_the_preview_names_the_saved_file_relative_to_the_session_folder(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    preview = apply_result_size_limit(GrepTool(), "toolu_1", LARGE, ctx)
    first_line, *_, last_line = preview.split("\n")
    assert first_line == (
        "Output too large (33,000 characters); the full output was saved to tool-results/toolu_1.txt "
        "in the session folder."
    )
    assert last_line == "... 31,010 more characters are in tool-results/toolu_1.txt."
    assert str(tmp_path) not in preview


def test_the_preview_shows_the_start_of_the_output_cut_at_a_line_end(tmp_path: Path) -> None:
    preview = apply_result_size_limit(GrepTool(), "toolu_1", LARGE, make_ctx(tmp_path))
    lines = preview.split("\n")
    assert lines[1] == "Preview (first 1,990 characters):"
    assert "\n".join(lines[2:-1]) == LARGE[:1_990].rstrip("\n")


def test_the_preview_is_the_same_wherever_the_session_folder_is(tmp_path: Path) -> None:
    here = apply_result_size_limit(GrepTool(), "toolu_1", LARGE, make_ctx(tmp_path, "one"))
    there = apply_result_size_limit(GrepTool(), "toolu_1", LARGE, make_ctx(tmp_path, "elsewhere/two"))
    assert here == there


def test_saving_leaves_no_temporary_files(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    apply_result_size_limit(GrepTool(), "toolu_1", LARGE, ctx)
    assert [p.name for p in (ctx.session_dir / "tool-results").iterdir()] == ["toolu_1.txt"]


def test_a_tool_without_a_limit_is_never_saved(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    huge = "x" * 200_000
    assert apply_result_size_limit(ReadTool(), "toolu_1", huge, ctx) == huge
    assert not (ctx.session_dir / "tool-results").exists()


@pytest.mark.parametrize("tool_use_id", ["../escape", "a/b", "a\\b", "..", ""])
def test_a_tool_use_id_that_is_not_a_plain_file_name_is_refused(tmp_path: Path, tool_use_id: str) -> None:
    ctx = make_ctx(tmp_path)
    with pytest.raises(ToolError, match=r"cannot be used as a file name"):
        apply_result_size_limit(GrepTool(), tool_use_id, LARGE, ctx)
    assert not (tmp_path / "escape.txt").exists()


def test_empty_output_is_replaced_by_a_sentence_naming_the_tool() -> None:
    assert empty_result_text("Bash") == "(Bash completed with no output)"
