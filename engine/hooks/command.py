"""Running a ``CommandHook`` with Claude Code's protocol: the event as JSON on stdin, in the
workspace, in its own process group with the Bash tool's environment; the answer read from its
exit code (2 blocks) and, optionally, a JSON object on stdout."""

from __future__ import annotations

import asyncio
import json
import tempfile
from dataclasses import dataclass
from typing import IO, Any

from engine.hooks.config import CommandHook, HookContext, HookEvent, HookInput, JsonDict, StopHookInput
from engine.hooks.outcomes import HookAnswer, HookOutcome, HookRun, blocked_without_reason, failed_answer
from engine.process import kill_process_group, start_shell

__all__ = ["run_command_hook"]

# What is kept of a command's stdout and stderr; a hook that floods them is cut, not fatal.
_MAX_OUTPUT_BYTES = 1_000_000


@dataclass(frozen=True)
class _Execution:
    """A finished command: its exit status (None if it timed out), stdout and stderr."""

    code: int | None
    stdout: str
    stderr: str


class _InvalidOutput(Exception):
    """Stdout JSON that parses but does not follow the hook protocol."""


async def run_command_hook(
    hook: CommandHook, event: HookEvent, argument: HookInput | StopHookInput, ctx: HookContext
) -> HookAnswer:
    """Run ``hook`` for ``event`` and read its answer. Never raises: a command that cannot start,
    fails, times out or answers out of protocol is a run with no effect."""
    label = hook.command
    timeout_s = hook.timeout_s if hook.timeout_s is not None else ctx.timeout_s
    payload = json.dumps(_stdin_payload(event, argument, ctx), ensure_ascii=False).encode()
    try:
        execution = await _execute(hook.command, payload, ctx, timeout_s)
    except OSError as exc:
        # No host path in the message: it goes into traces that must read the same on every machine.
        what = f"could not be started in the workspace: {exc.strerror or exc}."
        return failed_answer(event, label, HookOutcome.NON_BLOCKING_ERROR, what)
    if execution.code is None:
        return failed_answer(event, label, HookOutcome.TIMEOUT, f"timed out after {timeout_s:g} s")
    stderr = execution.stderr.strip()
    if execution.code == 2:
        reason = stderr or blocked_without_reason(label)
        return HookAnswer(HookRun(event, label, HookOutcome.BLOCKING, reason), block=True, reason=reason)
    if execution.code != 0:
        how = f"exit code {execution.code}" if execution.code > 0 else f"signal {-execution.code}"
        what = f"failed with {how}" + (f": {stderr}" if stderr else ".")
        return failed_answer(event, label, HookOutcome.NON_BLOCKING_ERROR, what)
    stdout = execution.stdout.strip()
    if not stdout.startswith("{"):
        return HookAnswer(HookRun(event, label, HookOutcome.SUCCESS))  # plain text on success is allowed
    try:
        return _answer_from_json(event, label, json.loads(stdout))
    except json.JSONDecodeError as exc:
        problem = f"its stdout is not valid JSON ({exc})"
    except _InvalidOutput as exc:
        problem = f"its JSON output does not follow the hook protocol ({exc})"
    return failed_answer(event, label, HookOutcome.INVALID_OUTPUT, f"output was ignored: {problem}.")


def _stdin_payload(event: HookEvent, argument: HookInput | StopHookInput, ctx: HookContext) -> JsonDict:
    payload: JsonDict = {
        "hook_event_name": event.value,
        "session_id": ctx.session_id,
        "cwd": str(ctx.cwd),
        "transcript_path": str(ctx.transcript_path) if ctx.transcript_path is not None else None,
    }
    if isinstance(argument, StopHookInput):
        payload["stop_hook_active"] = argument.stop_hook_active
        payload["last_assistant_message"] = argument.last_assistant_text
        return payload
    payload.update(tool_name=argument.tool_name, tool_input=argument.tool_input, tool_use_id=argument.tool_use_id)
    if event is HookEvent.POST_TOOL_USE:
        payload["tool_response"] = argument.tool_response
    return payload


async def _execute(command: str, payload: bytes, ctx: HookContext, timeout_s: float) -> _Execution:
    """Run ``bash -c command`` in the workspace, in its own process group; the group is killed
    when the command ends, times out or the caller is cancelled. Stdin, stdout and stderr are
    temporary files, not pipes: a background process that keeps a pipe open cannot hold the
    hook up."""
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        stdin.write(payload)
        stdin.seek(0)
        process = await start_shell(
            command,
            cwd=ctx.cwd,
            env=ctx.environment.build(workspace=ctx.cwd),
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
        )
        code: int | None = None
        try:
            code = await asyncio.wait_for(process.wait(), timeout_s)
        except TimeoutError:
            pass  # code stays None
        finally:
            kill_process_group(process)
            await process.wait()
        return _Execution(code, _head(stdout), _head(stderr))


def _head(file: IO[bytes]) -> str:
    file.seek(0)
    return file.read(_MAX_OUTPUT_BYTES).decode("utf-8", errors="replace")


def _answer_from_json(event: HookEvent, label: str, data: Any) -> HookAnswer:
    if not isinstance(data, dict):
        raise _InvalidOutput(f"expected a JSON object, got {type(data).__name__}")
    proceed = _field(data, "continue", bool, True)
    stop_reason = _field(data, "stopReason", str, "")
    decision = _field(data, "decision", str, None)
    if decision not in (None, "approve", "block"):
        raise _InvalidOutput(f'"decision" must be "approve" or "block", not {decision!r}')
    reason = _field(data, "reason", str, "")
    block, allow, updated = decision == "block", decision == "approve", None
    specific = _field(data, "hookSpecificOutput", dict, None)
    if specific is not None and event is HookEvent.PRE_TOOL_USE:
        permission = _field(specific, "permissionDecision", str, None)
        if permission not in (None, "allow", "deny", "ask"):
            raise _InvalidOutput(f'"permissionDecision" must be "allow", "deny" or "ask", not {permission!r}')
        updated = _field(specific, "updatedInput", dict, None)
        if permission is not None:
            # "ask" leaves the decision to the session's permission policy.
            block, allow = permission == "deny", permission == "allow"
            reason = _field(specific, "permissionDecisionReason", str, "") or reason
    if block and not reason:
        reason = blocked_without_reason(label)
    outcome = HookOutcome.BLOCKING if block else HookOutcome.SUCCESS
    return HookAnswer(
        HookRun(event, label, outcome, reason or stop_reason),
        block=block,
        reason=reason if block or allow else "",
        allow=allow,
        updated_input=updated,
        prevent_continuation=not proceed,
        stop_reason=stop_reason,
    )


def _field(data: JsonDict, key: str, kind: type, default: Any) -> Any:
    value = data.get(key)
    if value is None:
        return default
    if not isinstance(value, kind):
        raise _InvalidOutput(f'"{key}" must be a JSON {_JSON_NAMES[kind]}, not {json.dumps(value)}')
    return value


_JSON_NAMES: dict[type, str] = {bool: "boolean", str: "string", dict: "object"}
