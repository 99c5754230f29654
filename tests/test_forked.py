"""The suite's forked processes (`tests.forked`): a command line of this interpreter runs in a
child forked from the test process, set up as a new interpreter would be."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests import forked

TIMEOUT_S = 60.0  # only a bound on a hung child


def test_code_runs_as_main_in_its_own_process_with_the_folder_and_environment_given(tmp_path: Path) -> None:
    code = (
        "import os, sys, tempfile\n"
        "print(__name__, os.getpid(), os.getcwd(), tempfile.gettempdir(), sys.argv[1:])\n"
        "sys.exit(3)"
    )
    env = {**os.environ, "TMPDIR": str(tmp_path)}

    done = forked.run([sys.executable, "-c", code, "a", "b"], cwd=tmp_path, env=env, capture_output=True, text=True)

    name, pid, cwd, temp, args = done.stdout.split(" ", 4)
    assert done.returncode == 3 and done.stderr == ""
    assert (name, cwd, temp, args) == ("__main__", str(tmp_path), str(tmp_path), "['a', 'b']\n")
    assert int(pid) != os.getpid()


@pytest.mark.parametrize("prefixed", [True, False])
def test_a_child_reads_and_writes_bytecode_as_its_environment_says_a_new_interpreter_would(
    tmp_path: Path, prefixed: bool
) -> None:
    module = tmp_path / "made_here.py"
    module.write_text("ANSWER = 42\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE")}
    env |= {"PYTHONPYCACHEPREFIX": str(tmp_path / "cache")} if prefixed else {"PYTHONDONTWRITEBYTECODE": "1"}
    code = "import sys, made_here; print(sys.pycache_prefix, sys.dont_write_bytecode, made_here.ANSWER)"

    done = forked.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)

    assert done.returncode == 0, done.stderr
    written = sorted(p.name for p in (tmp_path / "cache").rglob("*.pyc"))
    if prefixed:
        assert done.stdout == f"{tmp_path / 'cache'} False 42\n"
        assert written == [f"made_here.{sys.implementation.cache_tag}.pyc"]
    else:
        assert done.stdout == "None True 42\n" and written == []
    assert not (tmp_path / "__pycache__").exists()


def test_a_module_runs_as_main_reading_its_stdin() -> None:
    done = forked.run([sys.executable, "-m", "json.tool"], input='{"a": 1}', capture_output=True, text=True, check=True)

    assert done.stdout == '{\n    "a": 1\n}\n'


def test_an_uncaught_exception_prints_its_traceback_and_exits_1() -> None:
    done = forked.run([sys.executable, "-c", "raise ValueError('no')"], capture_output=True, text=True)

    assert done.returncode == 1
    assert done.stderr.startswith("Traceback") and done.stderr.endswith("ValueError: no\n")


def test_a_signal_has_its_default_effect_whatever_this_process_handles() -> None:
    previous = signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        child = forked.Popen(
            [sys.executable, "-c", "import sys; print('ready', flush=True); sys.stdin.read()"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert child.stdout is not None and child.stdout.readline() == "ready\n"

    child.send_signal(signal.SIGTERM)

    assert child.wait(timeout=TIMEOUT_S) == -signal.SIGTERM
    child.communicate()


def test_a_child_holds_no_pipe_of_another_child() -> None:
    """The second child is forked while this process holds the first one's stdin: closing it
    must still end the first child's input, as it would with exec'd children."""
    reader = [sys.executable, "-c", "import sys; print(len(sys.stdin.read()))"]
    first = forked.Popen(reader, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    second = forked.Popen(reader, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert first.communicate("four", timeout=TIMEOUT_S)[0] == "4\n"
    finally:
        second.communicate("", timeout=TIMEOUT_S)


def test_only_this_interpreters_command_lines_are_taken() -> None:
    with pytest.raises(ValueError, match="not a command line of this interpreter"):
        forked.Popen(["true"])
