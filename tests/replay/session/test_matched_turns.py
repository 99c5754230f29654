"""Recording a session against a scenario whose turns say which request they answer: the engine's
own summary request finds its `match: {purpose: compact}` turn wherever the script lists it, and
a request no turn accepts refuses the recording with one sentence naming it and the turns left."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from replay.cassette import load_cassette
from replay.fake.scenario import Scenario
from replay.schema.options import SessionOptions
from replay.session.bundle import BundleError
from replay.session.recording import record_bundle
from replay.session.runner import run_bundle

PROMPTS = ("Which port?", "Remind me which port.")
ANSWER = {"content": [{"text": "Port 8080."}]}
AGAIN = {"content": [{"text": "We settled on 8080."}]}
SUMMARY = {"content": [{"text": "Summary: the server listens on port 8080."}], "match": {"purpose": "compact"}}
COMPACT_BEFORE_2 = SessionOptions.from_mapping({"compact_before_prompt": 2})


async def record(out: Path, turns: list[dict[str, Any]], *, scenario: Path | None = None) -> Path:
    await record_bundle(out, prompts=PROMPTS, scenario=scenario or Scenario.from_list(turns), options=COMPACT_BEFORE_2)
    return out


async def test_the_summary_turn_answers_the_engines_compaction_wherever_the_script_lists_it(tmp_path: Path) -> None:
    listed_last = await record(tmp_path / "last", [ANSWER, AGAIN, SUMMARY])
    in_order = await record(tmp_path / "in-order", [ANSWER, {"content": SUMMARY["content"]}, AGAIN])

    # The same cassette as the script that lists the summary where it is asked for (ids count
    # requests, whichever turn answers).
    assert len(load_cassette(listed_last / "cassette.yaml").interactions) == 3
    assert (listed_last / "cassette.yaml").read_bytes() == (in_order / "cassette.yaml").read_bytes()
    report = await run_bundle(listed_last)
    assert (report.verdict.value, report.differences) == ("match", [])


async def test_a_request_no_turn_accepts_refuses_the_recording_naming_it_and_the_turns_left(tmp_path: Path) -> None:
    script = tmp_path / "matched.yaml"
    script.write_text(
        "version: 1\nturns:\n"
        "  - content: [{text: Port 8080.}]\n"
        "  - content: [{text: A title}]\n    match: {purpose: side}\n",
        encoding="utf-8",
    )

    with pytest.raises(BundleError) as refused:
        await record(tmp_path / "bundle", [], scenario=script)

    assert str(refused.value).startswith(
        f"{script} has no turn for request 2 to the model (purpose compact, model claude-sonnet-4-6, last user "
        'message: "Your task is to create a detailed summary of the conversation so far'
    )
    assert str(refused.value).endswith(
        "the turns left are turn 2 (match: purpose: side); add a turn for it or change a match (or check its "
        f"prompts and settings). Nothing was written to {tmp_path / 'bundle'}."
    )
    assert not (tmp_path / "bundle").exists()
