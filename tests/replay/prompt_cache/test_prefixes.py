"""The cacheable prefixes of a request body: tools → system → messages, one boundary per block,
canonical (sorted keys, marks excluded) and hashed, with the fake model's token estimate."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay.prompt_cache.prefixes import (
    LOOKBACK_BLOCKS,
    CacheTtl,
    breakpoint_ttl,
    cacheable_blocks,
    cacheable_prefixes,
    estimate_tokens,
)

EPHEMERAL = {"type": "ephemeral"}


def request(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 64,
        "tools": [{"name": "read", "description": "Read a file.", "input_schema": {"type": "object"}}],
        "system": [{"type": "text", "text": "You are terse.", "cache_control": EPHEMERAL}],
        "messages": [
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
            {"role": "user", "content": [{"type": "text", "text": "again", "cache_control": EPHEMERAL}]},
        ],
    }
    return body | overrides


def test_blocks_are_counted_in_the_apis_order_tools_system_then_messages() -> None:
    plan = cacheable_prefixes(request())
    assert [prefix.path for prefix in plan.prefixes] == [
        "tools[0]",
        "system[0]",
        "messages[0].content",
        "messages[1].content[0]",
        "messages[2].content[0]",
    ]
    assert [prefix.position for prefix in plan.prefixes] == [1, 2, 3, 4, 5]


def test_the_blocks_are_named_by_their_path_and_placed_with_their_message_and_role() -> None:
    blocks = cacheable_blocks(request())
    assert [block.path for block in blocks] == [prefix.path for prefix in cacheable_prefixes(request()).prefixes]
    assert blocks[0].place == ("tools",) and blocks[4].place == ("messages", 2, "user")
    # A string content is one text block; a block's mark is not part of what is cached.
    assert blocks[2].block == {"type": "text", "text": "hello"}
    assert blocks[4].unmarked == {"type": "text", "text": "again"}


def test_each_cache_control_mark_is_a_breakpoint_with_its_ttl() -> None:
    body = request()
    body["messages"][2]["content"][0]["cache_control"] = {"type": "ephemeral", "ttl": "1h"}
    breakpoints = cacheable_prefixes(body).breakpoints
    assert [(mark.path, mark.ttl) for mark in breakpoints] == [
        ("system[0]", CacheTtl.FIVE_MINUTES),
        ("messages[2].content[0]", CacheTtl.ONE_HOUR),
    ]
    assert CacheTtl.FIVE_MINUTES.seconds == 300 and CacheTtl.ONE_HOUR.seconds == 3600


def test_a_top_level_cache_control_marks_the_last_block() -> None:
    body = request(system="You are terse.", cache_control=EPHEMERAL)
    body["messages"][2]["content"][0].pop("cache_control")
    assert [mark.path for mark in cacheable_prefixes(body).breakpoints] == ["messages[2].content[0]"]


def test_the_marks_themselves_are_not_part_of_the_prefix() -> None:
    marked, moved = request(), request()
    moved["system"][0].pop("cache_control")
    moved["messages"][1]["content"][0]["cache_control"] = EPHEMERAL
    assert [p.digest for p in cacheable_prefixes(marked).prefixes] == [
        p.digest for p in cacheable_prefixes(moved).prefixes
    ]


def test_key_order_does_not_matter_but_every_byte_of_a_value_does() -> None:
    reordered = request()
    reordered["tools"][0] = dict(reversed(list(reordered["tools"][0].items())))
    assert cacheable_prefixes(reordered).prefixes == cacheable_prefixes(request()).prefixes
    changed = copy.deepcopy(request())
    changed["messages"][1]["content"][0]["text"] = "hi!"
    before, after = cacheable_prefixes(request()).prefixes, cacheable_prefixes(changed).prefixes
    assert [p.digest for p in before[:3]] == [p.digest for p in after[:3]]
    assert all(b.digest != a.digest for b, a in zip(before[3:], after[3:], strict=True))


def test_a_block_moved_into_another_message_is_another_prefix() -> None:
    split = request(messages=[{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])
    joined = request(
        messages=[{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]
    )
    assert cacheable_prefixes(split).prefixes[-1].digest != cacheable_prefixes(joined).prefixes[-1].digest


def test_tokens_grow_with_the_prefix_on_the_fake_models_scale() -> None:
    tokens = [prefix.tokens for prefix in cacheable_prefixes(request()).prefixes]
    assert tokens == sorted(tokens) and tokens[0] > 0
    assert estimate_tokens(b"x" * 4003) == 1000


def test_the_lookback_reaches_twenty_blocks_longest_first() -> None:
    body = request(messages=[{"role": "user", "content": f"m{index}"} for index in range(30)])
    body["messages"][-1] = {"role": "user", "content": [{"type": "text", "text": "last", "cache_control": EPHEMERAL}]}
    plan = cacheable_prefixes(body)
    last = plan.breakpoints[-1]
    window = plan.lookback(last)
    assert len(window) == LOOKBACK_BLOCKS == 20
    assert window[0] == last and window[-1].position == last.position - 19


def test_bodies_without_cacheable_blocks_have_no_prefixes() -> None:
    assert cacheable_prefixes({"model": "m"}).prefixes == ()
    assert cacheable_prefixes({"messages": "not a list", "tools": {"x": 1}}).breakpoints == ()


def _prefixes_written_block_by_block(request: dict[str, Any]) -> list[tuple[int, str, str, int, Any]]:
    """`cacheable_prefixes` as first written: each block as ``json.dumps`` writes ``[*place,
    unmarked]`` (sorted keys) for the digest and the unmarked block (the body's order) for the size."""
    blocks = cacheable_blocks(request)
    automatic = breakpoint_ttl(request.get("cache_control"))
    hasher, size, found = hashlib.sha256(), 0, []
    for index, block in enumerate(blocks):
        ttl = breakpoint_ttl(block.block.get("cache_control"))
        if ttl is None and automatic is not None and index == len(blocks) - 1:
            ttl = automatic
        placed = [*block.place, block.unmarked]
        hasher.update((json.dumps(placed, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n").encode())
        size += len(json.dumps(block.unmarked, separators=(",", ":"), ensure_ascii=False).encode())
        found.append((index + 1, block.path, hasher.copy().hexdigest(), size // 4, ttl))
    return found


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
_MARKS = st.sampled_from([None, {"type": "ephemeral"}, {"type": "ephemeral", "ttl": "1h"}, {"type": "other"}])
_BLOCKS = st.builds(
    lambda extra, mark, with_mark: {**extra, **({"cache_control": mark} if with_mark else {})},
    st.dictionaries(st.sampled_from(["type", "text", "input", "name", "é"]), _VALUES, max_size=3),
    _MARKS,
    st.booleans(),
)
_ROLES = st.sampled_from(["user", "assistant", 1, True, 1.0, None, ["x"], {"r": 1}])
_BODIES = st.fixed_dictionaries(
    {},
    optional={
        "tools": st.lists(_BLOCKS | _VALUES, max_size=3),
        "system": st.text(max_size=6) | st.lists(_BLOCKS | _VALUES, max_size=3),
        "messages": st.lists(
            st.fixed_dictionaries(
                {"role": _ROLES, "content": st.text(max_size=6) | st.lists(_BLOCKS | _VALUES, max_size=3)}
            )
            | _VALUES,
            max_size=5,
        ),
        "cache_control": _MARKS,
    },
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=_BODIES)
def test_every_prefix_is_the_one_writing_each_block_whole_gives(body: dict[str, Any]) -> None:
    """Roles equal in Python but not in JSON (``1``, ``True``, ``1.0``), unhashable ones, marks set
    to null, keys in any order: the same digests and sizes as ``json.dumps`` of each block."""
    plan = cacheable_prefixes(body)
    found = [(p.position, p.path, p.digest, p.tokens, p.ttl) for p in plan.prefixes]
    assert found == _prefixes_written_block_by_block(body)
