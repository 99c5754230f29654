"""`load_yaml`'s second path, after the line reader of `_yaml_lines`: plain data built straight
from libyaml's events.

PyYAML's loader composes the whole document into a tree of nodes (each with two marks), then
walks that tree through a generic, per-node constructor: for a cassette that is hundreds of
Python objects and calls per interaction, most of them thrown away. This builds the dicts,
lists and scalars in one loop over the parser's events, with no node tree.

It handles only what a cassette written by agent-replay contains: untagged mappings with string
keys, sequences and scalars, no anchors, no repeated keys, moderate nesting, so what it builds is
always JSON data. Anything else raises `Unusual`, and
`load_yaml` reads the text again with the full loader, which accepts or refuses it exactly as
before (its errors carry the marks and wording users see). Scalars resolve with the loader's
own implicit resolvers and constructors, so both paths give the same data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, Any, Final

import yaml
from yaml.constructor import SafeConstructor
from yaml.events import (
    DocumentEndEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
    StreamStartEvent,
)
from yaml.nodes import ScalarNode

__all__ = ["AVAILABLE", "MAX_DEPTH", "SHARED_LENGTH", "ItemHook", "Scalars", "Unusual", "construct_plain"]

try:
    from yaml._yaml import CParser
except ImportError:  # PyYAML without libyaml: the full loader does everything
    CParser = None

AVAILABLE: Final = CParser is not None and getattr(yaml, "__with_libyaml__", False)
_STR: Final = "tag:yaml.org,2002:str"
# Deeper documents go to the full loader, which decides how deep is too deep.
MAX_DEPTH: Final = 100


class Unusual(Exception):
    """The text holds something the lean path leaves to the full loader."""


# A top-level key, and what each mapping in the list under it becomes as soon as it is built.
ItemHook = tuple[str, Callable[[dict[str, Any]], Any]]


def construct_plain(
    text: str | bytes | IO[bytes], resolvers: dict[Any, list[tuple[str, Any]]], items: ItemHook | None = None
) -> Any:
    """The one document in ``text`` (str, UTF-8 bytes, or a binary file libyaml reads as it goes),
    built from events, made only of JSON values (string keys); ``resolvers`` are the full
    loader's implicit resolvers. ``items``: each mapping in the list under that top-level key
    is handed to the function as soon as it is complete, and what it returns is kept instead
    (so the whole document as plain data never exists at once). Raises `Unusual` for anything
    it does not handle, or any parse error."""
    if CParser is None:
        raise Unusual
    parser = CParser(text)
    try:
        return _build(parser, Scalars(resolvers), items)
    except yaml.YAMLError:
        raise Unusual from None
    finally:
        parser.dispose()


class Scalars:
    """Plain scalars resolved as the full loader resolves them, for one document: a short one
    resolved once (the same few numbers, booleans, nulls and words recur thousands of times in a
    cassette), and one str object kept per distinct short text (each copy would cost 50-100
    bytes)."""

    def __init__(self, resolvers: dict[Any, list[tuple[str, Any]]]) -> None:
        if resolvers.get(None):
            raise Unusual  # a wildcard resolver would apply to every scalar: leave it to the loader
        self._resolvers = {first: found for first, found in resolvers.items() if found}
        self._constructor = SafeConstructor()
        self._shared: dict[str, str] = {}
        self._resolved: dict[str, Any] = {}

    def shared(self, text: str) -> str:
        """``text``, as the one object kept for it when it is short."""
        return self._shared.setdefault(text, text) if len(text) <= SHARED_LENGTH else text

    def resolved(self, text: str) -> Any:
        """`plain` of a plain scalar's ``text``, looked up when it is short (a string shared)."""
        if len(text) > SHARED_LENGTH:
            return self.plain(text)
        known = self._resolved.get(text, _MISSING)
        if known is _MISSING:
            value = self.plain(text)
            known = self._resolved[text] = self.shared(value) if type(value) is str else value
        return known

    def plain(self, value: str) -> Any:
        candidates = self._resolvers.get(value[0] if value else "")
        if candidates is None:
            return value
        for tag, pattern in candidates:
            if pattern.match(value):
                if tag == _INT_TAG and value.isdigit() and value.isascii() and (value[0] != "0" or value == "0"):
                    return int(value)  # what `construct_yaml_int` makes of a plain decimal (token counts)
                constructor = self._constructor.yaml_constructors[tag]
                result = constructor(self._constructor, ScalarNode(tag, value))
                break
        else:
            return value
        if not isinstance(result, (int, float, bool)) and result is not None:
            raise Unusual
        return result


_MISSING: Final = object()
_INT_TAG: Final = "tag:yaml.org,2002:int"
# Texts up to this long are shared and their resolution looked up (`Scalars`).
SHARED_LENGTH: Final = 48


def _build(parser: Any, scalars: Scalars, items: ItemHook | None) -> Any:
    get = parser.get_event
    if type(get()) is not StreamStartEvent:
        raise Unusual
    event = get()
    if type(event) is StreamEndEvent:
        return None  # an empty stream: no document
    if type(event) is not DocumentStartEvent:
        raise Unusual
    # Each open container: the dict or list, and for a dict the key waiting for its value.
    stack: list[list[Any]] = []
    root: Any = _MISSING
    resolved, shared = scalars.resolved, scalars.shared
    while True:
        event = get()
        kind = type(event)
        if kind is ScalarEvent:
            if event.anchor is not None or event.tag is not None:
                raise Unusual
            value: Any = resolved(event.value) if event.implicit[0] else shared(event.value)
        elif kind is MappingStartEvent or kind is SequenceStartEvent:
            if event.anchor is not None or event.tag is not None or len(stack) >= MAX_DEPTH:
                raise Unusual
            stack.append([{} if kind is MappingStartEvent else [], _MISSING])
            continue
        elif kind is MappingEndEvent or kind is SequenceEndEvent:
            value = stack.pop()[0]
            # An item of the top-level list under the hook's key: [root mapping, that list].
            if items is not None and len(stack) == 2 and kind is MappingEndEvent and stack[0][1] == items[0]:
                value = items[1](value)
        elif kind is DocumentEndEvent:
            break
        else:  # an alias, or something unexpected
            raise Unusual
        if not stack:
            root = value
            continue
        frame = stack[-1]
        container = frame[0]
        if type(container) is list:
            container.append(value)
        elif frame[1] is _MISSING:
            # A key: only a string (what JSON allows), never seen before in this mapping.
            if type(value) is not str or kind is not ScalarEvent or value in container:
                raise Unusual
            frame[1] = value
        else:
            container[frame[1]] = value
            frame[1] = _MISSING
    if type(get()) is not StreamEndEvent or root is _MISSING:
        raise Unusual  # a second document: the full loader names the problem
    return root
