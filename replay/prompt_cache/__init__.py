"""The prompt cache as the Messages API keeps it, computed from request bodies alone: the
cacheable prefix up to each ``cache_control`` breakpoint, canonical and hashed (`prefixes`), and
the cache itself, with its TTLs, lookback and per-model minimum lengths (`cache`). The fake model
simulates the API's cache with it; a trace's cache audit reads the same prefixes.

May import: `replay.storage`, `engine` (it needs neither today)."""

from __future__ import annotations

from replay.lazy_exports import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "CacheTtl": "prefixes",
        "CacheableBlock": "prefixes",
        "CacheablePrefix": "prefixes",
        "cacheable_blocks": "prefixes",
        "LOOKBACK_BLOCKS": "prefixes",
        "PrefixPlan": "prefixes",
        "cacheable_prefixes": "prefixes",
        "estimate_request_tokens": "prefixes",
        "estimate_tokens": "prefixes",
        "CacheUsage": "cache",
        "DEFAULT_MINIMUM_CACHEABLE_TOKENS": "cache",
        "MINIMUM_CACHEABLE_TOKENS": "cache",
        "PromptCache": "cache",
        "minimum_cacheable_tokens": "cache",
    },
)
