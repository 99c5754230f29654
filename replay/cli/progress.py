"""``replay verify``'s progress bar on stderr: drawn only in a terminal, and rich (0.02 s to
import) imported only when stderr may be one, so a CI log or a pipe starts without it."""

from __future__ import annotations

import os
import sys
from types import TracebackType
from typing import Any

__all__ = ["VerifyProgress", "may_be_terminal"]


def may_be_terminal() -> bool:
    """False when rich would surely not take stderr for a terminal, so no bar would be drawn: rich
    draws one when ``TTY_COMPATIBLE=1``, when ``FORCE_COLOR`` is set to anything but the empty
    text, or when stderr is a tty (and it overrides any of these only to say no: Jupyter, IDLE,
    ``TTY_COMPATIBLE=0``). When True, rich decides."""
    if os.environ.get("TTY_COMPATIBLE") == "1" or os.environ.get("FORCE_COLOR", "") != "":
        return True
    isatty = getattr(sys.stderr, "isatty", None)
    try:
        return bool(isatty is not None and isatty())
    except ValueError:  # a closed stream
        return False


class VerifyProgress:
    """A bar counting ``total`` bundles, or nothing at all when stderr is surely no terminal.
    Built before the workers fork (rich is imported then), drawn while the block runs."""

    def __init__(self, total: int) -> None:
        self._total = total
        self._progress: Any = None
        self._task: Any = None
        if not may_be_terminal():
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        stderr = Console(stderr=True)
        self._progress = Progress(
            TextColumn("verifying"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.description}"),
            console=stderr,
            # No refresh thread: a worker that dies is replaced by forking this process, which must
            # not be running other threads then; the bar is redrawn as each bundle ends instead.
            auto_refresh=False,
            transient=True,
            disable=not stderr.is_terminal,  # a CI log gets no bar and no blank line
        )

    def __enter__(self) -> VerifyProgress:
        if self._progress is not None:
            self._progress.__enter__()
            self._task = self._progress.add_task("", total=self._total)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._progress is not None:
            self._progress.__exit__(kind, exc, tb)

    def advance(self, description: str) -> None:
        """One more bundle ended: ``description`` (its verdict and name) is shown beside the bar."""
        if self._progress is not None:
            self._progress.update(self._task, advance=1, description=description, refresh=True)
