"""The library's bundles for ``mid_stream_recovery: resume`` (cassettes/): what the recorded
requests show the engine sent after a stream broke — the finished text kept and a meta resume
message, or the same request again without streaming — next to the default's bundles."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.mid_stream import MID_STREAM_RESUME_TEXT
from replay.cassette import load_cassette

LIBRARY = Path(__file__).resolve().parent.parent / "cassettes"


def bodies(bundle: str) -> list[dict[str, Any]]:
    return [i.request.body for i in load_cassette(LIBRARY / bundle / "cassette.yaml").interactions]


def without_cache_marks(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # The message breakpoint sits on the last block of each request, so it moves between requests.
    text = json.dumps(messages).replace(', "cache_control": {"type": "ephemeral"}', "")
    return json.loads(text)


def settings(bundle: str) -> dict[str, Any]:
    return json.loads((LIBRARY / bundle / "session.json").read_text(encoding="utf-8"))["settings"]


def test_a_resumed_answer_keeps_its_finished_block_and_asks_the_model_to_continue() -> None:
    bundle = "mid-stream-error-resumes-partial-answer"
    first, second = bodies(bundle)

    assert settings(bundle)["mid_stream_recovery"] == "resume"
    assert first.get("stream") is True and second.get("stream") is True
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "user"]
    assert [b["text"] for b in second["messages"][1]["content"]] == ["Without backpressure, a queue grows."]
    assert [b["text"] for b in second["messages"][2]["content"]] == [MID_STREAM_RESUME_TEXT]


@pytest.mark.parametrize(
    "bundle", ["mid-stream-error-resent-without-streaming", "malformed-response-resent-without-streaming"]
)
def test_a_break_before_any_block_finished_resends_the_same_request_without_streaming(bundle: str) -> None:
    first, second = bodies(bundle)

    assert settings(bundle)["mid_stream_recovery"] == "resume"
    assert first.get("stream") is True and "stream" not in second
    assert without_cache_marks(second["messages"]) == without_cache_marks(first["messages"])


@pytest.mark.parametrize(
    ("bundle", "requests"), [("mid-stream-overloaded-event", 2), ("malformed-response-model-error", 1)]
)
def test_the_default_bundles_for_the_same_faults_retry_streamed_or_stop(bundle: str, requests: int) -> None:
    recorded = bodies(bundle)

    assert settings(bundle)["mid_stream_recovery"] == "retry"
    assert [body.get("stream") for body in recorded] == [True] * requests
