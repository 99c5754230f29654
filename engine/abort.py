"""An abort controller: the Python counterpart of the ``AbortController`` the loop checks."""

from __future__ import annotations

import asyncio

__all__ = ["AbortController"]


class AbortController:
    """One flag and one event: ``abort()`` sets both, waiters wake, checks read ``aborted``."""

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self.reason: str | None = None

    @property
    def aborted(self) -> bool:
        return self._event.is_set()

    def abort(self, reason: str = "user") -> None:
        if not self._event.is_set():
            self.reason = reason
            self._event.set()

    async def wait(self) -> None:
        await self._event.wait()
