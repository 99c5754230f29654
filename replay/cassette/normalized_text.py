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

__all__ = ["MESSAGES_OPENING", "NormalizedText"]

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
