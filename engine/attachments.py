"""Attachments: context the loop injects after tool results, before the next pass.

Three sources, collected in this order at each attachment point: commands the user queued
while the loop was busy, notices for files that changed since the model read (or wrote) them,
and project memory files read by a prefetch started at loop entry. Each becomes an
``AttachmentMessage``; ``render_attachment_for_api`` is the text a user turn carries for it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.deps import QueryDeps
from engine.messages import AttachmentMessage, AttachmentType
from engine.tools.base import ToolError, ToolUseContext
from engine.tools.read import MAX_LINE_CHARS
from engine.tools.workspace import display_path, resolve_in_workspace

__all__ = [
    "CHANGED_FILE_SNIPPET_LINES",
    "MAX_MEMORY_CHARS",
    "AttachmentSources",
    "MemoryEntry",
    "collect_attachments",
    "render_attachment_for_api",
]

JsonDict = dict[str, Any]

CHANGED_FILE_SNIPPET_LINES = 40
MAX_MEMORY_CHARS = 40_000
# Enough bytes for 40 ordinary lines; a file of a few huge lines is cut rather than read whole.
_SNIPPET_MAX_BYTES = 200_000
_DELETED = "(deleted)"


@dataclass(frozen=True)
class MemoryEntry:
    """A memory file as the prefetch read it: ``path`` relative to the workspace (what the
    model sees), ``real_path`` as ``read_file_state`` keys it, and the mtime read with it."""

    path: str
    real_path: str
    content: str
    mtime: float


class AttachmentSources:
    """What feeds attachments across a session: the queue of user commands and the memory
    prefetch of the current loop run."""

    def __init__(self) -> None:
        self._commands: deque[str] = deque()
        self._prefetch: asyncio.Task[list[MemoryEntry]] | None = None

    def queue_command(self, text: str) -> None:
        """Queue a user command for the next attachment point."""
        if not text.strip():
            raise ValueError("A queued command needs text; an empty one would be an empty user turn.")
        self._commands.append(text)

    def take_commands(self) -> list[str]:
        """Every queued command, oldest first; the queue is left empty."""
        commands = list(self._commands)
        self._commands.clear()
        return commands

    def start_memory_prefetch(self, workspace: Path, paths: Sequence[str]) -> None:
        """Start reading the memory files ``paths`` names (glob patterns relative to the
        workspace, e.g. ``CLAUDE.md`` or ``memory/*.md``) in a task; a prefetch not yet
        consumed is replaced."""
        for pattern in paths:
            if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
                raise ValueError(f"Memory path {pattern!r} must be a pattern relative to the workspace, without '..'.")
        self.cancel_memory_prefetch()
        if paths:
            self._prefetch = asyncio.get_running_loop().create_task(_read_memory(Path(workspace), tuple(paths)))

    def take_memory(self) -> list[MemoryEntry] | None:
        """The prefetch's entries if it has finished (then never again), else None."""
        task = self._prefetch
        if task is None or not task.done():
            return None
        self._prefetch = None
        return task.result()

    def cancel_memory_prefetch(self) -> None:
        """Drop the current prefetch, finished or not."""
        task, self._prefetch = self._prefetch, None
        if task is not None and not task.done():
            task.cancel()


async def collect_attachments(
    sources: AttachmentSources, *, deps: QueryDeps, tool_ctx: ToolUseContext
) -> list[AttachmentMessage]:
    """The attachments due at this point, in a fixed order: queued commands (FIFO), changed
    files (by path), memory entries (by path). Updates ``tool_ctx.read_file_state`` so each
    change is reported once and attached memory counts as read."""
    attachments = [
        AttachmentMessage.create(deps, AttachmentType.QUEUED_COMMAND, prompt=text) for text in sources.take_commands()
    ]
    attachments += _changed_files(deps, tool_ctx)
    for entry in sources.take_memory() or ():
        if entry.real_path in tool_ctx.read_file_state:
            continue  # the model read this file itself
        tool_ctx.read_file_state[entry.real_path] = entry.mtime
        memory = AttachmentMessage.create(deps, AttachmentType.MEMORY, path=entry.path, content=entry.content)
        attachments.append(memory)
    return attachments


def render_attachment_for_api(attachment: JsonDict) -> str | None:
    """The text a user turn carries for an attachment, or None for those never sent to the
    model (``max_turns_reached``, ``hook_stopped_continuation``, unknown or incomplete ones)."""
    kind = attachment.get("type")
    if kind == AttachmentType.QUEUED_COMMAND:
        prompt = attachment.get("prompt")
        return prompt if isinstance(prompt, str) and prompt else None
    if kind == AttachmentType.CHANGED_FILE and _has_text(attachment, "filename", "snippet"):
        return (
            f"<system-reminder>\nNote: {attachment['filename']} was modified since it was last read (by the "
            f"user or a tool). Its current start:\n{attachment['snippet']}\n</system-reminder>"
        )
    if kind == AttachmentType.MEMORY and _has_text(attachment, "path", "content"):
        return (
            f"<system-reminder>\nContents of {attachment['path']} (project memory):\n"
            f"{attachment['content']}\n</system-reminder>"
        )
    return None


def _has_text(attachment: JsonDict, *keys: str) -> bool:
    return all(isinstance(attachment.get(key), str) for key in keys)


def _changed_files(deps: QueryDeps, tool_ctx: ToolUseContext) -> list[AttachmentMessage]:
    state = tool_ctx.read_file_state
    changed: list[tuple[str, str]] = []
    for key in list(state):
        path = Path(key)
        try:
            mtime = path.stat().st_mtime
        except (FileNotFoundError, NotADirectoryError):
            del state[key]  # reported once; if it comes back, the model has not read it
            changed.append((_filename(path, tool_ctx.workspace_root), _DELETED))
            continue
        except OSError:
            continue  # cannot tell whether it changed; look again at the next point
        if mtime == state[key]:
            continue
        state[key] = mtime
        changed.append((_filename(path, tool_ctx.workspace_root), _snippet(path)))
    return [
        AttachmentMessage.create(deps, AttachmentType.CHANGED_FILE, filename=filename, snippet=snippet)
        for filename, snippet in sorted(changed)
    ]


def _filename(path: Path, root: Path) -> str:
    try:
        return display_path(path, root)
    except ValueError:
        return str(path)  # not under the workspace: no shorter name is truthful


def _snippet(path: Path) -> str:
    """The first lines of the file's new content."""
    try:
        with path.open("rb") as handle:
            head = handle.read(_SNIPPET_MAX_BYTES)
    except OSError as exc:
        return f"(cannot be read: {exc.strerror or exc})"
    if b"\0" in head:
        return "(binary file)"
    lines = head.decode("utf-8", errors="replace").splitlines()[:CHANGED_FILE_SNIPPET_LINES]
    if not lines:
        return "(empty)"
    return "\n".join(_clip(line) for line in lines)


def _clip(line: str) -> str:
    """A line cut to ``MAX_LINE_CHARS`` with a visible marker, as Read cuts it."""
    return line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + " … (line truncated)"


async def _read_memory(workspace: Path, patterns: tuple[str, ...]) -> list[MemoryEntry]:
    # Reads synchronously inside the task: it finishes the first time the loop awaits, so
    # whether it is ready at an attachment point never depends on thread timing (replays
    # stay byte-identical).
    found: dict[str, MemoryEntry] = {}
    for pattern in patterns:
        for candidate in sorted(workspace.glob(pattern)):
            entry = _memory_entry(candidate, workspace)
            if entry is not None:
                found.setdefault(entry.real_path, entry)
    return sorted(found.values(), key=lambda entry: entry.path)


def _memory_entry(candidate: Path, workspace: Path) -> MemoryEntry | None:
    try:
        real = resolve_in_workspace(str(candidate), workspace)
    except ToolError:
        return None  # a link that leads out of the workspace
    if not real.is_file():
        return None
    with contextlib.suppress(OSError):
        mtime = real.stat().st_mtime  # before reading: a change during the read shows up later
        content = real.read_bytes().decode("utf-8", errors="replace")
        if len(content) > MAX_MEMORY_CHARS:
            content = (
                content[:MAX_MEMORY_CHARS]
                + f"\n\n[Truncated: {display_path(real, workspace)} is longer than {MAX_MEMORY_CHARS:,} "
                "characters; Read it for the rest.]"
            )
        return MemoryEntry(display_path(real, workspace), str(real), content, mtime)
    return None
