"""``replay proxy`` and ``replay serve`` as a user runs them: real processes, a subprocess agent
on the SDK pointed at them with ``ANTHROPIC_BASE_URL``, and what they print."""

from __future__ import annotations

import json
import re
import select
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replay.cassette import load_cassette
from replay.cli.app import app
from replay.fake.model import FakeModel
from replay.fake.scenario import Scenario
from replay.fake.scenario_writer import scenario_to_document
from replay.fake.server import FakeModelServer
from replay.storage.strict_yaml import dump_yaml
from tests import forked
from tests.replay.bundle_helpers import assert_bad_input
from tests.replay.proxy.helpers import SHOUTING, agent_environment, run_agent

runner = CliRunner()
FINGERPRINT_LINE = r"[0-9a-f]{12} POST /v1/messages (recorded|match|miss) \d{3} \d+ ms"


@contextmanager
def replay_process(*arguments: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``replay ARGUMENTS`` in a process of its own (forked: see ``tests.forked``), and the first line
    it printed on stdout."""
    process = forked.Popen(
        [sys.executable, "-c", "from replay.cli.app import app; app()", *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=agent_environment("http://unused"),
    )
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], 30)
        assert ready, "the command printed nothing within 30 s"
        yield process, process.stdout.readline()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def stop(process: subprocess.Popen[str], signum: signal.Signals) -> str:
    """Send ``signum``, wait for the exit and return what the process said on stderr."""
    process.send_signal(signum)
    process.wait(timeout=20)
    assert process.stderr is not None
    return process.stderr.read()


# --- replay proxy ----------------------------------------------------------------------------


def test_replay_proxy_prints_the_base_url_logs_each_request_and_saves_on_sigterm(tmp_path: Path) -> None:
    cassette = tmp_path / "agent.yaml"

    with FakeModelServer(FakeModel(SHOUTING)) as upstream:
        arguments = ("proxy", "--cassette", str(cassette), "--record-mode", "once", "--upstream", upstream.url)
        with replay_process(*arguments) as (process, first):
            base_url = first.strip().removeprefix("ANTHROPIC_BASE_URL=")
            recorded = run_agent(base_url, "Shout hello.")
            err = stop(process, signal.SIGTERM)
            killed = process.returncode
    with replay_process("proxy", "--cassette", str(cassette)) as (process, first):
        replayed = run_agent(first.strip().removeprefix("ANTHROPIC_BASE_URL="), "Shout hello.")
        replay_err = stop(process, signal.SIGINT)

    assert first.startswith("ANTHROPIC_BASE_URL=http://127.0.0.1:")
    assert recorded.returncode == 0 and replayed.returncode == 0, recorded.stderr + replayed.stderr
    assert replayed.stdout == recorded.stdout
    lines = err.splitlines()
    assert (
        lines[0]
        == f"The replay proxy is recording into {cassette} from {upstream.url} (record mode once). Ctrl-C stops it."
    )
    assert [line.split(" ")[3] for line in lines[1:3]] == ["recorded", "recorded"]
    assert all(re.fullmatch(FINGERPRINT_LINE, line) for line in lines[1:3]), lines
    assert lines[3] == f"Stopped after 2 request(s); 2 recorded interaction(s) saved in {cassette}."
    assert (killed, process.returncode) == (143, 0)  # SIGTERM exits as a killed process does; Ctrl-C with 0
    assert [line.split(" ")[3] for line in replay_err.splitlines()[1:3]] == ["match", "match"]
    assert len(load_cassette(cassette).interactions) == 2
    assert "Traceback" not in err + replay_err


def test_replay_proxy_refuses_bad_input_in_one_line(tmp_path: Path) -> None:
    absent = tmp_path / "absent.yaml"
    broken = tmp_path / "broken.yaml"
    broken.write_text("agent_replay_cassette: 1\ninteractions: [\n")

    assert_bad_input(runner.invoke(app, ["proxy", "--cassette", str(absent)]), "absent.yaml", "--record-mode once")
    assert_bad_input(runner.invoke(app, ["proxy", "--cassette", str(broken)]), "broken.yaml")
    assert_bad_input(runner.invoke(app, ["proxy", "--cassette", str(tmp_path)]), "is a folder")
    assert_bad_input(
        runner.invoke(app, ["proxy", "--cassette", str(absent), "--record-mode", "sometimes"]), "--record-mode"
    )
    assert_bad_input(
        runner.invoke(app, ["proxy", "--cassette", str(absent), "--record-mode", "once", "--upstream", "nowhere"]),
        "http:// or https://",
    )
    assert_bad_input(runner.invoke(app, ["proxy", "--cassette", str(absent), "--port", "70000"]), "--port")


# --- replay serve ----------------------------------------------------------------------------


def test_replay_serve_restarts_the_scenario_for_each_run_and_on_post_reset_and_logs_requests(tmp_path: Path) -> None:
    scenario = tmp_path / "shouting.yaml"
    scenario.write_text(dump_yaml(scenario_to_document(SHOUTING)))

    with replay_process("serve", "--scenario", str(scenario), "--log") as (process, first):
        url = first.rsplit(" at ", 1)[1].strip()
        runs = [run_agent(url, "Shout hello."), run_agent(url, "Shout hello.")]
        reset = urllib.request.urlopen(urllib.request.Request(f"{url}/reset", method="POST"), timeout=10)
        err = stop(process, signal.SIGINT)

    assert [run.returncode for run in runs] == [0, 0], runs[1].stderr
    assert runs[0].stdout == runs[1].stdout
    assert "stop: end_turn msg_fake_0002" in runs[1].stdout
    assert reset.status == 204
    lines = [line for line in err.splitlines() if line.startswith(("POST", "GET"))]
    assert [" ".join(line.split(" ")[:3]) for line in lines] == [
        *["POST /v1/messages 200"] * 4,
        "POST /reset 204",
    ]
    assert [line.split(" ms ")[1] for line in lines] == [
        "turn 1/2",
        "turn 2/2",
        "turn 1/2 (new conversation: scenario restarted)",
        "turn 2/2",
        "turn 0/2 (scenario restarted)",
    ]


def test_a_retry_after_a_fault_is_not_a_new_conversation(tmp_path: Path) -> None:
    overloaded = {"fault": "http_error", "status": 529, "error_type": "overloaded_error", "message": "Overloaded"}
    fake = FakeModel(Scenario.from_list([overloaded, {"content": [{"text": "Second time lucky."}]}]))
    with FakeModelServer(fake, restart_per_conversation=True) as server:
        request = urllib.request.Request(
            f"{server.url}/v1/messages",
            data=json.dumps({"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}]}).encode(),
            headers={"x-api-key": "k", "content-type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as first:
            urllib.request.urlopen(request, timeout=10)
        second = json.loads(urllib.request.urlopen(request, timeout=10).read())

    assert first.value.code == 529
    assert second["content"][0]["text"] == "Second time lucky."


def test_the_commands_default_upstream_is_the_proxys() -> None:
    # spelled twice so that `replay --help` need not import the proxy (httpx, vcrpy)
    from replay.cli.proxy import DEFAULT_UPSTREAM as SHOWN
    from replay.proxy.server import DEFAULT_UPSTREAM

    assert SHOWN == DEFAULT_UPSTREAM
