"""The two SHA-256 digests a live request needs at its first replay (its raw body's, to look it up
and keep it by its bytes, and its fingerprint), taken up where the last request's left off.

An agent loop's next body repeats the last one up to its last message or so (that message comes
back without its cache mark): hashing the whole body twice a request is most of what keying a
long session's request costs once its new messages are known. Each digest keeps the hash state
after the part of the last body the next one is likely to repeat, and starts from a copy of it
when the next body does repeat that part exactly (the same bytes; for the fingerprint, the same
normalized message strings, the very objects the per-piece cache handed out). SHA-256 reads its
input as one stream, so the digest is the one of the whole text whatever it was fed in.
"""

from __future__ import annotations

import hashlib
import operator
from typing import Final

from replay.cassette.fingerprints import route_key
from replay.cassette.normalized_text import MESSAGES_OPENING

__all__ = ["FingerprintDigest", "RawDigest"]

_Hash = type(hashlib.sha256())
_LINES_LIMIT: Final = 64


class RawDigest:
    """`RawBodyKeys.digest` of a player's bodies (``METHOD path\\n`` then the body's bytes)."""

    def __init__(self) -> None:
        # The request line, the last body `remember` was told about, how much of it the state
        # has read, and that state: one tuple, replaced whole, so a thread never reads one
        # body's state with another's prefix.
        self._resume: tuple[bytes, bytes, int, _Hash] | None = None

    def digest(self, method: str, path: str, body: bytes) -> bytes:
        line = f"{method} {path}\n".encode("utf-8", "surrogatepass")
        resume = self._resume
        if resume is not None and line == resume[0] and body.startswith(memoryview(resume[1])[: resume[2]]):
            running = resume[3].copy()
            running.update(memoryview(body)[resume[2] :])
        else:
            running = hashlib.sha256(line)
            running.update(body)
        return running.digest()

    def remember(self, method: str, path: str, body: bytes, end: int) -> None:
        """The next body is likely to start with ``body[:end]``: keep the state after it."""
        end = min(max(end, 0), len(body))  # a guess may be off the body (-1: not found)
        line = f"{method} {path}\n".encode("utf-8", "surrogatepass")
        resume = self._resume
        done = resume[2] if resume is not None else 0
        if resume is not None and line == resume[0] and done <= end and body.startswith(memoryview(resume[1])[:done]):
            running = resume[3].copy()
        else:
            running, done = hashlib.sha256(line), 0
        running.update(memoryview(body)[done:end])
        self._resume = (line, body, end, running)


class FingerprintDigest:
    """`digest_normalized` of a player's bodies, given as their `NormalizedText.members`."""

    def __init__(self) -> None:
        self._lines: dict[tuple[str, str], bytes] = {}
        # The line and the text before the first message, the messages read (the first of the
        # last list but its last one) and the state after them: one tuple, replaced whole (see
        # `RawDigest`).
        self._resume: tuple[bytes, tuple[str, ...], _Hash] | None = None

    def hexdigest(self, method: str, path: str, members: tuple[str | tuple[str, ...], ...]) -> str | None:
        """The fingerprint, or None when the body has no list of messages (`digest_normalized`
        has it)."""
        index = next((number for number, member in enumerate(members) if type(member) is tuple), None)
        if index is None:
            return None
        elements: tuple[str, ...] = members[index]  # type: ignore[assignment]  # the tuple found
        before: list[str] = members[:index]  # type: ignore[assignment]  # the other members are str
        after: list[str] = members[index + 1 :]  # type: ignore[assignment]
        head = self._line(method, path) + ("{" + ",".join(before) + ("," if before else "") + MESSAGES_OPENING).encode()
        resume = self._resume
        if (
            resume is not None
            and head == resume[0]
            and len(elements) >= len(resume[1])
            and all(map(operator.is_, resume[1], elements))
        ):
            running, done = resume[2].copy(), len(resume[1])
        else:
            running, done, resume = hashlib.sha256(head), 0, None
        keep = max(len(elements) - 1, 0)  # the last message is the likeliest to change
        if keep > done or resume is None:
            running.update(("," * bool(done) + ",".join(elements[done:keep])).encode())
            done = max(done, keep)
            self._resume = (head, elements[:done], running.copy())
        if len(elements) > done:
            running.update(("," * bool(done) + ",".join(elements[done:])).encode())
        running.update(("]" + "".join("," + member for member in after) + "}").encode())
        return running.hexdigest()

    def _line(self, method: str, path: str) -> bytes:
        line = self._lines.get((method, path))
        if line is None:
            if len(self._lines) >= _LINES_LIMIT:
                self._lines.clear()
            line = self._lines[method, path] = f"{method.upper()} {route_key(path)}\n".encode()
        return line
