"""The prompt cache, on a clock the test holds: written at breakpoints, read byte for byte
through the lookback, expired after its TTL, refreshed by a read, never below the model's
minimum; the three input kinds always add up to the request's total."""

from __future__ import annotations

from typing import Any

import pytest

from replay.prompt_cache.cache import (
    DEFAULT_MINIMUM_CACHEABLE_TOKENS,
    CacheUsage,
    PromptCache,
    minimum_cacheable_tokens,
)
from replay.prompt_cache.prefixes import cacheable_prefixes

MODEL = "claude-sonnet-4-6"
LONG = "word " * 1200  # about 1,500 tokens: over Sonnet's 1,024
TOTAL = 5000


def body(*user_texts: str, ttl: str | None = None, system: str = LONG) -> dict[str, Any]:
    """A request whose system block and last message both carry a mark."""
    mark: dict[str, Any] = {"type": "ephemeral"} | ({"ttl": ttl} if ttl else {})
    messages: list[dict[str, Any]] = [{"role": "user", "content": text} for text in user_texts]
    last = messages[-1]["content"]
    messages[-1]["content"] = [{"type": "text", "text": last, "cache_control": mark}]
    return {
        "model": MODEL,
        "system": [{"type": "text", "text": system, "cache_control": mark}],
        "messages": messages,
    }


def tokens_at(request: dict[str, Any], index: int = -1) -> int:
    return cacheable_prefixes(request).breakpoints[index].tokens


def use(cache: PromptCache, request: dict[str, Any], now: float = 0.0, model: str = MODEL) -> CacheUsage:
    result = cache.use(request, model=model, total_tokens=TOTAL, now=now)
    assert result.input_tokens + result.cache_creation_input_tokens + result.cache_read_input_tokens == TOTAL
    return result


def test_a_request_without_breakpoints_is_all_uncached_input() -> None:
    assert use(PromptCache(), {"model": MODEL, "messages": [{"role": "user", "content": LONG}]}) == CacheUsage(
        input_tokens=TOTAL
    )


def test_the_first_request_writes_and_the_next_one_reads_what_it_wrote() -> None:
    cache = PromptCache()
    first = body("one")
    assert use(cache, first) == CacheUsage(
        input_tokens=TOTAL - tokens_at(first), cache_creation_input_tokens=tokens_at(first)
    )
    second = body("one", "two")
    # The second request's lookback finds the first one's whole prefix; it writes the rest.
    assert use(cache, second, now=10) == CacheUsage(
        input_tokens=TOTAL - tokens_at(second),
        cache_read_input_tokens=tokens_at(first),
        cache_creation_input_tokens=tokens_at(second) - tokens_at(first),
    )
    assert use(cache, second, now=20).cache_read_input_tokens == tokens_at(second)


def test_a_changed_byte_before_the_breakpoint_reads_nothing_past_it() -> None:
    cache = PromptCache()
    use(cache, body("one"))
    changed = body("one", system=LONG + ".")
    result = use(cache, changed, now=1)
    assert result.cache_read_input_tokens == 0
    assert result.cache_creation_input_tokens == tokens_at(changed)


def test_a_change_after_the_system_prompt_still_reads_the_system_prompt() -> None:
    cache = PromptCache()
    use(cache, body("one"))
    result = use(cache, body("ONE"), now=1)
    assert result.cache_read_input_tokens == tokens_at(body("ONE"), 0)


@pytest.mark.parametrize(("ttl", "lifetime"), [(None, 300), ("5m", 300), ("1h", 3600)])
def test_an_entry_expires_after_its_ttl_on_the_callers_clock(ttl: str | None, lifetime: float) -> None:
    cache = PromptCache()
    use(cache, body("one", ttl=ttl), now=0)
    assert use(cache, body("one", ttl=ttl), now=lifetime - 1).cache_read_input_tokens > 0
    # That read refreshed the entry: it lives a full TTL from then, and not a second longer.
    expired = use(cache, body("one", ttl=ttl), now=2 * lifetime - 1)
    assert expired.cache_read_input_tokens == 0 and expired.cache_creation_input_tokens > 0


def test_the_cache_says_whether_it_holds_a_prefix_at_a_time() -> None:
    cache = PromptCache()
    first = body("one")
    digest = cacheable_prefixes(first).breakpoints[-1].digest
    assert not cache.holds(MODEL, digest, now=0)
    use(cache, first, now=0)
    assert cache.holds(MODEL, digest, now=299) and not cache.holds(MODEL, digest, now=300)
    assert not cache.holds("claude-opus-4-1", digest, now=1)


def test_a_prefix_below_the_models_minimum_is_never_written() -> None:
    cache = PromptCache()
    short = body("one", system="short")
    assert tokens_at(short) < 1024
    assert use(cache, short) == CacheUsage(input_tokens=TOTAL)
    assert use(cache, short, now=1) == CacheUsage(input_tokens=TOTAL)


def test_the_minimum_depends_on_the_model() -> None:
    request = body("one", system="word " * 2000)  # about 2,500 tokens
    assert 2048 < tokens_at(request) < 4096
    assert use(PromptCache(), request, model="claude-sonnet-4-6").cache_creation_input_tokens > 0
    assert use(PromptCache(), request, model="claude-haiku-4-5-20251001").cache_creation_input_tokens == 0


def test_the_per_model_minimums_follow_the_docs_table() -> None:
    assert minimum_cacheable_tokens("claude-sonnet-4-6") == 1024
    assert minimum_cacheable_tokens("claude-opus-4-1-20250805") == 1024
    assert minimum_cacheable_tokens("claude-opus-4-5-20251101") == 4096
    assert minimum_cacheable_tokens("claude-haiku-4-5-20251001") == 4096
    assert minimum_cacheable_tokens("claude-3-5-haiku-latest") == 2048
    assert minimum_cacheable_tokens("claude-unknown-9") == DEFAULT_MINIMUM_CACHEABLE_TOKENS == 1024


def test_entries_belong_to_one_model() -> None:
    cache = PromptCache()
    use(cache, body("one"), model="claude-sonnet-4-6")
    assert use(cache, body("one"), model="claude-opus-4-8", now=1).cache_read_input_tokens == 0


def test_a_read_reaches_no_further_back_than_the_lookback() -> None:
    cache = PromptCache()
    first = body("turn 0")
    use(cache, first)
    # 25 blocks later, and only the last one marked: the first entry is out of reach.
    later = body(*(f"turn {index}" for index in range(26)))
    later["system"][0].pop("cache_control")
    assert use(cache, later, now=1).cache_read_input_tokens == 0
    near = body(*(f"turn {index}" for index in range(10)))
    near["system"][0].pop("cache_control")
    assert use(cache, near, now=2).cache_read_input_tokens == tokens_at(first)


def test_the_same_requests_give_the_same_numbers_every_time() -> None:
    def run() -> list[CacheUsage]:
        cache = PromptCache()
        return [use(cache, body(*["x"] * count), now=count * 100.0) for count in range(1, 6)]

    assert run() == run()
