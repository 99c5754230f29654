"""What a session's usage cost, in US dollars, from Anthropic's published per-model prices.

A model the table does not price is never silently counted at zero: `usage_cost` and
`session_cost` return a `SessionCost` that names it (``unpriced_models``), and `UNPRICED_MODELS`
says why a model the SDK lists has no price here. `cost_usd` is the bare number for callers that
only show a total. docs/pricing.md describes the table, its sources and its date.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "PRICES",
    "PRICES_AS_OF",
    "UNPRICED_MODELS",
    "LongPromptPrice",
    "ModelPrice",
    "SessionCost",
    "cost_usd",
    "price_for",
    "session_cost",
    "usage_cost",
]

PRICES_AS_OF = "2026-12-01"
_MILLION = 1_000_000


@dataclass(frozen=True, kw_only=True)
class ModelPrice:
    """Dollars per million tokens of each kind. ``cache_write`` is the 5-minute TTL write,
    ``cache_write_1h`` the 1-hour one; ``long_prompt`` is the dearer band some models bill a
    whole request at once its prompt (input + cache reads + cache writes) passes a threshold."""

    input: float
    output: float
    cache_write: float
    cache_write_1h: float
    cache_read: float
    long_prompt: LongPromptPrice | None = None

    @classmethod
    def standard(cls, input: float, output: float, *, long_prompt: LongPromptPrice | None = None) -> ModelPrice:
        """A model priced at Anthropic's documented prompt-caching ratios: 5-minute writes 1.25x
        input, 1-hour writes 2x, reads (cache hits and refreshes) 0.1x."""
        return cls(
            input=input,
            output=output,
            cache_write=input * 1.25,
            cache_write_1h=input * 2,
            cache_read=input * 0.1,
            long_prompt=long_prompt,
        )


@dataclass(frozen=True, kw_only=True)
class LongPromptPrice:
    """The band a request is billed at, every token of it, when its prompt exceeds ``threshold``."""

    threshold: int
    price: ModelPrice


# Sources, read 2026-12-01 (per million tokens: input / 5m write / 1h write / cache read / output):
# - https://platform.claude.com/docs/en/about-claude/pricing ("Model pricing"): Fable 5.1,
#   Mythos 5.1, Fable 5, Mythos 5, Opus 5, Opus 4.8, 4.7, 4.6, 4.5, Opus 4.1, Opus 4, and the
#   documented cache ratios.
# - https://docs.anthropic.com/en/docs/about-claude/pricing (the earlier table): Opus 4.1, Opus 4,
#   Sonnet 4, Sonnet 3.7, Haiku 3.5, Haiku 3, and the > 200K long-context rates of Sonnet 4/4.5.
# - Model pages: https://platform.claude.com/docs/en/models/opus-5-5/overview,
#   .../sonnet-5/overview, .../sonnet-5-5/overview, .../haiku-5-5/overview,
#   .../sonnet-4-6/overview, https://platform.claude.com/docs/en/models (Haiku 4.5).
# - Changes after those pages were captured, as tracked by price tables re-checked against the
#   pricing page: Sonnet 5.5 cache reads cut to $0.10 on 2026-10-07 and Haiku 5.5's cache-read and
#   > 100K rates (https://github.com/kurofune/claudit/releases/tag/v1.9.2,
#   https://github.com/TheKrush/PromptFuel/releases/tag/v1.0.23); Fable 5.2 and Mythos 5.2, released
#   2026-11-09 (https://platform.claude.com/docs/en/models/fable-5-2/migration-guide,
#   https://github.com/archid21/rightsize/releases/tag/v0.10.2,
#   https://docs.apiyi.com/news/claude-fable-5-2-launch.md).
_FABLE_5_2 = ModelPrice(input=8.0, output=40.0, cache_write=10.0, cache_write_1h=16.0, cache_read=0.20)
_FABLE_5_1 = ModelPrice(input=10.0, output=50.0, cache_write=12.50, cache_write_1h=20.0, cache_read=0.25)
_FABLE_5 = ModelPrice.standard(10.0, 50.0)
_OPUS_5_5 = ModelPrice(input=4.0, output=20.0, cache_write=5.0, cache_write_1h=8.0, cache_read=0.20)
_OPUS_4_5_TO_5 = ModelPrice.standard(5.0, 25.0)
_OPUS_4 = ModelPrice.standard(15.0, 75.0)
_SONNET_5 = ModelPrice.standard(2.0, 10.0)
_SONNET_5_5 = ModelPrice(input=2.0, output=10.0, cache_write=2.50, cache_write_1h=4.0, cache_read=0.10)
_SONNET_3 = ModelPrice.standard(3.0, 15.0)
_SONNET_4 = ModelPrice.standard(
    3.0, 15.0, long_prompt=LongPromptPrice(threshold=200_000, price=ModelPrice.standard(6.0, 22.50))
)
_HAIKU_5_5 = ModelPrice(
    input=0.10,
    output=0.50,
    cache_write=0.125,
    cache_write_1h=0.20,
    cache_read=0.01,
    long_prompt=LongPromptPrice(
        threshold=100_000,
        price=ModelPrice(input=0.50, output=2.50, cache_write=0.625, cache_write_1h=1.0, cache_read=0.05),
    ),
)

# Exact model ids; a dated snapshot (``-20251001``) or ``-latest`` is priced as its alias.
PRICES: Mapping[str, ModelPrice] = {
    "claude-fable-5-2": _FABLE_5_2,
    "claude-mythos-5-2": _FABLE_5_2,  # shares Fable 5.2's specifications and pricing
    "claude-fable-5-1": _FABLE_5_1,
    "claude-mythos-5-1": _FABLE_5_1,
    "claude-fable-5": _FABLE_5,
    "claude-mythos-5": _FABLE_5,
    "claude-opus-5-5": _OPUS_5_5,
    "claude-opus-5": _OPUS_4_5_TO_5,
    "claude-opus-4-8": _OPUS_4_5_TO_5,
    "claude-opus-4-7": _OPUS_4_5_TO_5,
    "claude-opus-4-6": _OPUS_4_5_TO_5,
    "claude-opus-4-5": _OPUS_4_5_TO_5,
    "claude-opus-4-1": _OPUS_4,
    "claude-opus-4-0": _OPUS_4,
    "claude-opus-4": _OPUS_4,
    "claude-sonnet-5-5": _SONNET_5_5,
    "claude-sonnet-5": _SONNET_5,
    "claude-sonnet-4-6": _SONNET_3,  # no long-context premium from 4.6 on
    "claude-sonnet-4-5": _SONNET_4,
    "claude-sonnet-4-0": _SONNET_4,
    "claude-sonnet-4": _SONNET_4,
    "claude-3-7-sonnet": _SONNET_3,
    "claude-haiku-5-5": _HAIKU_5_5,
    "claude-haiku-4-5": ModelPrice.standard(1.0, 5.0),
    "claude-3-5-haiku": ModelPrice(input=0.80, output=4.0, cache_write=1.0, cache_write_1h=1.6, cache_read=0.08),
    "claude-3-haiku": ModelPrice(input=0.25, output=1.25, cache_write=0.30, cache_write_1h=0.50, cache_read=0.03),
}

# Models the SDK lists that the table deliberately leaves unpriced, and why.
UNPRICED_MODELS: Mapping[str, str] = {
    "claude-mythos-preview": (
        "an invitation-only research preview, retired 2026-06-30; its input/output rates were only "
        "reported second-hand and its cache rates never published"
    ),
}

_SNAPSHOT = re.compile(r"-(\d{8}|latest)$")


def price_for(model: str) -> ModelPrice | None:
    """The price of ``model`` (or of the alias of a dated snapshot), or None if the table has none."""
    found = PRICES.get(model)
    if found is None:
        found = PRICES.get(_SNAPSHOT.sub("", model))
    return found


@dataclass(frozen=True)
class SessionCost:
    """What some usage cost: ``usd`` over the priced models, and the models that could not be
    priced (their usage is not in ``usd``), sorted."""

    usd: float = 0.0
    unpriced_models: tuple[str, ...] = field(default=())

    @property
    def complete(self) -> bool:
        """True when every model was priced, so ``usd`` is the whole cost."""
        return not self.unpriced_models

    def __add__(self, other: SessionCost) -> SessionCost:
        return SessionCost(self.usd + other.usd, tuple(sorted({*self.unpriced_models, *other.unpriced_models})))

    def to_json(self) -> dict[str, Any]:
        return {"usd": round(self.usd, 6), "unpriced_models": list(self.unpriced_models)}


def usage_cost(model: str, usage: Mapping[str, Any]) -> SessionCost:
    """The cost of one API call's ``usage`` (the response's ``usage`` object) on ``model``."""
    price = price_for(model)
    if price is None:
        return SessionCost(0.0, (model,))
    fresh = int(usage.get("input_tokens") or 0)
    read = int(usage.get("cache_read_input_tokens") or 0)
    written = int(usage.get("cache_creation_input_tokens") or 0)
    if price.long_prompt is not None and fresh + read + written > price.long_prompt.threshold:
        price = price.long_prompt.price
    # The API splits the writes by TTL when the request asked for a 1-hour entry.
    by_ttl = usage.get("cache_creation")
    written_1h = int(by_ttl.get("ephemeral_1h_input_tokens") or 0) if isinstance(by_ttl, Mapping) else 0
    written_1h = min(written_1h, written)
    total = (
        fresh * price.input
        + int(usage.get("output_tokens") or 0) * price.output
        + (written - written_1h) * price.cache_write
        + written_1h * price.cache_write_1h
        + read * price.cache_read
    )
    return SessionCost(total / _MILLION)


def session_cost(calls: Iterable[tuple[str, Mapping[str, Any]]]) -> SessionCost:
    """The cost of several calls, each ``(model, usage)``: each is priced on its own (a long
    prompt's band is per request), then summed."""
    total = SessionCost()
    for model, usage in calls:
        total = total + usage_cost(model, usage)
    return total


def cost_usd(model: str, usage: Mapping[str, Any]) -> float:
    """The cost of ``usage`` on ``model``, rounded to a millionth of a dollar; 0.0 for a model
    with no price (use `usage_cost` to learn which models those are)."""
    return round(usage_cost(model, usage).usd, 6)
