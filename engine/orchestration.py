"""Running the tools a model asked for (DESIGN §3.4).

Consecutive concurrency-safe calls run together (up to a limit); an unsafe call runs alone.
The ``StreamingToolExecutor`` starts each call as soon as its tool_use block is complete, while
the model is still streaming, and hands results back in tool_use order whatever order they
finish in. ``run_tools`` is the same executor fed all calls at once.

Concurrent calls finish in whatever order their threads and subprocesses allow, so nothing the
executor hands out may depend on that order: a result is stamped (uuid, timestamp) when it is
handed out, and whether a call counts as interrupted or cancelled is decided there too, in
tool_use order (see ``StreamingToolExecutor.results``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import jsonschema

from engine.abort import AbortController, AbortedError
from engine.deps import QueryDeps
from engine.events import ToolOutcome
from engine.hooks import (
    HookContext,
    HookEvent,
    HookInput,
    HookRun,
    Hooks,
    post_tool_feedback_text,
    run_tool_hooks,
)
from engine.messages import AssistantMessage, UserMessage, tool_result_block
from engine.tools.base import (
    PermissionBehavior,
    PermissionDecision,
    Tool,
    ToolError,
    ToolUseContext,
)
from engine.tools.input_limits import brief_message, input_limit_problem
from engine.tools.result_storage import apply_result_size_limit, empty_result_text

__all__ = [
    "INTERRUPTED_TOOL_RESULT",
    "PermissionDenial",
    "StreamingToolExecutor",
    "ToolBatch",
    "ToolRun",
    "ToolRunContext",
    "group_batches",
    "partition_tool_calls",
    "run_tools",
]

JsonDict = dict[str, Any]
PermissionCallback = Callable[[Tool, JsonDict, PermissionDecision], Awaitable[PermissionDecision]]

INTERRUPTED_TOOL_RESULT = "Interrupted by user"


@dataclass(frozen=True)
class PermissionDenial:
    """A tool call the session refused, kept on the session for its result."""

    tool_name: str
    tool_use_id: str
    tool_input: JsonDict
    reason: str


@dataclass(kw_only=True)
class ToolRunContext:
    """What running a tool call needs from the session."""

    tools: Mapping[str, Tool]
    tool_ctx: ToolUseContext
    deps: QueryDeps
    can_use_tool: PermissionCallback
    hooks: Hooks = field(default_factory=Hooks)
    hook_context: HookContext | None = None
    denials: list[PermissionDenial] = field(default_factory=list)
    max_concurrency: int = 10

    @property
    def abort(self) -> AbortController:
        return self.tool_ctx.abort


@dataclass(frozen=True, kw_only=True)
class ToolRun:
    """The outcome of one tool call: the user message carrying its tool_result, and facts for
    the trace."""

    tool_use_id: str
    tool_name: str
    outcome: ToolOutcome
    message: UserMessage
    prevent_continuation: bool = False
    stop_reason: str = ""
    hook_runs: tuple[HookRun, ...] = ()


@dataclass(frozen=True)
class ToolBatch:
    """Tool calls that run together (``concurrent``) or one unsafe call alone."""

    concurrent: bool
    blocks: tuple[JsonDict, ...]


def partition_tool_calls(blocks: Sequence[JsonDict], tools: Mapping[str, Tool]) -> list[ToolBatch]:
    """Consecutive concurrency-safe calls form one batch; each unsafe call is a batch alone."""
    return group_batches([(block, _check_call(block, tools).concurrency_safe) for block in blocks])


def group_batches(calls: Sequence[tuple[JsonDict, bool]]) -> list[ToolBatch]:
    """Batches from calls already marked concurrency-safe or not."""
    batches: list[ToolBatch] = []
    for block, safe in calls:
        if safe and batches and batches[-1].concurrent:
            batches[-1] = ToolBatch(True, (*batches[-1].blocks, block))
        else:
            batches.append(ToolBatch(safe, (block,)))
    return batches


@dataclass(frozen=True)
class _CallCheck:
    """What is known about a call before it runs (computed once per call)."""

    tool: Tool | None
    problem: str | None
    concurrency_safe: bool


def _check_call(block: JsonDict, tools: Mapping[str, Tool]) -> _CallCheck:
    tool = tools.get(block["name"])
    if tool is None:
        return _CallCheck(None, None, False)
    problem = _validation_error(tool, block["input"])
    if problem is not None:
        return _CallCheck(tool, problem, False)
    try:
        safe = bool(tool.is_concurrency_safe(block["input"]))
    except Exception:
        safe = False
    return _CallCheck(tool, None, safe)


_VALIDATORS: dict[int, Any] = {}


def _validation_error(tool: Tool, tool_input: Any) -> str | None:
    if (too_big := input_limit_problem(tool, tool_input)) is not None:
        return too_big  # before the schema: its messages quote values, however long
    validator = _VALIDATORS.get(id(tool))
    if validator is None or validator.schema is not tool.input_schema:
        validator = jsonschema.Draft202012Validator(tool.input_schema)
        _VALIDATORS[id(tool)] = validator
    error = jsonschema.exceptions.best_match(validator.iter_errors(tool_input))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return brief_message(f"{error.message}" + (f" (at {where})" if where else ""))


class _Status(StrEnum):
    QUEUED = "queued"
    EXECUTING = "executing"
    COMPLETED = "completed"


@dataclass(eq=False)
class _Entry:
    block: JsonDict
    assistant: AssistantMessage
    check: _CallCheck
    done: asyncio.Future[ToolRun]
    # Consecutive concurrency-safe calls share a batch number, fixed when the call is added (never
    # by what happens to be running at the time, which depends on timing).
    batch: int
    status: _Status = _Status.QUEUED
    task: asyncio.Task[None] | None = None
    # Cancels this call alone: a failing Bash cancels the siblings after it through these.
    cancel: AbortController = field(default_factory=AbortController)


def _fails_its_batch(entry: _Entry, run: ToolRun) -> bool:
    """A concurrent Bash call that errored cancels the siblings after it (DESIGN §3.4)."""
    return run.outcome is ToolOutcome.ERROR and entry.block["name"] == "Bash" and entry.check.concurrency_safe


def _sibling_failure_text(entry: _Entry) -> str:
    return f"Cancelled: parallel tool call Bash({entry.block['id']}) errored"


class StreamingToolExecutor:
    """Runs tool calls as they arrive, concurrency rules permitting; results come back in the
    order the calls were added."""

    def __init__(self, rctx: ToolRunContext) -> None:
        self._rctx = rctx
        self._entries: list[_Entry] = []
        self._discarded: tuple[str, ToolOutcome] | None = None

    def add_tool(self, block: JsonDict, assistant: AssistantMessage) -> None:
        """Queue a complete tool_use block and start it if nothing unsafe is in the way."""
        loop = asyncio.get_running_loop()
        check = _check_call(block, self._rctx.tools)
        previous = self._entries[-1] if self._entries else None
        joins = previous is not None and previous.check.concurrency_safe and check.concurrency_safe
        batch = previous.batch if joins and previous is not None else len(self._entries)
        entry = _Entry(block, assistant, check, loop.create_future(), batch)
        self._entries.append(entry)
        if self._stopped() is not None:
            return  # never started; ``results`` answers it
        self._process_queue()

    def batches(self) -> list[ToolBatch]:
        """The calls grouped as they run: consecutive concurrency-safe calls together."""
        return group_batches([(entry.block, entry.check.concurrency_safe) for entry in self._entries])

    async def results(self) -> AsyncIterator[ToolRun]:
        """Every call's result, in the order the calls were added, once each is done.

        What a call's result is gets decided here, as it is handed out, never by which concurrent
        call finished first (that depends on threads and subprocesses, and a replay must write
        the same transcript every time):

        - once the executor is stopped (the user's abort, or ``discard``), every call not handed
          out yet is answered with the synthetic result ("Interrupted by user", or the discard's
          reason), even one whose tool had already finished in the background. The user has seen
          the results handed out before the interrupt and nothing after it, as in Claude Code
          where an interrupt answers every open tool_use. The consumer can only abort between
          two items it is handed, so the outcome is a function of the yielded sequence alone.
        - a concurrent Bash call that errored cancels the siblings after it in tool_use order
          (they say so, whether or not they had finished); the siblings before it are never
          cancelled and run to their end, as their results are handed out before the error's.
        """
        deps = self._rctx.deps
        failed_batches: dict[int, str] = {}
        for entry in self._entries:
            stop = self._stopped()
            if stop is None and entry.batch not in failed_batches:
                run = await entry.done
                stop = self._stopped()  # an abort from elsewhere (a signal) may land meanwhile
            if stop is not None:
                self._cancel_running()
                run = self._synthetic(entry, *stop)
            elif entry.batch in failed_batches:
                run = self._synthetic(entry, failed_batches[entry.batch], ToolOutcome.CANCELLED)
            elif _fails_its_batch(entry, run):
                failed_batches[entry.batch] = _sibling_failure_text(entry)
            if not run.message.uuid:
                run.message.uuid, run.message.timestamp = deps.uuid(), deps.now()
            yield run

    def discard(self, reason: str, *, outcome: ToolOutcome = ToolOutcome.CANCELLED) -> None:
        """Stop: queued calls never start, running ones are cancelled, and every call not handed
        out yet is answered with a synthetic error (``reason``), whatever its tool did meanwhile."""
        self._discarded = (reason, outcome)
        self._cancel_running()

    async def wait_closed(self) -> None:
        """Wait until every started call's task has finished (or been cancelled)."""
        tasks = [e.task for e in self._entries if e.task is not None]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    @property
    def running(self) -> bool:
        return any(e.status is _Status.EXECUTING for e in self._entries)

    def _stopped(self) -> tuple[str, ToolOutcome] | None:
        """Why the calls not handed out yet will not get their real results, if they will not."""
        if self._discarded is not None:
            return self._discarded
        if self._rctx.abort.aborted:
            return (INTERRUPTED_TOOL_RESULT, ToolOutcome.INTERRUPTED)
        return None

    def _cancel_running(self) -> None:
        # Their results will not be handed out: stop them whole (hooks too), not just the tool.
        for entry in self._entries:
            if entry.status is _Status.EXECUTING and entry.task is not None:
                entry.task.cancel()

    def _can_start(self, entry: _Entry) -> bool:
        executing = [e for e in self._entries if e.status is _Status.EXECUTING]
        if not executing:
            return True
        if len(executing) >= self._rctx.max_concurrency:
            return False
        return entry.check.concurrency_safe and all(e.check.concurrency_safe for e in executing)

    def _process_queue(self) -> None:
        if self._stopped() is not None:
            return  # nothing new starts after an abort or a discard
        for entry in self._entries:
            if entry.status is not _Status.QUEUED:
                continue
            if not self._can_start(entry):
                break  # later calls wait: no call overtakes one queued before it
            self._start(entry)

    def _start(self, entry: _Entry) -> None:
        entry.status = _Status.EXECUTING

        async def run() -> None:
            try:
                result = await run_tool_use(
                    entry.block, entry.assistant, self._rctx, siblings=entry.cancel, check=entry.check
                )
            except asyncio.CancelledError:
                # Stopped (its result will not be handed out) or the loop is shutting down: settle
                # it without starting anything else.
                entry.status = _Status.COMPLETED
                if not entry.done.done():
                    entry.done.set_result(self._synthetic(entry, "Cancelled", ToolOutcome.CANCELLED))
                raise
            if _fails_its_batch(entry, result):
                self._cancel_later_siblings(entry)
            self._finish(entry, result)

        entry.task = asyncio.get_running_loop().create_task(run())

    def _cancel_later_siblings(self, failed: _Entry) -> None:
        later = self._entries[self._entries.index(failed) + 1 :]
        for entry in later:
            if entry.batch == failed.batch:
                entry.cancel.abort(_sibling_failure_text(failed))

    def _finish(self, entry: _Entry, result: ToolRun) -> None:
        entry.status = _Status.COMPLETED
        if not entry.done.done():
            entry.done.set_result(result)
        self._process_queue()

    def _synthetic(self, entry: _Entry, text: str, outcome: ToolOutcome) -> ToolRun:
        return synthetic_tool_run(entry.block, entry.assistant, text, outcome)


async def run_tools(calls: Sequence[tuple[JsonDict, AssistantMessage]], rctx: ToolRunContext) -> AsyncIterator[ToolRun]:
    """Run ``calls`` with the batching rules and yield their results in order."""
    executor = StreamingToolExecutor(rctx)
    for block, assistant in calls:
        executor.add_tool(block, assistant)
    async for run in executor.results():
        yield run


def synthetic_tool_run(block: JsonDict, assistant: AssistantMessage, text: str, outcome: ToolOutcome) -> ToolRun:
    """An error result for a call that did not (or could not) run to the end."""
    return ToolRun(
        tool_use_id=block["id"],
        tool_name=block["name"],
        outcome=outcome,
        message=_result_message(block, assistant, text, is_error=True),
    )


def _result_message(
    block: JsonDict,
    assistant: AssistantMessage,
    content: str | list[JsonDict],
    *,
    is_error: bool,
    observed: Any = None,
) -> UserMessage:
    # Unstamped: the uuid and timestamp are drawn when results are handed out, in tool_use order,
    # so a seeded run does not depend on which concurrent tool finished first.
    return UserMessage(
        uuid="",
        timestamp="",
        message={"role": "user", "content": [tool_result_block(block["id"], content, is_error=is_error)]},
        tool_use_result=observed if observed is not None else content,
        source_tool_assistant_uuid=assistant.uuid,
    )


async def run_tool_use(
    block: JsonDict,
    assistant: AssistantMessage,
    rctx: ToolRunContext,
    *,
    siblings: AbortController,
    check: _CallCheck | None = None,
) -> ToolRun:
    """One tool call through the whole pipeline: lookup, validation, hooks, permissions, the
    call itself (abortable), size limits. Never raises: every failure is an error result."""

    def fail(text: str, outcome: ToolOutcome, **extra: Any) -> ToolRun:
        return ToolRun(
            tool_use_id=block["id"],
            tool_name=block["name"],
            outcome=outcome,
            message=_result_message(block, assistant, text, is_error=True),
            **extra,
        )

    check = check or _check_call(block, rctx.tools)
    tool = check.tool
    if tool is None:
        return fail(f"No such tool available: {block['name']}", ToolOutcome.UNKNOWN_TOOL)
    if check.problem is not None:
        return fail(f"InputValidationError: {check.problem}", ToolOutcome.INVALID_INPUT)
    if rctx.abort.aborted:
        return fail(INTERRUPTED_TOOL_RESULT, ToolOutcome.INTERRUPTED)

    observed = _observable(tool, block["input"], rctx.tool_ctx)
    pre = await run_tool_hooks(
        rctx.hooks.pre_tool_use,
        HookInput(event=HookEvent.PRE_TOOL_USE, tool_name=tool.name, tool_use_id=block["id"], tool_input=observed),
        ctx=rctx.hook_context,
    )
    stop = {"prevent_continuation": pre.prevent_continuation, "stop_reason": pre.stop_reason, "hook_runs": pre.runs}
    if pre.denied:
        return fail(f"Hook denied this tool call: {pre.reason}", ToolOutcome.HOOK_DENIED, **stop)
    # A hook may rewrite what the tool runs with; the recorded tool_use block never changes.
    run_input = pre.updated_input if pre.updated_input is not None else block["input"]
    if pre.updated_input is not None:
        problem = _validation_error(tool, run_input)
        if problem is not None:
            return fail(f"InputValidationError (input rewritten by hook): {problem}", ToolOutcome.INVALID_INPUT, **stop)
        observed = _observable(tool, run_input, rctx.tool_ctx)

    # A hook's explicit allow stands in for the permission prompt (Claude Code's behaviour).
    decision = PermissionDecision.allow() if pre.allowed else await _decide_permission(tool, observed, rctx)
    if decision.behavior is not PermissionBehavior.ALLOW:
        reason = decision.reason or f"Permission to use {tool.name} was denied."
        rctx.denials.append(PermissionDenial(tool.name, block["id"], observed, reason))
        return fail(reason, ToolOutcome.PERMISSION_DENIED, **stop)

    try:
        result = await rctx.abort.run(siblings.run(tool.call(run_input, rctx.tool_ctx)))
        content, is_error = result.content, result.is_error
        outcome = ToolOutcome.ERROR if is_error else ToolOutcome.SUCCESS
    except AbortedError:
        if rctx.abort.aborted:
            return fail(INTERRUPTED_TOOL_RESULT, ToolOutcome.INTERRUPTED, **stop)
        return fail(siblings.reason or "Cancelled", ToolOutcome.CANCELLED, **stop)
    except ToolError as exc:
        content, is_error, outcome = str(exc), True, ToolOutcome.ERROR
    except Exception as exc:
        content, is_error, outcome = f"Error: {type(exc).__name__}: {exc}", True, ToolOutcome.ERROR

    content = _shape_content(tool, block["id"], content, rctx.tool_ctx)
    post = await run_tool_hooks(
        rctx.hooks.post_tool_use,
        HookInput(
            event=HookEvent.POST_TOOL_USE,
            tool_name=tool.name,
            tool_use_id=block["id"],
            tool_input=observed,
            tool_response=content if isinstance(content, str) else None,
            is_error=is_error,
        ),
        ctx=rctx.hook_context,
    )
    if post.feedback and isinstance(content, str):
        content = f"{content}\n\n{post_tool_feedback_text(post.feedback)}"
    return ToolRun(
        tool_use_id=block["id"],
        tool_name=tool.name,
        outcome=outcome,
        message=_result_message(block, assistant, content, is_error=is_error, observed=content),
        prevent_continuation=pre.prevent_continuation or post.prevent_continuation,
        stop_reason=post.stop_reason or pre.stop_reason,
        hook_runs=pre.runs + post.runs,
    )


def _observable(tool: Tool, tool_input: JsonDict, ctx: ToolUseContext) -> JsonDict:
    try:
        return tool.observable_input(tool_input, ctx)
    except Exception:
        return dict(tool_input)


async def _decide_permission(tool: Tool, observed: JsonDict, rctx: ToolRunContext) -> PermissionDecision:
    try:
        decision = await tool.check_permissions(observed, rctx.tool_ctx)
    except ToolError as exc:
        return PermissionDecision.deny(str(exc))
    return await rctx.can_use_tool(tool, observed, decision)


def _shape_content(
    tool: Tool, tool_use_id: str, content: str | list[JsonDict], ctx: ToolUseContext
) -> str | list[JsonDict]:
    if isinstance(content, list):
        return content
    if not content.strip():
        return empty_result_text(tool.name)
    try:
        return apply_result_size_limit(tool, tool_use_id, content, ctx)
    except (ToolError, OSError) as exc:
        return f"{content[:2_000]}\n... (the full output could not be saved: {exc})"
