"""The ``StreamingToolExecutor``: starts each tool call as soon as its tool_use block is
complete, while the model is still streaming, as the batching rules allow, and hands results
back in tool_use order whatever order they finish in. ``run_tools`` is the same executor fed
all calls at once.

Concurrent calls finish in whatever order their threads and subprocesses allow, so nothing the
executor hands out may depend on that order: a result is stamped (uuid, timestamp) when it is
handed out, and whether a call counts as interrupted or cancelled is decided there too, in
tool_use order (see ``StreamingToolExecutor.results``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from engine.abort import AbortController
from engine.events import ToolOutcome
from engine.messages import AssistantMessage
from engine.orchestration.batching import CallCheck, ToolBatch, check_call, group_batches
from engine.orchestration.tool_call import (
    INTERRUPTED_TOOL_RESULT,
    ToolRun,
    ToolRunContext,
    run_tool_use,
    synthetic_tool_run,
)

__all__ = ["StreamingToolExecutor", "run_tools"]

JsonDict = dict[str, Any]


class _Status(StrEnum):
    QUEUED = "queued"
    EXECUTING = "executing"
    COMPLETED = "completed"


@dataclass(eq=False)
class _Entry:
    block: JsonDict
    assistant: AssistantMessage
    check: CallCheck
    done: asyncio.Future[ToolRun]
    # Consecutive concurrency-safe calls share a batch number, fixed when the call is added (never
    # by what happens to be running at the time, which depends on timing).
    batch: int
    status: _Status = _Status.QUEUED
    task: asyncio.Task[None] | None = None
    # Cancels this call alone: a failing Bash cancels the siblings after it through these.
    cancel: AbortController = field(default_factory=AbortController)
    # Set once its tool has been called, or once the call ended without getting that far.
    started: asyncio.Event = field(default_factory=asyncio.Event)


def _fails_its_batch(entry: _Entry, run: ToolRun) -> bool:
    """A concurrent Bash call that errored cancels the siblings after it."""
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
        check = check_call(block, self._rctx.tools)
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

    async def wait_running(self, batch: ToolBatch) -> None:
        """Wait until every call of ``batch`` the executor has started has called its tool (or
        ended without it): from then on the batch is running. Calls still queued (behind the
        concurrency limit) are not waited for; nothing here waits for a call to finish."""
        ids = {block["id"] for block in batch.blocks}
        started = [e.started for e in self._entries if e.block["id"] in ids and e.status is not _Status.QUEUED]
        # One after another, not gathered: a set event stays set, so this waits for the same
        # thing without a task per call and the loop iterations that scheduling them costs.
        for event in started:
            await event.wait()

    async def wait_closed(self) -> None:
        """Wait until every started call's task has finished (or been cancelled)."""
        pending: list[asyncio.Task[None]] = []
        for entry in self._entries:
            task = entry.task
            if task is None:
                continue
            if not task.done():
                pending.append(task)
            elif not task.cancelled():
                # What gathering a finished task does (and all it does): its exception, if
                # any, is retrieved, so asyncio never reports it as unretrieved. Gathering it
                # would cost two loop iterations per executor, at the end of every query.
                task.exception()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)

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
                    entry.block,
                    entry.assistant,
                    self._rctx,
                    siblings=entry.cancel,
                    check=entry.check,
                    on_call=entry.started.set,
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
        # However it ends (even cancelled before it ran), ``wait_running`` stops waiting for it.
        entry.task.add_done_callback(lambda _: entry.started.set())

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
