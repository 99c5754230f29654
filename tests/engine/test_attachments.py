"""Attachments: queued commands, changed-file notices and prefetched memory, collected after
tool results in a fixed order, and the text each one puts in the next request."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from engine.attachments import (
    AttachmentSources,
    collect_attachments,
    render_attachment_for_api,
)
from engine.deps import QueryDeps
from engine.messages import AttachmentMessage
from engine.tools import ReadTool, ToolUseContext, WriteTool


@pytest.fixture
def ctx(tmp_path: Path) -> ToolUseContext:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    return ToolUseContext(workspace_root=workspace, session_dir=tmp_path / "session")


@pytest.fixture
def deps() -> QueryDeps:
    return QueryDeps.deterministic(object())  # type: ignore[arg-type] - no model call is made


async def collect(sources: AttachmentSources, deps: QueryDeps, ctx: ToolUseContext) -> list[dict[str, object]]:
    messages = await collect_attachments(sources, deps=deps, tool_ctx=ctx)
    assert all(isinstance(m, AttachmentMessage) for m in messages)
    return [m.attachment for m in messages]


def write(ctx: ToolUseContext, name: str, text: str) -> Path:
    path = ctx.workspace_root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


async def read(ctx: ToolUseContext, name: str) -> None:
    result = await ReadTool().call({"file_path": name}, ctx)
    assert not result.is_error


def touch_later(path: Path) -> None:
    """Move the file's mtime forward, so the change shows whatever the clock's resolution."""
    stat = path.stat()
    os.utime(path, (stat.st_atime, stat.st_mtime + 10))


# --- Queued commands ---------------------------------------------------------------------------


async def test_queued_commands_arrive_in_order_at_the_next_point_and_only_once(
    ctx: ToolUseContext, deps: QueryDeps
) -> None:
    sources = AttachmentSources()
    sources.queue_command("also update the README")
    sources.queue_command("and bump the version")
    assert await collect(sources, deps, ctx) == [
        {"type": "queued_command", "prompt": "also update the README"},
        {"type": "queued_command", "prompt": "and bump the version"},
    ]
    assert await collect(sources, deps, ctx) == []


def test_an_empty_command_cannot_be_queued() -> None:
    with pytest.raises(ValueError, match="needs text"):
        AttachmentSources().queue_command("  ")


# --- Changed files ----------------------------------------------------------------------------------


async def test_a_file_changed_since_it_was_read_is_reported_once_with_its_new_start(
    ctx: ToolUseContext, deps: QueryDeps
) -> None:
    path = write(ctx, "src/app.py", "old\n")
    await read(ctx, "src/app.py")
    path.write_text("".join(f"line {n}\n" for n in range(1, 51)))
    touch_later(path)

    sources = AttachmentSources()
    assert await collect(sources, deps, ctx) == [
        {"type": "changed_file", "filename": "src/app.py", "snippet": "\n".join(f"line {n}" for n in range(1, 41))}
    ]
    assert await collect(sources, deps, ctx) == []


async def test_a_file_the_model_wrote_is_watched_too(ctx: ToolUseContext, deps: QueryDeps) -> None:
    await WriteTool().call({"file_path": "notes.md", "content": "draft\n"}, ctx)
    path = ctx.workspace_root / "notes.md"
    path.write_text("edited by the user\n")
    touch_later(path)
    assert await collect(AttachmentSources(), deps, ctx) == [
        {"type": "changed_file", "filename": "notes.md", "snippet": "edited by the user"}
    ]


async def test_an_unchanged_file_is_not_reported(ctx: ToolUseContext, deps: QueryDeps) -> None:
    write(ctx, "a.txt", "same\n")
    await read(ctx, "a.txt")
    assert await collect(AttachmentSources(), deps, ctx) == []


async def test_a_deleted_file_is_reported_once_as_deleted(ctx: ToolUseContext, deps: QueryDeps) -> None:
    path = write(ctx, "gone.txt", "bye\n")
    await read(ctx, "gone.txt")
    path.unlink()
    sources = AttachmentSources()
    assert await collect(sources, deps, ctx) == [
        {"type": "changed_file", "filename": "gone.txt", "snippet": "(deleted)"}
    ]
    assert await collect(sources, deps, ctx) == []


# --- Memory prefetch --------------------------------------------------------------------------------


async def test_memory_files_are_attached_in_path_order_once(ctx: ToolUseContext, deps: QueryDeps) -> None:
    write(ctx, "CLAUDE.md", "Use tabs.\n")
    write(ctx, "memory/b.md", "B\n")
    write(ctx, "memory/a.md", "A\n")
    write(ctx, "memory/skip.txt", "not memory\n")
    sources = AttachmentSources()
    sources.start_memory_prefetch(ctx.workspace_root, ["memory/*.md", "CLAUDE.md"])
    await asyncio.sleep(0)  # the loop awaits the model before the first attachment point

    assert await collect(sources, deps, ctx) == [
        {"type": "memory", "path": "CLAUDE.md", "content": "Use tabs.\n"},
        {"type": "memory", "path": "memory/a.md", "content": "A\n"},
        {"type": "memory", "path": "memory/b.md", "content": "B\n"},
    ]
    assert await collect(sources, deps, ctx) == []


async def test_a_prefetch_not_finished_yet_is_taken_at_a_later_point(ctx: ToolUseContext, deps: QueryDeps) -> None:
    write(ctx, "CLAUDE.md", "Use tabs.\n")
    sources = AttachmentSources()
    sources.start_memory_prefetch(ctx.workspace_root, ["CLAUDE.md"])
    assert await collect(sources, deps, ctx) == []  # its task has not run yet
    await asyncio.sleep(0)
    assert [a["type"] for a in await collect(sources, deps, ctx)] == ["memory"]


async def test_a_memory_file_the_model_already_read_is_skipped(ctx: ToolUseContext, deps: QueryDeps) -> None:
    write(ctx, "CLAUDE.md", "Use tabs.\n")
    write(ctx, "memory/a.md", "A\n")
    sources = AttachmentSources()
    sources.start_memory_prefetch(ctx.workspace_root, ["CLAUDE.md", "memory/*.md"])
    await asyncio.sleep(0)
    await read(ctx, "CLAUDE.md")
    assert [a.get("path") for a in await collect(sources, deps, ctx)] == ["memory/a.md"]


async def test_attached_memory_counts_as_read_so_a_later_edit_is_a_changed_file(
    ctx: ToolUseContext, deps: QueryDeps
) -> None:
    path = write(ctx, "CLAUDE.md", "Use tabs.\n")
    sources = AttachmentSources()
    sources.start_memory_prefetch(ctx.workspace_root, ["CLAUDE.md"])
    await asyncio.sleep(0)
    await collect(sources, deps, ctx)
    path.write_text("Use spaces.\n")
    touch_later(path)
    assert await collect(sources, deps, ctx) == [
        {"type": "changed_file", "filename": "CLAUDE.md", "snippet": "Use spaces."}
    ]


async def test_memory_never_comes_from_outside_the_workspace(
    ctx: ToolUseContext, deps: QueryDeps, tmp_path: Path
) -> None:
    (tmp_path / "secret.md").write_text("outside\n")
    (ctx.workspace_root / "memory").mkdir()
    (ctx.workspace_root / "memory" / "link.md").symlink_to(tmp_path / "secret.md")
    sources = AttachmentSources()
    sources.start_memory_prefetch(ctx.workspace_root, ["memory/*.md"])
    await asyncio.sleep(0)
    assert await collect(sources, deps, ctx) == []


@pytest.mark.parametrize("pattern", ["../secret.md", "/etc/*.md"])
async def test_a_memory_pattern_that_leaves_the_workspace_is_refused(ctx: ToolUseContext, pattern: str) -> None:
    with pytest.raises(ValueError, match="relative to the workspace"):
        AttachmentSources().start_memory_prefetch(ctx.workspace_root, [pattern])


# --- Order --------------------------------------------------------------------------------------------


async def test_attachments_come_in_a_fixed_order_commands_then_changed_files_then_memory(
    ctx: ToolUseContext, deps: QueryDeps
) -> None:
    write(ctx, "CLAUDE.md", "Use tabs.\n")
    changed = [write(ctx, name, "v1\n") for name in ("b.txt", "a.txt")]
    for name in ("b.txt", "a.txt"):
        await read(ctx, name)
    for path in changed:
        path.write_text("v2\n")
        touch_later(path)
    sources = AttachmentSources()
    sources.start_memory_prefetch(ctx.workspace_root, ["CLAUDE.md"])
    await asyncio.sleep(0)
    sources.queue_command("next")

    attachments = await collect(sources, deps, ctx)
    assert [(a["type"], a.get("filename") or a.get("path") or a.get("prompt")) for a in attachments] == [
        ("queued_command", "next"),
        ("changed_file", "a.txt"),
        ("changed_file", "b.txt"),
        ("memory", "CLAUDE.md"),
    ]


# --- What the model sees ------------------------------------------------------------------------------


def test_a_queued_command_is_sent_as_its_prompt() -> None:
    assert render_attachment_for_api({"type": "queued_command", "prompt": "and bump the version"}) == (
        "and bump the version"
    )


def test_a_changed_file_is_sent_as_a_system_reminder_with_its_start() -> None:
    rendered = render_attachment_for_api({"type": "changed_file", "filename": "src/app.py", "snippet": "line 1"})
    assert rendered == (
        "<system-reminder>\nNote: src/app.py was modified since it was last read (by the user or a tool). "
        "Its current start:\nline 1\n</system-reminder>"
    )


def test_a_memory_entry_is_sent_as_a_system_reminder_with_its_contents() -> None:
    rendered = render_attachment_for_api({"type": "memory", "path": "CLAUDE.md", "content": "Use tabs."})
    assert rendered == "<system-reminder>\nContents of CLAUDE.md (project memory):\nUse tabs.\n</system-reminder>"


@pytest.mark.parametrize(
    "attachment",
    [
        {"type": "max_turns_reached", "max_turns": 3, "turn_count": 4},
        {"type": "hook_stopped_continuation", "message": "stop"},
        {"type": "something_new", "text": "x"},
        {"type": "memory", "path": "CLAUDE.md"},  # incomplete
    ],
)
def test_attachments_meant_for_the_user_only_are_not_sent(attachment: dict[str, object]) -> None:
    assert render_attachment_for_api(attachment) is None
