"""What a session's usage cost, in US dollars, from per-model prices."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["ModelPrice", "cost_usd", "price_for"]


class ModelPrice:
    """Dollars per million tokens."""

    def __init__(self, input: float, output: float) -> None:
        self.input = input
        self.output = output
        # Anthropic's published ratios: cache writes cost 1.25x input, cache reads 0.1x.
        self.cache_write = input * 1.25
        self.cache_read = input * 0.1


# Published list prices by family. Families the table does not know are priced at zero and
# reported as such, rather than guessed.
_FAMILY_PRICES: tuple[tuple[str, ModelPrice], ...] = (
    ("claude-opus-4-5", ModelPrice(5.0, 25.0)),
    ("claude-opus-4-6", ModelPrice(5.0, 25.0)),
    ("claude-opus", ModelPrice(15.0, 75.0)),
    ("claude-sonnet", ModelPrice(3.0, 15.0)),
    ("claude-haiku", ModelPrice(1.0, 5.0)),
)


def price_for(model: str) -> ModelPrice | None:
    """The price of ``model`` by its family prefix, or None if unknown."""
    for prefix, price in _FAMILY_PRICES:
        if model.startswith(prefix):
            return price
    return None


def cost_usd(model: str, usage: Mapping[str, int]) -> float:
    """The cost of ``usage`` on ``model`` (0.0 for a model with no known price)."""
    price = price_for(model)
    if price is None:
        return 0.0
    total = (
        usage.get("input_tokens", 0) * price.input
        + usage.get("output_tokens", 0) * price.output
        + usage.get("cache_creation_input_tokens", 0) * price.cache_write
        + usage.get("cache_read_input_tokens", 0) * price.cache_read
    )
    return round(total / 1_000_000, 6)
