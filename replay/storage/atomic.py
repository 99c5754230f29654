"""Atomic file writes: a reader, or a process killed mid-write, sees the old file or the new one,
never a mix."""

from __future__ import annotations

import os
import tempfile
from contextlib import suppress
from pathlib import Path

__all__ = ["FileWriteError", "atomic_write_text"]


class FileWriteError(ValueError):
    """A file could not be written. The message is one sentence: the file, the problem and what
    happened to the old file; ``source`` and ``problem`` hold its two halves."""

    def __init__(self, source: str, problem: str) -> None:
        super().__init__(f"{source} {problem}")
        self.source = source
        self.problem = problem


def atomic_write_text(path: Path, text: str, *, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` via a temp file in the same folder, flushed, synced and renamed
    over the old file. On any failure the temp file is removed and the old file is untouched."""
    data = text.encode(encoding)
    temp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
        temp = None
    except OSError as err:
        raise FileWriteError(
            str(path), f"could not be written ({err.strerror or err}); the previous file, if any, is unchanged."
        ) from None
    finally:
        if temp is not None:
            with suppress(OSError):
                os.unlink(temp)
    _sync_folder(path.parent)


def _sync_folder(folder: Path) -> None:
    # Makes the rename itself durable; not every platform can open a folder, and that is fine.
    with suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
