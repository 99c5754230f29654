"""A cassette's text as the loader reads it: a str, or a file read twice, never held whole.

`loads_cassette` is given a str. `load_cassette` reads its file twice instead of keeping it in
memory: once, a megabyte at a time, to check that it is UTF-8 and to hash it (the compiled
copy's key), keeping only its first and last few thousand characters (where a native file names
itself and ends); then libyaml reads it again from the same open file as it parses. Holding
the bytes, or a str of them, would cost the file's size again for the whole load. What libyaml
reads is hashed too: a file changed in place between the two reads is refused (a recording
replaces the file by renaming, which the open file does not see).
"""

from __future__ import annotations

import codecs
import hashlib
from typing import IO, Final

from replay.cassette._compiled import text_digest

__all__ = ["HEAD", "FileChanged", "FileSource", "NotUtf8", "Source", "TextSource"]

HEAD: Final = 4096  # characters kept from each end
_SLICE: Final = 1 << 20  # bytes read at a time in the first pass
_BOM: Final = "\ufeff".encode()


class NotUtf8(Exception):
    """The file is not UTF-8 (the caller decodes it to say where)."""


class FileChanged(Exception):
    """The file changed between the loader's two reads."""


class TextSource:
    """A cassette given as a str."""

    def __init__(self, text: str) -> None:
        self._text = text.removeprefix("\ufeff")
        self.size = len(self._text)

    def head(self) -> str:
        return self._text[:HEAD]

    def stripped_tail(self) -> str:
        """The end of the text without its trailing whitespace (its last `HEAD` characters)."""
        tail = self._text[-HEAD:].rstrip()
        return tail if tail or self.size <= HEAD else self._text.rstrip()[-HEAD:]

    def text(self) -> str:
        return self._text

    def digest(self) -> str:
        return text_digest(self._text)

    def parse_input(self) -> str:
        return self._text

    def check_unchanged(self) -> None:
        return None


class FileSource:
    """A cassette file, open for the whole load: hashed and checked in a first pass."""

    def __init__(self, handle: IO[bytes]) -> None:
        self._handle = handle
        decoder = codecs.getincrementaldecoder("utf-8")()
        digest = hashlib.sha256()
        head = b""
        tail = b""
        self._start = 0  # after up to two byte order marks, as `loads_cassette` strips them
        self.size = 0  # bytes after them
        while block := handle.read(_SLICE):
            if self.size == 0 and self._start == 0:
                first = block.removeprefix(_BOM).removeprefix(_BOM)
                self._start, block = len(block) - len(first), first
            try:
                decoder.decode(block)
            except UnicodeDecodeError:
                raise NotUtf8 from None
            digest.update(block)
            if len(head) < HEAD * 4:
                head += block[: HEAD * 4 - len(head)]
            tail = (tail + block[-HEAD * 4 :])[-HEAD * 4 :]
            self.size += len(block)
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            raise NotUtf8 from None
        self._digest = digest.hexdigest()
        self._head = head.decode("utf-8", "ignore")[:HEAD]
        self._tail = tail.decode("utf-8", "ignore")
        self._reader: _HashingReader | None = None

    def head(self) -> str:
        return self._head

    def stripped_tail(self) -> str:
        tail = self._tail.rstrip()
        return tail if tail or self.size <= HEAD else self.text().rstrip()[-HEAD:]

    def text(self) -> str:
        """The whole text (for what is not parsed from the file: JSON, the full YAML loader)."""
        self._handle.seek(self._start)
        data = self._handle.read()
        if hashlib.sha256(data).hexdigest() != self._digest:
            raise FileChanged
        self._reader = None  # what is parsed now is this text, checked: nothing left to check
        return data.decode("utf-8")

    def digest(self) -> str:
        return self._digest

    def parse_input(self) -> _HashingReader:
        """The file from its start, for libyaml to read; `check_unchanged` after parsing."""
        self._handle.seek(self._start)
        self._reader = _HashingReader(self._handle)
        return self._reader

    def check_unchanged(self) -> None:
        if self._reader is not None and self._reader.hexdigest() != self._digest:
            raise FileChanged


class _HashingReader:
    """The file as libyaml reads it (``read(size)``), hashed as it goes."""

    def __init__(self, handle: IO[bytes]) -> None:
        self._handle = handle
        self._digest = hashlib.sha256()
        self._ended = False

    def read(self, size: int = -1) -> bytes:
        block = self._handle.read(size)
        self._digest.update(block)
        if not block:
            self._ended = True
        return block

    def hexdigest(self) -> str:
        if not self._ended:  # the parser stopped early (an error): hash the rest
            while self.read(_SLICE):
                pass
        return self._digest.hexdigest()


Source = TextSource | FileSource
