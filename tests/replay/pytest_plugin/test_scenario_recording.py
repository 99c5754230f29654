"""Recording from the marker's ``scenario=`` sets the session up by the same rule as ``replay
record`` (`replay.session.session_setup`): what the test passes to ``start`` wins over the
scenario's ``settings:`` and ``session:``, which win over the defaults; and a script that runs
out of turns fails the test with the sentence ``replay record`` prints, leaving no cassette."""

from __future__ import annotations

import pytest

from tests.replay.pytest_plugin.test_pytest_plugin import run

SCENARIO = """\
version: 1
settings: {max_turns: 1}
session: {env: {APP_MODE: scripted}, permissions: {deny: [Write]}}
turns:
  - content: [{tool_use: {name: Bash, input: {command: 'echo mode=$APP_MODE'}}}]
  - content: [{text: Done.}]
"""

PROJECT = """\
import json
import pytest
from engine import EngineSettings, Terminal

@pytest.mark.replay_cassette("limited", scenario="scenario.yaml")
async def test_scenario_settings(replay_engine):
    result = await replay_engine.submit("Look")
    assert result.terminal_reason is Terminal.MAX_TURNS
    assert "mode=scripted" in json.dumps([m.to_record() for m in replay_engine.engine.mutable_messages])

@pytest.mark.replay_cassette("unlimited", scenario="scenario.yaml")
async def test_start_wins(replay_engine):
    replay_engine.start(settings=EngineSettings(max_turns=5))
    result = await replay_engine.submit("Look")
    assert (result.terminal_reason, result.result) == (Terminal.COMPLETED, "Done.")

@pytest.mark.replay_cassette("short", scenario="short.yaml")
async def test_short_script(replay_engine):
    await replay_engine.submit("Look")
"""

SHORT = """\
version: 1
turns:
  - content: [{tool_use: {name: Glob, input: {pattern: '*'}}}]
"""


def test_a_marker_scenario_sets_the_recording_up_and_start_overrides_it(project: pytest.Pytester) -> None:
    project.makepyfile(test_scenario=PROJECT)
    (project.path / "scenario.yaml").write_text(SCENARIO)
    (project.path / "short.yaml").write_text(SHORT)
    cassettes = project.path / "cassettes"

    recorded = run(project, "--record-mode=once")

    recorded.assert_outcomes(passed=2, failed=1)
    # The script ran out at request 2: the test fails with the sentence `replay record` prints,
    # and the cassette of that broken run is not kept.
    assert (
        f"{project.path / 'short.yaml'} ran out of turns: it has 1 turn, but request 2 to the model needed turn 2 "
        "(last user message: '[tool_result toolu_fake_0001_0] No files found')" in recorded.stdout.str()
    )
    assert sorted(p.name for p in cassettes.iterdir()) == ["limited.yaml", "unlimited.yaml"]
    # What was recorded from the scenario replays with the same set-up.
    run(project, "-k", "not short").assert_outcomes(passed=2)
