"""A session's requests planned in order (`PrefixPlanner`): each request gets exactly what
`cacheable_prefixes`, `count_block_marks` and `estimate_request_tokens` give it on its own,
whatever the requests share, change, drop or move between them."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay.prompt_cache.planner import PrefixPlanner, plain_request_prefixes
from replay.prompt_cache.prefixes import CacheTtl
from tests.replay.prompt_cache.test_prefixes import _BLOCKS, _BODIES, _MARKS, _ROLES, _VALUES

_MESSAGES = st.fixed_dictionaries(
    {"role": _ROLES, "content": st.text(max_size=6) | st.lists(_BLOCKS | _VALUES, max_size=3)}
) | st.sampled_from(["not a message", 3, None])


def _next_body(data: st.DataObject, body: dict[str, Any]) -> dict[str, Any]:
    """The next request of a session: a new body that keeps the objects of the one before it
    does not change, as bodies parsed by a `SharedParser` do."""
    body = dict(body)
    messages = list(body["messages"]) if isinstance(body.get("messages"), list) else []
    change = data.draw(
        st.sampled_from(["append", "rewrite", "copy", "drop", "repeat", "tools", "system", "automatic", "same"])
    )
    if change == "append":  # the history grows: the same objects, new ones after them
        messages += data.draw(st.lists(_MESSAGES, min_size=1, max_size=3))
    elif change == "rewrite" and messages:  # a message written anew (a moved mark, a cleared result)
        at = data.draw(st.integers(0, len(messages) - 1))
        messages[at] = data.draw(_MESSAGES)
    elif change == "copy" and messages:  # the same content in a new object
        at = data.draw(st.integers(0, len(messages) - 1))
        messages[at] = copy.deepcopy(messages[at])
    elif change == "drop" and messages:  # a compaction: what is left sits at other positions
        del messages[: data.draw(st.integers(1, len(messages)))]
    elif change == "repeat" and messages:  # one object twice in the list
        messages.append(messages[data.draw(st.integers(0, len(messages) - 1))])
    elif change == "tools":
        body["tools"] = data.draw(st.lists(_BLOCKS | _VALUES, max_size=3) | st.just(copy.deepcopy(body.get("tools"))))
    elif change == "system":
        body["system"] = data.draw(st.text(max_size=6) | st.lists(_BLOCKS, max_size=3))
    elif change == "automatic":
        body["cache_control"] = data.draw(_MARKS)
    if change != "same":
        body["messages"] = messages
    return body


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=_BODIES, data=st.data())
def test_each_request_of_a_session_is_planned_as_it_is_on_its_own(first: dict[str, Any], data: st.DataObject) -> None:
    planner = PrefixPlanner()
    body = first
    for _ in range(data.draw(st.integers(1, 8))):
        assert planner.plan(body) == plain_request_prefixes(body)
        body = _next_body(data, body)


def test_a_history_resent_continues_the_prefixes_of_the_request_before() -> None:
    history = [{"role": "user", "content": [{"type": "text", "text": f"turn {n}"}]} for n in range(3)]
    first = {"model": "m", "messages": history}
    marked = {"type": "text", "text": "turn 3", "cache_control": {"type": "ephemeral", "ttl": "1h"}}
    second = {"model": "m", "messages": [*history, {"role": "user", "content": [marked]}]}
    planner = PrefixPlanner()
    before = planner.plan(first).plan.prefixes
    after = planner.plan(second)
    assert after == plain_request_prefixes(second)
    # The blocks it re-sends keep their prefixes (the very objects); the new one is a breakpoint.
    assert all(new is old for new, old in zip(after.plan.prefixes, before, strict=False))
    assert after.plan.breakpoints[-1].ttl is CacheTtl.ONE_HOUR and after.block_marks == 1


def test_bodies_that_are_not_plain_json_objects_are_planned_the_plain_way() -> None:
    planner = PrefixPlanner()
    for body in [{1: "x", "messages": []}, {"messages": [{"role": "user", "content": "hi"}]}]:
        assert planner.plan(body) == plain_request_prefixes(body)
