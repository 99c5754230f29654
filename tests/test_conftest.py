"""The suite's own set-up: the order its slowest files start in names files that exist, scratch
files go to memory only where that is a folder they can be written and run in, the library is not
assert-rewritten, the processes the tests start share one bytecode cache of the run's, and a run
started with Ctrl-C ignored gives it back to them."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests import bytecode_cache
from tests.conftest import SLOWEST_FIRST, ram_scratch_folder

ROOT = Path(__file__).resolve().parents[1]


def test_every_file_listed_to_start_first_exists_once() -> None:
    assert [path for path in SLOWEST_FIRST if not (ROOT / path).is_file()] == []
    assert len(set(SLOWEST_FIRST)) == len(SLOWEST_FIRST)


def test_scratch_goes_to_a_folder_in_memory_only_where_there_is_a_usable_one(tmp_path: Path) -> None:
    assert ram_scratch_folder(str(tmp_path / "missing")) is None
    (tmp_path / "file").write_text("")
    assert ram_scratch_folder(str(tmp_path / "file")) is None
    folder = ram_scratch_folder()
    if folder is not None and os.environ.get("TMPDIR") == folder:
        assert tempfile.gettempdir() == folder and str(tmp_path).startswith(folder)


def test_the_library_is_left_to_pythons_own_loader_and_the_tests_are_rewritten() -> None:
    import replay.cassette.fingerprints

    assert "@py_builtins" not in vars(replay.cassette.fingerprints)
    assert "@py_builtins" in globals()  # this module's asserts still explain themselves


def test_a_process_the_tests_start_compiles_into_the_runs_cache_and_nothing_beside_the_sources(
    tmp_path: Path,
) -> None:
    folder = os.environ.get(bytecode_cache.FOLDER_VARIABLE)
    if folder is None:
        pytest.skip("bytecode is cached beside the sources in this run (PYTHONDONTWRITEBYTECODE is not set)")
    assert os.environ["PYTHONPYCACHEPREFIX"] == folder and "PYTHONDONTWRITEBYTECODE" not in os.environ
    source = tmp_path / "compiled_once.py"
    source.write_text("VALUE = 1\n")
    subprocess.run([sys.executable, "-c", "import compiled_once"], cwd=tmp_path, check=True)
    assert (Path(folder) / str(tmp_path).lstrip(os.sep) / f"compiled_once.{sys.implementation.cache_tag}.pyc").is_file()
    assert not (tmp_path / "__pycache__").exists()


def test_the_installed_bytecode_a_process_loaded_is_linked_and_read_by_the_processes_after_it(
    tmp_path: Path,
) -> None:
    import colorsys

    installed = colorsys.__spec__.cached
    assert installed is not None and os.path.isfile(installed)
    folder = tmp_path / "pycache"
    assert bytecode_cache.link_loaded_bytecode(str(folder)) > 0
    link = folder / os.path.dirname(os.path.abspath(colorsys.__file__)).lstrip(os.sep)
    link = link / f"colorsys.{sys.implementation.cache_tag}.pyc"
    assert link.is_symlink() and os.readlink(link) == installed
    assert bytecode_cache.link_loaded_bytecode(str(folder)) == 0  # what is there stays

    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    environment["PYTHONPYCACHEPREFIX"] = str(folder)
    child = subprocess.run(
        [sys.executable, "-c", "import colorsys; print(colorsys.__spec__.cached)"],
        capture_output=True,
        text=True,
        env=environment,
    )
    assert child.stdout.strip() == str(link)  # where the child looked ...
    assert link.is_symlink() and os.readlink(link) == installed  # ... and it read the link: nothing compiled


_GRANDCHILD = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"


@pytest.mark.parametrize("restored", [True, False])
def test_a_run_started_with_ctrl_c_ignored_gives_the_processes_it_starts_ctrl_c_again(restored: bool) -> None:
    # As a shell's background job starts: SIGINT ignored, and ignored in everything it executes.
    script = f"""
import signal, subprocess, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
from tests.ctrl_c import restore_ctrl_c
print(restore_ctrl_c() if {restored} else None)
sys.stdout.flush()
subprocess.run([sys.executable, "-c", {_GRANDCHILD!r}], check=True)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT)
    assert result.stdout.split() == (["True", "True"] if restored else ["None", "False"])


def test_ctrl_c_is_left_alone_where_it_was_not_ignored() -> None:
    result = subprocess.run(
        [sys.executable, "-c", f"from tests.ctrl_c import restore_ctrl_c; print(restore_ctrl_c()); {_GRANDCHILD}"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    assert result.stdout.split() == ["False", "True"]
