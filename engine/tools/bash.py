"""The Bash tool: one ``bash -c`` command in the workspace, bounded in time and output."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex

from engine.process import kill_process_group, start_shell
from engine.tools.base import (
    JsonDict,
    PermissionDecision,
    Tool,
    ToolError,
    ToolResult,
    ToolUseContext,
)

__all__ = ["MAX_TIMEOUT_MS", "BashTool", "is_read_only_command"]

MAX_TIMEOUT_MS = 600_000
_READ_ONLY_COMMANDS = frozenset({"ls", "cat", "grep", "pwd", "echo", "head", "tail", "wc"})
# Separators, pipes, redirections, backgrounding and substitutions: with any of these a command
# is no longer "one simple read-only program", so it is not treated as concurrency-safe.
_SHELL_CONTROL = re.compile(r"[;|&<>`\n\r]|\$\(")
_READ_CHUNK = 65_536
# After the command exits, how long a straggler holding the output pipe may keep us waiting.
_DRAIN_GRACE_S = 1.0


def is_read_only_command(command: str) -> bool:
    """True for one simple invocation of a known read-only program (``ls``, ``cat``, ``grep``...)
    with no shell control operators, redirections or substitutions."""
    if _SHELL_CONTROL.search(command):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    return bool(words) and words[0] in _READ_ONLY_COMMANDS


class BashTool(Tool):
    """Runs a shell command with the workspace as its working directory."""

    name = "Bash"
    description = (
        "Runs a bash command (bash -c) with the workspace root as the working directory and "
        "returns its combined stdout and stderr. Each call is a fresh shell: cd and variables do "
        "not persist. timeout is in milliseconds (max 600000). Commands that need credentials "
        "will not find them in the environment. Background processes are stopped when the "
        "command ends."
    )
    input_schema: JsonDict = {
        "type": "object",
        "properties": {
            "command": {"type": "string", "minLength": 1, "description": "The command to run."},
            "timeout": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": MAX_TIMEOUT_MS,
                "description": "Optional timeout in milliseconds (max 600000).",
            },
            "description": {
                "type": "string",
                "description": "A short description of what the command does.",
            },
        },
        "required": ["command"],
        "additionalProperties": False,
    }
    is_read_only = False
    max_result_size_chars = 30_000

    def is_concurrency_safe(self, tool_input: JsonDict) -> bool:
        """Only simple read-only commands may run alongside other tools."""
        command = tool_input.get("command")
        return isinstance(command, str) and is_read_only_command(command)

    async def check_permissions(self, tool_input: JsonDict, ctx: ToolUseContext) -> PermissionDecision:
        """Every command is put to the session's permission policy."""
        return PermissionDecision.ask(f"Bash wants to run: {tool_input['command']}")

    async def call(self, tool_input: JsonDict, ctx: ToolUseContext) -> ToolResult:
        """Run the command; a non-zero exit or a timeout is an error result carrying the output."""
        if ctx.abort.aborted:
            raise ToolError("Interrupted by user")
        timeout_s = _timeout_seconds(tool_input, ctx)
        output = _BoundedOutput(ctx.bash_max_output_chars)
        code = await _run(tool_input["command"], ctx, timeout_s, output)
        if code is None:
            timed_out = f"Command timed out after {timeout_s:g} seconds and was killed."
            return ToolResult(_join(output.text(), timed_out), is_error=True)
        if code != 0:
            status = f"Exit code {code}" if code > 0 else f"Killed by signal {-code}"
            return ToolResult(_join(output.text(), status), is_error=True)
        return ToolResult(output.text())


async def _run(command: str, ctx: ToolUseContext, timeout_s: float, output: _BoundedOutput) -> int | None:
    """Run ``command`` into ``output``; its exit status, or None if it timed out. Whatever the
    outcome (an abort raises ToolError, a cancelled task CancelledError), its process group is
    killed before this returns."""
    # Our own pipe rather than asyncio's: asyncio's `wait()` also waits for its pipes to close,
    # which a background process holding stdout could put off indefinitely.
    read_fd, write_fd = os.pipe()
    stream = asyncio.StreamReader()
    try:
        transport, _ = await asyncio.get_running_loop().connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(stream), os.fdopen(read_fd, "rb", buffering=0)
        )
    except BaseException:
        os.close(write_fd)
        raise
    try:
        process = await _spawn(command, ctx, write_fd)
    except BaseException:
        transport.close()
        raise
    finally:
        # The command holds its own copies; ours would keep the pipe from ever reaching EOF.
        os.close(write_fd)
    reader = asyncio.create_task(output.drain(stream))
    exited = asyncio.create_task(process.wait())
    aborted = asyncio.create_task(ctx.abort.wait())
    try:
        done, _ = await asyncio.wait({exited, aborted}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        aborted.cancel()
        kill_process_group(process)
        await _settle(exited, reader)
        transport.close()
    if exited in done:
        return exited.result()
    if aborted in done:
        raise ToolError("Interrupted by user")
    return None


async def _spawn(command: str, ctx: ToolUseContext, output_fd: int) -> asyncio.subprocess.Process:
    """Start ``bash -c command`` in the workspace, in the session's tool environment (no
    credentials), writing to ``output_fd``; in its own process group, so a timeout or an abort
    can stop everything it started."""
    try:
        return await start_shell(
            command,
            cwd=ctx.workspace_root,
            env=ctx.environment.build(workspace=ctx.workspace_root),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=output_fd,
            stderr=output_fd,
        )
    except OSError as exc:
        raise ToolError(f"Cannot start bash in the workspace: {exc.strerror or exc}.") from exc


def _timeout_seconds(tool_input: JsonDict, ctx: ToolUseContext) -> float:
    """The input's timeout (ms) if given, capped at ``MAX_TIMEOUT_MS``; else the session's."""
    requested = tool_input.get("timeout")
    if requested is None:
        return ctx.bash_timeout_s
    return min(float(requested), MAX_TIMEOUT_MS) / 1000


async def _settle(exited: asyncio.Task[int], reader: asyncio.Task[None]) -> None:
    """Reap the killed shell and finish reading its output. A process that left the group may
    still hold the pipe open, so reading gets a short grace period and is then abandoned."""
    await exited
    try:
        await asyncio.wait_for(asyncio.shield(reader), _DRAIN_GRACE_S)
    except TimeoutError:
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader


def _join(output: str, status: str) -> str:
    """Output followed by a status line."""
    return f"{output}\n{status}" if output else status


class _BoundedOutput:
    """Collects a stream's bytes up to a bound, remembering whether anything was dropped."""

    def __init__(self, max_chars: int) -> None:
        self._max_chars = max_chars
        # UTF-8 needs at most four bytes a character, so this many bytes always cover max_chars.
        self._max_bytes = max_chars * 4
        self._chunks: list[bytes] = []
        self._kept = 0
        self._dropped = False

    async def drain(self, stream: asyncio.StreamReader) -> None:
        """Read ``stream`` to its end, keeping at most the bound; the rest is counted as dropped."""
        while chunk := await stream.read(_READ_CHUNK):
            room = self._max_bytes - self._kept
            if len(chunk) > room:
                self._dropped = True
                chunk = chunk[:room]
            if chunk:
                self._chunks.append(chunk)
                self._kept += len(chunk)

    def text(self) -> str:
        """The output as text (undecodable bytes shown as U+FFFD), truncated with a note."""
        text = b"".join(self._chunks).decode("utf-8", errors="replace").rstrip("\n")
        if self._dropped or len(text) > self._max_chars:
            text = (
                text[: self._max_chars] + f"\n\n[Output truncated: the command printed more than {self._max_chars:,} "
                "characters; only the first ones are shown.]"
            )
        return text
