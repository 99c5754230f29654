"""The price table prices every model the installed SDK lists, or says why it does not; a cost
names the models it could not price instead of counting them at zero."""

from __future__ import annotations

import typing

import anthropic.types
import pytest

from engine.cost import (
    PRICES,
    UNPRICED_MODELS,
    ModelPrice,
    SessionCost,
    cost_usd,
    price_for,
    session_cost,
    usage_cost,
)


def _sdk_models() -> list[str]:
    """The model ids in the SDK's ``Model`` type (a Literal of ids, or str)."""
    literals = [arg for arg in typing.get_args(anthropic.types.Model) if typing.get_origin(arg) is typing.Literal]
    return sorted(model for literal in literals for model in typing.get_args(literal))


def test_the_sdk_lists_models_to_check() -> None:
    assert "claude-sonnet-4-6" in _sdk_models()


@pytest.mark.parametrize("model", _sdk_models())
def test_every_model_the_sdk_lists_is_priced_or_deliberately_unpriced(model: str) -> None:
    # A new SDK release adds ids: each must be priced from a published source or listed with a reason.
    priced = price_for(model) is not None
    assert priced != (model in UNPRICED_MODELS), (
        f"{model} is listed by anthropic {anthropic.__version__}: add its published price to engine/cost.py "
        "(and docs/pricing.md), or list it in UNPRICED_MODELS with the reason it cannot be priced."
    )


def test_unpriced_models_each_give_a_reason_and_are_not_in_the_table() -> None:
    for model, reason in UNPRICED_MODELS.items():
        assert model not in PRICES
        assert len(reason.split()) >= 5


def test_a_dated_snapshot_is_priced_as_its_alias() -> None:
    assert price_for("claude-haiku-4-5-20251001") is PRICES["claude-haiku-4-5"]
    assert price_for("claude-3-5-haiku-latest") is PRICES["claude-3-5-haiku"]
    assert price_for("claude-sonnet-9") is None


def test_the_standard_cache_ratios_are_the_documented_ones() -> None:
    price = ModelPrice.standard(3.0, 15.0)
    assert (price.cache_write, price.cache_write_1h, price.cache_read) == (3.75, 6.0, pytest.approx(0.3))


def test_every_kind_of_token_is_priced_at_its_rate() -> None:
    usage = {
        "input_tokens": 1_000_000,
        "output_tokens": 1_000_000,
        "cache_creation_input_tokens": 1_000_000,
        "cache_read_input_tokens": 1_000_000,
    }
    # Opus 4.8: $5 input, $25 output, $6.25 5-minute write, $0.50 read.
    assert usage_cost("claude-opus-4-8", usage) == SessionCost(5 + 25 + 6.25 + 0.50)


def test_one_hour_writes_are_priced_at_the_one_hour_rate() -> None:
    usage = {
        "cache_creation_input_tokens": 3_000_000,
        "cache_creation": {"ephemeral_5m_input_tokens": 1_000_000, "ephemeral_1h_input_tokens": 2_000_000},
    }
    assert usage_cost("claude-sonnet-4-6", usage).usd == pytest.approx(3.75 + 2 * 6.0)


def test_a_long_prompt_bills_the_whole_request_in_the_dearer_band() -> None:
    short = {"input_tokens": 60_000, "cache_read_input_tokens": 40_000, "output_tokens": 1_000}
    long = {**short, "input_tokens": 60_001}
    # Haiku 5.5 up to 100,000 prompt tokens: $0.10 input, $0.01 read, $0.50 output; above: $0.50, $0.05, $2.50.
    assert usage_cost("claude-haiku-5-5", short).usd == pytest.approx((60_000 * 0.10 + 40_000 * 0.01 + 500) / 1e6)
    assert usage_cost("claude-haiku-5-5", long).usd == pytest.approx((60_001 * 0.50 + 40_000 * 0.05 + 2_500) / 1e6)


def test_an_unknown_model_is_named_not_priced_at_zero_silently() -> None:
    cost = session_cost(
        [
            ("claude-sonnet-4-6", {"input_tokens": 1_000_000}),
            ("claude-mythos-preview", {"input_tokens": 5}),
            ("claude-unknown-9", {"input_tokens": 5}),
            ("claude-unknown-9", {"output_tokens": 5}),
        ]
    )
    assert cost.usd == pytest.approx(3.0)
    assert cost.unpriced_models == ("claude-mythos-preview", "claude-unknown-9")
    assert not cost.complete
    assert cost.to_json() == {"usd": 3.0, "unpriced_models": ["claude-mythos-preview", "claude-unknown-9"]}


def test_cost_usd_is_the_rounded_total_and_zero_for_an_unknown_model() -> None:
    assert cost_usd("claude-sonnet-4-6", {"input_tokens": 250, "output_tokens": 27}) == round(
        (250 * 3 + 27 * 15) / 1e6, 6
    )
    assert cost_usd("claude-unknown-9", {"input_tokens": 250}) == 0.0
