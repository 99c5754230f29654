"""A live request whose body is, as data, the next recorded request's body is that request sent
again: the player answers it with the recorded fingerprint, without keying it (`SentAgain`).

Why that is its fingerprint. A fingerprint digests the normalized text of the scrubbed body, and
`Normalizer.body` reads a body only through the canonical JSON of each member and of each element
of ``messages``. So when each of those is the recorded one's text:

- both normalizers (the recording's folders and this run's) leave a text holding none of their
  folders to the same steps, and those read the home folder, which is checked to be the one the
  recorded fingerprints were computed under: they give the recorded normalized text;
- scrubbing the body changes nothing unless the redactor finds something in it. Its raw-text
  detectors (tokens, private keys, this environment's credentials) read the text the client
  sent, as the keyed path has them read it: wherever one's hint is in a new member or message (a
  hint holds no character that separates them, so one in the body is in one of them), the whole
  text; a credential's form is also looked for in each new member's raw text, key included, and
  in the whole body when it could span two. A body they find anything in is keyed and scrubbed.
  What its decoded-string detectors (keywords, high entropy) could find is in strings of the
  data the text parses to, which are the recording's (the keyed path's scrub reads that data
  too): the one difference is a recording that holds such a secret, a request the keyed path
  would scrub into another and this one answers as recorded; ``replay scrub --check`` reports
  the cassette. The body the request log keeps is built when it is read, from the recorded
  data, as the keyed path logs it, scrubbed whole where a decoded-string detector finds anything
  (`LoggedBodies`), under the home folder and credentials of the moment it was matched: no
  secret reaches a trace either way.

How it is told cheaply. An agent loop re-sends its history: the next body repeats the last one's
text but for its newest messages, and the next recorded body holds the last one's message
objects (a loaded cassette's content table gives every request of a session the same objects).
A body that repeats the last body's text up to the messages the recording shares, and after its
list of messages, is the recorded one when its new elements are; those are parsed and compared
by their canonical text, each once. Any other body is read whole, member by member. Canonical
text, not ``==``: ``1 == 1.0 == True`` in Python, not in a fingerprint; but a message or member
whose raw text holds no number, no boolean and no ``\\u`` or ``\\/`` escape is compared with ``==``,
and its raw text looked in for folders and credentials (`_plain_object`, `_plain_value`: there
``==`` is equality of the canonical texts, and the strings are written as the canonical text
writes them).

After the first request that is not the next recorded one (this run's folder in a tool's
output, say) the player stops looking: the requests after it re-send that message.
"""

from __future__ import annotations

import hashlib
import json
import operator
import re
from typing import Any, Final

from replay.cassette.decoded_on_read import DecodedOnRead
from replay.cassette.fingerprints import (
    Normalizer,
    canonical_json,
    canonical_json_of_parsed,
    fingerprint_with_body,
    home_folder,
    parse_body,
    temp_folders_apart,
)
from replay.cassette.interaction import RecordedRequest
from replay.cassette.normalized_text import NormalizedText
from replay.cassette.request_keys import piece_verdict
from replay.redact.redactor import Redactor, current_redactor
from replay.redact.substrings import Substrings

__all__ = ["LOGGED_BODY", "KeyedOnRead", "LoggedBodies", "SentAgain", "logged_pieces", "parsed_log_body"]

_MESSAGES: Final = "messages"
# What separates the pieces of a JSON body: a credential's form holding one could span two.
_STRUCTURE: Final = frozenset('",:[]{}')
# How many of the last list's messages may have been written anew (a moved cache marker).
_REWRITTEN: Final = 3
_scan = json.JSONDecoder().scan_once  # (text, index) -> (value, end), StopIteration if none


class _Differs(Exception):
    """The body is not the recorded one, or this path cannot tell that it is."""


class _Told:
    """The last body told sent again: its text, the recorded body it is, where its list of
    messages starts (after ``[``, -1 when it has none) and closes (its ``]``), and where each
    element of the list ends."""

    __slots__ = ("close", "ends", "recorded", "start", "suspect", "text")

    def __init__(
        self, text: str, recorded: dict[str, Any], start: int, close: int, ends: list[int], suspect: bool
    ) -> None:
        self.text, self.recorded, self.start, self.close, self.ends = text, recorded, start, close, ends
        # A raw-text detector's hint may be in the text (`Redactor.may_find_in_raw_text`).
        self.suspect = suspect


class SentAgain:
    """Tells whether a live request is the next recorded request sent again (see the module)."""

    def __init__(self, recorded: Normalizer, live: Normalizer, fingerprints_home: str | None) -> None:
        self._folders = (
            *(root for root, _ in (*recorded.roots, *live.roots) if root),
            *temp_folders_apart(recorded, live),  # a recording's TMPDIR that is not this run's
        )
        self._bodies_logged = LoggedBodies(live)
        self._home = fingerprints_home
        self._looking = fingerprints_home is not None
        self._redactor: Redactor | None = None
        self._looked_for = Substrings(())  # built with the redactor, at the first request
        self._plain = False  # what is looked for can be looked for in a plain element's raw text
        self._spanning: tuple[bytes, ...] = ()  # credential forms looked for in the whole body
        # member key -> (the recorded value last read, its canonical text, None when not usable)
        self._members: dict[str, tuple[Any, str | None]] = {}
        self._last: _Told | None = None

    @property
    def looking(self) -> bool:
        """Whether a request may still be told sent again (not after the first that was not)."""
        return self._looking

    def sent_again(self, request: RecordedRequest, method: str, path: str, body: bytes) -> bool:
        """Whether ``body`` is ``request``'s body as data, which then gives it its fingerprint."""
        recorded = request.body
        if not self._looking or type(recorded) is not dict or home_folder() != self._home:
            return False
        if request.method != method or request.path != path:
            return False
        redactor = current_redactor()
        if redactor is not self._redactor:
            self._start_over(redactor)
        try:
            if any(form in body for form in self._spanning):
                raise _Differs
            text = body.decode("utf-8")
            told = self._following(text, recorded) if self._last is not None else None
            told = told or self._read_whole(text, recorded)
            # What the raw-text detectors find depends on the text's layout (a pattern reaches
            # across strings, in the client's key order): they read the text the client sent, as
            # the keyed path does, wherever one's hint is.
            if told.suspect and self._redactor.detect_in_raw_text(text):  # type: ignore[union-attr]
                raise _Differs
            self._last = told
        except (_Differs, UnicodeDecodeError, StopIteration, IndexError, ValueError, RecursionError):
            self._looking, self._last = False, None
            return False
        return True

    def logged_body(self, method: str, path: str, request: RecordedRequest) -> KeyedOnRead:
        """What the log keeps for the request `sent_again` just told (read under its home and
        redactor)."""
        assert self._home is not None and self._redactor is not None
        return KeyedOnRead(self._bodies_logged, method, path, request, self._home, self._redactor)

    def _start_over(self, redactor: Redactor) -> None:
        # What is usable depends on the redactor's credentials.
        forms = redactor.known_forms()
        self._redactor = redactor
        self._looked_for = Substrings((*self._folders, *forms))
        self._plain = not any(_STRUCTURE.intersection(looked) for looked in (*self._folders, *forms))
        self._spanning = tuple(form.encode("utf-8", "surrogatepass") for form in forms if _STRUCTURE.intersection(form))
        self._members.clear()
        self._last = None

    def _following(self, text: str, recorded: dict[str, Any]) -> _Told | None:
        """The body told from the last one (see the module), or None when it does not follow it."""
        last = self._last
        assert last is not None
        messages, before = recorded.get(_MESSAGES), last.recorded
        if last.start < 0 or type(messages) is not list or recorded.keys() != before.keys():
            return None
        for key, value in recorded.items():
            earlier_value = before[key]
            if key == _MESSAGES or value is earlier_value or _same_scalar(value, earlier_value):
                continue
            # Another object: the same when its canonical text is.
            known = self._members.get(key)
            previous = known[1] if known is not None and known[0] is earlier_value else self._member(key, earlier_value)
            if previous is None or self._member(key, value) != previous:
                return None
        earlier = before[_MESSAGES]
        shared = min(len(earlier), len(messages))
        while shared and not all(map(operator.is_, messages[:shared], earlier[:shared])):
            shared = shared - 1 if len(earlier) - shared < _REWRITTEN else 0
        cut = last.ends[shared - 1] if shared else last.start
        if not text.startswith(last.text[:cut]):
            return None
        ends = last.ends[:shared]
        close = self._elements(text, cut, messages, shared, ends)
        tail = last.text[last.close :]
        if len(text) - len(tail) != close or not text.endswith(tail):
            return None
        suspect = last.suspect or self._redactor.may_find_in_raw_text(text[cut:close])  # type: ignore[union-attr]
        return _Told(text, recorded, last.start, close, ends, suspect)

    def _read_whole(self, text: str, recorded: dict[str, Any]) -> _Told:
        """The body read member by member, each compared with the recorded one's."""
        if text[0] != "{" or text[1] == "}":
            raise _Differs  # not an object, or an empty one: rare, the keyed path has them
        keys: set[str] = set()
        start = close = -1
        ends: list[int] = []
        position = 1
        while True:
            if text[position] != '"':
                raise _Differs
            key, colon = _scan(text, position)
            if text[colon] != ":" or key in keys or key not in recorded:
                raise _Differs
            keys.add(key)
            value = recorded[key]
            if key == _MESSAGES and type(value) is list and text[colon + 1] == "[":
                if self._looked_for.in_(text[position:colon]):
                    raise _Differs
                start = colon + 2
                close = self._elements(text, start, value, 0, ends)
                end = close + 1
            else:
                parsed, end = _scan(text, colon + 1)
                # The raw text is what scrubbing reads (a credential in the key, an escape that
                # writes one), the canonical text what the normalizer reads.
                if self._looked_for.in_(text[position:end]):
                    raise _Differs
                # A plain value's canonical text holds what its raw text does (looked in above).
                plain = self._plain and _plain_value(text[colon + 1 : end]) and parsed == value
                if not plain and self._member(key, value) != canonical_json_of_parsed(parsed):
                    raise _Differs
            if text[end] == "}" and end + 1 == len(text):
                break
            if text[end] != ",":
                raise _Differs
            position = end + 1
        if len(keys) != len(recorded):
            raise _Differs
        return _Told(text, recorded, start, close, ends, self._redactor.may_find_in_raw_text(text))  # type: ignore[union-attr]

    def _elements(self, text: str, position: int, messages: list[Any], index: int, ends: list[int]) -> int:
        """Reads the list's elements from ``position`` (after its ``[``, or after its element
        ``index - 1``), each compared with ``messages[index]`` and on; their ends go to ``ends``.
        Returns where its ``]`` is."""
        if text[position] == "]":
            close = position
        else:
            if index:
                if text[position] != ",":
                    raise _Differs
                position += 1
            count, looked_for, canonical = len(messages), self._looked_for.in_, canonical_json_of_parsed
            first = position
            while True:
                if index >= count:
                    raise _Differs
                parsed, end = _scan(text, position)
                # A plain element's canonical text holds what its raw text does (looked in below).
                if not (self._plain and _plain_object(text[position:end]) and parsed == messages[index]):
                    recorded = canonical(messages[index])
                    if recorded != canonical(parsed) or looked_for(recorded):
                        raise _Differs
                ends.append(end)
                index += 1
                separator = text[end]
                if separator == "]":
                    close = end
                    break
                if separator != ",":
                    raise _Differs
                position = end + 1
            # The new elements' raw text, in one read: what scrubbing reads (a credential, an
            # escape that writes one) and, for a plain element, what the normalizer reads.
            if looked_for(text[first:close]):
                raise _Differs
        if index != len(messages):
            raise _Differs
        return close

    def _member(self, key: str, value: Any) -> str | None:
        """The canonical text of the recorded member ``key`` (kept while its value is the same
        object), None when it is not usable."""
        known = self._members.get(key)
        if known is None or known[0] is not value:
            known = self._members[key] = (value, self._usable(canonical_json_of_parsed(value)))
        return known[1]

    def _usable(self, canonical: str) -> str | None:
        """``canonical``, or None when it holds a folder or a credential's form."""
        return None if self._looked_for.in_(canonical) else canonical


class LoggedBodies:
    """The bodies a player's log keeps for the requests told sent again, as the keyed path would
    have logged them, built when read from the recorded data: each member and message object
    read once (its canonical text, the redactor's verdict on it, kept for the process by its
    digest, and its normalized text), each body then a lookup per message. A body in which a
    decoded-string detector finds anything is scrubbed whole and normalized, as the keyed path
    does (its raw-text detectors found nothing in the text the request was sent as)."""

    def __init__(self, live: Normalizer) -> None:
        self._live = live  # its folders, temp folders and way of reading them; the home is the match's
        self._context: tuple[str, Redactor] | None = None
        self._normalizer = self._under(None)
        # id of a recorded member value or message -> (it, its normalized text; None: not clean)
        self._texts: dict[int, tuple[Any, str | None]] = {}
        self._names: dict[str, str | None] = {}  # a member's key -> its canonical text; None: not clean

    def parsed(self, method: str, path: str, request: RecordedRequest, home: str, redactor: Redactor) -> Any:
        """``request``'s body as the fingerprint reads it under ``home`` and ``redactor``, parsed."""
        text = self.normalized(request, home, redactor)
        return text.parsed() if text is not None else self._scrubbed(method, path, request, redactor)

    def normalized(self, request: RecordedRequest, home: str, redactor: Redactor) -> NormalizedText | None:
        """``request``'s body as the fingerprint reads it under ``home`` and ``redactor``, as its
        pieces; None when a decoded-string detector finds anything in it (`parsed` scrubs it)."""
        if self._context != (home, redactor):
            self._context = (home, redactor)
            self._normalizer = self._under(home)
            self._texts.clear()
            self._names.clear()
        body: dict[str, Any] = request.body
        members: list[str | tuple[str, ...]] = []
        for key in sorted(body):
            value = body[key]
            if key == _MESSAGES and type(value) is list:
                elements = tuple(self._text(item, redactor) for item in value)
                if None in elements:
                    return None
                members.append(elements)  # type: ignore[arg-type]  # no None left
            else:
                text, name = self._text(value, redactor), self._name(key, redactor)
                if text is None or name is None:
                    return None
                members.append(f"{name}:{text}")
        return NormalizedText(tuple(members))

    def _under(self, home: str | None) -> Normalizer:
        live = self._live
        return Normalizer(live.roots, home=home, temp=live.temp, legacy=live.legacy)

    def _name(self, key: str, redactor: Redactor) -> str | None:
        """A member's key as its normalized text starts, None when it is not clean."""
        name = self._names.get(key, "")
        if name == "":
            canonical = canonical_json(key)
            name = self._names[key] = canonical if _clean(canonical, redactor) else None
        return name

    def _text(self, value: Any, redactor: Redactor) -> str | None:
        known = self._texts.get(id(value))
        if known is None or known[0] is not value:
            canonical = canonical_json_of_parsed(value)
            text = self._normalizer.json_text(canonical) if _clean(canonical, redactor) else None
            if len(self._texts) >= _TEXTS_KEPT:
                self._texts.clear()
            known = self._texts[id(value)] = (value, text)
        return known[1]

    def _scrubbed(self, method: str, path: str, request: RecordedRequest, redactor: Redactor) -> Any:
        parsed = parse_body(redactor.redact_bytes(request.body_bytes()))
        return fingerprint_with_body(method, path, parsed, normalizer=self._normalizer)[1]


def _clean(canonical: str, redactor: Redactor) -> bool:
    """Whether ``redactor``'s decoded-string detectors find nothing in the JSON text ``canonical``
    (its raw-text detectors found nothing in the text the request was sent as, or it would not
    have been told sent again)."""
    clean, _, _ = piece_verdict(canonical, hashlib.sha256(canonical.encode()).digest(), redactor)
    return clean


# Member values and messages whose normalized texts a player keeps for its log (a long session
# has a few thousand); past it, they are read again.
_TEXTS_KEPT: Final = 100_000


_UNBUILT: Final = object()  # a `KeyedOnRead`'s pieces before they are first built


class KeyedOnRead:
    """A logged body answered by `SentAgain`, built (`parsed`) only when it is read: a replay
    alone never reads it, the cache audit does. It is read as it would have been when matched:
    under that moment's home folder and redactor."""

    __slots__ = ("_bodies", "_home", "_method", "_path", "_pieces", "_redactor", "_request")

    def __init__(
        self, bodies: LoggedBodies, method: str, path: str, request: RecordedRequest, home: str, redactor: Redactor
    ) -> None:
        self._bodies, self._method, self._path, self._request = bodies, method, path, request
        self._home, self._redactor = home, redactor
        self._pieces: NormalizedText | object | None = _UNBUILT

    def parsed(self) -> Any:
        """The body as the fingerprint reads it, parsed: what the player logs for a keyed body."""
        return self._bodies.parsed(self._method, self._path, self._request, self._home, self._redactor)

    def normalized(self) -> NormalizedText | None:
        """The body as the fingerprint reads it, as its pieces (None: read it `parsed`); built
        once, as every trace of the run reads it."""
        if self._pieces is _UNBUILT:
            self._pieces = self._bodies.normalized(self._request, self._home, self._redactor)
        return self._pieces  # type: ignore[return-value]


def parsed_log_body(body: NormalizedText | KeyedOnRead) -> Any:
    """A logged body kept unread (`LoggedRequest.body`), as data."""
    return body.parsed()


# `LoggedRequest.body`: a logged body is kept unread, as its pieces, and parsed at the first read.
LOGGED_BODY: Final = DecodedOnRead((NormalizedText, KeyedOnRead), parsed_log_body)


def logged_pieces(logged: object) -> NormalizedText | None:
    """The body of ``logged`` (a `LoggedRequest`) as its normalized pieces while it is kept
    unread; None when it has none (read it parsed, as ``logged.body``), as for any other object
    that has a ``body``."""
    try:
        body = LOGGED_BODY.stored(logged)
    except (AttributeError, KeyError):  # not a LoggedRequest
        return None
    if type(body) is NormalizedText:
        return body
    return body.normalized() if type(body) is KeyedOnRead else None


def _same_scalar(value: Any, other: Any) -> bool:
    """Whether two scalars have the same canonical text without writing it: a string, an integer,
    a boolean or null of the same type and value (not a float: ``0.0 == -0.0``)."""
    kind = type(value)
    return kind is type(other) and kind in _SCALARS and value == other


_SCALARS: Final = frozenset({str, int, bool, type(None)})
# A number, true or false where a value starts (after ``:``, ``[`` or ``,``): a JSON text without
# one holds no number and no boolean, whatever its layout.
_NUMBER_OR_BOOLEAN: Final = re.compile(r"[:\[,]\s*[-0-9tf]")


def _plain_object(raw: str) -> bool:
    """Whether the JSON text ``raw`` is an object of only strings, nulls, objects and lists,
    with no escape but ``\\"``, ``\\\\`` and the short ones for control characters: then ``==``
    between its value and a recorded one is equality of their canonical texts (no ``1 == 1.0 ==
    True``), and its string tokens are written as in its canonical text."""
    return raw[0] == "{" and _plain_value(raw)


def _plain_value(raw: str) -> bool:
    """`_plain_object` for a member's value: also a list of the same, a string or null (its
    value holds only strings, nulls, lists and objects, which ``==`` only a value of their own
    type: equal, they have the same canonical text). ``NaN`` and ``Infinity`` are not looked for:
    a parsed one is equal only to a float infinity, or to the very NaN object, and both write the
    same text. The argument holds while the scanner is strict (no raw control character), the
    canonical text keeps ``ensure_ascii=False``, and recorded values are JSON's types."""
    if "\\u" in raw or "\\/" in raw:
        return False
    first = raw[0]
    return first == '"' or first == "n" or (first in "{[" and _NUMBER_OR_BOOLEAN.search(raw) is None)
