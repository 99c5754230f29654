"""The cacheable prefixes of a Messages API request, from its body alone.

The API caches a request as one sequence of blocks in the order tools → system → messages
(https://platform.claude.com/docs/en/build-with-claude/prompt-caching): each tool definition,
each system text block (a string system prompt is one block), each content block of each
message (a string content is one block). A ``cache_control`` mark on a block is a breakpoint: the
prefix up to and including that block is what can be written to and read from the cache. A
top-level ``cache_control`` (automatic caching) marks the last block.

Each block is canonicalized on its own — compact JSON with sorted keys, its ``cache_control``
removed (a mark moved to a later block must not change the prefix before it), together with where
it sits (``["messages", 3, "user", {...}]``) so that a block moved into another message is another
prefix — and a prefix's canonical bytes are its blocks' lines, in order. Its hash is the SHA-256 of
those bytes; its token count is `estimate_tokens` of them, the fake model's estimate of a body.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from replay.storage.parsed_json import parsed_encoder

__all__ = [
    "LOOKBACK_BLOCKS",
    "Block",
    "CacheTtl",
    "CacheableBlock",
    "CacheablePrefix",
    "PrefixPlan",
    "block_lines",
    "breakpoint_ttl",
    "cacheable_blocks",
    "cacheable_prefixes",
    "compact_size",
    "count_block_marks",
    "estimate_request_tokens",
    "estimate_tokens",
    "message_blocks",
    "system_blocks",
    "tokens_of_size",
    "tool_blocks",
]

# The API checks for a hit at a breakpoint's block and the blocks before it, 20 block
# boundaries in all, not further back (the prompt caching docs, "lookback").
LOOKBACK_BLOCKS: Final = 20
_BYTES_PER_TOKEN: Final = 4


class CacheTtl(StrEnum):
    """A breakpoint's time to live, as ``cache_control.ttl`` spells it (absent means 5 minutes)."""

    FIVE_MINUTES = "5m"
    ONE_HOUR = "1h"

    @property
    def seconds(self) -> float:
        return 3600.0 if self is CacheTtl.ONE_HOUR else 300.0


def estimate_tokens(data: bytes) -> int:
    """The fake model's token estimate: one token per four bytes, rounded down (how it has always
    counted a request body, so a request without breakpoints reports what it always did)."""
    return tokens_of_size(len(data))


def tokens_of_size(size: int) -> int:
    """`estimate_tokens` of ``size`` bytes."""
    return size // _BYTES_PER_TOKEN


@dataclass(frozen=True, kw_only=True)
class CacheablePrefix:
    """The request's prefix up to one block: ``position`` counts blocks from 1; ``path`` names the
    block (``tools[2]``, ``system[0]``, ``messages[4].content[1]``); ``digest`` is the SHA-256 of
    its canonical bytes and ``tokens`` their estimate; ``ttl`` is set when the block is a breakpoint."""

    position: int
    path: str
    digest: str
    tokens: int
    ttl: CacheTtl | None = None

    @property
    def is_breakpoint(self) -> bool:
        return self.ttl is not None


@dataclass(frozen=True, kw_only=True)
class PrefixPlan:
    """Every block boundary of one request (``prefixes[i]`` ends at block ``i + 1``) and its
    breakpoints, in order."""

    prefixes: tuple[CacheablePrefix, ...]

    @property
    def breakpoints(self) -> tuple[CacheablePrefix, ...]:
        return tuple(prefix for prefix in self.prefixes if prefix.is_breakpoint)

    def lookback(self, breakpoint: CacheablePrefix) -> tuple[CacheablePrefix, ...]:
        """The prefixes a read at ``breakpoint`` may hit, longest first."""
        start = max(0, breakpoint.position - LOOKBACK_BLOCKS)
        return tuple(reversed(self.prefixes[start : breakpoint.position]))


@dataclass(frozen=True, kw_only=True)
class CacheableBlock:
    """One block of the cacheable sequence: ``path`` names it in the body (``tools[2]``,
    ``system[0]``, ``messages[4].content[1]``), ``block`` is it as sent and ``place`` where it
    sits (``["messages", 4, "user"]``: a block moved to another message is another block)."""

    path: str
    block: Mapping[str, Any]
    place: tuple[Any, ...]

    @property
    def unmarked(self) -> dict[str, Any]:
        """The block without its ``cache_control``: what the prefix's bytes are made of."""
        return _unmarked(self.block)


def cacheable_blocks(request: Mapping[str, Any]) -> tuple[CacheableBlock, ...]:
    """Every cacheable block of ``request`` (a parsed Messages API body), in the API's order."""
    return tuple(CacheableBlock(path=path, block=block, place=tuple(place)) for path, block, place in _blocks(request))


def count_block_marks(request: Mapping[str, Any]) -> int:
    """How many cacheable blocks of ``request`` carry a ``cache_control`` mark (a dict)."""
    return sum(isinstance(block.get("cache_control"), dict) for _, block, _ in _blocks(request))


def estimate_request_tokens(body: Mapping[str, Any]) -> int:
    """A parsed request body's estimated input tokens: `estimate_tokens` of its compact JSON,
    so two bodies that parse alike count alike however a client spaced them."""
    return estimate_tokens(_compact(body))


def _compact(value: Any) -> bytes:
    return _COMPACT(value).encode()


# `json.dumps` with these options, without making an encoder per call (a request's every block
# is written twice, and an agent loop re-sends its history): bodies here are parsed JSON.
_COMPACT: Final = parsed_encoder(json.JSONEncoder(separators=(",", ":"), ensure_ascii=False))
_CANONICAL: Final = parsed_encoder(json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False))


def cacheable_prefixes(request: Mapping[str, Any]) -> PrefixPlan:
    """The prefix at every block boundary of ``request`` (a parsed Messages API body); fields that
    are not lists or blocks where the API expects them are skipped, not guessed at."""
    lines = list(block_lines(_blocks(request)))
    automatic = breakpoint_ttl(request.get("cache_control"))
    hasher = hashlib.sha256()
    size = 0
    prefixes: list[CacheablePrefix] = []
    for index, (path, line, length, ttl, _) in enumerate(lines):
        if ttl is None and automatic is not None and index == len(lines) - 1:
            ttl = automatic
        hasher.update(line)
        size += length
        prefixes.append(
            CacheablePrefix(
                position=index + 1,
                path=path,
                digest=hasher.copy().hexdigest(),
                tokens=tokens_of_size(size),
                ttl=ttl,
            )
        )
    return PrefixPlan(prefixes=tuple(prefixes))


def block_lines(blocks: Iterable[Block]) -> Iterator[tuple[str, bytes, int, CacheTtl | None, bool]]:
    """Each block's path and its `_block_line` (a message's place written once for its blocks)."""
    place_written: tuple[list[Any] | None, str] = (None, "")
    for path, block, place in blocks:
        if place_written[0] is not place:
            place_written = (place, _block_opening(place))
        yield (path, *_block_line(place_written[1], block))


def _block_opening(place: list[Any]) -> str:
    """The canonical text of ``place`` without its closing bracket, and a comma: what every line
    of a block sitting there starts with."""
    return "[" + "".join(_CANONICAL(part) + "," for part in place)


def _block_line(opening: str, block: Mapping[str, Any]) -> tuple[bytes, int, CacheTtl | None, bool]:
    """A block's line in its prefix's canonical bytes (the canonical text of ``[*place,
    unmarked]``, the list written item by item, and a newline), how many of them count as its
    tokens' bytes, its own breakpoint's TTL, and whether it carries a mark (a dict)."""
    mark = block.get("cache_control")
    unmarked = block if mark is None and "cache_control" not in block else _unmarked(block)
    text = _CANONICAL(unmarked).encode()
    # Tokens count the block as the body carries it, not where it sits: a prefix is then never
    # longer than the request it starts (`estimate_request_tokens`). Its compact text is as long
    # as its canonical one (the same members, in another order).
    return opening.encode() + text + b"]\n", len(text), breakpoint_ttl(mark), isinstance(mark, dict)


def compact_size(value: Any) -> int:
    """How many bytes the compact JSON of ``value`` takes (`estimate_request_tokens` counts them)."""
    return len(_compact(value))


def _unmarked(block: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in block.items() if key != "cache_control"}


def _blocks(request: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any], list[Any]]]:
    """(path, block, place) for every cacheable block, in the API's order."""
    yield from tool_blocks(request.get("tools"))
    yield from system_blocks(request.get("system"))
    messages = request.get("messages")
    if isinstance(messages, list):
        for number, message in enumerate(messages):
            yield from message_blocks(number, message)


Block = tuple[str, dict[str, Any], list[Any]]  # (path, block, place)


def tool_blocks(tools: object) -> Iterator[Block]:
    """The blocks of a body's ``tools``: each tool definition."""
    if isinstance(tools, list):
        for index, tool in enumerate(tools):
            if isinstance(tool, dict):
                yield f"tools[{index}]", tool, ["tools"]


def system_blocks(system: object) -> Iterator[Block]:
    """The blocks of a body's ``system``: a string is one text block, a list its blocks."""
    if isinstance(system, str) and system:
        yield "system", {"type": "text", "text": system}, ["system"]
    elif isinstance(system, list):
        for index, block in enumerate(system):
            if isinstance(block, dict):
                yield f"system[{index}]", block, ["system"]


def message_blocks(number: int, message: object) -> Iterator[Block]:
    """The blocks of message ``number``: a string content is one text block, a list its blocks."""
    if not isinstance(message, dict):
        return
    role, content = message.get("role"), message.get("content")
    place = ["messages", number, role]
    if isinstance(content, str):
        yield f"messages[{number}].content", {"type": "text", "text": content}, place
    elif isinstance(content, list):
        for index, block in enumerate(content):
            if isinstance(block, dict):
                yield f"messages[{number}].content[{index}]", block, place


def breakpoint_ttl(mark: object) -> CacheTtl | None:
    """The TTL of a ``cache_control`` mark, None when it is not a breakpoint."""
    if not isinstance(mark, dict) or mark.get("type") != "ephemeral":
        return None
    return CacheTtl.ONE_HOUR if mark.get("ttl") == CacheTtl.ONE_HOUR else CacheTtl.FIVE_MINUTES
