"""Request fingerprints: what makes two requests "the same request".

A fingerprint is the SHA-256 of the method, the URL path and query and the canonical JSON of the
body (sorted keys, compact) after normalization: the workspace, home and temp paths, UUIDs,
timestamps and durations become placeholders, so a session recorded in one folder on one day
replays in another folder on another day. The temp folder is the process's own (TMPDIR) for a
live request and the recording's for a recorded one (`Normalizer.temp`, from the cassette's
``recorded_paths``), so a session recorded under one TMPDIR replays under any other.

The query parameter ``beta=true`` is left out (`route_key`): older SDKs and the Claude Code CLI
add it to ``/v1/messages`` for the same request that anthropic 2.x sends without it; every other
query parameter counts. Headers never take part (they vary by machine, attempt and SDK version).
The body's key order never matters either: the SDK's ``create()`` and ``stream()`` order keys
differently.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, NamedTuple

from replay.storage.parsed_json import parsed_encoder

__all__ = [
    "IGNORED_QUERY_PARAMETERS",
    "TEMP_PLACEHOLDER",
    "Normalizer",
    "canonical_json",
    "canonical_json_of_parsed",
    "digest_normalized",
    "fingerprint",
    "fingerprint_with_body",
    "home_folder",
    "parse_body",
    "replaying",
    "route_key",
    "temp_folders",
    "temp_folders_apart",
    "temp_paths",
]

_UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
_TIMESTAMP = re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?(?![\d:])")
_DURATION = re.compile(r"(?<![\w.])\d+(?:\.\d+)?\s?(?:ms|milliseconds?|s|secs?|seconds?)\b")
TEMP_PLACEHOLDER: Final = "<tmp>"
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
    # The temp folders (as given and resolved) whose entries become <tmp>, besides the usual temp
    # roots: a recording's, so that its fingerprints do not depend on the TMPDIR of the machine
    # reading it. None: this process's (`temp_folders`), as for a live request.
    temp: tuple[str, ...] | None = None
    # Folders replaced as before temp folders were recorded (`_legacy_text`): how a cassette that
    # records none (`normalizer_for`), and a replay of it (`replaying`), read its bodies, so that
    # one written then recomputes its fingerprints, and replays, as it did.
    legacy: bool = False
    # Normalized text of values already seen: an agent loop re-sends its whole history, so
    # each request brings only a few new messages to normalize.
    _seen: dict[str, str] = field(default_factory=dict, compare=False, hash=False, repr=False)
    # The last `_Steps` used, with the home and temp folders it was built for.
    _last: list[_Steps] = field(default_factory=list, compare=False, hash=False, repr=False)

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
        home = home_folder() if self.home is None else self.home
        if self.legacy:
            text = self._legacy_text(text, home)
        else:
            temp = self.temp or _TEMP_FOLDERS or temp_folders()
            last = self._last
            known = last[0] if last and last[0].home == home and last[0].temp_folders == temp else None
            steps = known or self._steps(home, temp)
            for path, placeholder, entries in steps.folders:
                if path in text:
                    text = text.replace(path, placeholder) if entries is None else entries.sub(TEMP_PLACEHOLDER, text)
            if "/" in text:
                text = steps.temp.sub(TEMP_PLACEHOLDER, text)
        if _UUID_HINT.search(text):
            text = _UUID.sub("<uuid>", text)
        if _TIMESTAMP_HINT.search(text):
            text = _TIMESTAMP.sub("<timestamp>", text)
        if (_ASCII_DURATION_HINT if text.isascii() else _DURATION_HINT).search(text):
            text = _DURATION.sub("<duration>", text)
        return text

    def _legacy_text(self, text: str, home: str) -> str:
        """The folders replaced as before temp folders were recorded: the roots, then the home
        folder, then the entries of the usual temp roots and of this process's TMPDIR as given."""
        for path, placeholder in self.roots:
            if path and path in text:
                text = text.replace(path, placeholder)
        if home not in ("", "/") and home in text:
            text = text.replace(home, "<home>")
        if "/" in text:
            text = _legacy_temp().entries.sub(TEMP_PLACEHOLDER, text)
        return text

    def temp_folders(self) -> tuple[str, ...]:
        """The temp folders this normalizer reads: its own, or this process's (`temp_folders`;
        as given only, for a `legacy` one)."""
        if self.legacy:
            return _legacy_temp().folders
        return self.temp or temp_folders()

    def temp_roots(self) -> tuple[str, ...]:
        """The folders whose entries this normalizer replaces with ``<tmp>``, longest first."""
        return _legacy_temp().roots if self.legacy else _temp_roots(self.temp_folders())

    def _steps(self, home: str, temp: tuple[str, ...]) -> _Steps:
        # Built once per home and temp folder (the last kept on the normalizer: a hit compares two).
        steps = _steps(self.roots, home, temp)
        self._last[:] = [steps]
        return steps

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


_TEMP_FOLDERS: tuple[str, ...] | None = None
_LEGACY_TEMP: _LegacyTemp | None = None
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


def temp_folders() -> tuple[str, ...]:
    """This process's temp folder (``tempfile.gettempdir()``, read once), as given and resolved:
    a recording's tools may print either (``mktemp`` the first, ``pwd`` the second)."""
    global _TEMP_FOLDERS
    if _TEMP_FOLDERS is None:
        folder = tempfile.gettempdir()
        _TEMP_FOLDERS = tuple(dict.fromkeys((folder, os.path.realpath(folder))))
    return _TEMP_FOLDERS


def temp_paths(folders: tuple[str, ...]) -> re.Pattern[str]:
    """An entry of the usual temp roots or of ``folders`` (the folder right under one, which
    varies per run), as `Normalizer.text` replaces it with ``<tmp>``."""
    return _entries(_temp_roots(folders))


def replaying(live: Normalizer, recorded: Normalizer) -> Normalizer:
    """``live`` (this run's folders) that also replaces the entries of the recording's temp
    folder: an answer replayed from the cassette that names one (a file the model made there)
    comes back in the next request as the recording wrote it, whatever this run's TMPDIR."""
    if recorded.legacy:  # a cassette that records no temp folder: read as it was then
        return Normalizer(live.roots, live.home, legacy=True)
    if recorded.temp is None or set(recorded.temp_roots()) <= set(live.temp_roots()):
        return live
    return Normalizer(live.roots, live.home, temp=tuple(dict.fromkeys((*live.temp_folders(), *recorded.temp))))


def temp_folders_apart(*normalizers: Normalizer) -> tuple[str, ...]:
    """The temp folders whose entries not all of ``normalizers`` replace, and this process's own
    normalizer with them (none when all read this process's temp folder, as a recording and its
    replay on one machine do): a text holding none of them is read alike by all."""
    read = [set(normalizer.temp_roots()) for normalizer in (*normalizers, Normalizer())]
    return tuple(sorted(set.union(*read) - set.intersection(*read)))


@dataclass(frozen=True)
class _Steps:
    """How `Normalizer.text` replaces folders under one home and temp folder: ``folders`` in
    order (path, placeholder, and for a temp root the pattern of its entries), then ``temp``."""

    home: str
    temp_folders: tuple[str, ...]
    folders: tuple[tuple[str, str, re.Pattern[str] | None], ...]
    temp: re.Pattern[str]


@functools.lru_cache(maxsize=64)
def _steps(roots: tuple[tuple[str, str], ...], home: str, temp: tuple[str, ...]) -> _Steps:
    folders = [(path, placeholder) for path, placeholder in roots if path]
    if home not in ("", "/"):
        folders.append((home, "<home>"))
    temp_roots = _temp_roots(temp)
    # Longest first: a temp root inside another folder (TMPDIR=~/tmp) is replaced before that
    # folder, so its entries become <tmp> as they do under any other TMPDIR; a folder inside the
    # temp root (the session's workspace) is replaced before it, as it comes first anyway.
    inside: dict[int, list[str]] = {}
    for root in temp_roots:
        index = next((i for i, (path, _) in enumerate(folders) if root.startswith(path.rstrip("/") + "/")), None)
        if index is not None:
            inside.setdefault(index, []).append(root)
    ordered: list[tuple[str, str, re.Pattern[str] | None]] = []
    for index, (path, placeholder) in enumerate(folders):
        ordered.extend((root + "/", TEMP_PLACEHOLDER, _entries((root,))) for root in inside.get(index, ()))
        ordered.append((path, placeholder, None))
    return _Steps(home, temp, tuple(ordered), _entries(temp_roots))


class _LegacyTemp(NamedTuple):
    """This process's TMPDIR as given, the usual temp roots with it, and their entries' pattern,
    as `Normalizer.legacy` reads them: read once per process (a replay's every text uses it)."""

    folders: tuple[str, ...]
    roots: tuple[str, ...]
    entries: re.Pattern[str]


def _legacy_temp() -> _LegacyTemp:
    global _LEGACY_TEMP
    if _LEGACY_TEMP is None:
        folders = (tempfile.gettempdir(),)
        roots = _temp_roots(folders)
        _LEGACY_TEMP = _LegacyTemp(folders, roots, _entries(roots))
    return _LEGACY_TEMP


@functools.lru_cache(maxsize=64)
def _temp_roots(folders: tuple[str, ...]) -> tuple[str, ...]:
    roots = {*_TEMP_ROOTS, *(folder.rstrip("/") for folder in folders)}
    return tuple(sorted((root for root in roots if root), key=len, reverse=True))


@functools.lru_cache(maxsize=64)
def _entries(roots: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(root) for root in roots)
    return re.compile(rf"(?:{alternatives})/[^\s\"'/\\]+")


def parse_body(body: bytes) -> Any:
    """A request body as a fingerprint reads it: its JSON when it parses, else its text."""
    if not body:
        return None
    try:
        return json.loads(body)
    except ValueError:
        return body.decode("utf-8", errors="replace")
