"""A failed replay never costs a committed snapshot: under ``--snapshot-update`` syrupy deletes
the snapshots no test asserted, and a test whose replay failed never got to assert its own. The
plugin keeps them (`TraceSnapshotExtension`), and its failure text names the command that
re-records the bundle and updates the snapshot together."""

from __future__ import annotations

import pytest

from tests.replay.pytest_plugin.test_pytest_plugin import READ, record_review
from tests.replay.pytest_plugin.test_pytest_plugin import run_in_subprocess as run  # its own loop is running

PROJECT = """\
import pytest

@pytest.mark.replay_cassette("review")
async def test_drifted(replay_bundle, trace_snapshot):
    replayed = await replay_bundle()
    assert replayed.trace == trace_snapshot

@pytest.mark.replay_cassette("steady")
async def test_steady(replay_bundle, trace_snapshot):
    replayed = await replay_bundle()
    assert replayed.trace == trace_snapshot
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "xdist"])
async def test_snapshot_update_keeps_the_snapshot_of_a_failed_replay_and_updates_a_passing_one(
    project: pytest.Pytester, workers: list[str]
) -> None:
    review = await record_review(project, READ)
    steady = project.path / "cassettes" / "steady"
    (steady.parent / "review").rename(steady)
    await record_review(project, READ)
    project.makepyfile(test_project=PROJECT)
    snapshots = project.path / "__snapshots__" / "test_project"
    run(project, "--snapshot-update").assert_outcomes(passed=2)
    drifted, stale = snapshots / "test_drifted.trace.txt", snapshots / "test_steady.trace.txt"
    committed, fresh = drifted.read_bytes(), stale.read_bytes()
    stale.write_text(stale.read_text().replace("completed", "max_turns"))
    # The workspace changed: the Read result differs, so the second request misses the cassette.
    (review / "workspace" / "notes.md").write_text("# Notes\n- nothing left\n")

    result = run(project, "--snapshot-update", *workers)

    result.assert_outcomes(passed=1, failed=1)
    assert drifted.read_bytes() == committed
    assert stale.read_bytes() == fresh
    output = result.stdout.str()
    assert "1 snapshot updated. 1 snapshot unused." in output and "Deleted" not in output
    assert "no snapshot was deleted, because test_project.py::test_drifted failed before it could use" in output
    assert "pytest test_project.py::test_drifted --record-mode=rewrite --snapshot-update" in output
