"""`cacheable_prefixes`, `count_block_marks` and `estimate_request_tokens` of a session's requests
in the order they were sent, each block written once.

An agent loop re-sends its whole history on every request, so an audit that writes every block
of every request anew costs the square of the session's length. A `PrefixPlanner` keeps what
the sections of the request before wrote — its tools, its system prompt, each of its messages at
its position: the lines of their blocks, their marks, the size of their compact JSON — and
knows a section again by identity. Bodies parsed so that the pieces they share are the same
objects (`replay.cassette.normalized_text.SharedParser`) find all but their new sections known.
A request whose blocks start with the ones of the request before continues the hash from where
they stop being the same. Sections the request before did not have are forgotten, so a planner
keeps one request's worth whatever the session's length.

Sections are known by identity: a body must not change once planned (the behaviour trace's
bodies are parsed for the audit alone). A body that is not a dict with string keys is planned the
plain way.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from replay.prompt_cache.prefixes import (
    Block,
    CacheablePrefix,
    CacheTtl,
    PrefixPlan,
    block_lines,
    breakpoint_ttl,
    cacheable_prefixes,
    compact_size,
    count_block_marks,
    estimate_request_tokens,
    message_blocks,
    system_blocks,
    tokens_of_size,
    tool_blocks,
)

__all__ = ["PrefixPlanner", "RequestPrefixes"]

# Where a section that is not a message sits (a message's is its index).
_TOOLS: Final = -1
_SYSTEM: Final = -2


class RequestPrefixes(NamedTuple):
    """One request's `cacheable_prefixes`, `count_block_marks` and `estimate_request_tokens`."""

    plan: PrefixPlan
    block_marks: int
    tokens: int


def plain_request_prefixes(request: Mapping[str, Any]) -> RequestPrefixes:
    """`RequestPrefixes` of one request on its own."""
    return RequestPrefixes(cacheable_prefixes(request), count_block_marks(request), estimate_request_tokens(request))


@dataclass(frozen=True, slots=True)
class _Section:
    """What one section of a body writes."""

    source: object  # what it was read from, kept so that its id is not reused while it is known
    paths: tuple[str, ...]
    lines: tuple[bytes, ...]
    sizes: tuple[int, ...]  # each block's bytes counted as tokens
    ttls: tuple[CacheTtl | None, ...]  # each block's own breakpoint
    marks: int  # blocks carrying a mark
    compact: int  # bytes of the source's compact JSON


def _section(source: object, blocks: Iterable[Block]) -> _Section:
    lines = list(block_lines(blocks))
    paths, texts, sizes, ttls, marked = zip(*lines, strict=True) if lines else ((), (), (), (), ())
    return _Section(source, paths, texts, sizes, ttls, sum(marked), compact_size(source))


class PrefixPlanner:
    """Plans the requests of one session in order (see the module)."""

    def __init__(self) -> None:
        self._known: dict[tuple[int, int], _Section] = {}
        # The request before: its blocks' lines, the hash after each, their sizes summed up to
        # each, and its prefixes.
        self._lines: list[bytes] = []
        self._states: list[Any] = []
        self._sums: list[int] = []
        self._prefixes: list[CacheablePrefix] = []

    def plan(self, request: Mapping[str, Any]) -> RequestPrefixes:
        """What `plain_request_prefixes` gives ``request``."""
        if type(request) is not dict or not all(type(key) is str for key in request):
            return plain_request_prefixes(request)
        known, kept = self._known, {}

        def section(source: object, at: int, blocks: Iterable[Block]) -> _Section:
            key = (id(source), at)
            found = known.get(key)
            if found is None:
                found = _section(source, blocks)
            kept[key] = found
            return found

        tools: list[_Section] = []
        system: list[_Section] = []
        messages: list[_Section] = []
        size = 1  # the compact JSON's "{", then each member and the "," before it
        for index, (key, value) in enumerate(request.items()):
            size += (index > 0) + compact_size(key) + 1
            if key == "tools" and isinstance(value, list):
                tools.append(section(value, _TOOLS, tool_blocks(value)))
                size += tools[0].compact
            elif key == "system" and (isinstance(value, list) or (isinstance(value, str) and value)):
                system.append(section(value, _SYSTEM, system_blocks(value)))
                size += system[0].compact
            elif key == "messages" and isinstance(value, list):
                messages = [
                    section(message, number, message_blocks(number, message)) for number, message in enumerate(value)
                ]
                size += 1 + sum(message.compact for message in messages) + max(len(messages) - 1, 0) + 1
            else:
                size += compact_size(value)
        size += 1  # "}"
        self._known = kept
        sections = [*tools, *system, *messages]
        plan = self._plan(sections, breakpoint_ttl(request.get("cache_control")))
        return RequestPrefixes(plan, sum(section.marks for section in sections), tokens_of_size(size))

    def _plan(self, sections: list[_Section], automatic: CacheTtl | None) -> PrefixPlan:
        paths = [path for section in sections for path in section.paths]
        lines = [line for section in sections for line in section.lines]
        sizes = [size for section in sections for size in section.sizes]
        ttls = [ttl for section in sections for ttl in section.ttls]
        if automatic is not None and ttls and ttls[-1] is None:
            ttls[-1] = automatic
        last_lines, last_prefixes = self._lines, self._prefixes
        # The blocks the request before also starts with. A line is its place's text, then its
        # block's (a JSON object): the same line is the same place and block, the same size.
        shared, limit = 0, min(len(lines), len(last_lines))
        while shared < limit and (lines[shared] is last_lines[shared] or lines[shared] == last_lines[shared]):
            shared += 1
        prefixes: list[CacheablePrefix] = []
        for index in range(shared):
            before = last_prefixes[index]
            if before.path == paths[index] and before.ttl is ttls[index]:
                prefixes.append(before)
            else:
                prefixes.append(
                    CacheablePrefix(
                        position=index + 1,
                        path=paths[index],
                        digest=before.digest,
                        tokens=before.tokens,
                        ttl=ttls[index],
                    )
                )
        states, sums = self._states[:shared], self._sums[:shared]
        hasher = states[-1].copy() if shared else hashlib.sha256()
        total = sums[-1] if shared else 0
        for index in range(shared, len(lines)):
            hasher.update(lines[index])
            total += sizes[index]
            state = hasher.copy()
            states.append(state)
            sums.append(total)
            prefixes.append(
                CacheablePrefix(
                    position=index + 1,
                    path=paths[index],
                    digest=state.hexdigest(),
                    tokens=tokens_of_size(total),
                    ttl=ttls[index],
                )
            )
        self._lines, self._states, self._sums, self._prefixes = lines, states, sums, prefixes
        return PrefixPlan(prefixes=tuple(prefixes))
