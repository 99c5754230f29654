"""End to end: a multi-turn tool-using session recorded through vcrpy against the loopback fake
server, then replayed offline through the cassette transport — and through vcrpy itself."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import anthropic
import httpx2
import pytest
import vcr

from replay.cassette import SERIALIZER_NAME, load_cassette, register_with_vcr
from replay.session.bundle import load_bundle
from replay.session.recording import record_bundle
from replay.session.session_run import replay_bundle

SCENARIO = """\
version: 1
name: analyse-and-fix
turns:
  - content:
      - text: Let me look at both files.
      - tool_use: {name: Read, input: {file_path: notes.md}}
      - tool_use: {name: Grep, input: {pattern: TODO, output_mode: content}}
  - fault: http_error
    status: 429
    error_type: rate_limit_error
    message: Slow down
    headers: {retry-after: "2"}
  - content:
      - text: One TODO. I'll fix it.
      - tool_use: {name: Edit, input: {file_path: notes.md, old_string: "TODO: x", new_string: "DONE: x"}}
  - fault: drop_connection
    after_events: 7
    content: [{text: "The fix is in place and"}, {text: never}]
  - content: [{text: "The TODO is fixed."}]
  - content: [{text: "Nothing else to do."}]
"""


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    workspace = tmp_path / "source"
    workspace.mkdir()
    (workspace / "notes.md").write_text("# Notes\n- TODO: x\n")
    (tmp_path / "scenario.yaml").write_text(SCENARIO)
    return tmp_path / "bundle"


async def record(tmp_path: Path) -> Path:
    out = tmp_path / "bundle"
    await record_bundle(
        out,
        prompts=["Analyse notes.md and fix what is open.", "Anything else?"],
        scenario=tmp_path / "scenario.yaml",
        workspace=tmp_path / "source",
    )
    return out


async def test_a_recorded_session_replays_offline_with_the_same_transcript_and_trace(
    tmp_path: Path, recorded: Path
) -> None:
    bundle = await record(tmp_path)
    recorded_transcript = (bundle / "transcript.jsonl").read_text()

    run = await replay_bundle(bundle)

    assert run.transcript == recorded_transcript
    kinds = [e.kind.value for e in run.trace]
    assert "retry" in kinds and "fallback" in kinds  # the 429 and the dropped stream replayed as faults
    assert [r.result for r in run.results] == ["The TODO is fixed.", "Nothing else to do."]
    assert run.unplayed == []
    # The bundle's own workspace is what the tools start from, never changed by a run.
    assert (bundle / "workspace" / "notes.md").read_text() == "# Notes\n- TODO: x\n"


async def test_replaying_twice_gives_byte_identical_transcripts_and_traces(tmp_path: Path, recorded: Path) -> None:
    bundle = await record(tmp_path)
    first, second = await replay_bundle(bundle), await replay_bundle(bundle)
    assert first.transcript == second.transcript
    assert [e.to_dict() for e in first.trace] == [e.to_dict() for e in second.trace]


async def test_the_cassette_holds_every_call_including_the_faults(tmp_path: Path, recorded: Path) -> None:
    bundle = await record(tmp_path)
    cassette = load_cassette(bundle / "cassette.yaml")

    statuses = [i.response.status for i in cassette.interactions]
    assert statuses == [200, 429, 200, 200, 200, 200]
    faults = [i.response.fault for i in cassette.interactions if i.response.fault is not None]
    assert [f.kind.value for f in faults] == ["dropped_connection"]
    assert faults[0].after_events == 7
    # The streaming fallback's retry went out without streaming, and was recorded as JSON.
    assert cassette.interactions[4].request.body.get("stream") is None


async def test_a_bundle_replays_the_same_from_another_folder(tmp_path: Path, recorded: Path) -> None:
    bundle = await record(tmp_path)
    moved = tmp_path / "elsewhere" / "deeper" / "bundle"
    moved.parent.mkdir(parents=True)
    bundle.rename(moved)
    run = await replay_bundle(moved)
    assert run.transcript == (moved / "transcript.jsonl").read_text()


async def test_vcrpy_itself_loads_the_cassette_and_plays_a_request(tmp_path: Path, recorded: Path) -> None:
    bundle = await record(tmp_path)
    cassette = load_cassette(bundle / "cassette.yaml")
    first = cassette.interactions[0].request

    my_vcr = vcr.VCR(record_mode="none", match_on=["method", "path"])
    register_with_vcr(my_vcr)
    with my_vcr.use_cassette(str(bundle / "cassette.yaml"), serializer=SERIALIZER_NAME):
        client = anthropic.Anthropic(api_key="sk-ant-test", max_retries=0, http_client=httpx2.Client())
        body = dict(first.body)
        body.pop("stream", None)
        with client.messages.stream(**body) as stream:
            text = stream.get_final_text()
    assert text == "Let me look at both files."


async def test_the_transcript_names_no_folder_of_the_machine_it_ran_on(tmp_path: Path, recorded: Path) -> None:
    bundle = await record(tmp_path)
    transcript = (bundle / "transcript.jsonl").read_text()
    # Neither this test's folder nor any temp folder (the suite's may be in memory, not /tmp).
    assert str(tmp_path) not in transcript and "/tmp/" not in transcript
    assert tempfile.gettempdir() + "/" not in transcript
    assert all(json.loads(line)["cwd"] == "<workspace>" for line in transcript.splitlines())


async def test_a_bundle_missing_its_workspace_is_a_clear_error(tmp_path: Path, recorded: Path) -> None:
    from replay.session.bundle import BundleError

    bundle = await record(tmp_path)
    (bundle / "workspace" / "notes.md").unlink()
    (bundle / "workspace").rmdir()
    with pytest.raises(BundleError, match=r"has no workspace/ folder"):
        load_bundle(bundle)
