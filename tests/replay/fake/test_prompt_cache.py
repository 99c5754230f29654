"""The fake model keeps a prompt cache: a turn that pins no usage reports its input split into
uncached, written and read tokens, on the fake model's clock; a turn that pins usage keeps its
numbers; a request without marks reports the estimate of its compact JSON, however the client
spaced it; the SDK parses all of it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from replay.fake.model import FakeModel
from replay.fake.scenario import Scenario
from replay.fake.server import FakeModelServer
from replay.prompt_cache.prefixes import cacheable_prefixes, estimate_request_tokens

MODEL = "claude-sonnet-4-6"
SYSTEM = "You answer questions about a long manual. " * 150  # about 1,600 tokens
MARK = {"type": "ephemeral"}


class Clock:
    """Seconds the test sets by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def turns(count: int, *, usage: dict[str, int] | None = None) -> Scenario:
    return Scenario.from_list(
        [{"content": [{"text": f"answer {n}"}]} | ({"usage": usage} if usage else {}) for n in range(count)]
    )


def body(*user_texts: str, ttl: str | None = None, marked: bool = True, system: str = SYSTEM) -> dict[str, Any]:
    mark = MARK | ({"ttl": ttl} if ttl else {})
    system_block: dict[str, Any] = {"type": "text", "text": system} | ({"cache_control": mark} if marked else {})
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": text}]} for text in user_texts
    ]
    if marked:
        messages[-1]["content"][-1]["cache_control"] = mark
    return {"model": MODEL, "max_tokens": 64, "system": [system_block], "messages": messages}


def usage_of(model: FakeModel, request: dict[str, Any], *, pinned: bool = False) -> dict[str, int]:
    """The usage the fake reports for ``request``; unless the turn pins it, the three input kinds
    add up to the body's estimate, cached or not."""
    raw = json.dumps(request).encode()
    answer = model.respond("POST", "/v1/messages", {}, raw)
    assert answer.status == 200
    usage: dict[str, int] = json.loads(b"".join(answer.chunks))["usage"]
    inputs = usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"]
    assert pinned or inputs == estimate_request_tokens(request)
    return usage


def prefix_tokens(request: dict[str, Any]) -> int:
    return cacheable_prefixes(request).breakpoints[-1].tokens


def test_a_request_without_marks_reports_the_estimate_of_its_compact_json() -> None:
    request = body("hello", marked=False)
    usage = usage_of(FakeModel(turns(1)), request)  # sent with json.dumps' spaces
    assert usage["input_tokens"] == len(json.dumps(request, separators=(",", ":")).encode()) // 4
    assert usage["cache_creation_input_tokens"] == usage["cache_read_input_tokens"] == 0


def test_a_prefix_is_written_by_one_request_and_read_by_the_next() -> None:
    model = FakeModel(turns(2))
    first, second = body("hello"), body("hello", "and again")
    written = usage_of(model, first)
    assert written["cache_creation_input_tokens"] == prefix_tokens(first)
    assert written["cache_read_input_tokens"] == 0
    assert written["input_tokens"] == estimate_request_tokens(first) - prefix_tokens(first)
    read = usage_of(model, second)
    assert read["cache_read_input_tokens"] == prefix_tokens(first)
    assert read["cache_creation_input_tokens"] == prefix_tokens(second) - prefix_tokens(first)


def test_a_changed_byte_before_the_breakpoint_reads_nothing() -> None:
    model = FakeModel(turns(2))
    usage_of(model, body("hello"))
    assert usage_of(model, body("hello", system=SYSTEM.replace("manual", "manuaL", 1)))["cache_read_input_tokens"] == 0


@pytest.mark.parametrize(("ttl", "seconds"), [(None, 300), ("1h", 3600)])
def test_entries_expire_after_the_ttl_on_the_injected_clock(ttl: str | None, seconds: float) -> None:
    clock = Clock()
    model = FakeModel(turns(3), clock=clock)
    usage_of(model, body("hello", ttl=ttl))
    clock.now = seconds - 1
    assert usage_of(model, body("hello", ttl=ttl))["cache_read_input_tokens"] > 0
    clock.now = 2 * seconds - 1  # a full TTL after that read
    expired = usage_of(model, body("hello", ttl=ttl))
    assert expired["cache_read_input_tokens"] == 0 and expired["cache_creation_input_tokens"] > 0


def test_without_a_clock_time_stands_still_and_nothing_expires() -> None:
    model = FakeModel(turns(2))
    usage_of(model, body("hello"))
    assert usage_of(model, body("hello"))["cache_read_input_tokens"] > 0


def test_a_prefix_below_the_models_minimum_is_not_cached() -> None:
    model = FakeModel(turns(2))
    for _ in range(2):
        usage = usage_of(model, body("hello", system="Be brief."))
        assert usage["cache_creation_input_tokens"] == usage["cache_read_input_tokens"] == 0


def test_the_minimum_is_the_requested_models() -> None:
    request = body("hello") | {"model": "claude-haiku-4-5"}  # 4,096 tokens for Haiku 4.5
    assert usage_of(FakeModel(turns(1)), request)["cache_creation_input_tokens"] == 0


def test_a_turn_that_pins_usage_keeps_its_numbers_and_still_fills_the_cache() -> None:
    pinned = {"input_tokens": 7, "output_tokens": 3, "cache_read_input_tokens": 11}
    model = FakeModel(
        Scenario.from_list([{"content": [{"text": "pinned"}], "usage": pinned}, {"content": [{"text": "free"}]}])
    )
    assert usage_of(model, body("hello"), pinned=True) == pinned | {"cache_creation_input_tokens": 0}
    assert usage_of(model, body("hello"))["cache_read_input_tokens"] == prefix_tokens(body("hello"))


def test_a_failed_request_writes_nothing() -> None:
    model = FakeModel(
        Scenario.from_list(
            [
                {"fault": "http_error", "status": 529, "error_type": "overloaded_error", "message": "Overloaded"},
                {"content": [{"text": "after the retry"}]},
            ]
        )
    )
    assert model.respond("POST", "/v1/messages", {}, json.dumps(body("hello")).encode()).status == 529
    assert usage_of(model, body("hello"))["cache_read_input_tokens"] == 0


def test_the_same_scenario_gives_the_same_numbers_every_time() -> None:
    def run() -> list[dict[str, int]]:
        clock = Clock()
        model = FakeModel(turns(4), clock=clock)
        results = []
        for count in range(1, 5):
            clock.now = count * 200.0
            results.append(usage_of(model, body(*[f"question {n}" for n in range(count)])))
        return results

    assert run() == run()


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer(FakeModel(turns(2))) as running:
        yield running


@pytest.mark.parametrize("stream", [False, True])
def test_the_sdk_parses_the_cache_usage_over_the_loopback_server(server: FakeModelServer, stream: bool) -> None:
    client = anthropic.Anthropic(api_key="sk-ant-test", base_url=server.url, max_retries=0)
    system: list[anthropic.types.TextBlockParam] = [
        {"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}
    ]

    def ask(*texts: str) -> anthropic.types.Usage:
        messages: list[anthropic.types.MessageParam] = [{"role": "user", "content": text} for text in texts]
        if stream:
            with client.messages.stream(model=MODEL, max_tokens=64, system=system, messages=messages) as events:
                return events.get_final_message().usage
        return client.messages.create(model=MODEL, max_tokens=64, system=system, messages=messages).usage

    first = ask("hello")
    assert first.cache_creation_input_tokens == cacheable_prefixes({"system": system}).breakpoints[0].tokens
    assert first.cache_read_input_tokens == 0
    second = ask("hello", "again")
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens
    assert second.cache_creation_input_tokens == 0 and second.input_tokens > 0
