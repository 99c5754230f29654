"""Request keys by the raw bytes of the body: a body sent before, in this process, under the same
redactor and home folder, is keyed by one SHA-256 of its bytes and a dictionary lookup, before
anything is decoded, split or normalized.

What `RequestKeys` gives a body is a function of the method, the path, the body's bytes, the
normalizer and the redactor (which finds the secrets that keep a body off the fast path). The
normalizer reads the process's home folder and temp folder, and its own ``roots`` (the run's
workspace and session folders). So a key is kept with the home and temp folders and the
redactor, and:

- *with its roots* (`Normalizer.roots`) when one of them may be in the body: it answers only a
  normalizer with the same roots;
- *without them* when none can be in the body's decoded text: then the roots changed nothing,
  and the key answers any normalizer none of whose roots can be in it either. A replay runs in a
  fresh temp folder each time, so this is what lets a second replay of the same session hit.

A root "cannot be in" the decoded text when it is plain (printable ASCII without ``"`` or ``\\``)
and its bytes are not in the body, and the body holds no escape that could write one of its
characters another way (``\\/`` or ``\\u0020``-``\\u007f``): the decoded strings are then the raw
text's own characters. Anything else counts as "may be in" (the key is kept with its roots).

Only fast-path keys are kept: a body in which the redactor finds anything is scrubbed on the slow
path every time it is sent. A normalized text is kept as its pieces (`NormalizedText`, the same
string objects a replay's log and its player's piece caches hold). At most 50,000 bodies or 64
million characters of normalized text (counted as if joined) are kept; past either, all are
forgotten.
"""

from __future__ import annotations

import functools
import hashlib
import re
import threading
from typing import Final, TypeVar

from replay.cassette.fingerprints import Normalizer, home_folder
from replay.cassette.normalized_text import NormalizedText
from replay.redact.redactor import Redactor

__all__ = ["ASCII_ESCAPE", "RawBodyKeys", "raw_body_keys"]

# An escape that writes a printable ASCII character (a root's) another way than itself.
ASCII_ESCAPE: Final = re.compile(r"\\(?:/|u00[2-7][0-9a-fA-F])")
_PLAIN: Final = frozenset(chr(c) for c in range(0x20, 0x7F)) - {'"', "\\"}
# Bounds on what is kept: every key is dropped once either is passed (a long session's bodies
# re-send its history, so they are kept by size, not only by count).
_ENTRY_LIMIT: Final = 50_000
_CHARACTER_LIMIT: Final = 64_000_000
_CONTEXT_LIMIT: Final = 8

# SHA-256 of the method, the path and the body, one bytes object (not a tuple holding the path
# string of every request).
_Digest = bytes
_Key = tuple[str, NormalizedText]  # fingerprint, normalized text
_Table = dict[_Digest, _Key]
_TempContext = tuple[bool, tuple[str, ...]]  # (Normalizer.legacy, its temp folders)
_Context = TypeVar("_Context")


class RawBodyKeys:
    """Fingerprints and normalized texts of bodies seen before, by their bytes (see the
    module's docstring)."""

    def __init__(self) -> None:
        # (home, temp, redactor) -> digest -> key, for bodies none of whose run's roots can be in them
        self._free: dict[tuple[str, _TempContext, Redactor], _Table] = {}
        # (home, temp, redactor, roots) -> digest -> key, for the others
        self._rooted: dict[tuple[str, _TempContext, Redactor, tuple[tuple[str, str], ...]], _Table] = {}
        self._entries = 0
        self._characters = 0
        self._lock = threading.Lock()

    @staticmethod
    def digest(method: str, path: str, body: bytes) -> _Digest:
        # An HTTP method holds no space and a request's path no line break: the line is unambiguous.
        digest = hashlib.sha256(f"{method} {path}\n".encode("utf-8", "surrogatepass"))
        digest.update(body)
        return digest.digest()

    def get(self, digest: _Digest, body: bytes, normalizer: Normalizer, redactor: Redactor) -> _Key | None:
        """The (fingerprint, normalized text) kept for this body, or None."""
        # How the temp folders are read counts too (`Normalizer.legacy`).
        home, temp = home_folder(), (normalizer.legacy, normalizer.temp_folders())
        rooted = self._rooted.get((home, temp, redactor, normalizer.roots))
        found = rooted.get(digest) if rooted is not None else None
        if found is not None:
            return found
        free = self._free.get((home, temp, redactor))
        found = free.get(digest) if free is not None else None
        # A key kept without roots was kept because no escape could hide one in its body.
        if found is not None and _roots_absent(normalizer, body, escaped=False):
            return found
        return None

    def put(
        self, digest: _Digest, body: bytes, normalizer: Normalizer, redactor: Redactor, key: _Key, *, escaped: bool
    ) -> None:
        """Keep ``key`` (fingerprint, normalized text) for this body under this normalizer.
        ``escaped``: whether `ASCII_ESCAPE` is in the body (its caller read it piece by piece)."""
        # How the temp folders are read counts too (`Normalizer.legacy`).
        home, temp = home_folder(), (normalizer.legacy, normalizer.temp_folders())
        with self._lock:
            if self._entries >= _ENTRY_LIMIT or self._characters >= _CHARACTER_LIMIT:
                self.clear()
            if _roots_absent(normalizer, body, escaped=escaped):
                table = _table(self._free, (home, temp, redactor))
            else:
                table = _table(self._rooted, (home, temp, redactor, normalizer.roots))
            if digest not in table:
                table[digest] = key
                self._entries += 1
                self._characters += key[1].size()

    def clear(self) -> None:
        """Forget every key (the next request of each body is keyed from its text again)."""
        self._free.clear()
        self._rooted.clear()
        self._entries = self._characters = 0


def _table(tables: dict[_Context, _Table], context: _Context) -> _Table:
    table = tables.get(context)
    if table is None:
        if len(tables) >= _CONTEXT_LIMIT:
            tables.clear()  # an old redactor or set of folders: its keys are no longer asked for
        table = tables[context] = {}
    return table


def _roots_absent(normalizer: Normalizer, body: bytes, *, escaped: bool) -> bool:
    """Whether none of ``normalizer``'s roots can be in the decoded text of the JSON ``body``;
    ``escaped``: whether `ASCII_ESCAPE` is in it (a key was kept free only when it was not)."""
    plain = _plain_roots(normalizer.roots)
    if plain is None:
        return False
    shared, roots = plain
    # Each root starts with what they share (the run's temp folder): where that is not, none is.
    if shared in body and any(root in body for root in roots):
        return False
    return not escaped


@functools.lru_cache(maxsize=_CONTEXT_LIMIT)
def _plain_roots(roots: tuple[tuple[str, str], ...]) -> tuple[bytes, tuple[bytes, ...]] | None:
    # The start the roots' bytes share and the roots' bytes, or None when one is empty or not
    # plain (then it may be in any body); the same for every request of a player, so worked out
    # once (this runs on every hit).
    if not all(root and _PLAIN.issuperset(root) for root, _ in roots):
        return None
    plain = tuple(root.encode("ascii") for root, _ in roots)
    shared = plain[0] if plain else b""
    for root in plain[1:]:
        while not root.startswith(shared):
            shared = shared[:-1]
    return shared, plain


_SHARED = RawBodyKeys()


def raw_body_keys() -> RawBodyKeys:
    """The process's keys by raw body, shared by every player (one replay after another)."""
    return _SHARED
