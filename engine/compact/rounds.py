"""API rounds: the unit that snip, context collapse and compaction's retry drop or fold.

A round is one assistant response — every assistant message sharing its ``message["id"]``
(the loop yields one per content block) — together with everything that follows it until the
next response: the user message(s) carrying its tool results, and any later prompt,
attachment or system message. Because a tool_use and its tool_result always fall in the same
round, removing whole rounds never breaks the API's pairing rule. Synthetic API-error
messages never start a round; they belong to the round they interrupt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.messages import AssistantMessage, Message

__all__ = ["RoundSplit", "group_into_rounds", "split_rounds"]


def group_into_rounds(messages: Sequence[Message]) -> list[list[Message]]:
    """``messages`` cut before each new response. The first group holds what precedes the
    first response (the prompt) when there is anything there; every other group starts with
    an assistant message. Concatenating the groups gives ``messages`` back."""
    groups: list[list[Message]] = []
    current: list[Message] = []
    last_response: str | None = None
    for message in messages:
        response = _response_key(message)
        if response is not None and response != last_response and current:
            groups.append(current)
            current = []
        if response is not None:
            last_response = response
        current.append(message)
    if current:
        groups.append(current)
    return groups


@dataclass(frozen=True)
class RoundSplit:
    """The messages before the first response (never dropped), and the rounds after it."""

    head: list[Message]
    rounds: list[list[Message]]


def split_rounds(messages: Sequence[Message]) -> RoundSplit:
    """``group_into_rounds`` with the leading prompt group set apart as the head."""
    groups = group_into_rounds(messages)
    if groups and _response_key(groups[0][0]) is None:
        return RoundSplit(head=groups[0], rounds=groups[1:])
    return RoundSplit(head=[], rounds=groups)


def _response_key(message: Message) -> str | None:
    """What identifies the response an assistant message belongs to (None for anything else)."""
    if not isinstance(message, AssistantMessage) or message.is_api_error_message:
        return None
    response_id = message.message.get("id")
    # A message without an id is a response of its own.
    return response_id if isinstance(response_id, str) and response_id else f"uuid:{message.uuid}"
