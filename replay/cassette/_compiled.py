"""Compiled cassettes: a JSON copy of a large native cassette's checked document, in a cache folder.

The YAML stays the source of truth. Reading it costs about a millisecond per interaction
(libyaml's events, then checking content keys and recomputing every fingerprint); a compiled
copy is plain JSON, which Python reads ten times faster, plus the fingerprints the load
computed and checked. Its lines: a header, the document without its interactions, then one
line per interaction whose events are the chunks a client reads (`_native.compiled_line`), so
a load parses one interaction at a time and no event at all. A copy is used only when
everything it was made from is the same:

- its name and its header hold the SHA-256 of the cassette's text, so an edited cassette never
  meets an old copy;
- the header holds a digest of the loader's own source (`CODE_MODULES`) and of PyYAML's
  version, so a changed loader or fingerprint never reads an old copy;
- the fingerprints were computed under this machine's home and temp folders (the normalizer
  replaces them), so they are used only where those are the same;
- the header holds the SHA-256 of the JSON that follows it, so a cut or damaged copy is seen.

A copy that is missing, unreadable, damaged, of another version or not a cassette is ignored
and the YAML is read; nothing here ever raises. Copies are written atomically (a temp file
renamed over the old one), only for cassettes of at least `MIN_COMPILED_BYTES`, in
``$AGENT_REPLAY_CACHE_DIR`` (set it to ``off`` to turn compiling off), else
``$XDG_CACHE_HOME/agent-replay``, else ``~/.cache/agent-replay``, under ``cassettes/``.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any, Final

import yaml

from replay.storage.atomic import FileWriteError, atomic_write_text

__all__ = [
    "CACHE_ENV",
    "COMPILED_FORMAT",
    "MIN_COMPILED_BYTES",
    "Compiled",
    "compiled_folder",
    "read_compiled",
    "text_digest",
    "write_compiled",
]

COMPILED_FORMAT: Final = 2
# Smaller cassettes load in milliseconds from the YAML: a copy would only add files.
MIN_COMPILED_BYTES: Final = 256 * 1024
CACHE_ENV: Final = "AGENT_REPLAY_CACHE_DIR"
_MAX_HEADER: Final = 16 << 20  # bytes: a header longer than this is not one (it lists fingerprints)
_OFF: Final = frozenset({"", "off", "0", "false", "no"})
# The modules whose code decides what a cassette's text loads as, and its fingerprints.
CODE_MODULES: Final = (
    "replay.storage.strict_yaml",
    "replay.storage._yaml_events",
    "replay.storage._yaml_lines",
    "replay.storage._yaml_flow_json",
    "replay.cassette._io",
    "replay.cassette._native",
    "replay.cassette._content",
    "replay.cassette._model",
    "replay.cassette._source",
    "replay.cassette._compiled",
    "replay.cassette.fingerprints",
    "replay.cassette.interaction",
)


class Compiled:
    """A compiled copy whose header holds: the document without its interactions, the
    fingerprints when they hold on this machine, and `interactions` to read the rest."""

    def __init__(
        self,
        path: Path,
        offset: int,
        checksum: Any,
        expected: str,
        head: dict[str, Any],
        count: int,
        fingerprints: list[str] | None,
    ) -> None:
        self.head = head
        self.count = count  # interactions, as the header says
        self.fingerprints = fingerprints
        # Where the interactions start, and the checksum of what precedes them, to go on with.
        self._path, self._offset, self._checksum, self._expected = path, offset, checksum, expected
        self._read = False

    def lines(self) -> Iterator[bytes]:
        """Each interaction's line, read one at a time: the file is never held whole. Trust
        what they gave only if `intact` says so once they are all read."""
        with self._path.open("rb") as handle:
            handle.seek(self._offset)
            for line in handle:
                self._checksum.update(line)
                yield line.removesuffix(b"\n")
        self._read = True

    def intact(self) -> bool:
        """Whether every line was read, and the copy's checksum holds."""
        return self._read and self._checksum.hexdigest() == self._expected


def compiled_folder() -> Path | None:
    """Where compiled copies live, or None when compiling is turned off."""
    chosen = os.environ.get(CACHE_ENV)
    if chosen is not None:
        return None if chosen.strip().lower() in _OFF else Path(chosen) / "cassettes"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "agent-replay" / "cassettes"


def text_digest(text: str | bytes) -> str:
    """The SHA-256 of a cassette's text (or of its UTF-8 bytes), which names its compiled copy."""
    data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


def read_compiled(size: int, digest: str) -> Compiled | None:
    """The compiled copy of the cassette of ``size`` characters or bytes whose `text_digest`
    is ``digest``, or None."""
    if size < MIN_COMPILED_BYTES:
        return None
    folder = compiled_folder()
    if folder is None:
        return None
    path = folder / f"{digest}.json"
    try:
        with path.open("rb") as handle:
            header_line = handle.readline(_MAX_HEADER)
            head_line = handle.readline()
            offset = handle.tell()
        header = json.loads(header_line)
        if not isinstance(header, dict) or header != {**header, **_header(digest)}:
            return None
        head = json.loads(head_line)
    except (OSError, ValueError, RecursionError):
        return None
    expected = header.get("payload_sha256")
    if not isinstance(head, dict) or not isinstance(expected, str):
        return None
    count = header.get("interactions")
    if type(count) is not int or count < 0:
        return None
    fingerprints = header.get("fingerprints")
    usable = (
        header.get("fingerprint_env") == _fingerprint_env()
        and isinstance(fingerprints, list)
        and len(fingerprints) == count
        and all(isinstance(key, str) for key in fingerprints)
    )
    checksum = hashlib.sha256(head_line)
    return Compiled(path, offset, checksum, expected, head, count, fingerprints if usable else None)


def write_compiled(
    size: int, digest: str, head: dict[str, Any], lines: list[str], fingerprints: list[str] | None
) -> None:
    """Keep a compiled copy of the cassette of ``size`` (see `read_compiled`) just loaded: its
    document without interactions (``head``) and its interactions' lines, whose fingerprints
    were computed and checked; silently nothing when that is not possible."""
    if size < MIN_COMPILED_BYTES:
        return
    folder = compiled_folder()
    if folder is None:
        return
    try:
        head_line = json.dumps(head, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        return  # not JSON data (it would have been refused on load anyway)
    payload = "\n".join((head_line, *lines))
    header = {
        **_header(digest),
        "payload_sha256": hashlib.sha256(payload.encode("utf-8")).hexdigest(),
        "fingerprint_env": _fingerprint_env(),
        "interactions": len(lines),
        "fingerprints": fingerprints,
    }
    try:
        atomic_write_text(folder / f"{digest}.json", json.dumps(header) + "\n" + payload, encoding="utf-8")
    except (FileWriteError, OSError, UnicodeError):
        return


def _header(digest: str) -> dict[str, Any]:
    return {"compiled_format": COMPILED_FORMAT, "source_sha256": digest, "code": _code_digest()}


def _fingerprint_env() -> list[str]:
    # What the fingerprint normalizer reads from the machine besides the cassette.
    return [os.path.expanduser("~"), tempfile.gettempdir()]


@cache
def _code_digest() -> str:
    digest = hashlib.sha256(f"{yaml.__version__} {sys.version}".encode())
    try:
        for name in CODE_MODULES:
            source = importlib.import_module(name).__file__
            digest.update(Path(source or "").read_bytes())
    except (ImportError, OSError):
        # Code that cannot be read cannot be vouched for: a digest no copy carries.
        return "unreadable-" + os.urandom(16).hex()
    return digest.hexdigest()
