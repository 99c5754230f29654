"""Request fingerprints: what makes two requests "the same request".

A fingerprint is the SHA-256 of the method, the URL path and query and the canonical JSON of the
body (sorted keys, compact) after normalization: the workspace, home and temp paths, UUIDs,
timestamps and durations become placeholders, so a session recorded in one folder on one day
replays in another folder on another day. The query parameter ``beta=true`` is left out
(`route_key`): older SDKs and the Claude Code CLI add it to ``/v1/messages`` for the same request
that anthropic 2.x sends without it; every other query parameter counts. Headers never take part (they vary by machine,
attempt and SDK version). The body's key order never matters either: the SDK's ``create()``
and ``stream()`` order keys differently.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from replay.storage.parsed_json import parsed_encoder

__all__ = [
    "IGNORED_QUERY_PARAMETERS",
    "Normalizer",
    "canonical_json",
    "canonical_json_of_parsed",
    "digest_normalized",
    "fingerprint",
    "fingerprint_with_body",
    "home_folder",
    "parse_body",
    "route_key",
]

_UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
_TIMESTAMP = re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?(?![\d:])")
_DURATION = re.compile(r"(?<![\w.])\d+(?:\.\d+)?\s?(?:ms|milliseconds?|s|secs?|seconds?)\b")
# Temp folders of the usual platforms: the folder right under the temp root varies per run.
_TEMP_ROOTS = ("/tmp", "/var/tmp", "/private/tmp", "/private/var/folders", "/var/folders")
# Literal-led patterns every match of the pattern above contains: a text without one is left as
# it is without running the slower pattern (most texts hold no uuid, timestamp or duration).
_UUID_HINT = re.compile(r"-[0-9a-fA-F]{4}-")
_TIMESTAMP_HINT = re.compile(r":\d\d:")
_DURATION_HINT = re.compile(r"\d(?:[ms]|\s[ms])")
# The same hint for an ASCII text, in which \d is [0-9] (a range test per character, not a
# Unicode category lookup: a third faster over texts full of digits).
_ASCII_DURATION_HINT = re.compile(r"[0-9](?:[ms]|\s[ms])")
_CACHE_FROM = 24  # shorter values are cheaper to normalize than to look up
_CACHE_LIMIT = 50_000
# Query parameters that never change the answer: ``beta=true`` marks the SDK's beta resource
# (older SDKs, the Claude Code CLI), which sends the same body to the same endpoint.
IGNORED_QUERY_PARAMETERS: frozenset[str] = frozenset({"beta=true"})


# What ``json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`` builds on
# every call, built once.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces, UTF-8 kept: the same data always gives the same text."""
    return _CANONICAL.encode(value)


_ENCODE_PARSED: Final = parsed_encoder(_CANONICAL)


def canonical_json_of_parsed(value: Any) -> str:
    """`canonical_json` of a value the JSON parser built (only JSON's types, no cycle), without
    the encoder's set-up per call: a new message is keyed this way at a cassette's first replay."""
    return _ENCODE_PARSED(value)


@dataclass(frozen=True)
class Normalizer:
    """Replaces what varies between machines and runs with placeholders. ``roots`` are extra
    folders (the workspace, the session folder) named by their placeholder."""

    roots: tuple[tuple[str, str], ...] = ()
    # The home folder replaced with <home>; None: `home_folder()` at each call.
    home: str | None = None
    # Normalized text of values already seen: an agent loop re-sends its whole history, so
    # each request brings only a few new messages to normalize.
    _seen: dict[str, str] = field(default_factory=dict, compare=False, hash=False, repr=False)

    @classmethod
    def for_paths(cls, *, workspace: Path | None = None, session_dir: Path | None = None) -> Normalizer:
        roots: list[tuple[str, str]] = []
        for placeholder, path in (("<workspace>", workspace), ("<session>", session_dir)):
            if path is not None:
                for variant in {str(path), os.path.realpath(path)}:
                    roots.append((variant, placeholder))
        # Longest first, so a workspace inside the temp folder wins over the temp folder.
        return cls(tuple(sorted(roots, key=lambda r: -len(r[0]))))

    def text(self, text: str) -> str:
        """``text`` with every varying part replaced by its placeholder."""
        for path, placeholder in self.roots:
            if path and path in text:
                text = text.replace(path, placeholder)
        home = home_folder() if self.home is None else self.home
        if home not in ("", "/") and home in text:
            text = text.replace(home, "<home>")
        if "/" in text:
            text = _temp_paths().sub("<tmp>", text)
        if _UUID_HINT.search(text):
            text = _UUID.sub("<uuid>", text)
        if _TIMESTAMP_HINT.search(text):
            text = _TIMESTAMP.sub("<timestamp>", text)
        if (_ASCII_DURATION_HINT if text.isascii() else _DURATION_HINT).search(text):
            text = _DURATION.sub("<duration>", text)
        return text

    def body(self, body: Any) -> str:
        """The canonical, normalized text of a request body. Equal to normalizing the body's
        whole canonical JSON: no placeholder pattern reaches across a JSON value's quotes, so a
        body is normalized value by value (and each large value only once per normalizer)."""
        if body is None:
            return ""
        if isinstance(body, str):
            return self.text(body)
        if not isinstance(body, dict):
            return self.text(canonical_json(body))
        parts = []
        for key in sorted(body):
            value = body[key]
            if isinstance(value, list) and key == "messages":
                text = "[" + ",".join(self.value(item) for item in value) + "]"
            else:
                text = self.value(value)
            parts.append(f"{canonical_json(key)}:{text}")
        return "{" + ",".join(parts) + "}"

    def value(self, value: Any) -> str:
        """The normalized canonical JSON of one value of a body (cached when it is long)."""
        return self.json_text(canonical_json(value))

    def json_text(self, raw: str) -> str:
        """`text` of a value's canonical JSON (cached when it is long)."""
        if len(raw) < _CACHE_FROM:
            return self.text(raw)
        normalized = self._seen.get(raw)
        if normalized is None:
            if len(self._seen) >= _CACHE_LIMIT:
                self._seen.clear()
            normalized = self._seen[raw] = self.text(raw)
        return normalized


def route_key(path: str) -> str:
    """``path`` (with its query) as a fingerprint reads it: without `IGNORED_QUERY_PARAMETERS`,
    the other parameters kept as they are, in their order."""
    route, separator, query = path.partition("?")
    if not separator:
        return path
    kept = [parameter for parameter in query.split("&") if parameter not in IGNORED_QUERY_PARAMETERS]
    return f"{route}?{'&'.join(kept)}" if kept else route


def fingerprint(
    method: str, path: str, body: Any, *, normalizer: Normalizer | None = None, whole_query: bool = False
) -> str:
    """The hex SHA-256 that identifies a request for matching; ``path`` includes the query.
    ``whole_query`` keeps `IGNORED_QUERY_PARAMETERS` too, as fingerprints did before they were
    left out (a cassette written then stores those)."""
    return digest_normalized(method, path, (normalizer or Normalizer()).body(body), whole_query=whole_query)


def fingerprint_with_body(method: str, path: str, body: Any, *, normalizer: Normalizer) -> tuple[str, Any]:
    """The request's `fingerprint` and its body as the fingerprint reads it, parsed (None
    unless it is a JSON object): placeholders for what varies between runs, normalized once."""
    normalized = normalizer.body(body)
    return digest_normalized(method, path, normalized), json.loads(normalized) if isinstance(body, dict) else None


def digest_normalized(method: str, path: str, normalized: str, *, whole_query: bool = False) -> str:
    """The fingerprint of a request whose body's normalized text (`Normalizer.body`) is known."""
    digest = hashlib.sha256()
    digest.update(f"{method.upper()} {path if whole_query else route_key(path)}\n".encode())
    digest.update(normalized.encode("utf-8"))
    return digest.hexdigest()


_TEMP_PATTERN: re.Pattern[str] | None = None
_HOME: tuple[str, str] | None = None  # $HOME and what ``~`` expands to with it


def home_folder() -> str:
    """The home folder `Normalizer.text` replaces with ``<home>``: ``os.path.expanduser("~")``,
    expanded again only when $HOME changes."""
    global _HOME
    variable = os.environ.get("HOME")
    if variable is None:
        return os.path.expanduser("~")
    known = _HOME
    if known is None or known[0] != variable:
        known = _HOME = (variable, os.path.expanduser("~"))
    return known[1]


def _temp_paths() -> re.Pattern[str]:
    global _TEMP_PATTERN
    if _TEMP_PATTERN is None:
        roots: Iterable[str] = {*_TEMP_ROOTS, tempfile.gettempdir().rstrip("/")}
        alternatives = "|".join(re.escape(root) for root in sorted(roots, key=len, reverse=True) if root)
        _TEMP_PATTERN = re.compile(rf"(?:{alternatives})/[^\s\"'/\\]+")
    return _TEMP_PATTERN


def parse_body(body: bytes) -> Any:
    """A request body as a fingerprint reads it: its JSON when it parses, else its text."""
    if not body:
        return None
    try:
        return json.loads(body)
    except ValueError:
        return body.decode("utf-8", errors="replace")
