"""The line reader's flow collections read as JSON: `as_json`, and `FlowJson`, which reads a line
that differs from an earlier one only in its last single-quoted string without tokenizing it again.

A cassette's streamed answer is many events alike but for their text
(``- {event: content_block_delta, data: {..., text: '...'}}``); tokenizing each with
`_JSON_STRING` cost most of reading it.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from replay.storage._yaml_events import Unusual

__all__ = ["FAST_SCAN", "RESOLVED_FIRST", "WORDS", "FlowJson", "as_json"]

_MAX_LINE: Final = 1024  # libyaml's limit on a simple key's line: longer ones are left to it
_MAX_TEMPLATES: Final = 4096

# A one-line flow collection reads as JSON once its strings are quoted as JSON quotes them, when
# it is made only of tokens whose JSON spelling is the same but for the quotes: plain scalars
# that are strings whatever their letters (no resolver's first character, or a letter but not
# in one of the words the bool and null resolvers take), single-quoted strings without '' " or
# \, double-quoted ones with only the escapes JSON reads alike; and, between them, brackets,
# ", ", ": ", true, false, null and decimal numbers without an exponent.
RESOLVED_FIRST: Final = frozenset(("", *"0123456789+-.~yYnNtTfFoO"))  # where a resolver may start
WORDS: Final = "yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF|null|Null|NULL"
_JSON_PLAIN = (
    rf"(?<=[{{\[ ])(?:[^\s,\[\]{{}}:#'\"?&*!|>%@`\\0-9+\-.~yYnNtTfFoO]|(?!(?:{WORDS})[,\]}}:])[yYnNtTfFoO])"
    r"[^,\[\]{}:#\"\\]*(?<! )(?=[,\]}:])"
)
_JSON_DQ_TEXT = r'(?:[^"\\]|\\["\\bfnrt]|\\u(?![dD][89a-fA-F])[0-9a-fA-F]{4})*'
# Such a string token with its quotes left out: `re.split` leaves them out and keeps what the
# group holds, and joining the parts with '"' puts JSON's quotes round each.
_JSON_STRING: Final = re.compile(
    rf"(?<=[{{\[ ])['\"]?((?<=')[^'\"\\]*(?=')|(?<=\"){_JSON_DQ_TEXT}(?=\")|{_JSON_PLAIN})['\"]?"
)
# What is left between them (joined by NUL, which no text holds).
_JSON_GLUE: Final = re.compile(
    r"(?:[{}\[\]]|, |: |\x00|(?:true|false|null|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?)(?=[,\]}]))*"
)
FAST_SCAN: Final = json.JSONDecoder().scan_once


def as_json(text: str) -> tuple[str, Any] | None:
    """A flow collection as JSON text and its value, when it reads as JSON (see `_JSON_STRING`)
    to the same data, repeated keys apart (refused); libyaml's 1,024-character limit on a key's
    line never applies below."""
    if len(text) > _MAX_LINE:
        return None
    parts = _JSON_STRING.split(text)
    if _JSON_GLUE.fullmatch("\x00".join(parts[::2])) is None:
        return None
    as_json = '"'.join(parts)
    try:
        value, end = _CHECK_SCAN(as_json, 0)
    except (ValueError, StopIteration):
        return None
    return (as_json, value) if end == len(as_json) else None


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    mapping = dict(pairs)
    if len(mapping) != len(pairs):
        raise Unusual  # a repeated key: the full loader decides
    return mapping


_CHECK_SCAN: Final = json.JSONDecoder(object_pairs_hook=_unique).scan_once


class FlowJson:
    """`as_json`, remembering for each line with single-quoted strings where its last one goes
    in its JSON. Another line that differs only inside that string (no quote or backslash in it)
    reads as that JSON with the string put in: everything before the string tokenizes as in the
    line with it empty (a token is decided by the characters up to one past its end, and the
    empty line's own tokens end before the string, which begins with a quote), everything after
    it too (it follows a closing quote in both), and the string is a value, not a key, so no key
    repeats that did not before (`_template` checks all three)."""

    __slots__ = ("_templates",)

    def __init__(self) -> None:
        # The line with its last single-quoted string emptied -> the JSON before and after it.
        self._templates: dict[str, tuple[str, str] | None] = {}

    def read(self, text: str) -> tuple[str, Any] | None:
        end = text.rfind("'")
        start = text.rfind("'", 0, end) if end > 0 else -1
        if start < 0 or len(text) > _MAX_LINE:
            return as_json(text)
        content = text[start + 1 : end]
        if '"' in content or "\\" in content:
            return as_json(text)
        template = text[: start + 1] + text[end:]
        known = self._templates.get(template)
        if known is None:
            if template in self._templates or len(self._templates) >= _MAX_TEMPLATES:
                return as_json(text)
            known = self._templates[template] = _template(template, start)
            if known is None:
                return as_json(text)
        joined = known[0] + content + known[1]
        try:
            value, stop = FAST_SCAN(joined, 0)
        except (ValueError, StopIteration):  # a character JSON refuses in a string
            return as_json(text)
        return (joined, value) if stop == len(joined) else as_json(text)


def _template(text: str, at: int) -> tuple[str, str] | None:
    """The JSON of ``text`` before and after the empty single-quoted string at ``at``, when
    ``text`` reads as JSON and that string is one of its tokens and not a key."""
    if as_json(text) is None:
        return None
    parts = _JSON_STRING.split(text)
    joined = '"'.join(parts)
    offset = json_at = len(parts[0])  # where token 1 starts, in the text and in the JSON
    for index in range(1, len(parts), 2):
        token, glue = parts[index], parts[index + 1]
        if offset == at:
            if token or text[at] != "'" or glue.startswith(": "):
                return None
            return joined[: json_at + 1], joined[json_at + 1 :]
        if offset > at:
            return None
        # A quoted token's match holds its quotes; a plain one's holds none.
        offset += len(token) + (2 if text[offset] in "'\"" else 0) + len(glue)
        json_at += len(token) + 2 + len(glue)
    return None
