"""The pytest plugin, specified through tiny projects run by pytest (the plugin is loaded through
its ``pytest11`` entry point, as in any project that installs agent-replay).

Each test runs a project through several steps, in this process where it can, else in a process
forked from it (a new interpreter costs about 2 s of imports a run)."""

from __future__ import annotations

import asyncio
import hashlib
import socket
from pathlib import Path

import pytest

from replay.fake.scenario import Scenario
from replay.pytest_plugin import NetworkGuard, locate_cassette
from replay.schema.options import SessionOptions
from replay.session.recording import record_bundle
from tests import forked
from tests.replay.bundle_helpers import held_by_another_process

PROMPT = "Review notes.md"
READ = Scenario.from_list(
    [
        {"content": [{"text": "Let me look."}, {"tool_use": {"name": "Read", "input": {"file_path": "notes.md"}}}]},
        {"content": [{"text": "Done."}]},
    ]
)
GREP = Scenario.from_list(
    [
        {"content": [{"text": "Let me look."}, {"tool_use": {"name": "Grep", "input": {"pattern": "TODO"}}}]},
        {"content": [{"text": "Done."}]},
    ]
)

SNAPSHOT_PROJECT = f"""\
import pytest

@pytest.mark.replay_cassette("review")
async def test_engine(replay_engine, trace_snapshot):
    result = await replay_engine.submit({PROMPT!r})
    assert result.result == "Done."
    assert replay_engine.trace() == trace_snapshot

@pytest.mark.replay_cassette("review")
async def test_bundle(replay_bundle, trace_snapshot):
    replayed = await replay_bundle()
    assert replayed.run.results[-1].result == "Done."
    assert replayed.trace == trace_snapshot
"""

RECORD_PROJECT = """\
import socket
import pytest

@pytest.mark.replay_cassette("hello", scenario="hello.yaml")
async def test_recorded(replay_engine, replay_record_mode):
    result = await replay_engine.submit("Say hello")
    assert result.result == "Hello there."
    assert replay_engine.recording is (replay_record_mode == "once")

@pytest.mark.replay_cassette("hello")
async def test_miss(replay_engine):
    await replay_engine.submit("Say goodbye")

@pytest.mark.replay_cassette("hello")
async def test_unplayed(replay_engine):
    replay_engine.start()

@pytest.mark.replay_cassette("hello")
def test_network():
    socket.create_connection(("203.0.113.9", 443), timeout=2)

@pytest.mark.replay_cassette("hello", strict=False)  # it asks the cassette for nothing
def test_loopback():
    with socket.create_server(("127.0.0.1", 0)) as server:
        socket.create_connection(server.getsockname(), timeout=2).close()
"""

HELLO_SCENARIO = """\
version: 1
turns:
  - content: [{text: Hello there.}]
"""


async def record_review(project: pytest.Pytester, scenario: Scenario) -> Path:
    source = project.path / "source"
    source.mkdir(exist_ok=True)
    (source / "notes.md").write_text("# Notes\n- TODO: x\n")
    bundle = await record_bundle(
        project.path / "cassettes" / "review", prompts=[PROMPT], scenario=scenario, workspace=source
    )
    return bundle.path


def run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    """A run of the project's pytest in this process: a subprocess would pay about 2 s of imports."""
    return project.runpytest_inprocess(*args)


def run_in_subprocess(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    """A run in a pytest process of its own, as ``-n 2`` needs, and a test whose own loop is
    running (forked from this one: see ``tests.forked``)."""
    return forked.runpytest(project, *args, timeout=180)


def tree(root: Path) -> dict[str, str]:
    """The project's files and their hashes (without what pytester itself keeps there)."""
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
        and "__pycache__" not in path.parts
        and not path.relative_to(root).parts[0].startswith("runpytest-")
        and path.relative_to(root).parts[0] not in ("stdout", "stderr")
    }


async def test_a_project_passes_under_xdist_and_writes_nothing(project: pytest.Pytester) -> None:
    bundle = await record_review(project, READ)
    project.makepyfile(test_project=SNAPSHOT_PROJECT)
    snapshots = project.path / "__snapshots__" / "test_project"
    snapshots.mkdir(parents=True)
    # A trace snapshot is the text the bundle recorded as its trace.txt.
    for test in ("test_engine", "test_bundle"):
        (snapshots / f"{test}.trace.txt").write_text((bundle / "trace.txt").read_text())
    before = tree(project.path)

    result = run_in_subprocess(project, "-n", "2")

    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*created: 2/2 workers*", "*2 snapshots passed*"])
    assert tree(project.path) == before


def test_drift_fails_with_a_readable_diff_and_snapshot_update_accepts_it(project: pytest.Pytester) -> None:
    bundle = asyncio.run(record_review(project, READ))
    project.makepyfile(test_project=SNAPSHOT_PROJECT)
    snapshot = project.path / "__snapshots__" / "test_project" / "test_engine.trace.txt"

    created = run(project, "--snapshot-update")
    created.assert_outcomes(passed=2)
    assert snapshot.read_text() == (bundle / "trace.txt").read_text()
    assert "    tools batch 1 (concurrent): Read success" in snapshot.read_text().splitlines()

    asyncio.run(record_review(project, GREP))  # the model now greps instead of reading
    drifted = run(project)
    drifted.assert_outcomes(failed=2)
    drifted.stdout.fnmatch_lines(
        [
            "*-     tools batch 1 (concurrent): Read success",
            "*+     tools batch 1 (concurrent): Grep success",
            "*2 snapshots failed*",
        ]
    )

    updated = run(project, "--snapshot-update")
    updated.assert_outcomes(passed=2)
    updated.stdout.fnmatch_lines(["*2 snapshots updated*"])
    assert snapshot.read_text() == (bundle / "trace.txt").read_text()
    assert "    tools batch 1 (concurrent): Grep success" in snapshot.read_text().splitlines()
    run(project).assert_outcomes(passed=2)


ENV_PROJECT = """\
import json
import pytest

SEEN = "APP_MODE=test https_proxy=http://127.0.0.1:9 credential=[]"

@pytest.mark.replay_cassette("env")
async def test_engine(replay_engine):
    result = await replay_engine.submit("look")
    assert result.result == "Done."
    assert SEEN in json.dumps([m.to_record() for m in replay_engine.engine.mutable_messages])

@pytest.mark.replay_cassette("env")
async def test_bundle(replay_bundle):
    replayed = await replay_bundle()
    assert SEEN in replayed.run.transcript
"""


async def test_replay_fixtures_give_commands_the_bundles_env_offline_and_no_credentials(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    command = 'echo "APP_MODE=$APP_MODE https_proxy=$https_proxy credential=[$MY_ANTHROPIC_CREDENTIAL]"'
    scenario = Scenario.from_list(
        [
            {"content": [{"tool_use": {"name": "Bash", "input": {"command": command}}}]},
            {"content": [{"text": "Done."}]},
        ]
    )
    await record_bundle(
        project.path / "cassettes" / "env",
        prompts=["look"],
        scenario=scenario,
        options=SessionOptions(env={"APP_MODE": "test"}),
    )
    project.makepyfile(test_env=ENV_PROJECT)
    monkeypatch.setenv("MY_ANTHROPIC_CREDENTIAL", "sk-ant-api03-plugin-unlisted")

    run_in_subprocess(project).assert_outcomes(passed=2)


def test_a_cassette_recorded_once_replays_offline_and_strictly(project: pytest.Pytester) -> None:
    project.makepyfile(test_record=RECORD_PROJECT)
    (project.path / "hello.yaml").write_text(HELLO_SCENARIO)
    cassette = project.path / "cassettes" / "hello.yaml"

    recorded = run(project, "--record-mode=once", "-k", "recorded")
    recorded.assert_outcomes(passed=1, deselected=4)
    assert cassette.is_file()
    kept = cassette.read_bytes()

    replayed = run(project)
    replayed.assert_outcomes(passed=3, failed=2, errors=1)
    output = replayed.stdout.str()
    # A prompt the cassette lacks: the miss names the request and shows what differs.
    assert "CassetteMismatchError: No recorded interaction matches request 1: POST /v1/messages" in output
    assert '-     "text": "Say hello",' in output and '+     "text": "Say goodbye",' in output
    # Strict by default: an interaction never requested fails the test at teardown.
    assert "ERROR at teardown of test_unplayed" in output
    assert f"1 recorded interaction(s) in {cassette} were never requested" in output
    # Offline: a remote address is refused with the way to record; loopback is allowed.
    assert (
        "ConnectionRefusedError: agent-replay refused a network connection to 203.0.113.9:443 because a replay runs "
        "offline, answered from its cassette, and may reach only loopback; to let it through, record live (pytest "
        "--record-mode=once, new_episodes or all, or replay record --live)." in output
    )
    assert cassette.read_bytes() == kept


def test_a_recording_fails_while_another_process_writes_its_cassette(project: pytest.Pytester) -> None:
    project.makepyfile(test_record=RECORD_PROJECT)
    (project.path / "hello.yaml").write_text(HELLO_SCENARIO)
    cassette = project.path / "cassettes" / "hello.yaml"

    with held_by_another_process(cassette) as holder:
        recorded = run(project, "--record-mode=once", "-k", "recorded")

    recorded.assert_outcomes(errors=1, deselected=4)  # the fixture refuses to record
    assert f"Bundle {cassette} is being written by process {holder}" in recorded.stdout.str()
    assert not cassette.exists()
    run(project, "--record-mode=once", "-k", "recorded").assert_outcomes(passed=1, deselected=4)


def test_an_unknown_record_mode_is_a_usage_error(project: pytest.Pytester) -> None:
    project.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    result = run(project, "--record-mode=bogus")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*error: argument --record-mode: Record mode 'bogus' is not one of none, once, new_episodes, all, rewrite. "
            "Use none (the default: replay only) or once (record cassettes that do not exist yet)."
        ]
    )


def test_a_name_points_at_a_bundle_folder_or_else_a_yaml_cassette(tmp_path: Path) -> None:
    (tmp_path / "cassettes" / "review").mkdir(parents=True)
    assert locate_cassette(tmp_path, "review").is_bundle
    assert locate_cassette(tmp_path, "review").path == tmp_path / "cassettes" / "review"
    assert locate_cassette(tmp_path, "hello").path == tmp_path / "cassettes" / "hello.yaml"
    assert not locate_cassette(tmp_path, "hello").is_bundle
    assert locate_cassette(tmp_path, "v1/hello.json").path == tmp_path / "cassettes" / "v1" / "hello.json"
    assert locate_cassette(tmp_path, "hello", cassette_dir="recorded").path == tmp_path / "recorded" / "hello.yaml"
    assert locate_cassette(tmp_path, str(tmp_path / "elsewhere.yml")).path == tmp_path / "elsewhere.yml"


def test_the_network_guard_refuses_remote_addresses_and_restores_the_socket() -> None:
    original = socket.socket.connect
    guard = NetworkGuard()
    guard.install()
    try:
        with pytest.raises(ConnectionRefusedError, match=r"refused a network connection to 203\.0\.113\.9:80"):
            socket.create_connection(("203.0.113.9", 80), timeout=2)
        with socket.create_server(("127.0.0.1", 0)) as server:
            socket.create_connection(server.getsockname(), timeout=2).close()
    finally:
        guard.uninstall()
    assert socket.socket.connect is original
    assert guard.refused == [NetworkGuard.refusal(("203.0.113.9", 80))]


SECRET_PROJECT = """\
import os
import pytest

@pytest.mark.replay_cassette("secret", scenario="secret.yaml")
async def test_secret(replay_engine):
    result = await replay_engine.submit("Deploy with " + os.environ["DEPLOY_API_TOKEN"])
    assert result.result.startswith("Deploying")
"""
DEPLOY_TOKEN = "deploytok.9Kd6Fm1Tc5Yp0Gs3Hq2Lx"
GITHUB_TOKEN = "ghp_9fK2mX7qR4tL8wZ3vB6nJ1pS5dG0hY2cA4eQ"


def test_a_cassette_the_plugin_records_holds_no_secret_and_replays(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEPLOY_API_TOKEN", DEPLOY_TOKEN)
    project.makepyfile(test_secret=SECRET_PROJECT)
    (project.path / "secret.yaml").write_text(
        f"version: 1\nturns:\n  - content: [{{text: 'Deploying with {GITHUB_TOKEN} as you asked.'}}]\n"
    )
    cassette = project.path / "cassettes" / "secret.yaml"

    run(project, "--record-mode=once").assert_outcomes(passed=1)

    data = cassette.read_bytes()
    assert DEPLOY_TOKEN.encode() not in data and GITHUB_TOKEN.encode() not in data
    assert b"[REDACTED:deploy-api-token]" in data and b"[REDACTED:github-token]" in data
    run(project, "--replay-strict").assert_outcomes(passed=1)
