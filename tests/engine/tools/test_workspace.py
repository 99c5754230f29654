"""Workspace confinement: every file tool path resolves inside the workspace root, or is refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.tools import (
    ReadTool,
    ToolUseContext,
    WorkspaceEscapeError,
    resolve_in_workspace,
)
from engine.tools.workspace import WalkTooLongError, display_path, iter_workspace_files, workspace_file_paths


@pytest.fixture
def root(tmp_path: Path) -> Path:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    return workspace


def test_a_relative_path_resolves_against_the_root(root: Path) -> None:
    assert resolve_in_workspace("src/app.py", root) == root.resolve() / "src" / "app.py"


def test_an_absolute_path_inside_the_root_is_allowed(root: Path) -> None:
    assert resolve_in_workspace(str(root / "notes.txt"), root) == root.resolve() / "notes.txt"


def test_dotdot_that_stays_inside_is_allowed(root: Path) -> None:
    assert resolve_in_workspace("src/../README.md", root) == root.resolve() / "README.md"


def test_escape_via_dotdot_is_refused(root: Path) -> None:
    with pytest.raises(WorkspaceEscapeError) as caught:
        resolve_in_workspace("../etc/passwd", root)
    assert str(caught.value) == ("Path '../etc/passwd' is outside the workspace; tools may only touch files inside it.")


def test_escape_via_absolute_path_is_refused(root: Path) -> None:
    with pytest.raises(WorkspaceEscapeError) as caught:
        resolve_in_workspace("/etc/passwd", root)
    assert str(caught.value) == ("Path '/etc/passwd' is outside the workspace; tools may only touch files inside it.")


def test_escape_via_a_symlink_pointing_out_is_refused(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "link").symlink_to(outside)
    with pytest.raises(WorkspaceEscapeError) as caught:
        resolve_in_workspace("link/secret.txt", root)
    assert str(caught.value) == (
        "Path 'link/secret.txt' leads through a symbolic link to a place outside the workspace; "
        "tools may only touch files inside it."
    )
    assert str(tmp_path) not in str(caught.value)


def test_a_dangling_symlink_pointing_out_is_refused(root: Path, tmp_path: Path) -> None:
    (root / "dangling").symlink_to(tmp_path / "not-yet-created.txt")
    with pytest.raises(WorkspaceEscapeError):
        resolve_in_workspace("dangling", root)


def test_a_symlink_that_stays_inside_is_followed(root: Path) -> None:
    (root / "real").mkdir()
    (root / "alias").symlink_to(root / "real")
    assert resolve_in_workspace("alias/file.txt", root) == root.resolve() / "real" / "file.txt"


def test_a_root_given_through_a_symlink_still_contains_its_files(tmp_path: Path, root: Path) -> None:
    via_link = tmp_path / "via-link"
    via_link.symlink_to(root)
    assert resolve_in_workspace("a.txt", via_link) == root.resolve() / "a.txt"


def test_display_path_is_posix_and_relative_to_the_root(root: Path) -> None:
    assert display_path(root.resolve() / "a" / "b.txt", root) == "a/b.txt"


def test_walk_lists_workspace_files_but_not_links_out_nor_vcs_internals(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    for relative in ["b.txt", "a/z.txt", "a/c.txt", ".git/HEAD"]:
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text("x")
    (root / "dir-link").symlink_to(outside)
    (root / "file-link").symlink_to(outside / "secret.txt")
    (root / "inner-link").symlink_to(root / "b.txt")

    walked = [display_path(p, root) for p in iter_workspace_files(root.resolve(), root)]

    assert sorted(walked) == ["a/c.txt", "a/z.txt", "b.txt", "inner-link"]


class TestBackfill:
    """Backfill expands paths on the observers' copy only, and never raises."""

    def test_a_relative_file_path_becomes_absolute_on_the_copy(self, root: Path, tmp_path: Path) -> None:
        ctx = ToolUseContext(workspace_root=root, session_dir=tmp_path / "session")
        original = {"file_path": "src/app.py"}

        observed = ReadTool().observable_input(original, ctx)

        assert observed == {"file_path": str(root.resolve() / "src" / "app.py")}
        assert original == {"file_path": "src/app.py"}

    def test_a_path_outside_the_workspace_is_left_as_is(self, root: Path, tmp_path: Path) -> None:
        ctx = ToolUseContext(workspace_root=root, session_dir=tmp_path / "session")
        assert ReadTool().observable_input({"file_path": "../x"}, ctx) == {"file_path": "../x"}

    def test_an_unusable_path_is_left_as_is(self, root: Path, tmp_path: Path) -> None:
        ctx = ToolUseContext(workspace_root=root, session_dir=tmp_path / "session")
        assert ReadTool().observable_input({"file_path": "a\0b"}, ctx) == {"file_path": "a\0b"}


def test_walk_order_is_a_folders_files_by_name_then_its_subfolders_by_name(root: Path) -> None:
    for relative in ["z.txt", "b/y.txt", "b/a/x.txt", "a/w.txt", "a.txt"]:
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text("x")

    walked = [display_path(p, root) for p in iter_workspace_files(root.resolve(), root)]

    assert walked == ["a.txt", "z.txt", "a/w.txt", "b/y.txt", "b/a/x.txt"]


def test_a_walk_past_its_entry_limit_stops_and_one_within_it_lists_everything(root: Path) -> None:
    # Entries are counted as the folders are listed: files and folders, links and skipped ones too.
    for relative in ["a.txt", "b.txt", "sub/c.txt"]:
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text("x")
    base = root.resolve()

    assert len(list(workspace_file_paths(base, root, max_entries=4))) == 3
    with pytest.raises(WalkTooLongError):
        list(workspace_file_paths(base, root, max_entries=3))


def test_a_file_or_folder_swapped_for_a_link_out_while_a_walk_is_under_way_is_not_followed(
    root: Path, tmp_path: Path
) -> None:
    # Grep reads each file as the walk hands it out: the walk's folder listing is old news by
    # the time it reaches the next entry.
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    for relative in ["a.txt", "b.txt", "sub/c.txt"]:
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text("x")
    walk = iter_workspace_files(root.resolve(), root)

    first = next(walk)
    (root / "b.txt").unlink()
    (root / "b.txt").symlink_to(outside / "secret.txt")
    for file in (root / "sub").iterdir():
        file.unlink()
    (root / "sub").rmdir()
    (root / "sub").symlink_to(outside)

    assert [first.name, *(file.name for file in walk)] == ["a.txt"]


def test_a_file_as_the_base_is_walked_as_itself(root: Path) -> None:
    (root / "only.txt").write_text("x")
    assert list(workspace_file_paths((root / "only.txt").resolve(), root, max_entries=0)) == [
        str((root / "only.txt").resolve())
    ]


def test_the_workspace_fixture_is_not_itself_a_symlink(root: Path) -> None:
    # The assertions above compare against root.resolve(); make sure that is a real folder.
    assert not os.path.islink(root)
