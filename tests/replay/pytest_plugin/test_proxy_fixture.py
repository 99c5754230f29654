"""The ``replay_proxy`` fixture, through a tiny project run by pytest in this process: a test gives
the proxy's URL to its client, records with ``--record-mode=once`` while the project's fake model
server runs, replays with it gone, and fails with the proxy's diagnosis when its prompt changes."""

from __future__ import annotations

import pytest

from tests import forked

CONFTEST = """\
import os

import pytest

from replay.fake.model import FakeModel
from replay.fake.scenario import Scenario
from replay.fake.server import FakeModelServer


@pytest.fixture
def replay_proxy_upstream():
    if not os.environ.get("UPSTREAM_RUNS"):
        yield "http://127.0.0.1:9"  # gone: nothing listens there
        return
    scenario = Scenario.from_list([{"content": [{"text": "Hello from upstream."}]}])
    with FakeModelServer(FakeModel(scenario)) as server:
        yield server.url
"""

TESTS = """\
import os

import anthropic
import pytest


@pytest.mark.replay_cassette("hello")
def test_my_agent(replay_proxy):
    prompt = os.environ.get("PROMPT", "Say hello")
    with anthropic.Anthropic(api_key="sk-ant-test", base_url=replay_proxy, max_retries=0) as client:
        with client.messages.stream(
            model="claude-sonnet-4-6", max_tokens=64, messages=[{"role": "user", "content": prompt}]
        ) as stream:
            text = stream.get_final_text()
    assert text == "Hello from upstream."


@pytest.mark.replay_cassette("hello")
def test_an_agent_that_swallows_errors(replay_proxy):
    with anthropic.Anthropic(api_key="sk-ant-test", base_url=replay_proxy, max_retries=0) as client:
        try:
            client.messages.create(model="claude-sonnet-4-6", max_tokens=1, messages=[{"role": "user", "content": "?"}])
        except anthropic.APIStatusError:
            pass
"""


@pytest.fixture
def agent_project(project: pytest.Pytester) -> pytest.Pytester:
    """The plugin tests' project folder, with an agent test and a conftest whose upstream is the
    fake model server while UPSTREAM_RUNS is set, and gone otherwise."""
    project.makeconftest(CONFTEST)
    project.makepyfile(test_agent=TESTS)
    return project


def test_replay_proxy_records_once_replays_offline_and_fails_a_changed_prompt_with_the_diagnosis(
    agent_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassette = agent_project.path / "cassettes" / "hello.yaml"

    monkeypatch.setenv("UPSTREAM_RUNS", "1")
    recorded = agent_project.runpytest_inprocess("--record-mode=once", "-k", "my_agent")
    monkeypatch.delenv("UPSTREAM_RUNS")
    kept = cassette.read_bytes()
    replayed = agent_project.runpytest_inprocess("-k", "my_agent")
    monkeypatch.setenv("PROMPT", "Say goodbye")
    changed = forked.runpytest(agent_project, timeout=180)

    recorded.assert_outcomes(passed=1, deselected=1)
    replayed.assert_outcomes(passed=1, deselected=1)
    assert cassette.read_bytes() == kept
    changed.assert_outcomes(failed=1, passed=1, errors=1)
    output = changed.stdout.str()
    assert "No recorded interaction matches request 1: POST /v1/messages" in output
    assert '-   "content": "Say hello",' in output and '+   "content": "Say goodbye",' in output
    assert "pytest --record-mode=rewrite" in output
    # The agent that swallowed the error answer still fails, at teardown, with the diagnosis.
    assert "ERROR at teardown of test_an_agent_that_swallows_errors" in output
