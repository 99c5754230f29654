"""Every command explains itself to a newcomer: what it does, an example, its exit codes."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from replay.cli.app import app

runner = CliRunner()
COMMANDS = ("run", "verify", "record", "diff", "show", "serve", "coverage", "scrub", "demo")


def test_replay_help_lists_every_command_and_a_first_session() -> None:
    result = runner.invoke(app, ["--help"])

    assert result.exit_code == 0
    for command in COMMANDS:
        assert f" {command} " in result.stdout
    assert "replay record --scenario" in result.stdout and "replay run cassettes/review" in result.stdout
    assert "Exit codes: 0 ok, 1 drift or difference, 2 bad input" in result.stdout


def test_replay_without_a_command_shows_the_help() -> None:
    result = runner.invoke(app, [])
    assert "Usage: replay" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_help_has_an_example_and_its_exit_codes(command: str) -> None:
    result = runner.invoke(app, [command, "--help"])

    assert result.exit_code == 0, result.output
    assert "Examples:" in result.stdout
    assert f"replay {command}" in result.stdout  # the example itself
    assert "Exit codes:" in result.stdout
