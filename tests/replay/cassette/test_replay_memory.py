"""What a replay keeps of the requests it answers: an agent loop re-sends its whole history on
every request, so a log holding a copy of every body would grow with the square of a session's
length. The player's log keeps each body as the pieces of its normalized text, shared with the
piece caches: each distinct message once, a few pointers per request. Sizes are measured with
tracemalloc (allocated bytes, not time)."""

from __future__ import annotations

import gc
import json
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest

from replay.cassette.fingerprints import Normalizer, parse_body
from replay.cassette.interaction import BodyKind, Interaction, RecordedRequest, RecordedResponse
from replay.cassette.raw_keys import raw_body_keys
from replay.cassette.transport import CassettePlayer
from tests.replay.cassette.test_transport import URI, sse_answer

SESSIONS, STEPS = 3, 12
PROSE = "The test reads the configuration module and then the parser it calls before the fix. " * 12


@pytest.fixture(autouse=True)
def no_keys_kept() -> Iterator[None]:
    raw_body_keys().clear()
    yield
    raw_body_keys().clear()


def agent_loop_requests() -> list[Interaction]:
    """Sessions whose every request re-sends the history so far and adds a turn to it."""
    interactions = []
    for session in range(SESSIONS):
        history: list[dict[str, Any]] = [{"role": "user", "content": f"Session {session}. {PROSE}"}]
        for step in range(STEPS):
            body = {"model": "claude-sonnet-4-6", "max_tokens": 100, "stream": True, "messages": list(history)}
            response = RecordedResponse(
                status=200, headers={"content-type": "text/event-stream"}, kind=BodyKind.SSE, body=sse_answer("ok")
            )
            interactions.append(Interaction(RecordedRequest(method="POST", uri=URI, body=body), response))
            history.append({"role": "assistant", "content": f"Step {step} of session {session}. {PROSE}"})
            history.append({"role": "user", "content": f"Result {step} of session {session}. {PROSE}"})
    return interactions


def test_a_replay_keeps_each_message_once_not_a_copy_of_every_body() -> None:
    interactions = agent_loop_requests()
    player = CassettePlayer(interactions, strict=True)
    bodies = [interaction.request.body_bytes() for interaction in interactions]
    sent = sum(map(len, bodies))
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for body in bodies:
            player.match("POST", "/v1/messages", body)
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    kept = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    # A copy of every body would be more than `sent`; each message once (and the last list seen)
    # is about a third of it.
    assert kept < sent / 2
    player.finish()


def test_a_logged_body_reads_back_as_the_normalized_body_it_was_fingerprinted_by() -> None:
    interactions = agent_loop_requests()[:STEPS]
    player = CassettePlayer(interactions, strict=True)
    for interaction in interactions:
        player.match("POST", "/v1/messages", interaction.request.body_bytes())
    normalizer = Normalizer()
    expected = [json.loads(normalizer.body(parse_body(i.request.body_bytes()))) for i in interactions]
    assert [entry.body for entry in player.log] == expected
