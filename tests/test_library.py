"""The bundled scenario library (cassettes/) is the harness's own regression suite: every bundle
replays, together they exercise every behaviour the loop has, and re-recording them from their
scenarios gives byte-identical bundles."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engine import CompactionTier, Terminal, Transition
from replay.cli.app import app
from replay.session.library_coverage import (
    CATEGORIES,
    COMPACTION_TIERS,
    KNOWN,
    TERMINALS,
    TRANSITIONS,
    coverage,
)
from replay.session.rerecord import rerecord_bundle
from replay.session.verify import find_bundles

LIBRARY = Path(__file__).resolve().parent.parent / "cassettes"
BUNDLES = find_bundles([LIBRARY])


def test_replay_verify_replays_every_bundle_of_the_library() -> None:
    result = CliRunner().invoke(app, ["verify", str(LIBRARY)])
    assert result.exit_code == 0, result.output
    assert f"{len(BUNDLES)} bundle(s): {len(BUNDLES)} match, 0 drift, 0 error." in result.output


def test_every_transition_terminal_tier_and_fault_is_exercised_by_some_bundle() -> None:
    report = coverage([LIBRARY])

    assert {category: report.missing(category) for category in CATEGORIES} == {category: [] for category in CATEGORIES}
    # Each name the loop knows is counted, so nothing can be left out by not being listed.
    assert [t.value for t in Transition] == list(KNOWN[TRANSITIONS])
    assert [t.value for t in Terminal] == list(KNOWN[TERMINALS])
    assert [t.value for t in CompactionTier] == list(KNOWN[COMPACTION_TIERS])


@pytest.mark.parametrize("bundle", BUNDLES, ids=[b.name for b in BUNDLES])
def test_re_recording_a_bundle_from_its_scenario_gives_identical_files(bundle: Path) -> None:
    report = asyncio.run(rerecord_bundle(bundle))
    assert report.differing == []
