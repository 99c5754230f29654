"""Every command explains itself to a newcomer: what it does, an example, its exit codes."""

from __future__ import annotations

import inspect
import re

import pytest
import typer
from typer.testing import CliRunner

from replay.cli.app import app

runner = CliRunner()
COMMANDS = ("run", "verify", "record", "diff", "show", "serve", "proxy", "coverage", "scrub", "demo")


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


# --- names and metavars: what a newcomer reads in the usage line and the option tables ----------

USAGE = {
    "run": "Usage: replay run [OPTIONS] BUNDLE...",
    "verify": "Usage: replay verify [OPTIONS] [FOLDER...]",
    "record": "Usage: replay record [OPTIONS]",
    "diff": "Usage: replay diff [OPTIONS] BEFORE AFTER",
    "show": "Usage: replay show [OPTIONS] BUNDLE_OR_TRACE",
    "serve": "Usage: replay serve [OPTIONS]",
    "proxy": "Usage: replay proxy [OPTIONS]",
    "coverage": "Usage: replay coverage [OPTIONS] [FOLDER...]",
    "scrub": "Usage: replay scrub [OPTIONS] PATH...",
    "demo": "Usage: replay demo [OPTIONS]",
}
# An option that takes a value is followed by its metavar; a flag by its help text.
OPTIONS = {
    "run": [r"--wait\s+SECONDS", r"--update\s+Accept", r"--json\s+Print"],
    "verify": [r"--jobs\s+-j\s+N\b", r"--json\s+Print", r"--rerecord\s+Instead"],
    "record": [
        r"--out\s+BUNDLE",
        r"--scenario\s+FILE",
        r"--prompt\s+TEXT",
        r"--workspace\s+FOLDER",
        r"--live\s+Record",
        r"--model\s+MODEL",
        r"--base-url\s+URL",
        r"--wait\s+SECONDS",
    ],
    "diff": [r"\bBEFORE\s+The 'before' side", r"\bAFTER\s+The 'after' side"],
    "show": [r"BUNDLE_OR_TRACE\s+A bundle folder", r"--format\s+-f\s+FORMAT"],
    "serve": [r"--scenario\s+FILE", r"--host\s+HOST", r"--port\s+PORT"],
    "proxy": [r"--cassette\s+FILE", r"--record-mode\s+MODE", r"--upstream\s+URL", r"--port\s+PORT"],
    "coverage": [r"FOLDER\.\.\.\s+Folders", r"--json\s+Print"],
    "scrub": [r"PATH\.\.\.\s+Bundles", r"--check\s+Only"],
    "demo": [r"--scenario-dir\s+FOLDER", r"\(the bundled demo\)"],
}
TYPE_TAG = re.compile(r"<[a-z][a-z0-9_\[\]|, ]*>|\{\w+\}")  # <bool>, <list[Path]>, <float range>, {sessions}


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help_names_arguments_and_values_in_capitals_and_tags_no_types(command: str | None) -> None:
    result = runner.invoke(app, [*([command] if command else []), "--help"], env={"COLUMNS": "80"})

    assert result.exit_code == 0, result.output
    assert not TYPE_TAG.search(result.stdout), TYPE_TAG.search(result.stdout)
    assert re.search(r"--help\s+Show this message", result.stdout)  # the flag has no type either
    if command is not None:
        assert USAGE[command] in result.stdout
        for pattern in OPTIONS[command]:
            assert re.search(pattern, result.stdout), pattern


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help_piped_at_80_columns_keeps_every_example_line_whole(command: str | None) -> None:
    """A CI log has no terminal: rich falls back to 80 columns, and an example command that
    wrapped there could not be copied."""
    group = typer.main.get_command(app)
    callback = group.callback if command is None else group.commands[command].callback  # type: ignore[attr-defined]
    examples = [
        line.strip()
        for line in inspect.getdoc(callback).splitlines()  # type: ignore[union-attr]
        if line.startswith(("    replay ", "    ANTHROPIC_", "        --", "        python"))
    ]
    assert examples

    result = runner.invoke(app, [*([command] if command else []), "--help"], env={"COLUMNS": "80"})

    shown = {line.strip() for line in result.stdout.splitlines()}
    for example in examples:
        assert example in shown, example
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
