"""One redaction pass for everything written into a bundle (cassette, transcript, session.json,
traces, scenario, workspace copy), and for the requests a replay fingerprints: a `Redactor`
runs the detectors (`replay.redact.detectors`) over a text and replaces what they find.

A secret becomes a stable placeholder, ``[REDACTED:<kind>]`` (``[REDACTED:anthropic-api-key]``,
``[REDACTED:aws-access-key]``; a known value is named after its variable,
``[REDACTED:anthropic-auth-token]``): the same value always gives the same placeholder, so a
redacted request fingerprints the same on every run. Every form a value takes in a text is
replaced: as it is, JSON-escaped, and its UTF-8 bytes read as latin-1 (a file that is not UTF-8).
A streamed answer's deltas are redacted as one text (`Redactor.redact_pieces`).

What a decoded string holds is cached (a history is re-sent on every request), under a lock; the
detectors hold no per-call state, so one `Redactor` is safe to share between threads.
`current_redactor` is the one for this process's environment as it is now.
"""

from __future__ import annotations

import bisect
import codecs
import json
import os
import re
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from itertools import islice
from typing import Any, Final

from replay.redact.detectors import (
    PRIORITY,
    PRIVATE_KEY_MARKERS,
    decoded_strings,
    entropy_values,
    environment_credentials,
    keyword_values,
    may_hold_credentials,
    private_key_blocks,
    raw_hint_in,
    token_values,
)
from replay.redact.kinds import MIN_SECRET_LENGTH, Detection, SecretKind, worth_redacting
from replay.redact.pieces import replace_in_pieces
from replay.redact.substrings import Substrings

__all__ = ["Redactor", "current_redactor"]

_CACHE_LIMIT: Final = 65_536
# Characters of the strings the cache keeps (as keys) before it starts again.
_CACHE_CHARACTERS: Final = 16_000_000
# What most strings hold: one shared empty set, not one per string.
_NOTHING: Final[frozenset[Detection]] = frozenset()
_UNSEEN: Final = object()  # a string not yet in a redaction memo
# The markers `Redactor.may_find_in_raw_text` looks for, in one scan.
_KEY_MARKERS: Final = Substrings(PRIVATE_KEY_MARKERS)
_UTF8_FILE_SYSTEM: Final = codecs.lookup(sys.getfilesystemencoding()).name == "utf-8"


# ---------------------------------------------------------------------------------------------
# The redactor


class Redactor:
    """Finds and redacts secrets: the known values it was built with, and the patterns."""

    def __init__(self, known: Mapping[str, str] | None = None) -> None:
        # value -> the label of its placeholder
        self.known: dict[str, str] = {v: label for v, label in (known or {}).items() if worth_redacting(v)}
        # decoded string -> what it holds
        self._cache: dict[str, frozenset[Detection]] = {}
        self._cached_characters = 0
        self._known_forms: tuple[str, ...] | None = None
        self._known_substrings: Substrings | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Redactor:
        """A redactor for the credentials of ``environ`` (the process environment by default)."""
        return cls(environment_credentials(os.environ if environ is None else environ))

    # -- finding ---------------------------------------------------------------------------

    def detect(self, text: str, *, binary: bool = False) -> list[Detection]:
        """Every secret in ``text``, each value once, longest first. In a ``binary`` text (a
        file with NUL bytes, read as latin-1) only known values, tokens and private keys are
        looked for: the keyword and entropy plugins would take random bytes for secrets."""
        found: dict[str, Detection] = {}

        def add(detection: Detection) -> None:
            # A value two plugins flag takes the more specific kind, whatever the scan order.
            old = found.get(detection.value)
            if old is None or PRIORITY[detection.kind] < PRIORITY[old.kind]:
                found[detection.value] = detection

        for detection in self.detect_in_raw_text(text):
            add(detection)
        # Each string once (a transcript repeats its history's), and none too short to hold
        # anything `detect_in_string` reports (see `strings_clean`): what is found is the same.
        seen: set[str] = set()
        for string in () if binary else decoded_strings(text):
            if len(string) < MIN_SECRET_LENGTH or string in seen:
                continue
            seen.add(string)
            for detection in self.detect_in_string(string):
                add(detection)
        return sorted(found.values(), key=lambda d: (-len(d.value), d.value))

    def detect_in_raw_text(self, text: str) -> list[Detection]:
        """What `detect` finds in the text as it is (known values, tokens, private keys), before
        it looks at the text's decoded strings."""
        found = [
            Detection(value, SecretKind.ENVIRONMENT_CREDENTIAL, label)
            for value, label in self.known.items()
            if any(form in text for form in _forms(value))
        ]
        found.extend(Detection(value, kind, kind) for value, kind in token_values(text))
        found.extend(Detection(b, SecretKind.PRIVATE_KEY, SecretKind.PRIVATE_KEY) for b in private_key_blocks(text))
        return found

    def detect_in_string(self, string: str) -> frozenset[Detection]:
        """What `detect` finds in one decoded string of a text (cached: a history is re-sent on
        every request, so its strings are scanned once)."""
        cached = self._cache.get(string)
        if cached is None:
            cached = frozenset(self._scan_decoded(string)) or _NOTHING
            with self._lock:
                if len(self._cache) >= _CACHE_LIMIT or self._cached_characters >= _CACHE_CHARACTERS:
                    self._cache.clear()
                    self._cached_characters = 0
                self._cache[string] = cached
                self._cached_characters += len(string)
        return cached

    def strings_clean(self, strings: Iterable[str], *, remember_up_to: int | None = None) -> bool:
        """Whether `detect_in_string` finds nothing in any of ``strings``. Every value it
        finds is a part of its string at least `MIN_SECRET_LENGTH` long, so shorter strings
        (most keys and small values of a JSON document) are not looked up. Strings longer than
        ``remember_up_to`` characters are scanned without being looked up or kept in the cache
        (a caller that keeps its own verdict for them: a replay's long tool results would
        otherwise stay in memory); None looks every string up."""
        for string in strings:
            if len(string) < MIN_SECRET_LENGTH:
                continue
            if remember_up_to is None or len(string) <= remember_up_to:
                found = self.detect_in_string(string)
            else:
                found = self._scan_decoded(string)
            if found:
                return False
        return True

    def known_forms(self) -> tuple[str, ...]:
        """Every form of every known value, as `detect_in_raw_text` looks for them."""
        if self._known_forms is None:
            self._known_forms = tuple(form for value in self.known for form in _forms(value))
        return self._known_forms

    def may_find_in_raw_text(self, text: str) -> bool:
        """A cheap test that `detect_in_raw_text` finds nothing in ``text`` when it is False:
        every token plugin runs only where one of its hints is (lowercased), a private key
        needs its marker, and a known value one of its forms."""
        if self._known_substrings is None:
            self._known_substrings = Substrings(self.known_forms())
        return raw_hint_in(text.lower()) or _KEY_MARKERS.in_(text) or self._known_substrings.in_(text)

    @staticmethod
    def _scan_decoded(string: str) -> set[Detection]:
        found = {Detection(v, k, k) for v, k in token_values(string)}
        found.update(Detection(b, SecretKind.PRIVATE_KEY, SecretKind.PRIVATE_KEY) for b in private_key_blocks(string))
        found.update(Detection(v, SecretKind.SECRET_KEYWORD, SecretKind.SECRET_KEYWORD) for v in keyword_values(string))
        found.update(
            Detection(v, SecretKind.HIGH_ENTROPY_STRING, SecretKind.HIGH_ENTROPY_STRING) for v in entropy_values(string)
        )
        return found

    # -- redacting -------------------------------------------------------------------------

    def redact_text(self, text: str, *, binary: bool = False) -> str:
        """``text`` with every secret replaced by its placeholder (``binary``: see `detect`)."""
        if not text:
            return text
        detections = self.detect(text, binary=binary)
        if not detections:
            return text
        return _replace_all(text, detections)

    def redact_pieces(self, pieces: Sequence[str]) -> list[str]:
        """``pieces`` of one text (the deltas of a streamed answer) redacted as the whole text
        is, a secret split across pieces included: each secret's placeholder goes to the piece it
        starts in, and the pieces it covers lose its characters. ``"".join`` of the result is
        `redact_text` of ``"".join(pieces)``; the number of pieces is kept."""
        whole = "".join(pieces)
        detections = self.detect(whole) if whole else []
        if not detections:
            return list(pieces)
        pattern, by_form = _pattern(detections)
        return replace_in_pieces(pieces, [(m.start(), m.end(), by_form[m.group()]) for m in pattern.finditer(whole)])

    def redact_bytes(self, data: bytes) -> bytes:
        """``data`` redacted: as UTF-8 text, or else byte for byte as latin-1 (every byte is a
        character there, so what is not a secret comes back unchanged)."""
        binary = b"\x00" in data
        try:
            return self.redact_text(data.decode("utf-8"), binary=binary).encode("utf-8")
        except UnicodeDecodeError:
            return self.redact_text(data.decode("latin-1"), binary=binary).encode("latin-1")

    def redact_value(self, value: Any, memo: dict[str, str | None] | None = None) -> Any:
        """A JSON value with every string (keys too) redacted: a copy, or the value itself when
        nothing in it is secret. With a ``memo`` (a string's redacted form, or None when it has
        nothing to redact; for one pass over many values) each distinct string is redacted once."""
        seen: dict[str, str | None] = {} if memo is None else memo
        redact_text = self.redact_text

        def text(string: str) -> str:
            redacted = seen.get(string, _UNSEEN)
            if redacted is _UNSEEN:
                found = redact_text(string)
                redacted = seen[string] = None if found == string else found
            return string if redacted is None else redacted

        def walk(item: Any) -> Any:
            # A copy is made only from the first member that changes: a body's strings are
            # mostly repeats the memo answers, and most bodies hold no secret at all.
            if isinstance(item, str):
                return text(item)
            if isinstance(item, list):
                members: list[Any] | None = None
                for index, member in enumerate(item):
                    new_member = walk(member)
                    if members is None:
                        if new_member is member:
                            continue
                        members = item[:index]
                    members.append(new_member)
                return item if members is None else members
            if isinstance(item, dict | Mapping):  # a dict first: the abstract check is slower
                pairs: list[tuple[Any, Any]] | None = None
                for index, (key, member) in enumerate(item.items()):
                    new_key = text(key) if isinstance(key, str) else walk(key)
                    new_member = walk(member)
                    if pairs is None:
                        if new_key is key and new_member is member:
                            continue
                        pairs = list(islice(item.items(), index))
                    pairs.append((new_key, new_member))
                return item if pairs is None else dict(pairs)
            return item

        return walk(value)

    def locate(self, text: str, *, binary: bool = False) -> list[tuple[int, int, Detection]]:
        """Where each secret of ``text`` is: (1-based line, 1-based column, detection), in
        reading order; a value written in a form not found verbatim is placed at its first line."""
        located: set[tuple[int, int, Detection]] = set()
        starts = _line_starts(text)
        for detection in self.detect(text, binary=binary):
            offsets = [m.start() for form in _forms(detection.value) for m in re.finditer(re.escape(form), text)]
            if not offsets:
                head = detection.value.splitlines()[0] if detection.value.strip() else detection.value
                offsets = [m.start() for m in re.finditer(re.escape(head), text)] or [0]
            for offset in offsets:
                line = _line_of(starts, offset)
                located.add((line + 1, offset - starts[line] + 1, detection))
        return sorted(located, key=lambda item: (item[0], item[1], item[2].kind))


def _forms(value: str) -> tuple[str, ...]:
    """The ways ``value`` can be written in a text: as it is, JSON-escaped, and its UTF-8 bytes
    read as latin-1."""
    forms = {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
    try:
        forms.add(value.encode("utf-8").decode("latin-1"))
    except UnicodeError:  # pragma: no cover - every str encodes as UTF-8 except lone surrogates
        pass
    return tuple(sorted(forms, key=len, reverse=True))


def _replace_all(text: str, detections: Iterable[Detection]) -> str:
    pattern, by_form = _pattern(detections)
    return pattern.sub(lambda match: by_form[match.group()], text)


def _pattern(detections: Iterable[Detection]) -> tuple[re.Pattern[str], dict[str, str]]:
    by_form: dict[str, str] = {}
    for detection in detections:
        for form in _forms(detection.value):
            by_form.setdefault(form, detection.placeholder)
    # One pass, longest form first: a secret inside a longer one goes with the longer one.
    return re.compile("|".join(re.escape(form) for form in sorted(by_form, key=len, reverse=True))), by_form


def _line_starts(text: str) -> list[int]:
    starts = [0]
    starts.extend(match.end() for match in re.finditer(r"\r\n|\r|\n", text))
    return starts


def _line_of(starts: list[int], offset: int) -> int:
    return bisect.bisect_right(starts, offset) - 1


_CURRENT: dict[tuple[tuple[str, str], ...], Redactor] = {}
_CURRENT_LOCK = threading.Lock()
# The environment last seen and its redactor: the same mapping again (the usual case, a replay
# asks once per request) is told by comparing the stored entries, without sorting and decoding
# them all.
_LAST: tuple[dict[Any, Any], Redactor] | None = None


def _environment_credentials(entries: Sequence[tuple[Any, Any]]) -> dict[str, str]:
    """`environment_credentials` of the environment's entries as the OS holds them (bytes on
    POSIX). Most environments name no credential and hold no hint of one: that is told from
    all names and all values joined, decoded once, before any entry is decoded on its own."""
    if entries and isinstance(entries[0][0], bytes):
        if _UTF8_FILE_SYSTEM:
            # No entry holds a NUL, and UTF-8 decodes the bytes on either side of one as it
            # would each on its own: every decoded name and value is in these texts.
            names = b"\0".join(name for name, _ in entries).decode("utf-8", "surrogateescape")
            values = b"\0".join(value for _, value in entries).decode("utf-8", "surrogateescape")
            if not may_hold_credentials(names, values):
                return {}
        encoding = sys.getfilesystemencoding()  # as `os.environ` decodes
        entries = [
            (name.decode(encoding, "surrogateescape"), value.decode(encoding, "surrogateescape"))
            for name, value in entries
        ]
    return environment_credentials(dict(entries))


def current_redactor() -> Redactor:
    """The redactor for this process's environment as it is now (cached per environment, so a
    variable set later, by a test say, is known too)."""
    global _LAST
    data = getattr(os.environ, "_data", None)
    last = _LAST
    if last is not None and data == last[0]:
        return last[1]
    # The entries as the OS gave them (bytes on POSIX): decoding each through `os.environ`'s
    # own methods was most of what a process's first replay paid for its redactor.
    snapshot = tuple(sorted(data.items() if isinstance(data, dict) else os.environ.items()))
    redactor = _CURRENT.get(snapshot)
    if redactor is None:
        redactor = Redactor(_environment_credentials(snapshot))
        with _CURRENT_LOCK:
            if len(_CURRENT) > 16:
                _CURRENT.clear()
            _CURRENT[snapshot] = redactor
    if isinstance(data, dict):
        _LAST = (dict(data), redactor)
    return redactor
