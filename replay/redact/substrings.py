"""Whether a text holds any of a few fixed strings, in fewer scans than one per string.

A detector's hints (``sk-``, ``akia``, ``ghp_``, ...) are looked for before its regexes run, in
every text a recording writes and every message a replay keys: a megabyte of text costs about a
millisecond a scan. The strings that start with the same character are looked for together, by
one regular expression that starts with their common prefix (the ``re`` module then jumps from
one occurrence of the prefix to the next, as fast as a ``str`` search), so the six AWS hints or
the five GitHub ones cost one scan; a string that holds a shorter one of the set is not looked
for at all (``sk-ant-`` is there only where ``sk-`` is). Whatever the strings, `Substrings.in_`
answers what ``any(s in text for s in strings)`` answers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

__all__ = ["Substrings"]


class Substrings:
    """A set of strings, to tell whether a text holds any of them."""

    def __init__(self, strings: Iterable[str]) -> None:
        needed: list[str] = []
        for string in sorted(set(strings), key=len):  # shortest first: what holds one is dropped
            if not any(shorter in string for shorter in needed):
                needed.append(string)
        by_first: dict[str, list[str]] = {}
        for string in needed:
            by_first.setdefault(string[:1], []).append(string)
        self._searches: tuple[Callable[[str], object], ...] = tuple(
            _search(sorted(group)) for group in by_first.values()
        )

    def in_(self, text: str) -> bool:
        """Whether ``text`` holds one of the strings (``any(s in text for s in strings)``)."""
        return any(search(text) for search in self._searches)


def _search(group: list[str]) -> Callable[[str], object]:
    """One scan for strings of one first character: a pattern of their common prefix, then the
    rest of each (the prefix leads, so the scan looks for it, not for every position's first
    character). A long string alone is a ``str`` search: it skips ahead by the string's length."""
    if len(group) == 1 and len(group[0]) >= _SKIPS_AHEAD:
        string = group[0]
        return lambda text: string in text
    first, last = group[0], group[-1]  # sorted: what these two share, every string between does
    shared = min(len(first), len(last))
    prefix = first[: next((i for i in range(shared) if first[i] != last[i]), shared)]
    rests = "|".join(re.escape(string[len(prefix) :]) for string in group)
    return re.compile(re.escape(prefix) + (f"(?:{rests})" if len(group) > 1 else "")).search


# From this length on, a string alone is found faster by ``in`` than by a pattern.
_SKIPS_AHEAD = 8
