"""Opening a workspace file for reading without ever blocking on a special file.

A FIFO opened for reading waits for a writer, for ever if none comes; a device may do anything.
So a file is opened non-blocking and then checked with ``fstat`` on the opened descriptor: that
answers for the very file that was opened, even if the path was swapped for a FIFO after an
earlier ``stat``.
"""

from __future__ import annotations

import errno
import os
import stat
from enum import StrEnum
from pathlib import Path
from typing import BinaryIO, TextIO

__all__ = ["FileKind", "NotARegularFileError", "file_kind", "open_regular_file", "open_regular_file_for_writing"]


class FileKind(StrEnum):
    """What a path is, worded for a message: "it is a FIFO (named pipe)"."""

    REGULAR = "a regular file"
    DIRECTORY = "a directory"
    FIFO = "a FIFO (named pipe)"
    SOCKET = "a socket"
    CHARACTER_DEVICE = "a character device"
    BLOCK_DEVICE = "a block device"
    OTHER = "a special file"


class NotARegularFileError(Exception):
    """The path names something other than a regular file; ``kind`` says what."""

    def __init__(self, kind: FileKind) -> None:
        super().__init__(f"it is {kind}, not a regular file")
        self.kind = kind


def file_kind(mode: int) -> FileKind:
    """The kind of file an ``st_mode`` describes."""
    for test, kind in (
        (stat.S_ISREG, FileKind.REGULAR),
        (stat.S_ISDIR, FileKind.DIRECTORY),
        (stat.S_ISFIFO, FileKind.FIFO),
        (stat.S_ISSOCK, FileKind.SOCKET),
        (stat.S_ISCHR, FileKind.CHARACTER_DEVICE),
        (stat.S_ISBLK, FileKind.BLOCK_DEVICE),
    ):
        if test(mode):
            return kind
    return FileKind.OTHER


def open_regular_file(path: Path) -> tuple[BinaryIO, os.stat_result]:
    """``path`` opened for unbuffered binary reading, with its status, if it is a regular file.

    Raises ``NotARegularFileError`` for anything else (without blocking), and ``OSError`` as
    ``os.open`` does (``FileNotFoundError`` for a missing file or a broken link).
    """
    fd, status = _open_regular(path, os.O_RDONLY)
    return os.fdopen(fd, "rb", buffering=0), status


def open_regular_file_for_writing(path: Path) -> TextIO:
    """``path`` created or emptied and opened for writing UTF-8 text byte for byte (no newline
    translation), if it is (or becomes) a regular file.

    Raises ``NotARegularFileError`` for anything else, without blocking (a FIFO with no reader
    would wait for one) and without writing to it (a FIFO with a reader would pass it on).
    """
    # Emptied only once fstat says it is a regular file: O_TRUNC would act before the check.
    fd, _ = _open_regular(path, os.O_WRONLY | os.O_CREAT)
    try:
        os.ftruncate(fd, 0)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "w", encoding="utf-8", newline="")


def _open_regular(path: Path, flags: int) -> tuple[int, os.stat_result]:
    """A descriptor for ``path`` opened non-blocking with ``flags``, and its status, if it is a
    regular file; blocking mode is restored (it means nothing for a regular file anyway)."""
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC, 0o666)
    except OSError as exc:
        # A socket cannot be opened at all, nor a FIFO for writing while no one reads it (ENXIO):
        # say what it is rather than "no such device or address".
        if exc.errno in (errno.ENXIO, errno.EOPNOTSUPP):
            try:
                kind = file_kind(os.stat(path).st_mode)
            except OSError:
                raise exc from None
            if kind is not FileKind.REGULAR:
                raise NotARegularFileError(kind) from None
        raise
    try:
        status = os.fstat(fd)
        kind = file_kind(status.st_mode)
        if kind is not FileKind.REGULAR:
            raise NotARegularFileError(kind)
        os.set_blocking(fd, True)
        return fd, status
    except BaseException:
        os.close(fd)
        raise
