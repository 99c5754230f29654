"""The marker serves any SDK client: a project's own agent code builds ``anthropic.Anthropic`` /
``AsyncAnthropic`` (or a plain ``httpx2`` client) inside a test marked ``replay_cassette``, records
it once against the fake model server, and replays it offline — the real SDK parsing every byte.

Specified through tiny projects, each run by pytest in this process (``runpytest_inprocess``: a
subprocess would pay about 2 s of imports a run; these projects are synchronous and the plugin
leaves nothing behind after a run, as the rest of this suite, running after them, checks). Each
test takes a project through several steps."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from replay.cassette import load_cassette
from replay.fake.model import FakeModel
from replay.fake.scenario import Scenario
from replay.fake.server import FakeModelServer

HELLO = Scenario.from_list([{"content": [{"text": "Hello there."}]}] * 20)

AGENT_PROJECT = """\
import os

import anthropic
import httpx2
import pytest

PROMPT = os.environ.get("PROMPT", "Say hello")
BASE_URL = os.environ["AGENT_BASE_URL"]
ASK = {"model": "claude-sonnet-4-6", "max_tokens": 100, "messages": [{"role": "user", "content": PROMPT}]}


@pytest.mark.replay_cassette("sync-create")
def test_sync_create():
    client = anthropic.Anthropic(base_url=BASE_URL)
    assert client.messages.create(**ASK).content[0].text == "Hello there."


@pytest.mark.replay_cassette("sync-stream")
def test_sync_messages_stream():
    client = anthropic.Anthropic(base_url=BASE_URL)
    with client.messages.stream(**ASK) as stream:
        assert stream.get_final_text() == "Hello there."


@pytest.mark.replay_cassette("async-stream")
async def test_async_messages_stream():
    client = anthropic.AsyncAnthropic(base_url=BASE_URL)
    async with client.messages.stream(**ASK) as stream:
        assert await stream.get_final_text() == "Hello there."


@pytest.mark.replay_cassette("async-stream-true")
async def test_async_create_stream_true():
    client = anthropic.AsyncAnthropic(base_url=BASE_URL)
    text = ""
    async for event in await client.messages.create(**ASK, stream=True):
        if event.type == "content_block_delta":
            text += event.delta.text
    assert text == "Hello there."


@pytest.mark.replay_cassette("plain-httpx2")
def test_plain_httpx2_client():
    with httpx2.Client(base_url=BASE_URL) as client:
        response = client.post("/v1/messages", json=ASK, headers={"x-api-key": "sk-ant-any"})
    assert response.json()["content"][0]["text"] == "Hello there."


def test_the_fixture(anthropic_client):
    assert anthropic_client.messages.create(**ASK).content[0].text == "Hello there."


async def test_the_async_fixture(async_anthropic_client):
    async with async_anthropic_client.messages.stream(**ASK) as stream:
        assert await stream.get_final_text() == "Hello there."
"""
OWN_FIXTURE_PROJECT = """\
import httpx2
import pytest


@pytest.fixture
def anthropic_client():
    return "the project's own"


def test_a_projects_own_fixture_of_that_name_wins_and_nothing_is_served(anthropic_client):
    assert anthropic_client == "the project's own"
    assert httpx2.HTTPTransport.handle_request.__module__.startswith("httpx2.")
"""
CASSETTES = ["sync-create", "sync-stream", "async-stream", "async-stream-true", "plain-httpx2"]
FIXTURE_CASSETTES = ["test_agent/test_the_fixture", "test_agent/test_the_async_fixture"]

COUNTING_PROJECT = """\
import os

import anthropic
import pytest

ASKS = int(os.environ.get("ASKS", "1"))


@pytest.mark.replay_cassette("counted")
def test_counted():
    client = anthropic.Anthropic(base_url=os.environ["AGENT_BASE_URL"])
    for n in range(ASKS):
        message = client.messages.create(
            model="claude-sonnet-4-6", max_tokens=100, messages=[{"role": "user", "content": f"Question {n}"}]
        )
        assert message.content[0].text == "Hello there."
"""

SWALLOWING_TEST = """

@pytest.mark.replay_cassette("swallowed")
def test_swallowed():
    client = anthropic.Anthropic(base_url=os.environ["AGENT_BASE_URL"])
    try:
        client.messages.create(model="claude-sonnet-4-6", max_tokens=100, messages=[{"role": "user", "content": "Hi"}])
    except BaseException:
        pass
"""


@pytest.fixture
def fake_server() -> Iterator[FakeModelServer]:
    """The fake model on loopback, answering every request "Hello there."."""
    server = FakeModelServer(FakeModel(HELLO))
    server.start()
    yield server
    server.stop()


def run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest_inprocess(*args)


def first_failure_lines(result: pytest.RunResult, test: str) -> list[str]:
    """The lines of one test's failure, after its ``____ test ____`` header."""
    lines = result.outlines
    start = next(i for i, line in enumerate(lines) if line.startswith("_") and f" {test} " in line)
    return lines[start + 1 : start + 4]


def test_an_agents_own_clients_record_once_and_replay_offline_against_another_base_url(
    project: pytest.Pytester, fake_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(test_agent=AGENT_PROJECT, test_own_fixture=OWN_FIXTURE_PROJECT)
    cassettes = project.path / "cassettes"
    monkeypatch.setenv("AGENT_BASE_URL", fake_server.url)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_server.url)  # where the fixtures' clients go

    recorded = run(project, "--record-mode=once")

    recorded.assert_outcomes(passed=8)
    for name in [*CASSETTES, *FIXTURE_CASSETTES]:
        assert len(load_cassette(cassettes / f"{name}.yaml").interactions) == 1, name
    kept = {path: path.read_bytes() for path in cassettes.rglob("*.yaml")}

    # The server is gone and the clients point elsewhere: the network guard would refuse any
    # lookup or connection, so everything is answered from the cassettes.
    fake_server.stop()
    monkeypatch.setenv("AGENT_BASE_URL", "https://api.anthropic.com")
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    run(project).assert_outcomes(passed=8)
    assert {path: path.read_bytes() for path in cassettes.rglob("*.yaml")} == kept

    monkeypatch.setenv("PROMPT", "Say goodbye")
    changed = run(project)

    changed.assert_outcomes(failed=7, passed=1)
    for test, name in [("test_sync_create", "sync-create"), ("test_async_messages_stream", "async-stream")]:
        first, *_ = first_failure_lines(changed, test)
        assert first.startswith("No recorded interaction matches request 1: POST /v1/messages (fingerprint ")
        assert first.endswith(f" in {cassettes / name}.yaml.")
    output = changed.stdout.str()
    assert "differs at messages[0].content" in output
    assert '-   "content": "Say hello",' in output and '+   "content": "Say goodbye",' in output
    assert (
        "To re-record this test: `pytest test_agent.py::test_sync_create --record-mode=rewrite` (keeps what "
        "matches up to the first request that differs, records from there and prunes what is no longer requested; "
        "--record-mode=new_episodes keeps everything and records what is missing)." in output
    )
    assert "Connection error" not in output and "APIConnectionError" not in output
    changed.stdout.fnmatch_lines(["FAILED test_agent.py::test_sync_create - Failed: No recorded*"])
    assert {path: path.read_bytes() for path in cassettes.rglob("*.yaml")} == kept


def test_unplayed_interactions_fail_unless_allowed_and_rewrite_prunes_them(
    project: pytest.Pytester, fake_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(test_counted=COUNTING_PROJECT)
    cassette = project.path / "cassettes" / "counted.yaml"
    monkeypatch.setenv("AGENT_BASE_URL", fake_server.url)
    monkeypatch.setenv("ASKS", "2")
    run(project, "--record-mode=once").assert_outcomes(passed=1)
    assert len(load_cassette(cassette).interactions) == 2

    monkeypatch.setenv("ASKS", "1")  # the agent now stops after one call
    strict = run(project)
    strict.assert_outcomes(passed=1, errors=1)
    strict.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_counted*",
            f"1 recorded interaction(s) in {cassette} were never requested (#2): the session made fewer calls than "
            "when it was recorded. If that is intended, re-record the cassette; --replay-allow-unplayed (or the "
            "marker's strict=False) lets it pass with a warning.",
        ]
    )
    allowed = run(project, "--replay-allow-unplayed")
    allowed.assert_outcomes(passed=1, warnings=1)
    allowed.stdout.fnmatch_lines(["*UnplayedInteractionsWarning: 1 recorded interaction(s)*"])
    contradiction = run(project, "--replay-allow-unplayed", "--replay-strict")
    assert contradiction.ret == pytest.ExitCode.USAGE_ERROR
    contradiction.stderr.fnmatch_lines(
        ["ERROR: --replay-strict and --replay-allow-unplayed contradict each other; pass one."]
    )

    # once keeps an existing cassette; rewrite keeps the call this run still makes and prunes the other.
    run(project, "--record-mode=once").assert_outcomes(passed=1, errors=1)
    assert len(load_cassette(cassette).interactions) == 2
    run(project, "--record-mode=rewrite").assert_outcomes(passed=1)
    assert len(load_cassette(cassette).interactions) == 1
    fake_server.stop()
    run(project, "--replay-strict").assert_outcomes(passed=1)  # still accepted, and strict is the default


def test_a_marked_test_without_its_cassette_fails_at_its_first_request_with_the_command_to_record_it(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(test_counted=COUNTING_PROJECT + SWALLOWING_TEST)
    monkeypatch.setenv("AGENT_BASE_URL", "https://api.anthropic.com")

    result = run(project)

    result.assert_outcomes(failed=1, passed=1, errors=1)
    # Code that swallows the failure does not hide it: the test fails at teardown, saying the same.
    assert first_failure_lines(result, "test_swallowed")[0] == (
        "No cassette for 'swallowed': neither a bundle folder "
        f"{project.path / 'cassettes' / 'swallowed'}/ nor a cassette file "
        f"{project.path / 'cassettes' / 'swallowed.yaml'} exists, and this test made a request (POST /v1/messages). "
        "To record it: `pytest test_counted.py::test_swallowed --record-mode=once`."
    )
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_swallowed*"])
    assert first_failure_lines(result, "test_counted")[0] == (
        "No cassette for 'counted': neither a bundle folder "
        f"{project.path / 'cassettes' / 'counted'}/ nor a cassette file {project.path / 'cassettes' / 'counted.yaml'} "
        "exists, and this test made a request (POST /v1/messages). To record it: "
        "`pytest test_counted.py::test_counted --record-mode=once`."
    )
    assert not (project.path / "cassettes").exists()


SCRIPTED_PROJECT = """\
import anthropic
import pytest


@pytest.mark.replay_cassette("scripted", scenario="hello.yaml")
def test_scripted():
    message = anthropic.Anthropic().messages.create(
        model="claude-sonnet-4-6", max_tokens=100, messages=[{"role": "user", "content": "Say hello"}]
    )
    assert message.content[0].text == "Hello there."
"""


def test_a_markers_scenario_records_a_client_that_takes_its_base_url_from_the_environment(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(test_scripted=SCRIPTED_PROJECT)
    (project.path / "hello.yaml").write_text("version: 1\nturns:\n  - content: [{text: Hello there.}]\n")
    cassette = project.path / "cassettes" / "scripted.yaml"

    run(project, "--record-mode=once").assert_outcomes(passed=1)

    # The fake server's port changes on every run; the cassette names it as a fixed placeholder.
    assert load_cassette(cassette).interactions[0].request.uri == "http://fake-model.invalid/v1/messages"
    run(project).assert_outcomes(passed=1)


SWALLOWING_PROJECT = """\
import anthropic
import pytest


@pytest.mark.replay_cassette("swallowing", scenario="hello.yaml")
def test_swallowing():
    client = anthropic.Anthropic(max_retries=0)
    ask = {"model": "claude-sonnet-4-6", "max_tokens": 100, "messages": [{"role": "user", "content": "Say hello"}]}
    client.messages.create(**ask)
    try:  # an agent that shrugs off an API error
        client.messages.create(**{**ask, "messages": [{"role": "user", "content": "Again"}]})
    except anthropic.InternalServerError:
        pass
"""


def test_a_markers_scenario_that_runs_out_fails_the_test_even_when_the_agent_swallows_the_error(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(test_swallowing=SWALLOWING_PROJECT)
    (project.path / "hello.yaml").write_text("version: 1\nturns:\n  - content: [{text: Hello there.}]\n")

    result = run(project, "--record-mode=once")

    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            f"*{project.path / 'hello.yaml'} ran out of turns: it has 1 turn, but request 2 to the model needed turn 2 "
            "(last user message: 'Again')*"
        ]
    )
    # The cassette of the broken run is not kept.
    assert not (project.path / "cassettes" / "swallowing.yaml").exists()
