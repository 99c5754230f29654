"""The command line starts without the SDK: `replay --help` and `replay scrub --check` import
neither anthropic, httpx2 nor the engine (each command imports what it needs when it runs), so
they answer at once. Each probe runs in a fresh interpreter, and what it checks is which
modules are loaded, never how long it took."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
HEAVY = {"anthropic", "httpx2", "httpx", "engine", "vcr"}

PROBE = """
import sys
from replay.cli.app import app
try:
    app(sys.argv[1:], prog_name="replay")
except SystemExit as exit:
    print("exit", exit.code)
print(" ".join(sorted(sys.modules)))
"""
# rich takes stderr for a terminal when these say so, whatever it is
TERMINAL_OVERRIDES = ("FORCE_COLOR", "TTY_COMPATIBLE")


def loaded_by(*args: str) -> tuple[str, set[str]]:
    """What `replay ARGS` printed, and the modules it loaded: each by its full name and its
    package's."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "80"}
    for name in TERMINAL_OVERRIDES:
        env.pop(name, None)
    result = subprocess.run(
        [sys.executable, "-c", PROBE, *args], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    *output, modules = result.stdout.splitlines()
    names = set(modules.split())
    return "\n".join(output), names | {name.split(".")[0] for name in names}


@pytest.mark.parametrize("args", [["--help"], ["verify", "--help"], ["run", "--help"], ["record", "--help"]])
def test_help_imports_no_sdk(args: list[str]) -> None:
    output, modules = loaded_by(*args)

    assert "Usage: replay" in output and "exit 0" in output
    assert modules & HEAVY == set()


def test_scrub_check_imports_no_sdk(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("nothing secret here\n")

    output, modules = loaded_by("scrub", "--check", str(tmp_path))

    assert "No secrets in 1 file below" in output and "exit 0" in output
    assert modules & HEAVY == set()
    # Nor what the scan does not use: requests (detect-secrets' online verification), pydantic
    # (typer's conversion of values, done plainly for paths and flags), rich (tables in a
    # terminal), filelock (writing a bundle).
    assert modules & {"requests", "pydantic", "rich", "filelock"} == set()


def test_verify_imports_the_sdk_before_its_workers_start() -> None:
    # The workers are forked from this process, so what it has loaded they need not import.
    output, modules = loaded_by("verify", str(ROOT / "cassettes" / "demo"), "--jobs", "2")

    assert "1 bundle(s): 1 match" in output
    assert {"anthropic", "httpx2", "engine"} <= modules
    # Nor what a replay does not use, which every run would import before its workers fork:
    # what a recording or an update needs (the fake model, the writer lock's filelock), the
    # engine's jsonschema (plainly valid tool inputs need none), rich (stderr is no terminal).
    unused = {"replay.fake", "replay.session.bundle_update", "filelock", "jsonschema", "rich"}
    assert modules & unused == set()
