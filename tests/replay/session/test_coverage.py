"""Coverage: which transitions, terminals, compaction tiers and faults a set of bundles exercises."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from replay.session.bundle import BundleError
from replay.session.library_coverage import KNOWN, coverage, render_table
from replay.session.verify import find_bundles
from tests.replay.bundle_helpers import AUTOCOMPACT_TURNS, DONE, FAULT_TURNS, SMALL_CONTEXT, record


async def test_faults_come_from_the_trace_and_from_the_cassette(tmp_path: Path) -> None:
    await record(tmp_path / "faults", FAULT_TURNS)

    (bundle,) = coverage([tmp_path]).bundles

    assert bundle.exercised["faults"] == [
        "retry overloaded",  # the 529 and the mid-stream overloaded event, retried
        "fallback streaming",  # the dropped connection
        "cassette http_error",
        "cassette stream_error",
        "cassette dropped_connection",
        "cassette http 529",
    ]
    assert bundle.exercised["terminals"] == ["completed"]
    assert bundle.exercised["transitions"] == []


async def test_what_no_bundle_exercises_is_listed_per_category(tmp_path: Path) -> None:
    await record(tmp_path / "suite" / "compacts", AUTOCOMPACT_TURNS, settings=SMALL_CONTEXT)
    await record(tmp_path / "suite" / "nested" / "faults", FAULT_TURNS)

    report = coverage([tmp_path / "suite"])

    assert [b.bundle.name for b in report.bundles] == ["compacts", "faults"]
    assert report.exercised_by("compaction_tiers")["autocompact"] == [str(tmp_path / "suite" / "compacts")]
    assert report.exercised_by("transitions")["next_turn"] == [str(tmp_path / "suite" / "compacts")]
    assert "autocompact" not in report.missing("compaction_tiers")
    assert "reactive_compact" in report.missing("compaction_tiers")
    assert report.missing("terminals") == [t for t in KNOWN["terminals"] if t != "completed"]
    assert "retry rate_limited" in report.missing("faults") and "retry overloaded" not in report.missing("faults")


async def test_the_json_form_lists_bundles_what_they_exercise_and_what_is_missing(tmp_path: Path) -> None:
    await record(tmp_path / "compacts", AUTOCOMPACT_TURNS, settings=SMALL_CONTEXT)

    document = coverage([tmp_path]).to_json()

    assert document["bundles"] == [
        {
            "bundle": str(tmp_path / "compacts"),
            "has_trace": True,
            "transitions": ["next_turn"],
            "terminals": ["completed"],
            "compaction_tiers": ["autocompact"],
            "faults": [],
        }
    ]
    assert document["exercised"]["compaction_tiers"] == {"autocompact": [str(tmp_path / "compacts")]}
    assert len(document["missing"]["transitions"]) == 6 and "next_turn" not in document["missing"]["transitions"]
    assert len(KNOWN["transitions"]) == 7 and len(KNOWN["terminals"]) == 10 and len(KNOWN["compaction_tiers"]) == 7


async def test_the_table_shows_each_name_who_exercises_it_and_what_none_does(tmp_path: Path) -> None:
    await record(tmp_path / "hello", [DONE])

    table = render_table(coverage([tmp_path]))

    assert "terminals         completed                    1        hello" in table
    assert "                  max_turns                    -        none" in table
    assert "No bundle exercises these compaction tiers: tool_result_budget, snip, microcompact" in table


async def test_a_bundle_without_a_trace_counts_its_cassette_faults_only(tmp_path: Path) -> None:
    await record(tmp_path / "faults", FAULT_TURNS)
    (tmp_path / "faults" / "trace.json").unlink()

    report = coverage([tmp_path])

    assert report.bundles[0].exercised["faults"] == [
        "cassette http_error",
        "cassette stream_error",
        "cassette dropped_connection",
        "cassette http 529",
    ]
    assert "Without trace.json (only cassette faults counted)" in render_table(report)


async def test_bundles_are_found_below_folders_but_not_inside_a_bundle_or_a_hidden_folder(tmp_path: Path) -> None:
    await record(tmp_path / "a", [DONE])
    shutil.copytree(tmp_path / "a", tmp_path / "deep" / "er" / "b")
    shutil.copytree(tmp_path / "a", tmp_path / ".recording-in-progress")
    (tmp_path / "a" / "workspace" / "session.json").write_text("{}")  # a file the tools work on

    assert find_bundles([tmp_path]) == [tmp_path / "a", tmp_path / "deep" / "er" / "b"]
    assert find_bundles([tmp_path / "a", tmp_path]) == [tmp_path / "a", tmp_path / "deep" / "er" / "b"]


async def test_a_corrupt_bundle_or_a_missing_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nowhere does not exist"):
        coverage([tmp_path / "nowhere"])
    await record(tmp_path / "a", [DONE])
    (tmp_path / "a" / "session.json").write_text("{not json")
    with pytest.raises(BundleError, match=r"session\.json is not valid JSON"):
        coverage([tmp_path])
