"""Who may write a bundle, and what a reader sees while it is written.

Writers (``replay record``, ``run --update``, re-recording, scrubbing, the pytest plugin's
recording) hold the bundle's exclusive writer lock — ``filelock`` on the hidden file
``.NAME.lock`` beside the bundle, never inside it (the bundle folder is swapped away whole) —
for as long as they work. The lock file names its owner's pid, so a second writer can say
who is in the way; it is removed on release.

Readers (``replay run``, ``replay verify``) never take the writer lock, so a long recording
does not hold them up. They take a shared ``flock`` on the bundle folder itself — one
generation of it — and a writer takes it exclusively only for the instant it swaps the new
generation in. So a reader sees every file from one generation, and a read-only checkout can
still be verified (no file is created to read).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: readers and swaps go without the folder lock
    fcntl = None  # type: ignore[assignment]

__all__ = ["BundleBusyError", "bundle_write_lock", "lock_path", "reading_generation", "swapping_generation"]


class BundleBusyError(BlockingIOError):
    """Another process is writing the bundle (its writer lock is held)."""


def lock_path(bundle: Path) -> Path:
    """The writer lock file of ``bundle``: hidden, beside it."""
    return bundle.parent / f".{bundle.name}.lock"


@contextlib.contextmanager
def bundle_write_lock(
    bundle: Path, *, wait: float = 0.0, on_wait: Callable[[int | None], None] | None = None
) -> Iterator[None]:
    """Hold the exclusive writer lock of ``bundle``. If another process holds it, wait up to
    ``wait`` seconds (telling ``on_wait`` the holder's pid first), then raise
    ``BundleBusyError`` naming the holder."""
    from filelock import FileLock, Timeout  # here: readers (`replay verify`) never take this lock

    bundle = Path(bundle)
    path = lock_path(bundle)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(path, timeout=0, thread_local=False)
    try:
        lock.acquire()
    except Timeout:
        if wait <= 0:
            raise _busy(bundle, path) from None
        if on_wait is not None:
            on_wait(_owner(path))
        try:
            lock.acquire(timeout=wait)
        except Timeout:
            raise _busy(bundle, path, waited=wait) from None
    try:
        # Through a descriptor of our own: the lock is on filelock's, on the same file.
        path.write_text(f"{os.getpid()}\n", encoding="ascii")
        yield
    finally:
        # Removed while still held, so no lock file is left for git to pick up; filelock
        # notices a waiter that locked the unlinked file and takes the lock again on a new one.
        with contextlib.suppress(OSError):
            path.unlink()
        lock.release()


def _owner(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def _busy(bundle: Path, path: Path, *, waited: float = 0.0) -> BundleBusyError:
    owner = _owner(path)
    who = f"process {owner}" if owner is not None else "another process"
    after = f" (waited {waited:g} s)" if waited else ""
    return BundleBusyError(
        f"Bundle {bundle} is being written by {who}{after}; wait for it to finish, or write another bundle."
    )


@contextlib.contextmanager
def reading_generation(bundle: Path) -> Iterator[None]:
    """Hold the generation of ``bundle`` now at its name, so that no writer swaps another in
    until the block ends. A missing bundle is not locked (loading it reports it)."""
    fd = _locked_current(Path(bundle), shared=True)
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)  # releases the lock


@contextlib.contextmanager
def swapping_generation(bundle: Path) -> Iterator[None]:
    """Hold the generation of ``bundle`` exclusively while a writer swaps a new one in: it waits
    for the readers of the current one to finish, and new readers wait for the swap."""
    fd = _locked_current(Path(bundle), shared=False)
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)


def _locked_current(bundle: Path, *, shared: bool) -> int | None:
    """An open, locked descriptor of the folder at ``bundle`` — retried until the folder locked
    is still the one at the name (a swap may come between opening and locking)."""
    if fcntl is None:
        return None
    while True:
        try:
            fd = os.open(bundle, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        except OSError:  # a file system without flock (some network ones): go unlocked
            os.close(fd)
            return None
        except BaseException:
            os.close(fd)
            raise
        with contextlib.suppress(OSError):
            if os.path.samestat(os.fstat(fd), os.stat(bundle)):
                return fd
        os.close(fd)
