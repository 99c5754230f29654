"""A window of numbered lines from a byte stream, read with bounded memory and a bounded scan.

Read must never hold more of a file than it shows: the stream is decoded chunk by chunk, lines
before and after the window are only counted, a line in the window keeps no more than it can
show, and the scan stops after ``MAX_SCAN_BYTES`` whatever the file's size (a sparse file can
claim terabytes without costing any disk).
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from typing import BinaryIO, Final, Protocol

__all__ = [
    "LINE_TRUNCATION_MARKER",
    "MAX_LINE_CHARS",
    "MAX_SCAN_BYTES",
    "MAX_SCAN_MIB",
    "SCAN_CHUNK_BYTES",
    "BinaryContentError",
    "LineWindow",
    "UndecodableTextError",
    "read_line_window",
]

MAX_LINE_CHARS: Final = 2_000
LINE_TRUNCATION_MARKER: Final = " … (line truncated)"
MAX_SCAN_MIB: Final = 64
MAX_SCAN_BYTES: Final = MAX_SCAN_MIB * 2**20
SCAN_CHUNK_BYTES: Final = 64 * 2**10
# How much of the head is checked for NUL bytes, the same heuristic git and grep use.
BINARY_SNIFF_BYTES: Final = 8_192


class _Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes | None: ...


class BinaryContentError(Exception):
    """The stream's head holds a NUL byte: it is not text."""


class UndecodableTextError(Exception):
    """The stream is not valid UTF-8; ``offset`` is the first undecodable byte's position."""

    def __init__(self, offset: int) -> None:
        super().__init__(f"undecodable byte at offset {offset}")
        self.offset = offset


@dataclass(frozen=True, kw_only=True)
class LineWindow:
    """The lines of a window, clipped for display, and what the scan learnt about the rest.

    ``lines_seen`` is the number of lines in the file when ``reached_end``; otherwise the number
    of complete lines in the part scanned before ``MAX_SCAN_BYTES`` ran out.
    """

    lines: list[str]
    lines_seen: int
    reached_end: bool


def read_line_window(
    stream: BinaryIO | _Readable, *, first_line: int, max_lines: int, chunk_bytes: int = SCAN_CHUNK_BYTES
) -> LineWindow:
    """Lines ``first_line`` (1-based) to ``first_line + max_lines - 1`` of a UTF-8 stream.

    A line ends at ``\\n``; a ``\\r`` before it is dropped; a final line needs no ``\\n``. Raises
    ``BinaryContentError`` if the first 8 KiB hold a NUL byte and ``UndecodableTextError`` at
    the first byte (within the scanned part) that is not UTF-8. ``chunk_bytes`` is how much is
    decoded at a time.
    """
    scanner = _Scanner(first_line=first_line, last_line=first_line + max_lines - 1)
    decoder = codecs.getincrementaldecoder("utf-8")()
    consumed = 0
    pending = _read_fully(stream, max(BINARY_SNIFF_BYTES, chunk_bytes))
    if b"\0" in pending[:BINARY_SNIFF_BYTES]:
        raise BinaryContentError("the file's head holds a NUL byte")
    while pending:
        chunk, pending = pending[:chunk_bytes], pending[chunk_bytes:]
        scanner.feed(_decode(decoder, chunk, consumed=consumed, final=False))
        consumed += len(chunk)
        if consumed >= MAX_SCAN_BYTES:
            return scanner.cut_off()
        if not pending:
            pending = _read_fully(stream, chunk_bytes)
    scanner.feed(_decode(decoder, b"", consumed=consumed, final=True))
    return scanner.at_end()


def _read_fully(stream: BinaryIO | _Readable, size: int) -> bytes:
    """Up to ``size`` bytes; fewer only at the end of the stream (raw reads may come up short)."""
    parts: list[bytes] = []
    wanted = size
    while wanted > 0:
        part = stream.read(wanted)
        if not part:
            break
        parts.append(part)
        wanted -= len(part)
    return b"".join(parts)


def _decode(decoder: codecs.IncrementalDecoder, chunk: bytes, *, consumed: int, final: bool) -> str:
    """``chunk`` decoded; an error names its offset in the whole stream."""
    pending = len(decoder.getstate()[0])  # bytes of a split character held from the last chunk
    try:
        return decoder.decode(chunk, final)
    except UnicodeDecodeError as exc:
        raise UndecodableTextError(consumed - pending + exc.start) from exc


class _Scanner:
    """Splits decoded text into lines, keeping only what the window shows."""

    def __init__(self, *, first_line: int, last_line: int) -> None:
        self._first = first_line
        self._last = last_line
        self._line = 1  # the number of the line being read
        self._length = 0  # its length so far, in characters
        self._head: list[str] = []  # its first characters (window lines only)
        self._head_length = 0
        self._lines: list[str] = []

    def feed(self, text: str) -> None:
        position, size = 0, len(text)
        while position < size:
            if self._line > self._last:
                position = self._count_lines(text, position, size)
            elif self._line < self._first:
                position = self._skip_lines(text, position, self._first - self._line)
            else:
                position = self._take_line_part(text, position, size)

    def _count_lines(self, text: str, position: int, size: int) -> int:
        """After the window: count the newlines of the rest of ``text``."""
        newlines = text.count("\n", position)
        if newlines:
            self._line += newlines
            self._length = size - (text.rfind("\n") + 1)
        else:
            self._length += size - position
        return size

    def _skip_lines(self, text: str, position: int, wanted: int) -> int:
        """Before the window: pass at most ``wanted`` line ends of ``text``."""
        newlines = text.count("\n", position)
        if newlines < wanted:
            return self._count_lines(text, position, len(text))
        for _ in range(wanted):
            position = text.index("\n", position) + 1
        self._line += wanted
        self._length = 0
        return position

    def _take_line_part(self, text: str, position: int, size: int) -> int:
        """In the window: keep the head of the current line, and end it at a newline."""
        end = text.find("\n", position)
        stop = size if end == -1 else end
        room = MAX_LINE_CHARS + 1 - self._head_length
        if room > 0:
            kept = text[position : min(stop, position + room)]
            self._head.append(kept)
            self._head_length += len(kept)
        self._length += stop - position
        if end == -1:
            return size
        self._finish_window_line(ended_by_newline=True)
        return end + 1

    def _finish_window_line(self, *, ended_by_newline: bool) -> None:
        head = "".join(self._head)
        length = self._length
        if ended_by_newline and length <= MAX_LINE_CHARS + 1 and head.endswith("\r"):
            head, length = head[:-1], length - 1  # a CRLF line ending is one line ending
        self._lines.append(head if length <= MAX_LINE_CHARS else head[:MAX_LINE_CHARS] + LINE_TRUNCATION_MARKER)
        self._line += 1
        self._length = 0
        self._head = []
        self._head_length = 0

    def at_end(self) -> LineWindow:
        """The window when the whole stream has been read."""
        if self._length > 0 and self._first <= self._line <= self._last:
            self._finish_window_line(ended_by_newline=False)
            return LineWindow(lines=self._lines, lines_seen=self._line - 1, reached_end=True)
        lines = self._line - (0 if self._length > 0 else 1)
        return LineWindow(lines=self._lines, lines_seen=lines, reached_end=True)

    def cut_off(self) -> LineWindow:
        """The window when the scan limit stopped the reading; a window line it cut is shown."""
        complete = self._line - 1
        if self._length > 0 and self._first <= self._line <= self._last:
            self._finish_window_line(ended_by_newline=False)
        return LineWindow(lines=self._lines, lines_seen=complete, reached_end=False)
