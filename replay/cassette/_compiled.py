"""Compiled cassettes: a JSON copy of a large native cassette's parsed document, in a cache folder.

The YAML stays the source of truth. Reading it costs about a millisecond per interaction
(libyaml's events, then checking content keys and recomputing every fingerprint); a compiled
copy is plain JSON, which Python reads ten times faster, plus the fingerprints the load
computed and checked. A copy is used only when everything it was made from is the same:

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
from dataclasses import dataclass
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

COMPILED_FORMAT: Final = 1
# Smaller cassettes load in milliseconds from the YAML: a copy would only add files.
MIN_COMPILED_BYTES: Final = 256 * 1024
CACHE_ENV: Final = "AGENT_REPLAY_CACHE_DIR"
_OFF: Final = frozenset({"", "off", "0", "false", "no"})
# The modules whose code decides what a cassette's text loads as, and its fingerprints.
CODE_MODULES: Final = (
    "replay.storage.strict_yaml",
    "replay.storage._yaml_events",
    "replay.cassette._io",
    "replay.cassette._native",
    "replay.cassette._content",
    "replay.cassette._model",
    "replay.cassette._compiled",
    "replay.cassette.fingerprints",
    "replay.cassette.interaction",
)


@dataclass(frozen=True)
class Compiled:
    """A compiled copy: the parsed document, and the fingerprints when they hold on this machine."""

    document: dict[str, Any]
    fingerprints: list[str] | None


def compiled_folder() -> Path | None:
    """Where compiled copies live, or None when compiling is turned off."""
    chosen = os.environ.get(CACHE_ENV)
    if chosen is not None:
        return None if chosen.strip().lower() in _OFF else Path(chosen) / "cassettes"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "agent-replay" / "cassettes"


def text_digest(text: str) -> str:
    """The SHA-256 of a cassette's text, which names its compiled copy."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def read_compiled(text: str, digest: str) -> Compiled | None:
    """The compiled copy of the cassette ``text`` (whose `text_digest` is ``digest``), or None."""
    if len(text) < MIN_COMPILED_BYTES:
        return None
    folder = compiled_folder()
    if folder is None:
        return None
    try:
        data = (folder / f"{digest}.json").read_bytes()
        header_line, _, payload = data.partition(b"\n")
        header = json.loads(header_line)
        if not isinstance(header, dict) or header != {**header, **_header(digest)}:
            return None
        if header.get("payload_sha256") != hashlib.sha256(payload).hexdigest():
            return None
        document = json.loads(payload)
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(document, dict):
        return None
    fingerprints = header.get("fingerprints")
    usable = (
        header.get("fingerprint_env") == _fingerprint_env()
        and isinstance(fingerprints, list)
        and all(isinstance(key, str) for key in fingerprints)
    )
    return Compiled(document, fingerprints if usable else None)


def write_compiled(text: str, digest: str, document: Any, fingerprints: list[str] | None) -> None:
    """Keep a compiled copy of the cassette ``text`` just loaded as ``document``, whose
    fingerprints were computed and checked; silently nothing when that is not possible."""
    if len(text) < MIN_COMPILED_BYTES:
        return
    folder = compiled_folder()
    if folder is None:
        return
    try:
        payload = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except (TypeError, ValueError, RecursionError):
        return  # not JSON data (it would have been refused on load anyway)
    header = {
        **_header(digest),
        "payload_sha256": hashlib.sha256(payload).hexdigest(),
        "fingerprint_env": _fingerprint_env(),
        "fingerprints": fingerprints,
    }
    try:
        atomic_write_text(
            folder / f"{digest}.json", json.dumps(header) + "\n" + payload.decode("utf-8"), encoding="utf-8"
        )
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
