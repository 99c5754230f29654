"""Request fingerprints at replay speed: the same fingerprint as `replay.cassette.fingerprints`,
computed from the raw body a piece at a time, each piece normalized once.

An agent loop re-sends its whole history on every request, so most of a request body is bytes the
player has already seen. `RequestKeys` splits a compact JSON object (what the SDK sends) into its
members and the elements of its ``messages`` list, with the C JSON scanner, and keeps per raw
piece its normalized canonical JSON and whether the redactor finds anything in its strings. A
request made only of pieces already seen costs a scan, a dictionary lookup per piece and one
SHA-256.

The slow path (scrub the whole body, parse it, normalize it) is still what defines a fingerprint;
this one answers only when it provably gives the same text:

- The body is one compact JSON object (no whitespace between its members or its messages), with
  no key twice, that starts with ``{`` and decodes as UTF-8: anything else goes the slow way.
- Scrubbing would change nothing. The redactor's decoded-string detectors see every string of the
  document; a string lies inside one piece (a member holds its key), so they find nothing in the
  whole body exactly when they find nothing in any piece (kept per piece; a string shorter than
  `MIN_SECRET_LENGTH` holds nothing they report). Its raw-text detectors (known values, tokens,
  private keys) each need a hint in the text first (`Redactor.may_find_in_raw_text`); no hint
  holds a character that separates pieces, so a hint anywhere in the body is inside a piece, and
  the detectors run on the whole body whenever a piece has one (always, when a known value holds
  such a character). A body in which anything is found takes the slow path, which redacts it.
- A piece's normalized text is `Normalizer.value` of its parsed value, which is what
  ``Normalizer.body`` joins for a parsed body; parsing a piece on its own gives the value parsing
  the whole body gives it.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Final

from replay.cassette.fingerprints import Normalizer, canonical_json, canonical_json_of_parsed, digest_normalized
from replay.cassette.normalized_text import MESSAGES_OPENING, NormalizedText
from replay.cassette.raw_keys import ASCII_ESCAPE, raw_body_keys
from replay.cassette.running_digests import FingerprintDigest, RawDigest
from replay.redact.detectors import PRIVATE_KEY_MARKERS, RAW_HINTS
from replay.redact.kinds import MIN_SECRET_LENGTH
from replay.redact.redactor import Redactor, current_redactor

__all__ = ["FastKey", "RequestKeys", "piece_verdict"]

_MESSAGES: Final = "messages"
_MESSAGE_START: Final = b',{"role":'
# Bodies shorter than this are digested whole: taking a digest up costs more than it saves.
_TAKE_UP_FROM: Final = 8_192
# What separates the pieces of a body: a hint or a known value's form without any of these
# characters lies inside one piece wherever it occurs in the body.
_STRUCTURE: Final = frozenset('",:[]{}')
# A piece's strings up to this long are looked up in the redactor's cache (roles, keys, tool
# names and ids, short paths), longer ones scanned without it.
_REMEMBERED_LENGTH: Final = 128
# Pieces kept per player before the cache starts again (a long session re-sends a few hundred).
_PIECE_LIMIT: Final = 100_000
# A JSON string token (its text between the quotes): in a valid JSON text, scanning for these
# from the start finds exactly its strings.
_STRING_TOKEN: Final = re.compile(r'"([^"\\]*(?:\\.[^"\\]*)*)"', re.DOTALL)
_scan = json.JSONDecoder().scan_once  # (text, index) -> (value, end), StopIteration if none


@dataclass(frozen=True, slots=True)
class FastKey:
    """A request's fingerprint and its body's normalized canonical JSON text."""

    fingerprint: str
    body: NormalizedText

    @property
    def normalized(self) -> str:
        return self.body.text


@dataclass(frozen=True, slots=True)
class _Piece:
    # A member's starts with its key: `"key":value`; the ``messages`` member's is the tuple of its
    # elements' (each shared with the element cache, never joined to key a request).
    normalized: str | tuple[str, ...]
    clean: bool  # the redactor's decoded-string detectors find nothing in it
    suspect: bool = False  # a raw-text detector's hint is in it (`Redactor.may_find_in_raw_text`)
    # An escape that writes an ASCII character another way is in it (`raw_keys.ASCII_ESCAPE`):
    # a body's is any of its pieces' (between them lie only ``{``, ``,``, ``}`` and the plain
    # ``"messages":[`` and ``]``: a body whose ``messages`` key is written with an escape takes
    # the slow path), so no body is read whole for it.
    escaped: bool = False


class _SeenList:
    """A ``messages`` list as the last request sent it: what each element gave (normalized
    text, clean, suspect, escaped), and where each element ends in the list's raw text."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.cleans: list[bool] = []
        self.suspects: list[bool] = []
        self.escapes: list[bool] = []
        self.joined = ""  # the list's raw text between its brackets
        # offsets[k]: the length of the first k elements joined (0 for none).
        self.offsets = [0]

    def shared_run(self, text: str, start: int) -> int:
        """How many of these elements ``text`` repeats from ``start``: all of them, or all but
        the last one, two or three (the likeliest to have changed), else 0."""
        count = len(self.parts)
        for shared in range(count, max(0, count - 4), -1):
            end = self.offsets[shared]
            prefix = self.joined if shared == count else self.joined[:end]
            # A JSON value ends where it ends: the same text followed by , or ] is that value.
            if text.startswith(prefix, start) and text[start + end : start + end + 1] in (",", "]"):
                return shared
        return 0


@dataclass(frozen=True, slots=True)
class _Frame:
    """The last body around its list of messages: its text up to the list's ``[`` and from its
    ``]`` to the end, its members (``messages`` the ``at``-th) and their raw texts."""

    head: str
    tail: str
    members: list[tuple[str, _Piece]]
    seen: list[str]
    at: int


def _next_member(text: str, end: int) -> int | None:
    """Where the member after the value ending at ``end`` starts; None when the body ends there."""
    if text[end] == "}" and end + 1 == len(text):
        return None
    if text[end] != ",":
        raise _NotFast
    return end + 1


class _NotFast(Exception):
    """The body is not one this path can key exactly: take the slow path."""


class RequestKeys:
    """Fingerprints a player's live requests through the per-piece cache (one per normalizer)."""

    def __init__(self, normalizer: Normalizer) -> None:
        self._normalizer = normalizer
        self._members: dict[str, tuple[str, _Piece]] = {}  # raw `"key":value` -> (key, piece)
        # SHA-256 of a raw element of `messages` -> piece (the digest, not the raw text: only its
        # normalized text is needed again, by the request log)
        self._elements: dict[bytes, _Piece] = {}
        self._last_messages = _SeenList()  # the last list seen
        self._last_members: list[str] = []  # the last body's members' raw texts ("" for messages)
        self._frame: _Frame | None = None  # the last body around its messages
        self._redactor: Redactor | None = None
        # Whether the raw-text detectors must read every whole body (a known value that could
        # span two pieces), or only a body with a suspect piece.
        self._whole_text_check = False
        self._opening = _Piece(MESSAGES_OPENING, clean=False)  # set with the redactor
        self._raw_digest, self._fingerprint = RawDigest(), FingerprintDigest()
        # Where the last message of the body being keyed starts (0: none): the next body is
        # likely to repeat the text before it.
        self._last_message_at = 0

    def key(self, method: str, path: str, body: bytes) -> FastKey | None:
        """The request's fingerprint, or None when only the slow path can tell it."""
        if body[:1] != b"{":
            return None
        redactor = current_redactor()
        # A body sent before (a session replayed again in this process) is known by its bytes.
        raw_keys = raw_body_keys()
        digest = self._raw_digest.digest(method, path, body)  # `RawBodyKeys.digest`
        known = raw_keys.get(digest, body, self._normalizer, redactor)
        if known is not None:
            # Not parsed: where its last message starts is guessed (the SDK sends a message's
            # role first); a wrong guess costs only a digest read whole next time.
            if len(body) >= _TAKE_UP_FROM:
                self._raw_digest.remember(method, path, body, body.rfind(_MESSAGE_START))
            return FastKey(*known)
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return None
        if redactor is not self._redactor:
            # What is clean depends on the redactor (the environment's credentials).
            self._members.clear()
            self._elements.clear()
            self._last_messages = _SeenList()
            self._last_members = []
            self._frame = None
            self._redactor = redactor
            hints = (*RAW_HINTS, *PRIVATE_KEY_MARKERS, *redactor.known_forms())
            self._whole_text_check = any(_STRUCTURE.intersection(hint) for hint in hints)
            self._opening = _Piece(
                MESSAGES_OPENING,
                redactor.strings_clean((_MESSAGES,)),
                redactor.may_find_in_raw_text(MESSAGES_OPENING),
            )
        self._last_message_at = 0
        try:
            members = self._members_of(text, redactor)
        except (_NotFast, StopIteration, IndexError, ValueError, RecursionError):
            return None
        if len({key for key, _ in members}) != len(members):
            return None  # a key twice: the parsed body keeps only the last
        if not all(piece.clean for _, piece in members):
            return None
        escaped = any(piece.escaped for _, piece in members)
        suspect = self._whole_text_check or any(piece.suspect for _, piece in members)
        if suspect and redactor.detect_in_raw_text(text):
            return None
        normalized = NormalizedText(tuple(piece.normalized for _, piece in sorted(members)))
        if len(text) < _TAKE_UP_FROM:
            key = digest_normalized(method, path, normalized.text)
        else:
            key = self._fingerprint.hexdigest(method, path, normalized.members) or digest_normalized(
                method, path, normalized.text
            )
            if self._last_message_at and len(text) == len(body):  # ASCII: a character's index is its byte's
                self._raw_digest.remember(method, path, body, self._last_message_at)
        raw_keys.put(digest, body, self._normalizer, redactor, (key, normalized), escaped=escaped)
        return FastKey(key, normalized)

    def _members_of(self, text: str, redactor: Redactor) -> list[tuple[str, _Piece]]:
        if text[1] == "}":
            raise _NotFast  # {}: rare, the slow path has it
        frame = self._frame
        if frame is None or not text.startswith(frame.head):
            return self._members_from(text, redactor, [], [], 1, None)
        # The text before the list of messages is the last body's, so its members are the last
        # body's (a JSON text is read left to right, and they all end inside that text).
        at = frame.at
        members, seen = frame.members[:at], frame.seen[:at]
        opening = len(frame.head)
        piece, end = self._messages(text, opening, redactor)
        members.append((_MESSAGES, piece))
        seen.append("")
        if len(text) - end == len(frame.tail) and text.endswith(frame.tail):
            # So is the text after it: the members after the list, to the body's closing brace.
            members += frame.members[at + 1 :]
            seen += frame.seen[at + 1 :]
            self._last_members = seen
            self._frame = _Frame(frame.head, frame.tail, members, seen, at)
            return members
        start = _next_member(text, end)
        if start is None:
            self._last_members = seen
            self._frame = _Frame(frame.head, text[end:], members, seen, at)
            return members
        return self._members_from(text, redactor, members, seen, start, (at, opening, end))

    def _members_from(
        self,
        text: str,
        redactor: Redactor,
        members: list[tuple[str, _Piece]],
        seen: list[str],
        start: int,
        messages_at: tuple[int, int, int] | None,
    ) -> list[tuple[str, _Piece]]:
        """``members`` (whose raw texts are ``seen``) and the members from ``start`` (the first
        character of one) to the end of the body. ``messages_at``: the position of ``messages``
        among the members, and where its list's text starts (after ``[``) and ends (after ``]``)."""
        # The last request's members by position (model, system, tools ... come back the same):
        # one is recognised by its text, without parsing it again.
        last = self._last_members
        while True:
            if text[start] != '"':
                raise _NotFast
            raw = last[len(seen)] if len(seen) < len(last) else ""
            end = start + len(raw)
            again = raw and text.startswith(raw, start) and text[end : end + 1] in (",", "}")
            known = self._members.get(raw) if again else None
            if known is not None:
                key, piece = known
            else:
                key, colon = _scan(text, start)
                if text[colon] != ":":
                    raise _NotFast
                if key == _MESSAGES and text[colon + 1] == "[":
                    if colon - start != len(MESSAGES_OPENING) - 2:
                        raise _NotFast  # the key written with an escape: the text around the pieces is not plain
                    piece, end = self._messages(text, colon + 2, redactor)
                    raw = ""
                    messages_at = (len(members), colon + 2, end)
                else:
                    value, end = _scan(text, colon + 1)
                    raw = text[start:end]
                    known = self._members.get(raw)
                    if known is None:
                        digest = hashlib.sha256(raw.encode()).digest()
                        known = (key, self._new_piece(value, raw, digest, redactor, key))
                        self._remember(self._members, raw, known)
                    key, piece = known
            seen.append(raw)
            members.append((key, piece))
            following = _next_member(text, end)
            if following is None:
                self._last_members = seen
                if messages_at is None:
                    self._frame = None
                else:
                    at, opening, close = messages_at
                    self._frame = _Frame(text[:opening], text[close:], members, seen, at)
                return members
            start = following

    def _messages(self, text: str, start: int, redactor: Redactor) -> tuple[_Piece, int]:
        """The member ``"messages":[...]`` whose list starts at ``start`` (after its ``[``), and
        where it ends."""
        clean, suspect = self._opening.clean, self._opening.suspect
        if text[start] == "]":
            return _Piece((), clean, suspect), start + 1
        last = self._last_messages
        opening = start
        seen = _SeenList()
        parts, cleans, suspects, escapes = seen.parts, seen.cleans, seen.suspects, seen.escapes
        offsets = seen.offsets
        # The last request's list: an agent loop re-sends it, but for its last message or two
        # (a moved cache marker), so its longest shared run is found by comparing text, in one go.
        shared = last.shared_run(text, start)
        if shared:
            parts[:] = last.parts[:shared]
            cleans[:], suspects[:], escapes[:] = last.cleans[:shared], last.suspects[:shared], last.escapes[:shared]
            offsets[:] = last.offsets[: shared + 1]
            start += last.offsets[shared]
            if text[start] == "]":
                return self._finish(seen, text, opening, start, clean, suspect), start + 1
            start += 1
        elements = self._elements
        while True:
            value, end = _scan(text, start)
            raw = text[start:end]
            digest = hashlib.sha256(raw.encode()).digest()
            piece = elements.get(digest)
            if piece is None:
                piece = self._new_piece(value, raw, digest, redactor)
                self._remember(elements, digest, piece)
            parts.append(piece.normalized)  # type: ignore[arg-type]  # an element's is a str
            cleans.append(piece.clean)
            suspects.append(piece.suspect)
            escapes.append(piece.escaped)
            offsets.append(end - opening)  # the list is compact: its text up to here is the elements joined
            if text[end] == "]":
                return self._finish(seen, text, opening, end, clean, suspect), end + 1
            if text[end] != ",":
                raise _NotFast
            start = end + 1

    def _finish(self, seen: _SeenList, text: str, opening: int, end: int, clean: bool, suspect: bool) -> _Piece:
        """The ``messages`` member of ``text`` whose elements, between ``opening`` and ``end``,
        gave ``seen``."""
        seen.joined = text[opening:end]
        self._last_messages = seen
        self._last_message_at = opening + seen.offsets[-2]
        return _Piece(tuple(seen.parts), clean and all(seen.cleans), suspect or any(seen.suspects), any(seen.escapes))

    def _new_piece(self, value: Any, raw: str, digest: bytes, redactor: Redactor, key: str | None = None) -> _Piece:
        """A message, or a member ``key`` (its normalized text then starts with the key), whose
        raw text ``raw`` has the SHA-256 ``digest``."""
        verdict = piece_verdict(raw, digest, redactor)
        # `Normalizer.value` without its cache: this piece is normalized once anyway.
        normalized = self._normalizer.text(canonical_json_of_parsed(value))
        if key is not None:
            normalized = f"{canonical_json(key)}:{normalized}"
        return _Piece(normalized, *verdict)

    @staticmethod
    def _remember(cache: dict[Any, Any], raw: str | bytes, value: Any) -> None:
        if len(cache) >= _PIECE_LIMIT:
            cache.clear()
        cache[raw] = value


# What the redactor finds in a piece, by the SHA-256 of its raw text, for the process's current
# redactor: a fresh player (each replay has one) asks again about the pieces of the sessions
# replayed before it, and scanning a piece's strings is most of keying it.
# A verdict is (clean, suspect, escaped), one shared tuple per combination.
_Verdict = tuple[bool, bool, bool]
_VERDICTS: Final[dict[_Verdict, _Verdict]] = {
    (clean, suspect, escaped): (clean, suspect, escaped)
    for clean in (False, True)
    for suspect in (False, True)
    for escaped in (False, True)
}
_verdict_table: tuple[Redactor | None, dict[bytes, _Verdict]] = (None, {})


def piece_verdict(raw: str, digest: bytes, redactor: Redactor) -> tuple[bool, bool, bool]:
    """What ``redactor`` finds in the JSON text ``raw`` (SHA-256 ``digest``): whether its decoded
    strings are clean, whether a raw-text detector's hint is in it (`Redactor.may_find_in_raw_text`)
    and whether it holds `ASCII_ESCAPE`; kept for the process."""
    verdicts = _verdicts(redactor)
    verdict = verdicts.get(digest)
    if verdict is None:
        # A member's raw text holds its key. Its long strings are not kept by the redactor's
        # cache (the verdict is kept for the whole piece, by its digest); its short ones, the
        # same few names in every message, are.
        clean = redactor.strings_clean(_long_strings(raw), remember_up_to=_REMEMBERED_LENGTH)
        escaped = "\\" in raw and ASCII_ESCAPE.search(raw) is not None
        verdict = _VERDICTS[clean, redactor.may_find_in_raw_text(raw), escaped]
        RequestKeys._remember(verdicts, digest, verdict)
    return verdict


def _verdicts(redactor: Redactor) -> dict[bytes, _Verdict]:
    """The verdicts kept for ``redactor`` (a new one starts an empty table)."""
    global _verdict_table
    owner, table = _verdict_table
    if owner is not redactor:
        table = {}
        _verdict_table = (redactor, table)
    return table


def _long_strings(raw: str) -> list[str]:
    """Every string of the JSON text ``raw`` (keys too) that is at least `MIN_SECRET_LENGTH`
    long once decoded: the only ones in which the redactor can find anything. An escape only
    makes a string's text longer, so shorter tokens are skipped before decoding."""
    found = []
    for token in _STRING_TOKEN.findall(raw):
        if len(token) >= MIN_SECRET_LENGTH:
            found.append(json.loads(f'"{token}"') if "\\" in token else token)
    return found
