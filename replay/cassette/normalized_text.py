"""A request body's normalized canonical JSON text (`Normalizer.body`) kept as the pieces it is
made of, as `replay.cassette.request_keys` computes them: its members' normalized texts in key
order and, for ``messages``, its elements'. Those are the same string objects the player's piece
caches hold, so a replay's request log and the keys kept by raw body
(`replay.cassette.raw_keys`) keep a few pointers per request instead of a copy of every body
(an agent loop re-sends its whole history each time)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["MESSAGES_OPENING", "NormalizedText", "SharedParser"]

MESSAGES_OPENING: Final = '"messages":['

# A body's members in key order: a member's normalized text, or for ``messages`` its elements'.
_Members = tuple[str | tuple[str, ...], ...]


@dataclass(frozen=True, slots=True)
class NormalizedText:
    """A body's normalized text as its members' pieces (see the module's docstring), joined
    only when read: the cache audit reads a logged body, a replay alone never does."""

    members: _Members

    @property
    def text(self) -> str:
        return "{" + ",".join(_member_text(member) for member in self.members) + "}"

    def parsed(self) -> Any:
        """The body as data: its text, parsed."""
        return json.loads(self.text)

    def size(self) -> int:
        """The length of `text`, without joining it."""
        size = 1 + len(self.members)  # the braces and the commas between members
        for member in self.members:
            size += len(member) if type(member) is str else _messages_size(member)
        return size


def _member_text(member: str | tuple[str, ...]) -> str:
    return member if type(member) is str else MESSAGES_OPENING + ",".join(member) + "]"


def _messages_size(elements: tuple[str, ...]) -> int:
    return len(MESSAGES_OPENING) + 1 + sum(map(len, elements)) + max(len(elements) - 1, 0)


_UNREAD: Final = object()


class SharedParser:
    """Parses the normalized bodies of one session, each member and message text read once:
    bodies parsed by one parser share the objects their shared pieces give, so a history re-sent
    on every request is parsed once, and is the same objects in every body (what
    `replay.prompt_cache.planner.PrefixPlanner` knows a section by). ``parsed(text)`` equals
    ``text.parsed()``; what it returns must not be changed. It keeps the pieces of the body
    before only, whatever the session's length."""

    def __init__(self) -> None:
        self._members: dict[str, tuple[str, Any]] = {}  # a member's text -> its key and value
        self._elements: dict[str, Any] = {}  # a message's text -> it

    def parsed(self, text: NormalizedText) -> dict[str, Any]:
        body: dict[str, Any] = {}
        members: dict[str, tuple[str, Any]] = {}
        elements: dict[str, Any] = {}
        for member in text.members:
            if type(member) is str:
                found = self._members.get(member)
                if found is None:
                    # `"key":value`, parsed as the object it is the one member of.
                    (found,) = json.loads("{" + member + "}").items()
                members[member] = found
                body[found[0]] = found[1]
            else:
                messages = []
                for element in member:
                    value = self._elements.get(element, _UNREAD)
                    if value is _UNREAD:
                        value = json.loads(element)
                    elements[element] = value
                    messages.append(value)
                body["messages"] = messages
        self._members, self._elements = members, elements
        return body
