"""A system prompt changed mid-session (session option ``system_prompt_before_prompt``): from the
named prompt on, every request sends the new text, and nothing hides the change, so the prefix
the fake model cached before it is not read again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine import EngineSettings
from replay.cassette import load_cassette
from replay.fake.scenario import Scenario
from replay.schema.options import SessionOptions
from replay.session.recording import record_bundle
from replay.session.runner import run_bundle

PROMPTS = ("Which port?", "And the host?", "Thanks.")
ORIGINAL = "You are a helpful assistant."
CHANGED = "You are a helpful assistant. Answer in one short sentence."
SWITCH_BEFORE_2 = SessionOptions.from_mapping({"system_prompt_before_prompt": {2: CHANGED}})
TURNS: list[dict[str, Any]] = [
    {"content": [{"text": "Port 8080."}]},
    {"content": [{"text": "localhost."}]},
    {"content": [{"text": "You're welcome."}]},
]


async def record(out: Path) -> Path:
    await record_bundle(
        out,
        prompts=PROMPTS,
        scenario=Scenario.from_list(TURNS),
        settings=EngineSettings(system_prompt=ORIGINAL),
        options=SWITCH_BEFORE_2,
    )
    return out


def message_start_usage(events: Any) -> dict[str, int]:
    """The usage the fake model reported for a request (in its stream's ``message_start``)."""
    (start,) = [event.data for event in events if event.event == "message_start"]
    return start["message"]["usage"]


def system_text(body: Any) -> str:
    (block,) = body["system"]
    return block["text"]


async def test_the_new_system_prompt_is_sent_from_the_named_prompt_on(tmp_path: Path) -> None:
    bundle = await record(tmp_path / "switch")

    bodies = [i.request.body for i in load_cassette(bundle / "cassette.yaml").interactions]

    assert [system_text(body) for body in bodies] == [ORIGINAL, CHANGED, CHANGED]
    # Still the last system block carries the mark: the new prompt is cached in its turn.
    assert all(body["system"][-1]["cache_control"] == {"type": "ephemeral"} for body in bodies)


async def test_the_changed_prefix_reads_nothing_cached_before_it_and_is_read_after(tmp_path: Path) -> None:
    bundle = await record(tmp_path / "switch")

    usage = [message_start_usage(i.response.body) for i in load_cassette(bundle / "cassette.yaml").interactions]

    assert [u["cache_read_input_tokens"] > 0 for u in usage] == [False, False, True]
    assert usage[1]["cache_creation_input_tokens"] > 0


async def test_a_replay_of_the_switch_matches_its_recording(tmp_path: Path) -> None:
    bundle = await record(tmp_path / "switch")

    report = await run_bundle(bundle)

    assert (report.verdict.value, report.differences) == ("match", [])
