"""A dataclass field that may be given encoded and is decoded at its first read.

A loaded cassette keeps each event stream as the chunks a client reads (`EncodedEvents`), and a
replay's request log keeps each body as the pieces of its normalized text (`NormalizedText`):
a replay alone never reads either as data, so neither is decoded unless someone reads it (a
review, the cache audit). Then it is decoded once and kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["DecodedOnRead"]


class DecodedOnRead:
    """The descriptor behind such a field: a value of type ``encoded`` (or one of them) set on it
    is replaced by ``decode(value)`` at the first read; any other value is kept as it is."""

    def __init__(self, encoded: type | tuple[type, ...], decode: Callable[[Any], Any]) -> None:
        self._encoded = encoded if isinstance(encoded, tuple) else (encoded,)
        self._decode = decode

    def __set_name__(self, owner: type, name: str) -> None:
        self._slot = f"_{name}"

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        if instance is None:
            return None  # the dataclass field's default
        value = self.stored(instance)
        if type(value) in self._encoded:
            value = instance.__dict__[self._slot] = self._decode(value)
        return value

    def stored(self, instance: object) -> Any:
        """What the field holds now, not decoded (an encoded value stays encoded)."""
        return instance.__dict__[self._slot]

    def __set__(self, instance: object, value: Any) -> None:
        # The dataclass passes the descriptor itself when no value is given.
        instance.__dict__[self._slot] = None if isinstance(value, DecodedOnRead) else value
