"""SIGTERM ends a ``replay`` command the way Ctrl-C does: as an exception in the main thread,
so every ``finally`` and ``except BaseException`` on the way out runs — the staging folder
of a recording and the scratch folders in the system temp folder are removed, the writer lock
is released — and the process exits with 143 (128 + SIGTERM), as a killed one would."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = ["Terminated", "cleanup_on_sigterm"]


class Terminated(SystemExit):
    """Raised in the main thread when the process gets SIGTERM."""


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise Terminated(128 + signum)


@contextlib.contextmanager
def cleanup_on_sigterm() -> Iterator[None]:
    """Turn SIGTERM into ``Terminated`` for the block (only in the main thread, where Python runs
    signal handlers); the previous handler is restored afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
