"""Putting a finished bundle in place in one step: every writer builds the whole new bundle in
a hidden staging folder beside it and swaps it in here, so a bundle at its name is always one
whole generation — never files from two writers."""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from replay.storage.bundle_lock import bundle_write_lock, swapping_generation
from replay.storage.stale_folders import retired_path, staging_prefix, sweep_stale_scratch, sweep_stale_staging

__all__ = ["BundleWrite", "begin_bundle_write", "new_staging", "swap_into_place", "sweep_stale"]

_RENAME_EXCHANGE = 2


@dataclass(frozen=True)
class BundleWrite:
    """A write of a whole bundle under way: its staging folder, and the writer lock to release."""

    staging: Path
    _lock: contextlib.ExitStack

    def release(self) -> None:
        """Release the writer lock (the staging folder is swapped in or removed by then)."""
        self._lock.close()


def begin_bundle_write(
    out: Path, *, wait: float = 0.0, on_wait: Callable[[int | None], None] | None = None
) -> BundleWrite:
    """Take the writer lock of ``out`` (see ``bundle_write_lock``), sweep what dead writers left,
    and make the staging folder the new bundle is built in."""
    lock = contextlib.ExitStack()
    lock.enter_context(bundle_write_lock(out, wait=wait, on_wait=on_wait))
    try:
        sweep_stale(out)
        return BundleWrite(new_staging(out), lock)
    except BaseException:
        lock.close()
        raise


def sweep_stale(out: Path) -> None:
    """Remove the staging folders beside ``out`` and the scratch folders in the system temp
    folder that dead writers left (the caller holds the writer lock of ``out``)."""
    sweep_stale_staging(out)
    sweep_stale_scratch()


def new_staging(out: Path) -> Path:
    """A new, empty staging folder for the bundle ``out``, beside it and named after this process."""
    out.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=staging_prefix(out), dir=out.parent))


def swap_into_place(staging: Path, out: Path) -> None:
    """Replace ``out`` with the finished ``staging`` folder, after the readers of the current
    bundle finish. Where the system can exchange two names in one step (Linux's renameat2),
    there is never a moment without a bundle at ``out``; elsewhere the old bundle is renamed
    away first, and ``load_bundle`` points at it if the process dies between the two renames.
    A SIGTERM that comes during the renames is delivered after them."""
    if not out.exists():
        os.replace(staging, out)
        return
    with swapping_generation(out), _sigterm_deferred():
        if _exchange(staging, out):
            old = staging  # now holds the old bundle
        else:
            old = retired_path(out)
            os.replace(out, old)
            os.replace(staging, out)
    shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def _sigterm_deferred() -> Iterator[None]:
    """Block SIGTERM in this thread for the block; one that came meanwhile is delivered after."""
    if not hasattr(signal, "pthread_sigmask"):  # pragma: no cover - Windows
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _exchange(first: Path, second: Path) -> bool:
    """Swap two paths atomically; False where the system cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd = -100
    result = renameat2(at_fdcwd, os.fsencode(first), at_fdcwd, os.fsencode(second), _RENAME_EXCHANGE)
    return result == 0
