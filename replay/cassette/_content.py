"""The content table: message content stored once, request bodies as references to it.

An agent loop re-sends its whole history on every call. Each element of a request's
``messages`` goes into the table under a short content hash, and the request keeps only keys:
``{$refs: [...]}``, or ``{$extends: i, $then: [...]}`` when the list continues the list of an
earlier interaction ``i``. ``tools`` and ``system`` (when longer than a line) become
``{$ref: key}``. A value under those three keys that itself looks like a reference (a mapping
with a ``$`` key) is wrapped as ``{$literal: value}``, so expanding is exact for any body.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from replay.cassette.fingerprints import canonical_json, canonical_json_of_parsed
from replay.storage.strict_yaml import FlowSeq

__all__ = [
    "MESSAGE_PREFIX",
    "SYSTEM_PREFIX",
    "TOOLS_PREFIX",
    "ContentReader",
    "ContentWriter",
    "FormatProblem",
    "content_key",
    "sorted_data",
]

MESSAGE_PREFIX: Final = "m-"
TOOLS_PREFIX: Final = "t-"
SYSTEM_PREFIX: Final = "s-"
KEY_HEX_DIGITS: Final = 16
# Reference lists up to this long are written on one line.
_ONE_LINE_KEYS: Final = 4
# tools/system whose canonical JSON is at most this long stay inline: a reference saves nothing.
INLINE_LIMIT: Final = 64

_REFERENCED: Final = {"messages": MESSAGE_PREFIX, "tools": TOOLS_PREFIX, "system": SYSTEM_PREFIX}
_KEY = re.compile(r"^[mts]-[0-9a-f]+$")


DEFAULT_REMEDY: Final = "fix that entry, or re-record the cassette"


class FormatProblem(Exception):
    """A problem at a place in the file, and what to do about it; the caller names the file."""

    def __init__(self, where: str, problem: str, remedy: str = DEFAULT_REMEDY) -> None:
        super().__init__(f"{where}: {problem}; {remedy}")
        self.where = where
        self.problem = problem
        self.remedy = remedy


def content_key(prefix: str, canonical: str) -> str:
    """``prefix`` + the first hex digits of the SHA-256 of a value's canonical JSON."""
    return prefix + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:KEY_HEX_DIGITS]


def sorted_data(value: Any) -> Any:
    """A copy of a JSON value with every mapping's keys in sorted order."""
    if isinstance(value, Mapping):
        return {key: sorted_data(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [sorted_data(item) for item in value]
    return value


class ContentWriter:
    """Builds the table while request bodies are encoded in interaction order."""

    def __init__(self) -> None:
        self.table: dict[str, Any] = {}
        self._canonical: dict[str, str] = {}
        # Chain hash of a whole messages list -> (interaction index, its keys), for $extends.
        self._lists: dict[int, tuple[int, list[str]]] = {}

    def add(self, prefix: str, value: Any) -> str:
        """The key of ``value``, stored on first sight. Two different values under one key (a
        hash-prefix collision) raise `FormatProblem`: silently aliasing them would replay the
        wrong message."""
        canonical = canonical_json(value)
        key = content_key(prefix, canonical)
        known = self._canonical.get(key)
        if known is None:
            self._canonical[key] = canonical
            self.table[key] = sorted_data(value)
        elif known != canonical:
            raise FormatProblem(
                f"content[{key}]",
                "two different values have this content key (a hash collision)",
                "nothing was written; report this, it needs longer keys",
            )
        return key

    def encode_body(self, index: int, body: Any) -> Any:
        """The body of interaction ``index`` as stored: sorted, with references."""
        if not isinstance(body, Mapping):
            return sorted_data(body)
        encoded: dict[str, Any] = {}
        for name in sorted(body):
            value = body[name]
            if name == "messages" and isinstance(value, list):
                encoded[name] = self._encode_messages(index, value)
            elif name in _REFERENCED and _looks_like_reference(value):
                encoded[name] = {"$literal": sorted_data(value)}
            elif name in ("tools", "system") and len(canonical_json(value)) > INLINE_LIMIT:
                encoded[name] = {"$ref": self.add(_REFERENCED[name], value)}
            else:
                encoded[name] = sorted_data(value)
        return encoded

    def _encode_messages(self, index: int, messages: list[Any]) -> dict[str, Any]:
        keys = [self.add(MESSAGE_PREFIX, message) for message in messages]
        chain = _chain_hashes(keys)
        extends: tuple[int, int] | None = None  # (interaction, prefix length)
        for length in range(len(keys), 0, -1):
            found = self._lists.get(chain[length - 1])
            if found is not None and found[1] == keys[:length]:
                extends = (found[0], length)
                break
        if keys:
            self._lists[chain[-1]] = (index, keys)
        if extends is None:
            return {"$refs": _key_line(keys)}
        return {"$extends": extends[0], "$then": _key_line(keys[extends[1] :])}


class ContentReader:
    """Checks the table and expands request bodies, in interaction order."""

    def __init__(self, table: Mapping[str, Any], *, keys_checked: bool = False) -> None:
        # keys_checked: a compiled copy of a table whose keys were checked when it was compiled.
        for key, value in table.items():
            where = f"content[{key}]"
            if not isinstance(key, str) or not _KEY.match(key):
                raise FormatProblem(where, "a content key is m-, t- or s- followed by hex digits")
            if keys_checked:
                continue
            # A decoded table holds JSON's types only, and no cycle (YAML aliases are refused).
            expected = content_key(key[:2], canonical_json_of_parsed(value))
            if key != expected:
                raise FormatProblem(
                    where,
                    f"the key does not match the hash of its value (that value's key is {expected})",
                    "the entry was edited after recording; re-record the cassette, or restore it from version control",
                )
        self._table = table
        self._messages: dict[int, list[Any]] = {}

    def decode_body(self, index: int, body: Any, where: str) -> Any:
        """The original body of interaction ``index``."""
        if type(body) is not dict and not isinstance(body, Mapping):  # a dict first: the ABC check is slow
            return body
        decoded: dict[str, Any] = {}
        for name, value in body.items():
            if name in _REFERENCED and _looks_like_reference(value):
                decoded[name] = self._expand(index, name, value, f"{where}.{name}")
            else:
                decoded[name] = value
            if name == "messages" and isinstance(decoded[name], list):
                self._messages[index] = decoded[name]
        return decoded

    def _expand(self, index: int, name: str, ref: Mapping[str, Any], where: str) -> Any:
        form = set(ref)
        if form == {"$literal"}:
            return ref["$literal"]
        if name in ("tools", "system") and form == {"$ref"}:
            return self._lookup(ref["$ref"], _REFERENCED[name], where)
        if name == "messages" and form == {"$refs"}:
            return [self._lookup(key, MESSAGE_PREFIX, where) for key in _key_list(ref["$refs"], where)]
        if name == "messages" and form == {"$extends", "$then"}:
            earlier = ref["$extends"]
            if not isinstance(earlier, int) or isinstance(earlier, bool) or not 0 <= earlier < index:
                raise FormatProblem(where, f"$extends {earlier!r} does not name an earlier interaction")
            if earlier not in self._messages:
                raise FormatProblem(where, f"$extends {earlier} points to an interaction without a messages list")
            then = [self._lookup(key, MESSAGE_PREFIX, where) for key in _key_list(ref["$then"], where)]
            return [*self._messages[earlier], *then]
        expected = {"messages": "$refs, or $extends with $then", "tools": "$ref", "system": "$ref"}[name]
        raise FormatProblem(where, f"{sorted(form)} is not a reference form; expected {expected}, or $literal")

    def _lookup(self, key: Any, prefix: str, where: str) -> Any:
        if not isinstance(key, str) or key not in self._table:
            raise FormatProblem(where, f"the reference {key!r} points nowhere: the content table has no such key")
        if not key.startswith(prefix):
            raise FormatProblem(where, f"the reference {key!r} should name a {prefix} entry")
        return self._table[key]


def _looks_like_reference(value: Any) -> bool:
    return (type(value) is dict or isinstance(value, Mapping)) and any(
        isinstance(k, str) and k.startswith("$") for k in value
    )


def _key_list(keys: Any, where: str) -> Sequence[Any]:
    if not isinstance(keys, list):
        raise FormatProblem(where, "a reference list must be a list of content keys")
    return keys


def _key_line(keys: list[str]) -> list[str]:
    return FlowSeq(keys) if len(keys) <= _ONE_LINE_KEYS else keys


def _chain_hashes(keys: list[str]) -> list[int]:
    hashes: list[int] = []
    current = 0
    for key in keys:
        current = hash((current, key))
        hashes.append(current)
    return hashes
