"""A turn's tool results in another order ask the same thing: the player answers a request whose
results come in a different order from the recording (a client that runs tools concurrently sends
them as they finish), and only when nothing else differs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from replay.cassette.interaction import BodyKind, Interaction, RecordedRequest, RecordedResponse
from replay.cassette.tool_result_order import tool_results_by_id
from replay.cassette.transport import CassetteMismatchError, CassettePlayer

URI = "https://api.anthropic.com/v1/messages"
CALLS = {
    "role": "assistant",
    "content": [
        {"type": "tool_use", "id": "toolu_b", "name": "Read", "input": {"file_path": "b.md"}},
        {"type": "tool_use", "id": "toolu_a", "name": "Read", "input": {"file_path": "a.md"}},
    ],
}


def result(tool_use_id: str, text: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": text}


def request_with(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-6",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "Read both."}, CALLS, {"role": "user", "content": list(blocks)}],
    }


def recorded(body: dict[str, Any], answer: str) -> Interaction:
    return Interaction(
        RecordedRequest(method="POST", uri=URI, body=body),
        RecordedResponse(
            status=200, headers={"content-type": "application/json"}, kind=BodyKind.JSON, body={"a": answer}
        ),
    )


def encoded(body: dict[str, Any]) -> bytes:
    return json.dumps(body).encode()


A, B = result("toolu_a", "alpha"), result("toolu_b", "beta")
NOTE = {"type": "text", "text": "Both read."}


def test_results_are_put_in_id_order_and_other_blocks_stay_in_place() -> None:
    body = request_with(B, NOTE, A)

    assert tool_results_by_id(body)["messages"][2]["content"] == [A, NOTE, B]
    assert body["messages"][2]["content"] == [B, NOTE, A]  # the request itself is not changed


def test_a_body_whose_results_are_already_in_order_is_returned_as_it_is() -> None:
    body = request_with(A, B)

    assert tool_results_by_id(body) is body
    assert tool_results_by_id({"messages": "not a list"}) == {"messages": "not a list"}


def test_a_request_with_its_results_in_another_order_plays_the_recorded_answer() -> None:
    player = CassettePlayer([recorded(request_with(B, A), "finished b first")])

    played = player.match("POST", "/v1/messages", encoded(request_with(A, B)))

    assert played.response.body == {"a": "finished b first"}
    assert player.unplayed() == []


def test_each_recording_is_played_once_whichever_order_asks_for_it() -> None:
    player = CassettePlayer([recorded(request_with(B, A), "first"), recorded(request_with(A, B), "second")])

    answers = [player.match("POST", "/v1/messages", encoded(request_with(A, B))).response.body for _ in range(2)]

    # The exact match comes first; the reordered one answers the next request.
    assert answers == [{"a": "second"}, {"a": "first"}]
    with pytest.raises(CassetteMismatchError):
        player.match("POST", "/v1/messages", encoded(request_with(A, B)))


def test_a_request_that_differs_in_a_result_itself_still_misses() -> None:
    player = CassettePlayer([recorded(request_with(B, A), "recorded")])

    with pytest.raises(CassetteMismatchError, match="differs at"):
        player.match("POST", "/v1/messages", encoded(request_with(result("toolu_a", "changed"), B)))
