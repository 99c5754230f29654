"""Bundle files written through the redaction pass (`replay.redact.redactor`), and a workspace copy
redacted in place before a recording runs in it.

Every writer of a bundle file (``record``, ``run --update``, the pytest plugin through the
cassette writer) goes through `write_redacted`; a recording's workspace copy through
`redact_tree`, before the session runs, so the recording and every replay start from the same
redacted files and a secret in the workspace never reaches a tool result.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Final

from replay.redact.redactor import Redactor, current_redactor
from replay.storage.atomic import atomic_write_text

__all__ = ["MAX_REDACTED_FILE_BYTES", "redact_tree", "write_redacted"]

# A workspace file larger than this is copied as it is (reading a huge or sparse file whole
# would cost its size in memory); `replay scrub --check` still scans it.
MAX_REDACTED_FILE_BYTES: Final = 64 * 1024 * 1024


def write_redacted(path: Path, text: str, *, redactor: Redactor | None = None) -> None:
    """Write ``text`` to ``path`` atomically, every secret in it replaced by its placeholder."""
    atomic_write_text(path, (redactor or current_redactor()).redact_text(text))


def redact_tree(folder: Path, *, redactor: Redactor | None = None) -> list[Path]:
    """Redact, in place, every regular file below ``folder``, hidden ones included (a
    workspace's ``.env``); symbolic links are left as links. Returns the files changed."""
    redactor = redactor or current_redactor()
    changed: list[Path] = []
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            path = Path(root) / name
            info = path.lstat()
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_REDACTED_FILE_BYTES:
                continue
            data = path.read_bytes()
            redacted = redactor.redact_bytes(data)
            if redacted != data:
                _rewrite(path, redacted, info.st_mode)
                changed.append(path)
    return changed


def _rewrite(path: Path, data: bytes, mode: int) -> None:
    # A read-only file is made writable for the rewrite, then given its mode back.
    os.chmod(path, stat.S_IMODE(mode) | stat.S_IWUSR)
    try:
        path.write_bytes(data)
    finally:
        os.chmod(path, stat.S_IMODE(mode))
