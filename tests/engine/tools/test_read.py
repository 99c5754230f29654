"""Read: a workspace text file, numbered like `cat -n`, windowed by offset and limit."""

from __future__ import annotations

import io
import os
import re
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.tools import (
    PermissionBehavior,
    ReadTool,
    ToolError,
    ToolUseContext,
    WorkspaceEscapeError,
)
from engine.tools.read import MAX_LINE_CHARS
from engine.tools.text_window import MAX_SCAN_BYTES, SCAN_CHUNK_BYTES, UndecodableTextError, read_line_window
from tests.engine.tools.hang_guard import run_guarded


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


# Hostile workspaces: special files, huge files, and files that never end.


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (lambda path: os.mkfifo(path), "a FIFO (named pipe)"),
        (lambda path: socket.socket(socket.AF_UNIX).bind(str(path)), "a socket"),
    ],
    ids=["fifo", "socket"],
)
def test_a_special_file_is_refused_without_opening_it_for_a_blocking_read(
    ctx: ToolUseContext, make: Any, kind: str
) -> None:
    make(ctx.workspace_root / "special")
    with pytest.raises(ToolError, match=rf"^Cannot read special: it is {re.escape(kind)}, not a regular file; "):
        run_guarded(lambda: ReadTool().call({"file_path": "special"}, ctx))
    assert ctx.read_file_state == {}


def test_a_link_to_a_fifo_is_refused_like_the_fifo(ctx: ToolUseContext) -> None:
    os.mkfifo(ctx.workspace_root / "pipe")
    (ctx.workspace_root / "link").symlink_to("pipe")
    with pytest.raises(ToolError, match=r"^Cannot read link: it is a FIFO \(named pipe\)"):
        run_guarded(lambda: ReadTool().call({"file_path": "link"}, ctx))


async def test_a_3_gb_sparse_file_is_refused_as_binary_from_its_head(ctx: ToolUseContext) -> None:
    with open(ctx.workspace_root / "sparse.img", "wb") as sparse:
        sparse.truncate(3 * 2**30)  # costs no disk: a hole of NUL bytes
    with pytest.raises(ToolError, match=r"^Cannot read sparse\.img: it is a binary file"):
        await ReadTool().call({"file_path": "sparse.img", "limit": 1}, ctx)


def test_a_window_reads_only_up_to_the_scan_limit_of_a_file_that_never_ends() -> None:
    # A text head, then 3 GB of one endless line: the window and the line are bounded.
    stream = CountingStream(b"first\nsecond\n" + b"z" * 5_000, endless=b"z")

    window = read_line_window(stream, first_line=1, max_lines=1)

    assert window.lines == ["first"]
    assert window.reached_end is False
    assert window.lines_seen == 2  # "second", then the endless third line cut off at the limit
    assert MAX_SCAN_BYTES <= stream.bytes_read <= MAX_SCAN_BYTES + SCAN_CHUNK_BYTES


def test_an_endless_line_in_the_window_is_kept_only_up_to_the_line_limit() -> None:
    stream = CountingStream(b"", endless=b"w")

    window = read_line_window(stream, first_line=1, max_lines=5)

    assert window.lines == ["w" * MAX_LINE_CHARS + " … (line truncated)"]
    assert stream.bytes_read <= MAX_SCAN_BYTES + SCAN_CHUNK_BYTES


async def test_a_file_past_the_scan_limit_shows_its_window_and_says_where_reading_stopped(
    ctx: ToolUseContext,
) -> None:
    path = ctx.workspace_root / "huge.log"
    with open(path, "wb") as huge:
        # A text head longer than the 8 KiB binary sniff, then NUL bytes: valid UTF-8, one endless line.
        huge.write(b"one\ntwo\n" + b"." * 9_000 + b"\n")
        huge.truncate(3 * 2**30)

    text = await read(ctx, file_path="huge.log", limit=1)

    assert text == (
        "     1\tone\n\n(Showing lines 1-1; Read looks at the first 64 MiB of a file only, and this "
        "one goes on past it. Use Bash (e.g. `tail -c`) to see the rest.)"
    )


async def test_an_offset_past_the_scan_limit_is_a_tool_error(ctx: ToolUseContext) -> None:
    path = ctx.workspace_root / "huge.log"
    with open(path, "wb") as huge:
        huge.write(b"one\n" + b"." * 9_000 + b"\n")
        huge.truncate(3 * 2**30)

    with pytest.raises(ToolError, match=r"^Cannot read huge\.log from line 5: Read looks at the first 64 MiB"):
        await ReadTool().call({"file_path": "huge.log", "offset": 5}, ctx)


def test_reading_one_line_of_a_3_gb_file_keeps_memory_bounded(tmp_path: Path) -> None:
    # Peak memory of a fresh process, not time: the whole file would be 3 GB of it.
    path = tmp_path / "huge.log"
    with open(path, "wb") as huge:
        huge.write(b"one\n" + b"." * 9_000 + b"\n")
        huge.truncate(3 * 2**30)
    script = textwrap.dedent(
        f"""
        import asyncio, resource
        from pathlib import Path
        from engine.tools import ReadTool, ToolUseContext
        ctx = ToolUseContext(workspace_root=Path({str(tmp_path)!r}), session_dir=Path({str(tmp_path)!r}) / "s")
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        result = asyncio.run(ReadTool().call({{"file_path": "huge.log", "limit": 1}}, ctx))
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(result.content.splitlines()[0], (after - before) // 1024)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, check=True)
    first_line, growth_mib = done.stdout.rsplit(" ", 1)
    assert first_line == "     1\tone"
    assert int(growth_mib) < 300


class CountingStream(io.RawIOBase):
    """A readable byte stream that counts what is read from it: ``head``, then ``endless``
    repeated for ever (like a sparse file of several gigabytes, without the disk)."""

    def __init__(self, head: bytes, *, endless: bytes) -> None:
        self._head = head
        self._endless = endless
        self.bytes_read = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        size = len(buffer)
        taken = self._head[:size]
        self._head = self._head[size:]
        data = taken + self._endless * (size - len(taken))
        buffer[:size] = data
        self.bytes_read += size
        return size


def reference_window(data: bytes, *, first_line: int, max_lines: int) -> tuple[list[str], int]:
    """What Read showed before it streamed: the whole file decoded, CRLF folded, split, clipped."""
    lines = data.decode("utf-8").replace("\r\n", "\n").split("\n")
    if lines[-1] == "":
        lines.pop()
    window = lines[first_line - 1 : first_line - 1 + max_lines]
    shown = [line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + " … (line truncated)" for line in window]
    return shown, len(lines)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    text=st.lists(
        st.one_of(
            st.sampled_from(["\n", "\r\n", "\r", "é", "漢", "🙂", "a", "bc", "\r\r\n"]),
            st.integers(MAX_LINE_CHARS - 2, MAX_LINE_CHARS + 2).map(lambda n: "w" * n),
        ),
        max_size=40,
    ).map("".join),
    first_line=st.integers(1, 12),
    max_lines=st.integers(1, 12),
    chunk_bytes=st.integers(1, 9),
)
def test_streaming_shows_exactly_what_reading_the_whole_file_showed(
    text: str, first_line: int, max_lines: int, chunk_bytes: int
) -> None:
    # Tiny chunks split characters, CRLF pairs and long lines across chunk boundaries.
    data = text.encode()

    window = read_line_window(io.BytesIO(data), first_line=first_line, max_lines=max_lines, chunk_bytes=chunk_bytes)

    assert (window.lines, window.lines_seen, window.reached_end) == (
        *reference_window(data, first_line=first_line, max_lines=max_lines),
        True,
    )


@pytest.mark.parametrize("chunk_bytes", [1, 2, 3, 5, 65_536])
def test_an_undecodable_byte_is_reported_at_its_offset_in_the_whole_file(chunk_bytes: int) -> None:
    data = "line one\nhé".encode() + b"\xff" + b"rest\n"
    with pytest.raises(UndecodableTextError) as raised:
        read_line_window(io.BytesIO(data), first_line=1, max_lines=1, chunk_bytes=chunk_bytes)
    assert raised.value.offset == data.index(b"\xff")
