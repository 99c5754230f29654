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
from replay.session.library_coverage import COMPACTION_TIERS, FAULTS, TERMINALS, TRANSITIONS, coverage
from replay.session.rerecord import rerecord_bundle
from replay.session.verify import find_bundles

LIBRARY = Path(__file__).resolve().parent.parent / "cassettes"
BUNDLES = find_bundles([LIBRARY])

# The behaviours the library must show besides every transition, terminal and tier.
REQUIRED_FAULTS = (
    "retry rate_limited",  # retries with retry-after
    "fallback model",  # model fallback after 529s
    "fallback streaming",  # streaming fallback with tombstones
    "cassette stream_error",  # a mid-stream error event
    "cassette dropped_connection",  # a dropped connection
)
# A manual compaction is an API call a user makes, not a tier of the loop's own shaping.
REQUIRED_TIERS = tuple(t.value for t in CompactionTier if t is not CompactionTier.MANUAL)


def test_replay_verify_replays_every_bundle_of_the_library() -> None:
    result = CliRunner().invoke(app, ["verify", str(LIBRARY)])
    assert result.exit_code == 0, result.output
    assert f"{len(BUNDLES)} bundle(s): {len(BUNDLES)} match, 0 drift, 0 error." in result.output


def test_every_transition_terminal_and_tier_is_exercised_by_some_bundle() -> None:
    report = coverage([LIBRARY])
    exercised = {
        category: report.exercised_by(category) for category in (TRANSITIONS, TERMINALS, COMPACTION_TIERS, FAULTS)
    }
    missing_transitions = [t.value for t in Transition if not exercised[TRANSITIONS].get(t.value)]
    missing_terminals = [t.value for t in Terminal if not exercised[TERMINALS].get(t.value)]
    missing_tiers = [t for t in REQUIRED_TIERS if not exercised[COMPACTION_TIERS].get(t)]
    missing_faults = [f for f in REQUIRED_FAULTS if not exercised[FAULTS].get(f)]
    assert (missing_transitions, missing_terminals, missing_tiers, missing_faults) == ([], [], [], [])


@pytest.mark.parametrize("bundle", BUNDLES, ids=[b.name for b in BUNDLES])
def test_re_recording_a_bundle_from_its_scenario_gives_identical_files(bundle: Path) -> None:
    report = asyncio.run(rerecord_bundle(bundle))
    assert report.differing == []
