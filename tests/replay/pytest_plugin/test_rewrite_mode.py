"""``--record-mode=rewrite``: a drifted bundle behind ``replay_bundle`` is updated from its first
divergence (as ``replay run --update`` does) and replayed; a marker's cassette behind
``replay_engine`` keeps what matches, records the rest against the marker's scenario, and
prunes. Specified through projects run by pytest in this process."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from replay.cassette import load_cassette

LIBRARY = Path(__file__).resolve().parents[3] / "cassettes"

BUNDLE_PROJECT = """\
import pytest

@pytest.mark.parametrize(
    ("name", "kept", "rerecorded", "pruned"),
    [("fewer-turns", 1, 0, 2), ("another-prompt", 0, 3, 3), ("changed-notes", 1, 2, 2)],
)
async def test_bundle(replay_bundle, replay_record_mode, name, kept, rerecorded, pruned):
    replayed = await replay_bundle(name)
    assert replayed.run.unplayed == []
    if replay_record_mode == "rewrite":
        counts = replayed.rewrite
        assert (counts.kept, counts.rerecorded, counts.pruned) == (kept, rerecorded, pruned)
    else:
        assert replayed.rewrite is None
"""


def edit_session(bundle: Path, **changes: object) -> None:
    path = bundle / "session.json"
    document = json.loads(path.read_text())
    for key, value in changes.items():
        if key == "max_turns":
            document["settings"]["max_turns"] = value
        else:
            document[key] = value
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")


def run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    """A run in this process: a subprocess would pay about 2 s of imports."""
    return project.runpytest_inprocess(*args)


def test_rewrite_updates_drifted_bundles_from_their_first_divergence_and_they_replay_after(
    project: pytest.Pytester,
) -> None:
    cassettes = project.path / "cassettes"
    for name in ("fewer-turns", "another-prompt", "changed-notes"):
        shutil.copytree(LIBRARY / "demo", cassettes / name)
    edit_session(cassettes / "fewer-turns", max_turns=1)
    edit_session(cassettes / "another-prompt", prompts=["List the open TODOs in notes.md."])
    (cassettes / "changed-notes" / "workspace" / "notes.md").write_text("# Notes\n\n- TODO: nothing else.\n")
    project.makepyfile(test_bundles=BUNDLE_PROJECT)

    run(project).assert_outcomes(failed=3)
    run(project, "--record-mode=rewrite").assert_outcomes(passed=3)
    run(project).assert_outcomes(passed=3)
    assert len(load_cassette(cassettes / "another-prompt" / "cassette.yaml").interactions) == 3


ENGINE_PROJECT = """\
import os
import pytest

@pytest.mark.replay_cassette("asks", scenario="script.yaml")
async def test_engine(replay_engine):
    for prompt in os.environ["PROMPTS"].split(","):
        await replay_engine.submit(prompt)
"""

SCRIPT = """\
version: 1
turns:
  - content: [{text: first answer}]
  - content: [{text: second answer}]
  - content: [{text: third answer}]
"""


def test_rewrite_of_a_marker_cassette_keeps_the_prefix_and_records_the_rest_from_the_scenario(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(test_engine=ENGINE_PROJECT)
    (project.path / "script.yaml").write_text(SCRIPT)
    cassette = project.path / "cassettes" / "asks.yaml"
    monkeypatch.setenv("PROMPTS", "one,two,three")
    run(project, "--record-mode=once").assert_outcomes(passed=1)
    recorded = load_cassette(cassette).interactions

    monkeypatch.setenv("PROMPTS", "one,TWO")
    run(project).assert_outcomes(failed=1)
    run(project, "--record-mode=rewrite").assert_outcomes(passed=1)

    rewritten = load_cassette(cassette).interactions
    assert rewritten[0] == recorded[0]  # kept as it was
    assert len(rewritten) == 2 and "second answer" in str(rewritten[1].response.body)  # the script's second turn
    assert "TWO" in json.dumps(rewritten[1].request.body)
    run(project).assert_outcomes(passed=1)
