"""An abort controller: the Python counterpart of the ``AbortController`` the loop checks."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ["AbortController", "AbortedError"]

T = TypeVar("T")


class AbortedError(Exception):
    """Raised inside the engine when an await was interrupted by ``abort()``."""


class AbortController:
    """A flag, an event and listeners: ``abort()`` sets the flag, wakes waiters and calls
    listeners (which cancel the awaits that registered them)."""

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self._listeners: list[Callable[[], None]] = []
        self.reason: str | None = None

    @property
    def aborted(self) -> bool:
        return self._event.is_set()

    def abort(self, reason: str = "user") -> None:
        if self._event.is_set():
            return
        self.reason = reason
        self._event.set()
        for listener in list(self._listeners):
            listener()

    async def wait(self) -> None:
        await self._event.wait()

    async def run(self, awaitable: Awaitable[T]) -> T:
        """Await ``awaitable``; if ``abort()`` fires meanwhile, cancel it and raise
        ``AbortedError`` (a blocked network read must not outlive the user's interrupt)."""
        if self.aborted:
            if asyncio.iscoroutine(awaitable):
                awaitable.close()
            raise AbortedError(self.reason)
        task = asyncio.current_task()
        assert task is not None
        cancelled_by_us = False

        def on_abort() -> None:
            nonlocal cancelled_by_us
            cancelled_by_us = True
            task.cancel()

        self._listeners.append(on_abort)
        try:
            return await awaitable
        except asyncio.CancelledError:
            if cancelled_by_us and task.uncancel() == 0:
                raise AbortedError(self.reason) from None
            raise
        finally:
            self._listeners.remove(on_abort)
