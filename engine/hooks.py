"""Hooks (DESIGN §3.7): code the session runs around each tool call and when the model stops.

A hook is a Python callable or a ``CommandHook``, a shell command that follows Claude Code's
protocol: the event as JSON on stdin, the answer in its exit code and, optionally, a JSON
object on stdout. A pre-tool hook can deny the call, allow it, rewrite its input, or stop the
loop after this round of tools (``hook_stopped``); a post-tool hook can give the model feedback
or stop the loop; a stop hook can block the stop (``stop_hook_blocking``) or end the loop
(``stop_hook_prevented``).

A hook's failure never reaches the caller as an exception: every run becomes a ``HookRun``
record for the trace, and a hook that failed counts as having no opinion. The timeout bounds
commands and awaitables; a synchronous Python hook runs on the event loop's thread and cannot
be interrupted.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import re
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import IO, Any

from engine.process import ToolEnvironment, kill_process_group, start_shell

__all__ = [
    "DEFAULT_HOOK_TIMEOUT_S",
    "CombinedHookResult",
    "CommandHook",
    "HookContext",
    "HookDecision",
    "HookEvent",
    "HookInput",
    "HookOutcome",
    "HookResult",
    "HookRun",
    "Hooks",
    "StopHook",
    "StopHookInput",
    "StopHookOutcome",
    "StopHookResult",
    "ToolHook",
    "post_tool_feedback_text",
    "run_stop_hooks",
    "run_tool_hooks",
    "stop_hook_feedback_text",
]

JsonDict = dict[str, Any]

DEFAULT_HOOK_TIMEOUT_S = 60.0
# What is kept of a command's stdout and stderr; a hook that floods them is cut, not fatal.
_MAX_OUTPUT_BYTES = 1_000_000


class HookEvent(StrEnum):
    PRE_TOOL_USE = "PreToolUse"
    POST_TOOL_USE = "PostToolUse"
    STOP = "Stop"


class HookDecision(StrEnum):
    ALLOW = "allow"
    DENY = "deny"


class HookOutcome(StrEnum):
    """How one hook run ended. Only ``BLOCKING`` changes what the loop does (and a successful
    ``continue: false``); the errors are reported and otherwise ignored."""

    SUCCESS = "success"
    BLOCKING = "blocking"
    NON_BLOCKING_ERROR = "non_blocking_error"
    TIMEOUT = "timeout"
    INVALID_OUTPUT = "invalid_output"


@dataclass(frozen=True)
class CommandHook:
    """A hook run as ``bash -c command`` in the workspace, without credentials in its
    environment, with the event as JSON on stdin; background processes it starts are stopped
    when it ends. ``timeout_s`` defaults to the session's ``hook_timeout_s``. ``matcher`` (tool
    hooks only; ignored for stop hooks) is a regular expression the whole tool name must match;
    ``None``, ``""`` or ``"*"`` match every tool."""

    command: str
    timeout_s: float | None = None
    matcher: str | None = None

    def __post_init__(self) -> None:
        if not self.command.strip():
            raise ValueError("A CommandHook needs a command to run; it was given an empty one.")
        if self.timeout_s is not None and self.timeout_s <= 0:
            raise ValueError(f"CommandHook `{self.command}`: timeout_s must be positive, not {self.timeout_s}.")
        if self.matcher not in (None, "", "*"):
            try:
                re.compile(self.matcher)
            except re.error as exc:
                raise ValueError(
                    f"CommandHook `{self.command}`: matcher {self.matcher!r} is not a valid regular expression ({exc})."
                ) from exc

    def matches(self, tool_name: str) -> bool:
        """Whether this hook runs for ``tool_name``."""
        if self.matcher in (None, "", "*"):
            return True
        return re.fullmatch(self.matcher, tool_name) is not None


@dataclass(frozen=True, kw_only=True)
class HookInput:
    """What a tool hook sees: the event, the tool, its observable (backfilled) input, and after
    the call, the result text and whether it was an error."""

    event: HookEvent
    tool_name: str
    tool_use_id: str
    tool_input: JsonDict
    tool_response: str | None = None
    is_error: bool = False


@dataclass(frozen=True, kw_only=True)
class HookResult:
    """A Python tool hook's answer. ``None`` fields mean "no opinion". On ``PostToolUse`` a
    ``DENY`` cannot undo the call: its reason becomes feedback."""

    decision: HookDecision | None = None
    reason: str = ""
    updated_input: JsonDict | None = None
    prevent_continuation: bool = False
    stop_reason: str = ""


@dataclass(frozen=True, kw_only=True)
class StopHookInput:
    """What a stop hook sees: whether the loop already continued because of a stop hook, and
    the text of the model's last answer."""

    stop_hook_active: bool
    last_assistant_text: str


@dataclass(frozen=True, kw_only=True)
class StopHookResult:
    """A Python stop hook's answer: ``block`` sends ``reason`` back to the model and the loop
    goes on; ``prevent_continuation`` ends the loop."""

    block: bool = False
    reason: str = ""
    prevent_continuation: bool = False
    stop_reason: str = ""


ToolHook = Callable[[HookInput], "HookResult | Awaitable[HookResult | None] | None"] | CommandHook
StopHook = Callable[[StopHookInput], "StopHookResult | Awaitable[StopHookResult | None] | None"] | CommandHook


@dataclass(frozen=True)
class Hooks:
    """The session's hooks, by event; each list runs in order."""

    pre_tool_use: Sequence[ToolHook] = field(default_factory=tuple)
    post_tool_use: Sequence[ToolHook] = field(default_factory=tuple)
    stop: Sequence[StopHook] = field(default_factory=tuple)


@dataclass(frozen=True)
class HookContext:
    """What a command hook is told about the session, how long any hook may take, and the
    environment its command gets (the same as the Bash tool's)."""

    cwd: Path
    session_id: str
    transcript_path: Path | None = None
    timeout_s: float = DEFAULT_HOOK_TIMEOUT_S
    environment: ToolEnvironment = field(default_factory=ToolEnvironment)

    def __post_init__(self) -> None:
        if self.timeout_s <= 0:
            raise ValueError(f"HookContext.timeout_s must be positive, not {self.timeout_s}.")


@dataclass(frozen=True)
class HookRun:
    """One hook run, for the trace: which hook (its command or the callable's qualified name),
    for which event, how it ended, and what it said."""

    event: HookEvent
    label: str
    outcome: HookOutcome
    message: str = ""

    def trace_data(self) -> JsonDict:
        """The run as the data of a ``TraceKind.HOOK`` event."""
        return {"event": self.event.value, "hook": self.label, "outcome": self.outcome.value, "message": self.message}


@dataclass(frozen=True)
class CombinedHookResult:
    """All hooks of one tool event folded together: a deny wins (its reasons joined), an allow
    counts only if nothing denied, the last rewrite wins, any stop stops. ``feedback`` holds
    what blocking post-tool hooks said to the model."""

    denied: bool = False
    reason: str = ""
    updated_input: JsonDict | None = None
    prevent_continuation: bool = False
    stop_reason: str = ""
    allowed: bool = False
    feedback: tuple[str, ...] = ()
    runs: tuple[HookRun, ...] = ()


@dataclass(frozen=True)
class StopHookOutcome:
    """All stop hooks folded together. ``prevent_continuation`` wins over blocking reasons."""

    blocking_reasons: tuple[str, ...] = ()
    prevent_continuation: bool = False
    stop_reason: str = ""
    runs: tuple[HookRun, ...] = ()


@dataclass(frozen=True)
class _Answer:
    """One hook run reduced to its effect. ``block`` means deny (PreToolUse), feedback
    (PostToolUse) or block the stop (Stop)."""

    run: HookRun
    block: bool = False
    reason: str = ""
    allow: bool = False
    updated_input: JsonDict | None = None
    prevent_continuation: bool = False
    stop_reason: str = ""


async def run_tool_hooks(
    hooks: Sequence[ToolHook], hook_input: HookInput, *, ctx: HookContext | None = None
) -> CombinedHookResult:
    """Run ``hooks`` in order on ``hook_input`` (each sees the input as rewritten by the ones
    before it) and fold their answers. Command hooks need ``ctx``; without it they are
    reported as not run, and Python hooks get the default timeout."""
    current = hook_input
    answers: list[_Answer] = []
    for hook in hooks:
        if isinstance(hook, CommandHook) and not hook.matches(hook_input.tool_name):
            continue
        answer = await _run_hook(hook, hook_input.event, current, ctx)
        answers.append(answer)
        if answer.updated_input is not None and not answer.block:
            current = dataclasses.replace(current, tool_input=answer.updated_input)
    return _fold_tool_answers(hook_input.event, answers)


async def run_stop_hooks(
    hooks: Sequence[StopHook], stop_input: StopHookInput, *, ctx: HookContext | None = None
) -> StopHookOutcome:
    """Run the stop hooks in order and fold their answers (``ctx`` as for ``run_tool_hooks``)."""
    answers = [await _run_hook(hook, HookEvent.STOP, stop_input, ctx) for hook in hooks]
    return StopHookOutcome(
        blocking_reasons=tuple(a.reason for a in answers if a.block),
        prevent_continuation=any(a.prevent_continuation for a in answers),
        stop_reason=next((a.stop_reason for a in reversed(answers) if a.stop_reason), ""),
        runs=tuple(a.run for a in answers),
    )


def stop_hook_feedback_text(reasons: Sequence[str]) -> str:
    """The meta user message that carries blocking stop hooks' reasons back to the model."""
    return "Stop hook feedback:\n" + "\n\n".join(reasons)


def post_tool_feedback_text(feedback: Sequence[str]) -> str:
    """The text that carries blocking post-tool hooks' feedback to the model with the result."""
    return "PostToolUse hook feedback:\n" + "\n\n".join(feedback)


def _fold_tool_answers(event: HookEvent, answers: Sequence[_Answer]) -> CombinedHookResult:
    blocks = [a.reason for a in answers if a.block]
    denied = event is HookEvent.PRE_TOOL_USE and bool(blocks)
    rewrites = [a.updated_input for a in answers if a.updated_input is not None and not a.block]
    return CombinedHookResult(
        denied=denied,
        reason="\n\n".join(blocks) if denied else "",
        updated_input=rewrites[-1] if rewrites else None,
        prevent_continuation=any(a.prevent_continuation for a in answers),
        stop_reason=next((a.stop_reason for a in reversed(answers) if a.stop_reason), ""),
        allowed=not denied and any(a.allow for a in answers),
        feedback=tuple(blocks) if event is HookEvent.POST_TOOL_USE else (),
        runs=tuple(a.run for a in answers),
    )


async def _run_hook(
    hook: ToolHook | StopHook, event: HookEvent, argument: HookInput | StopHookInput, ctx: HookContext | None
) -> _Answer:
    if isinstance(hook, CommandHook):
        if ctx is None:
            why = "was not run: command hooks need a HookContext (workspace and session), and none was given."
            return _failed(event, hook.command, HookOutcome.NON_BLOCKING_ERROR, why)
        return await _run_command_hook(hook, event, argument, ctx)
    return await _run_python_hook(hook, event, argument, ctx.timeout_s if ctx else DEFAULT_HOOK_TIMEOUT_S)


def _failed(event: HookEvent, label: str, outcome: HookOutcome, what: str) -> _Answer:
    """A run with no effect; its message is the sentence "Hook `label` <what>"."""
    return _Answer(HookRun(event, label, outcome, f"Hook `{label}` {what}"))


def _blocked_without_reason(label: str) -> str:
    return f"Hook `{label}` blocked without giving a reason."


# --- Python callables -------------------------------------------------------------------------


async def _run_python_hook(
    hook: Callable[[Any], Any], event: HookEvent, argument: HookInput | StopHookInput, timeout_s: float
) -> _Answer:
    label = getattr(hook, "__qualname__", None) or type(hook).__qualname__
    # Only an awaitable can be bounded: a synchronous callable runs on the loop's thread.
    scope = asyncio.timeout(timeout_s)
    try:
        async with scope:
            answer = hook(argument)
            if inspect.isawaitable(answer):
                answer = await answer
    except TimeoutError as exc:
        if scope.expired():
            return _failed(event, label, HookOutcome.TIMEOUT, f"timed out after {timeout_s:g} s")
        return _failed(event, label, HookOutcome.NON_BLOCKING_ERROR, f"raised TimeoutError: {exc}")
    except Exception as exc:
        return _failed(event, label, HookOutcome.NON_BLOCKING_ERROR, f"raised {type(exc).__name__}: {exc}")
    return _answer_from_python(event, label, answer)


def _answer_from_python(event: HookEvent, label: str, answer: object) -> _Answer:
    if answer is None:
        return _Answer(HookRun(event, label, HookOutcome.SUCCESS))
    if event is HookEvent.STOP and isinstance(answer, StopHookResult):
        block, allow, updated = answer.block, False, None
    elif event is not HookEvent.STOP and isinstance(answer, HookResult):
        block, allow = answer.decision == HookDecision.DENY, answer.decision == HookDecision.ALLOW
        updated = answer.updated_input
    else:
        expected = "a StopHookResult" if event is HookEvent.STOP else "a HookResult"
        what = f"returned {type(answer).__name__}; a {event.value} hook returns {expected} or None."
        return _failed(event, label, HookOutcome.INVALID_OUTPUT, what)
    reason = (answer.reason or _blocked_without_reason(label)) if block else answer.reason
    outcome = HookOutcome.BLOCKING if block else HookOutcome.SUCCESS
    return _Answer(
        HookRun(event, label, outcome, reason or answer.stop_reason),
        block=block,
        reason=reason,
        allow=allow,
        updated_input=updated,
        prevent_continuation=answer.prevent_continuation,
        stop_reason=answer.stop_reason,
    )


# --- Shell commands ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Execution:
    """A finished command: its exit status (None if it timed out), stdout and stderr."""

    code: int | None
    stdout: str
    stderr: str


class _InvalidOutput(Exception):
    """Stdout JSON that parses but does not follow the hook protocol."""


async def _run_command_hook(
    hook: CommandHook, event: HookEvent, argument: HookInput | StopHookInput, ctx: HookContext
) -> _Answer:
    label = hook.command
    timeout_s = hook.timeout_s if hook.timeout_s is not None else ctx.timeout_s
    payload = json.dumps(_stdin_payload(event, argument, ctx), ensure_ascii=False).encode()
    try:
        execution = await _execute(hook.command, payload, ctx, timeout_s)
    except OSError as exc:
        # No host path in the message: it goes into traces that must read the same on every machine.
        what = f"could not be started in the workspace: {exc.strerror or exc}."
        return _failed(event, label, HookOutcome.NON_BLOCKING_ERROR, what)
    if execution.code is None:
        return _failed(event, label, HookOutcome.TIMEOUT, f"timed out after {timeout_s:g} s")
    stderr = execution.stderr.strip()
    if execution.code == 2:
        reason = stderr or _blocked_without_reason(label)
        return _Answer(HookRun(event, label, HookOutcome.BLOCKING, reason), block=True, reason=reason)
    if execution.code != 0:
        how = f"exit code {execution.code}" if execution.code > 0 else f"signal {-execution.code}"
        what = f"failed with {how}" + (f": {stderr}" if stderr else ".")
        return _failed(event, label, HookOutcome.NON_BLOCKING_ERROR, what)
    stdout = execution.stdout.strip()
    if not stdout.startswith("{"):
        return _Answer(HookRun(event, label, HookOutcome.SUCCESS))  # plain text on success is allowed
    try:
        return _answer_from_json(event, label, json.loads(stdout))
    except json.JSONDecodeError as exc:
        problem = f"its stdout is not valid JSON ({exc})"
    except _InvalidOutput as exc:
        problem = f"its JSON output does not follow the hook protocol ({exc})"
    return _failed(event, label, HookOutcome.INVALID_OUTPUT, f"output was ignored: {problem}.")


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


def _answer_from_json(event: HookEvent, label: str, data: Any) -> _Answer:
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
        reason = _blocked_without_reason(label)
    outcome = HookOutcome.BLOCKING if block else HookOutcome.SUCCESS
    return _Answer(
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
