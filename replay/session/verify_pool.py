"""The worker processes of ``replay verify --jobs N``.

Workers start from a process that has already imported the SDK and the engine: on Linux each is
forked from the caller (which imports them before starting the pool), elsewhere from a fork
server that preloads the job's module. So a worker's time goes to replaying, not to importing
(``import replay, engine`` alone takes seconds).

Every item gets exactly one outcome, in the caller's terms: its job's value, or why there is
none — the job raised, its worker died (the worker is replaced and the others carry on), or it
ran past the timeout (its worker is killed). Workers leave with the pool: closing it, Ctrl-C
(which the workers ignore: it is the caller's to handle) or SIGTERM in the caller stop them,
and on Linux a worker is killed by the kernel if the caller itself dies.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import multiprocessing
import os
import signal
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.context import BaseContext
from multiprocessing.process import BaseProcess
from types import TracebackType
from typing import Generic, TypeVar

__all__ = ["Outcome", "WorkerPool", "start_method"]

R = TypeVar("R")
_PR_SET_PDEATHSIG = 1  # prctl(2)
_STOP_GRACE_SECONDS = 5.0  # how long a worker told to stop may take before it is killed


@dataclass(frozen=True)
class Outcome(Generic[R]):
    """One item's result: ``value``, or ``error`` saying in one sentence why there is none."""

    item: str
    value: R | None = None
    error: str | None = None


def start_method() -> str:
    """``fork`` on Linux (workers inherit every module the caller imported); elsewhere a fork
    server (forking a macOS process that has loaded system frameworks is unsafe), else spawn."""
    methods = multiprocessing.get_all_start_methods()
    if sys.platform == "linux" and "fork" in methods:
        return "fork"
    return "forkserver" if "forkserver" in methods else "spawn"


@dataclass
class _Worker:
    process: BaseProcess
    conn: Connection
    task: tuple[int, str] | None = None  # the item it is working on, and its place in the run
    deadline: float | None = None


class WorkerPool(Generic[R]):
    """``workers`` processes that each run ``job`` on one item at a time. ``job`` must be a
    module-level function (a fork server or spawn sends it by name); ``method`` is the start
    method (default: ``start_method()``)."""

    def __init__(
        self,
        job: Callable[[str], R],
        workers: int,
        *,
        timeout: float | None = None,
        method: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if workers < 1:
            raise ValueError(f"A pool needs at least one worker, not {workers}.")
        if timeout is not None and timeout <= 0:
            raise ValueError(f"The timeout must be more than 0 seconds, not {timeout:g}.")
        self._job = job
        self._timeout = timeout
        self._clock = clock
        method = method or start_method()
        self._context: BaseContext = multiprocessing.get_context(method)
        if method == "forkserver":
            self._context.set_forkserver_preload([job.__module__])  # type: ignore[attr-defined]
        # A forked worker's parent is this process; a fork server's child's is the fork server.
        self._parent = os.getpid() if method == "fork" else None
        self._workers = [self._start() for _ in range(workers)]

    def __enter__(self) -> WorkerPool[R]:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    @property
    def pids(self) -> list[int]:
        return [w.process.pid for w in self._workers if w.process.pid is not None]

    def _start(self) -> _Worker:
        parent_end, child_end = self._context.Pipe()
        process = self._context.Process(target=_serve, args=(self._job, child_end, self._parent), daemon=True)
        # Frozen objects are left alone by a forked child's collector, so it does not copy the
        # pages they live on; the caller's collector gets them back at once.
        gc.freeze()
        try:
            process.start()
        finally:
            gc.unfreeze()
        child_end.close()
        return _Worker(process, parent_end)

    def run(self, items: Iterable[str], on_outcome: Callable[[Outcome[R]], None] | None = None) -> list[Outcome[R]]:
        """Run the job on every item, ``len(workers)`` at a time, in the order given; the outcomes
        come back in that order too, ``on_outcome`` is told of each as it arrives."""
        queue = deque(enumerate(items))
        outcomes: dict[int, Outcome[R]] = {}
        count = len(queue)

        def settle(worker: _Worker, outcome: Outcome[R]) -> None:
            assert worker.task is not None
            outcomes[worker.task[0]] = outcome
            worker.task = worker.deadline = None
            if on_outcome is not None:
                on_outcome(outcome)

        while queue or any(w.task is not None for w in self._workers):
            for worker in self._workers:
                if worker.task is None and queue:
                    self._assign(worker, queue.popleft())
            busy = [w for w in self._workers if w.task is not None]
            waitables: dict[object, _Worker] = {}
            for worker in busy:
                waitables[worker.conn] = waitables[worker.process.sentinel] = worker
            deadlines = [w.deadline for w in busy if w.deadline is not None]
            limit = max(0.0, min(deadlines) - self._clock()) if deadlines else None
            ready = {id(waitables[key]): waitables[key] for key in wait(list(waitables), limit)}
            for worker in ready.values():
                outcome = self._collect(worker)
                if outcome is not None:
                    settle(worker, outcome)
            for worker in busy:
                if worker.task is not None and worker.deadline is not None and self._clock() >= worker.deadline:
                    settle(worker, self._stop_late(worker))
        return [outcomes[index] for index in range(count)]

    def _assign(self, worker: _Worker, task: tuple[int, str]) -> None:
        if not worker.process.is_alive():  # died while idle: replace it before handing out work
            self._replace(worker)
        worker.task = task
        worker.deadline = None if self._timeout is None else self._clock() + self._timeout
        try:
            worker.conn.send(task[1])
        except OSError:
            pass  # it died just now: its sentinel says so, and the item is reported as its death

    def _collect(self, worker: _Worker) -> Outcome[R] | None:
        """The worker's answer, or its death; None when it has neither yet."""
        assert worker.task is not None
        item = worker.task[1]
        if worker.conn.poll():
            with contextlib.suppress(EOFError, OSError):  # a message cut off by the worker's death
                value, error = worker.conn.recv()
                return Outcome(item, value, error)
        if worker.process.is_alive():
            return None
        worker.process.join()
        how = _exit_description(worker.process.exitcode)
        self._replace(worker)
        return Outcome(item, error=f"{item}: its worker process died ({how}) while running it.")

    def _stop_late(self, worker: _Worker) -> Outcome[R]:
        assert worker.task is not None
        item = worker.task[1]
        worker.process.kill()
        worker.process.join()
        self._replace(worker)
        return Outcome(item, error=f"{item}: still running after {self._timeout:g} s, so it was stopped.")

    def _replace(self, worker: _Worker) -> None:
        worker.conn.close()
        fresh = self._start()
        worker.process, worker.conn = fresh.process, fresh.conn

    def close(self) -> None:
        """Stop every worker: an idle one is told to leave, a busy one (Ctrl-C, SIGTERM, an
        error in the caller) is killed; each is waited for, so none is left behind."""
        for worker in self._workers:
            if worker.task is not None:
                worker.process.kill()
            else:
                with contextlib.suppress(OSError):
                    worker.conn.send(None)
        for worker in self._workers:
            worker.process.join(_STOP_GRACE_SECONDS)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            worker.conn.close()


def _exit_description(code: int | None) -> str:
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
        return f"killed by signal {-code}"
    return f"exit code {code}"


def _serve(job: Callable[[str], object], conn: Connection, parent: int | None) -> None:
    """A worker's life: run the job on each item it is sent until told to stop (None) or the
    caller goes away (end of file)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the caller's clean-up handler
    _die_with(parent)
    for item in _items(conn):
        try:
            message: tuple[object, str | None] = (job(item), None)
        except Exception as exc:  # a bug in the job: that item's outcome, not the worker's end
            message = (None, f"{item}: {type(exc).__name__}: {exc}")
        try:
            conn.send(message)
        except OSError:
            return  # the caller is gone


def _items(conn: Connection) -> Iterator[str]:
    while True:
        try:
            item = conn.recv()
        except (EOFError, OSError):
            return
        if item is None:
            return
        yield item


def _die_with(parent: int | None) -> None:
    """On Linux, have the kernel kill this worker when its parent (the caller, or the fork server,
    which leaves with the caller) dies, even by SIGKILL."""
    if sys.platform != "linux":
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if parent is not None and os.getppid() != parent:  # the caller died before the request took effect
        os._exit(1)
