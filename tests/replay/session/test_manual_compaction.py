"""Manual compaction between prompts (session option ``compact_before_prompt``): the user
compacts before a prompt, the summary request goes to the model, the trace shows a ``manual``
compaction, and the prompt continues from the summary alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.compact import SUMMARY_PREAMBLE
from replay.cassette import load_cassette
from replay.fake.scenario import Scenario
from replay.schema.options import SessionOptions
from replay.session.library_coverage import coverage
from replay.session.recording import record_bundle
from replay.session.runner import run_bundle

PROMPTS = ("Which port?", "Remind me which port.")
ANSWER = {"content": [{"text": "Port 8080."}]}
SUMMARY = {"content": [{"text": "Summary: the server listens on port 8080."}]}
AGAIN = {"content": [{"text": "We settled on 8080."}]}
COMPACT_BEFORE_2 = SessionOptions.from_mapping({"compact_before_prompt": 2})


async def record(out: Path, turns: list[dict[str, Any]]) -> Path:
    await record_bundle(out, prompts=PROMPTS, scenario=Scenario.from_list(turns), options=COMPACT_BEFORE_2)
    return out


def roles(request_body: Any) -> list[str]:
    return [message["role"] for message in request_body["messages"]]


async def test_the_session_compacts_before_the_second_prompt_which_continues_from_the_summary(
    tmp_path: Path,
) -> None:
    bundle = await record(tmp_path / "manual", [ANSWER, SUMMARY, AGAIN])

    first, summary_request, second = load_cassette(bundle / "cassette.yaml").interactions
    trace = (await run_bundle(bundle)).trace

    assert roles(summary_request.request.body) == ["user", "assistant", "user"]
    assert summary_request.request.body["system"] != first.request.body.get("system")
    # After the boundary the history is the summary, with the second prompt in the same turn.
    assert roles(second.request.body) == ["user"]
    texts = [block["text"] for block in second.request.body["messages"][0]["content"]]
    assert texts[0].startswith(SUMMARY_PREAMBLE) and "port 8080" in texts[0] and texts[-1] == PROMPTS[1]
    assert trace is not None
    (compaction,) = trace.prompts[1].before
    assert (compaction["tier"], compaction["boundary"], len(compaction["requests"])) == ("manual", True, 1)
    assert [p.terminal for p in trace.prompts] == ["completed", "completed"]
    assert coverage([bundle]).bundles[0].exercised["compaction_tiers"] == ["manual"]


async def test_a_replay_of_a_manual_compaction_matches_its_recording(tmp_path: Path) -> None:
    bundle = await record(tmp_path / "manual", [ANSWER, SUMMARY, AGAIN])

    report = await run_bundle(bundle)

    assert (report.verdict.value, report.differences) == ("match", [])


async def test_a_failed_manual_compaction_is_traced_and_the_session_carries_on_uncompacted(tmp_path: Path) -> None:
    refused = {"fault": "http_error", "status": 400, "error_type": "invalid_request_error", "message": "no"}
    bundle = await record(tmp_path / "failed", [ANSWER, refused, AGAIN])

    *_, second = load_cassette(bundle / "cassette.yaml").interactions
    trace = (await run_bundle(bundle)).trace

    assert roles(second.request.body) == ["user", "assistant", "user"]
    assert trace is not None
    (compaction,) = trace.prompts[1].before
    assert compaction["tier"] == "manual"
    assert compaction["failed"].startswith("The summary request failed (invalid_request)")
    assert coverage([bundle]).bundles[0].exercised["compaction_tiers"] == []
