"""`FakeModel.fast_forward`: after serving some requests silently, the fake model answers the next
exactly as one that answered them all."""

from __future__ import annotations

import json
from typing import NamedTuple

from replay.fake.model import FakeModel
from replay.fake.scenario import Scenario

SCRIPT = Scenario.from_list(
    [
        {"content": [{"text": "one"}, {"tool_use": {"name": "Glob", "input": {"pattern": "*"}}}]},
        {"fault": "http_error", "status": 529, "error_type": "overloaded_error", "message": "Overloaded"},
        {"content": [{"text": "three"}]},
    ]
)


class Sent(NamedTuple):
    method: str
    path: str
    body: bytes


def request(text: str) -> Sent:
    body = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 10,
        "stream": True,
        "messages": [{"role": "user", "content": text}],
    }
    return Sent("POST", "/v1/messages", json.dumps(body).encode())


def test_a_fast_forwarded_model_answers_the_next_request_as_one_that_served_them_all() -> None:
    earlier = [request("a"), Sent("POST", "/v1/messages/count_tokens", b'{"messages": []}'), request("b")]
    served, forwarded = FakeModel(SCRIPT), FakeModel(SCRIPT)
    for method, path, body in earlier:
        served.respond(method, path, {}, body)

    forwarded.fast_forward(earlier)

    method, path, body = request("c")
    assert forwarded.respond(method, path, {}, body) == served.respond(method, path, {}, body)
    assert forwarded.turns_played == served.turns_played == 3
    assert len(forwarded.requests) == len(served.requests) == 4


def test_fast_forwarding_past_the_script_counts_the_requests_the_server_answered_with_an_error() -> None:
    model = FakeModel(Scenario.from_list([{"content": [{"text": "only"}]}]))

    model.fast_forward([request("a"), request("b")])

    assert model.turns_played == 1 and model.turns_remaining == 0
    assert len(model.requests) == 2
