"""Session bundles: what a bundle must hold, and that a failed recording leaves nothing behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay.fake.scenario import Scenario
from replay.session.bundle import BundleError, load_bundle
from replay.session.recording import record_bundle
from replay.session.session_run import replay_bundle

ANSWER = Scenario.from_list([{"content": [{"text": "Hello."}]}])


async def recorded(tmp_path: Path) -> Path:
    await record_bundle(tmp_path / "bundle", prompts=["hi"], scenario=ANSWER)
    return tmp_path / "bundle"


async def test_a_bundle_holds_cassette_transcript_session_workspace_and_scenario(tmp_path: Path) -> None:
    bundle = await recorded(tmp_path)
    assert sorted(p.name for p in bundle.iterdir()) == [
        "cassette.yaml",
        "scenario.yaml",
        "session.json",
        "trace.json",
        "trace.txt",
        "transcript.jsonl",
        "workspace",
    ]
    session = json.loads((bundle / "session.json").read_text())
    assert session["format_version"] == 1 and session["prompts"] == ["hi"] and session["seed"] == 0
    assert session["model"] == "claude-sonnet-4-6" and session["settings"]["max_turns"] is None
    assert (await replay_bundle(bundle)).results[0].result == "Hello."


async def test_a_corrupt_session_file_is_named(tmp_path: Path) -> None:
    bundle = await recorded(tmp_path)
    (bundle / "session.json").write_text("{not json")
    with pytest.raises(BundleError, match=r"session.json is not valid JSON"):
        load_bundle(bundle)


async def test_a_session_file_of_another_version_is_refused(tmp_path: Path) -> None:
    bundle = await recorded(tmp_path)
    document = json.loads((bundle / "session.json").read_text())
    (bundle / "session.json").write_text(json.dumps({**document, "format_version": 9}))
    with pytest.raises(BundleError, match=r"is session format version 9; this replay reads version 1"):
        load_bundle(bundle)


async def test_a_session_naming_an_unknown_tool_is_refused(tmp_path: Path) -> None:
    bundle = await recorded(tmp_path)
    document = json.loads((bundle / "session.json").read_text())
    (bundle / "session.json").write_text(json.dumps({**document, "tools": ["Read", "Teleport"]}))
    with pytest.raises(BundleError, match=r"names tools this engine does not have: Teleport"):
        load_bundle(bundle)


async def test_a_bundle_without_its_cassette_is_refused(tmp_path: Path) -> None:
    bundle = await recorded(tmp_path)
    (bundle / "cassette.yaml").unlink()
    with pytest.raises(BundleError, match=r"has no cassette.yaml; it is incomplete"):
        load_bundle(bundle)


def test_a_missing_bundle_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match=r"nowhere does not exist or is not a folder"):
        load_bundle(tmp_path / "nowhere")


async def test_a_recording_that_fails_leaves_no_bundle_and_no_half_written_files(tmp_path: Path) -> None:
    with pytest.raises(BundleError):
        await record_bundle(tmp_path / "bundle", prompts=["hi"], scenario=ANSWER, workspace=tmp_path / "missing")
    assert list(tmp_path.iterdir()) == []


async def test_re_recording_replaces_the_old_bundle_only_when_the_new_one_is_complete(tmp_path: Path) -> None:
    bundle = await recorded(tmp_path)
    before = (bundle / "cassette.yaml").read_bytes()
    with pytest.raises(BundleError):
        await record_bundle(bundle, prompts=["hi"], scenario=ANSWER, workspace=tmp_path / "missing")
    assert (bundle / "cassette.yaml").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bundle"]


async def test_a_live_recording_without_a_key_says_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match=r"needs an API key: set ANTHROPIC_API_KEY"):
        await record_bundle(tmp_path / "bundle", prompts=["hi"])


async def test_a_scenario_with_prompts_and_settings_records_without_either_being_passed(tmp_path: Path) -> None:
    scenario = Scenario.from_list([{"content": [{"text": "Hello."}]}])
    import dataclasses

    scenario = dataclasses.replace(scenario, prompts=("hi",), settings={"max_turns": 2})
    bundle = await record_bundle(tmp_path / "bundle", scenario=scenario)
    assert bundle.spec.prompts == ("hi",) and bundle.spec.settings.max_turns == 2


async def test_nothing_to_submit_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match=r"Nothing to submit"):
        await record_bundle(tmp_path / "bundle", scenario=ANSWER)


async def test_a_script_that_runs_out_is_refused_naming_the_file_the_turn_and_the_prompt(tmp_path: Path) -> None:
    script = tmp_path / "short.yaml"
    script.write_text("version: 1\nprompts: [hi, bye]\nturns:\n  - content: [{text: Hello.}]\n")
    bundle = await record_bundle(tmp_path / "bundle", scenario=script, prompts=["hi"])
    before = {p.name: p.read_bytes() for p in bundle.path.iterdir() if p.is_file()}

    with pytest.raises(BundleError) as refused:
        await record_bundle(bundle.path, scenario=script)

    assert str(refused.value) == (
        f"{script} ran out of turns: it has 1 turn, but request 2 to the model needed turn 2 (last user message: "
        f"'bye'); add that turn to the scenario (or check its prompts and settings). Nothing was written to "
        f"{bundle.path}."
    )
    assert {p.name: p.read_bytes() for p in bundle.path.iterdir() if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bundle", "short.yaml"]
