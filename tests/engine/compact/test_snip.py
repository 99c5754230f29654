"""Snip: whole old rounds go, oldest first, until the context is under the threshold."""

from __future__ import annotations

import pytest

from engine.compact.rounds import group_into_rounds
from engine.compact.snip import snip_old_rounds
from engine.normalize import normalize_messages_for_api
from engine.tokens import estimate_message_tokens, token_count_with_estimation
from tests.engine.compact.builders import Conversation, frozen_copy, text, uuids
from tests.engine.conftest import assert_pairing


def five_rounds() -> Conversation:
    """A prompt, then five rounds of about 250 tokens each."""
    chat = Conversation()
    chat.user("please look around")
    for n in range(1, 6):
        chat.tool_round(f"t{n}", result=f"{n}" * 1_000)
    return chat


def test_without_a_threshold_nothing_is_snipped() -> None:
    chat = five_rounds()
    result = snip_old_rounds(chat.messages, threshold_tokens=None, keep_rounds=1)
    assert (result.messages, result.removed_uuids, result.tokens_freed) == (chat.messages, [], 0)


def test_under_the_threshold_nothing_is_snipped() -> None:
    chat = five_rounds()
    total = token_count_with_estimation(chat.messages)
    result = snip_old_rounds(chat.messages, threshold_tokens=total, keep_rounds=1)
    assert result.messages == chat.messages


def test_the_oldest_rounds_go_first_and_only_until_the_context_fits() -> None:
    chat = five_rounds()
    rounds = group_into_rounds(chat.messages)
    total = token_count_with_estimation(chat.messages)
    # Dropping one round is not enough, two are.
    threshold = total - estimate_message_tokens(rounds[1]) - 1
    result = snip_old_rounds(chat.messages, threshold_tokens=threshold, keep_rounds=1)
    assert result.removed_uuids == uuids(rounds[1] + rounds[2])


def test_the_original_prompt_and_the_last_rounds_always_stay() -> None:
    chat = five_rounds()
    rounds = group_into_rounds(chat.messages)
    result = snip_old_rounds(chat.messages, threshold_tokens=0, keep_rounds=2)
    assert result.messages == rounds[0] + rounds[4] + rounds[5]


def test_tokens_freed_is_the_estimate_of_what_was_dropped() -> None:
    chat = five_rounds()
    rounds = group_into_rounds(chat.messages)
    result = snip_old_rounds(chat.messages, threshold_tokens=0, keep_rounds=3)
    assert result.tokens_freed == estimate_message_tokens(rounds[1] + rounds[2])


def test_what_remains_is_a_valid_request() -> None:
    chat = five_rounds()
    chat.response(text("all done"))
    result = snip_old_rounds(chat.messages, threshold_tokens=0, keep_rounds=2)
    api = normalize_messages_for_api(result.messages)
    assert_pairing(api)
    assert [m["role"] for m in api] == ["user", "assistant", "user", "assistant"]


def test_the_input_is_never_changed() -> None:
    chat = five_rounds()
    before = frozen_copy(chat.messages)
    snip_old_rounds(chat.messages, threshold_tokens=0, keep_rounds=1)
    assert chat.messages == before


def test_keeping_no_round_is_refused() -> None:
    with pytest.raises(ValueError, match="keep_rounds"):
        snip_old_rounds([], threshold_tokens=0, keep_rounds=0)
