"""Confinement of the file tools to the session's workspace root."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from engine.tools.base import JsonDict, PermissionDecision, ToolError, ToolUseContext
from engine.tools.input_limits import path_length_problem

__all__ = [
    "WalkTooLongError",
    "WorkspaceEscapeError",
    "backfill_path_field",
    "display_path",
    "iter_workspace_files",
    "resolve_in_workspace",
    "workspace_file_paths",
]

# Version-control internals are never what a search is looking for, and they would swamp
# `**` patterns; skipping them keeps Glob and Grep results about the project's own files.
_SKIPPED_DIRECTORIES = frozenset({".git", ".hg", ".svn"})


class WorkspaceEscapeError(ToolError):
    """A path that leads outside the workspace root, lexically or through a symbolic link."""


def resolve_in_workspace(path: str, root: Path) -> Path:
    """Resolve ``path`` (relative to ``root``, or absolute) to a real path inside ``root``.

    Symbolic links in the existing part of the path are followed, so a link that points out of
    the workspace is refused just like ``..`` or a foreign absolute path.
    """
    if (problem := path_length_problem(path, name="The path")) is not None:
        raise ToolError(problem)
    # Real paths as strings: both come normalized from realpath, so "inside" is a prefix test
    # (what Path.is_relative_to answers, without the path objects: every file tool call).
    real_root = os.path.realpath(root)
    root_path = root if isinstance(root, Path) else Path(root)
    candidate = Path(path) if os.path.isabs(path) else root_path / path
    try:
        # The root itself (``.``, a search's default) is the real root already looked up.
        real = real_root if candidate == root_path else os.path.realpath(candidate)
    except (ValueError, OSError) as exc:  # e.g. an embedded NUL byte
        raise ToolError(f"Path {path!r} is not a usable file path ({exc}).") from exc
    if real == real_root or real.startswith(os.path.join(real_root, "")):
        return Path(real)
    # Lexically inside but really outside: a symbolic link is what led out, so say so.
    lexical = Path(os.path.abspath(candidate))
    if lexical.is_relative_to(os.path.abspath(root)) or lexical.is_relative_to(real_root):
        raise WorkspaceEscapeError(
            f"Path '{path}' leads through a symbolic link to a place outside the workspace; "
            "tools may only touch files inside it."
        )
    # The message goes back to the model: it names no host path, so a request reads the same
    # on every machine.
    raise WorkspaceEscapeError(f"Path '{path}' is outside the workspace; tools may only touch files inside it.")


def display_path(real: Path, root: Path) -> str:
    """``real`` relative to the workspace root, in POSIX form, for machine-independent output."""
    return real.relative_to(os.path.realpath(root)).as_posix()


def iter_workspace_files(base: Path, root: Path) -> Iterator[Path]:
    """Every regular file under ``base`` (a resolved path inside ``root``), in a stable order:
    a folder's files by name, then its subfolders by name (see `workspace_file_paths`)."""
    for path in workspace_file_paths(base, root):
        yield Path(path)


class WalkTooLongError(Exception):
    """A walk met more entries than the caller allowed it (`workspace_file_paths`)."""


def workspace_file_paths(base: Path, root: Path, *, max_entries: int | None = None) -> Iterator[str]:
    """The paths of every regular file under ``base`` (a resolved path inside ``root``), in a
    stable order: a folder's files by name, then its subfolders by name. `WalkTooLongError`
    once more than ``max_entries`` files and folders have been met (None: no limit).

    Directory links are not descended (that is how a walk could leave the workspace or loop),
    and file links whose target lies outside the workspace are left out. This is what
    ``os.walk`` (top-down, links not followed) with a test of each file gave, read from the
    folders' entries instead: a plain file or folder costs no system call beyond its folder's
    listing, and a folder that cannot be read is skipped as ``os.walk`` skips it.
    """
    if base.is_file():
        yield str(base)
        return
    yield from _Walk(root, max_entries).files(os.fspath(base))


class _Walk:
    """One walk's state: the entries it may still meet, the workspace's real root (looked up
    at the first link: most walks meet none)."""

    def __init__(self, root: Path, max_entries: int | None) -> None:
        self.root = root
        self.left = max_entries
        self._real_root: Path | None = None

    def files(self, top: str) -> Iterator[str]:
        # Depth first, with a stack of each level's folders still to enter (no recursion).
        pending: list[Iterator[os.DirEntry[str] | str]] = [iter((top,))]
        while pending:
            folder = next(pending[-1], None)
            if folder is None:
                pending.pop()
                continue
            if not isinstance(folder, str):
                # Tested again just before entering (as os.walk does): a folder swapped for a
                # link since it was listed must not lead the walk out of the workspace.
                if folder.name in _SKIPPED_DIRECTORIES or _is_symlink(folder) or os.path.islink(folder.path):
                    continue
                folder = folder.path
            listed = self._listing(folder)
            if listed is None:
                continue
            files, folders = listed
            for entry in files:
                # The link test is made again as each file is handed out (a lazy caller such as
                # Grep reads one file after another): a file swapped for a link meanwhile is
                # judged as a link.
                if _is_symlink(entry) or os.path.islink(entry.path):
                    full = Path(entry.path)
                    if full.is_file() and Path(os.path.realpath(full)).is_relative_to(self.real_root()):
                        yield entry.path
                elif _is_plain_file(entry):
                    yield entry.path
            pending.append(iter(folders))

    def _listing(self, directory: str) -> tuple[list[os.DirEntry[str]], list[os.DirEntry[str]]] | None:
        """A folder's files and its folders, each by name; None when it cannot be read (os.walk
        yields nothing of it either). `WalkTooLongError` as soon as the walk has met more
        entries than it may, not once a huge folder has been read whole."""
        files: list[os.DirEntry[str]] = []
        folders: list[os.DirEntry[str]] = []
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    if self.left is not None:
                        self.left -= 1
                        if self.left < 0:
                            raise WalkTooLongError(directory)
                    try:
                        is_dir = entry.is_dir()
                    except OSError:
                        is_dir = False
                    (folders if is_dir else files).append(entry)
        except OSError:
            return None  # unreadable, or gone while listed
        files.sort(key=_name)
        folders.sort(key=_name)
        return files, folders

    def real_root(self) -> Path:
        if self._real_root is None:
            self._real_root = Path(os.path.realpath(self.root))
        return self._real_root


def _name(entry: os.DirEntry[str]) -> str:
    return entry.name


def _is_symlink(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_symlink()
    except OSError:
        return False


def _is_plain_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file(follow_symlinks=False)
    except OSError:
        return False


def backfill_path_field(tool_input: JsonDict, key: str, ctx: ToolUseContext) -> None:
    """Replace ``tool_input[key]`` by its absolute path in the workspace, if it resolves there.

    Backfill must never fail a call: anything unresolvable is left for ``call`` to reject.
    """
    value = tool_input.get(key)
    if not isinstance(value, str):
        return
    try:
        tool_input[key] = str(resolve_in_workspace(value, ctx.workspace_root))
    except (ToolError, OSError, ValueError):
        return


def path_permission(path: str, root: Path, *, ask: str | None = None) -> PermissionDecision:
    """A file tool's permission for ``path``: denied outside the workspace (the escape error is
    the reason); inside it, allowed — or put to the session's policy with the question ``ask``."""
    try:
        resolve_in_workspace(path, root)
    except WorkspaceEscapeError as exc:
        return PermissionDecision.deny(str(exc))
    return PermissionDecision.ask(ask) if ask is not None else PermissionDecision.allow()
