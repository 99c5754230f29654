"""Running a tool call that might block for ever (a FIFO opened for a blocking read or write)
so that a hang fails the test instead of stalling the suite."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")

GUARD_SECONDS = 60.0


def run_guarded(make_call: Callable[[], Awaitable[T]], *, seconds: float = GUARD_SECONDS) -> T:
    """The result of ``make_call()`` run on its own event loop in a daemon thread, re-raising what
    it raised; if it has not finished after ``seconds`` the test fails (the thread, stuck in a
    system call, is left behind as a daemon and cannot keep the process alive)."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["result"] = asyncio.run(_awaited(make_call))
        except BaseException as exc:  # handed to the test's thread
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise AssertionError(f"the call did not return within {seconds:.0f} s: it blocked")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


async def _awaited(make_call: Callable[[], Awaitable[T]]) -> T:
    return await make_call()
