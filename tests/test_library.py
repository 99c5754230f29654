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
from replay.fake.scenario import load_scenario
from replay.session.bundle import SCENARIO_FILE, SESSION_FILE, WORKSPACE_DIR, SessionSpec, load_bundle
from replay.session.library_coverage import (
    CATEGORIES,
    COMPACTION_TIERS,
    KNOWN,
    TERMINALS,
    TRANSITIONS,
    coverage,
)
from replay.session.rerecord import rerecord_bundle
from replay.session.session_setup import resolve_setup
from tests.library_bundles import BUNDLES, LIBRARY, SETUP_VARIETY


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
def test_re_recording_a_bundle_sets_its_session_up_as_recording_its_scenario_does(bundle: Path) -> None:
    # `replay verify --rerecord` records a bundle again from its session.json and workspace;
    # `replay record --scenario` records the committed bytes from the scenario alone, bundle by
    # bundle (tests/replay/session/test_session_setup.py). A recording is a function of its
    # set-up and seed, so equal set-ups give equal bundles: checked here for every bundle
    # without recording the library a second time, and recorded for three below.
    loaded = load_bundle(bundle)
    scenario = bundle / SCENARIO_FILE
    by_scenario = resolve_setup(scenario=load_scenario(scenario), scenario_path=scenario)
    by_rerecord = resolve_setup(
        scenario=load_scenario(scenario),
        scenario_path=scenario,
        prompts=loaded.spec.prompts,
        settings=loaded.spec.settings,
        options=loaded.spec.options,
        workspace=loaded.path / WORKSPACE_DIR,
    )

    assert by_rerecord == by_scenario
    assert loaded.spec.seed == 0  # what `replay record` records with
    # Equal set-ups could still write other bytes (1 == 1.0 == True): the session.json a
    # re-recording writes is the committed one, byte for byte.
    respec = SessionSpec(
        prompts=by_rerecord.prompts,
        settings=by_rerecord.settings,
        seed=loaded.spec.seed,
        scenario=SCENARIO_FILE,
        options=by_rerecord.options,
    )
    assert respec.to_json() == (bundle / SESSION_FILE).read_text(encoding="utf-8")


@pytest.mark.parametrize("bundle", SETUP_VARIETY, ids=[b.name for b in SETUP_VARIETY])
def test_re_recording_a_bundle_from_its_scenario_gives_identical_files(bundle: Path) -> None:
    report = asyncio.run(rerecord_bundle(bundle))
    assert report.differing == []
