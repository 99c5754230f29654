"""The trace snapshot extension: a behaviour trace stored as its readable text, one
``.trace.txt`` file per assertion beside the tests, stable across runs and folders."""

from __future__ import annotations

from pathlib import Path

import pytest
from syrupy.data import Snapshot, SnapshotCollection
from syrupy.location import PyTestLocation

from replay.fake.scenario import Scenario
from replay.session.recording import record_bundle
from replay.session.session_run import SessionRun, replay_bundle
from replay.trace.behaviour import BehaviourTrace, render_text
from replay.trace.snapshot import TraceSnapshotExtension, serialize_trace

READ_THEN_ANSWER = Scenario.from_list(
    [
        {"content": [{"text": "Let me look."}, {"tool_use": {"name": "Read", "input": {"file_path": "notes.md"}}}]},
        {"content": [{"text": "Done."}]},
    ]
)
GREP_THEN_ANSWER = Scenario.from_list(
    [
        {"content": [{"text": "Let me look."}, {"tool_use": {"name": "Grep", "input": {"pattern": "TODO"}}}]},
        {"content": [{"text": "Done."}]},
    ]
)
PROMPT = "Review notes.md"


async def recorded_trace(root: Path, scenario: Scenario = READ_THEN_ANSWER) -> BehaviourTrace:
    """Record a one-prompt session under ``root`` and return the trace of its offline replay."""
    source = root / "source"
    source.mkdir(parents=True)
    (source / "notes.md").write_text("# Notes\n- TODO: x\n")
    bundle = await record_bundle(root / "review", prompts=[PROMPT], scenario=scenario, workspace=source)
    run: SessionRun = await replay_bundle(bundle)
    return run.behaviour("review", [PROMPT])


async def test_a_trace_is_stored_as_its_readable_text(tmp_path: Path) -> None:
    trace = await recorded_trace(tmp_path)
    text = TraceSnapshotExtension().serialize(trace)
    assert text == render_text(trace)
    lines = text.splitlines()
    assert lines[:3] == ["session: review", 'prompt 1: "Review notes.md"', "  pass 1: start"]
    assert "    tools batch 1 (concurrent): Read success" in lines
    # Each request's prompt cache, under it: the second pass reads what the first wrote.
    cache_lines = [line for line in lines if line.startswith("      cache: ")]
    assert len(cache_lines) == 2
    assert cache_lines[0].startswith("      cache: read 0, wrote ") and cache_lines[0].endswith(" (1 mark)")
    assert not cache_lines[1].startswith("      cache: read 0,")
    assert "  pass 2: next_turn" in lines
    assert lines[-1] == "  terminal: completed"


async def test_the_snapshot_text_is_the_same_across_runs_and_folders(tmp_path: Path) -> None:
    first = serialize_trace(await recorded_trace(tmp_path / "one"))
    again = serialize_trace(await recorded_trace(tmp_path / "one" / "again"))
    elsewhere = serialize_trace(await recorded_trace(tmp_path / "some" / "other" / "folder"))
    assert first == again == elsewhere
    # The bundle's own trace.txt, written while recording, is the same text as its replay's.
    assert (tmp_path / "one" / "review" / "trace.txt").read_text() == first


def test_snapshots_are_named_after_the_test_in_a_folder_per_module(request: pytest.FixtureRequest) -> None:
    location = PyTestLocation(request.node)
    snapshots = Path(__file__).parent / "__snapshots__" / "test_snapshot"
    name = "test_snapshots_are_named_after_the_test_in_a_folder_per_module"
    assert TraceSnapshotExtension.get_location(test_location=location, index=0) == str(snapshots / f"{name}.trace.txt")
    assert TraceSnapshotExtension.get_location(test_location=location, index=1) == str(
        snapshots / f"{name}.1.trace.txt"
    )


async def test_a_stored_snapshot_reads_back_as_the_same_text(tmp_path: Path) -> None:
    text = serialize_trace(await recorded_trace(tmp_path))
    location = tmp_path / "__snapshots__" / "test_module" / "test_case.trace.txt"
    location.parent.mkdir(parents=True)
    collection = SnapshotCollection(location=str(location))
    collection.add(Snapshot(name="test_case", data=text))
    TraceSnapshotExtension.write_snapshot_collection(snapshot_collection=collection)
    assert location.read_text(encoding="utf-8") == text
    stored = TraceSnapshotExtension().read_snapshot_data_from_location(
        snapshot_location=str(location), snapshot_name="test_case", session_id="0"
    )
    assert stored == text


async def test_a_changed_trace_shows_as_a_diff_of_the_loop_s_own_lines(tmp_path: Path) -> None:
    extension = TraceSnapshotExtension()
    recorded = serialize_trace(await recorded_trace(tmp_path / "before"))
    received = serialize_trace(await recorded_trace(tmp_path / "after", GREP_THEN_ANSWER))
    assert not extension.matches(serialized_data=received, snapshot_data=recorded)
    diff = extension.diff_snapshots(serialized_data=received, snapshot_data=recorded)
    assert "-     tools batch 1 (concurrent): Read success" in diff.splitlines()
    assert "+     tools batch 1 (concurrent): Grep success" in diff.splitlines()


def test_anything_but_a_trace_is_refused_with_how_to_get_one() -> None:
    with pytest.raises(TypeError, match=r"compares a BehaviourTrace, not dict\. Pass the trace itself"):
        serialize_trace({"session": "review"})


def test_property_filters_are_refused_since_a_trace_is_compared_whole() -> None:
    with pytest.raises(TypeError, match="takes no exclude or include"):
        TraceSnapshotExtension().serialize(BehaviourTrace(session="s"), exclude=lambda **_: False)
