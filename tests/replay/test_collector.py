"""`collector_paused`: the cyclic collector is off inside the block and as it was after it;
`no_collection_at_exit`: a process that exits freezes its objects first."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest

from replay.collector import collector_paused


def test_the_collector_is_off_inside_and_on_again_after() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_it_is_on_again_after_the_block_raises() -> None:
    with pytest.raises(ImportError), collector_paused():
        raise ImportError("a module that is not there")
    assert gc.isenabled()


def test_a_collector_already_off_stays_off() -> None:
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_an_exiting_process_freezes_its_objects_before_the_last_collection() -> None:
    # An exit handler registered after ours runs before it (last in, first out), and one
    # registered first runs after it: that one sees the objects frozen.
    code = """
import atexit, gc
atexit.register(lambda: print("frozen at exit:", gc.get_freeze_count() > 0, flush=True))
from replay.collector import no_collection_at_exit
no_collection_at_exit()
no_collection_at_exit()
print("frozen while running:", gc.get_freeze_count() > 0)
"""
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True, text=True
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["frozen while running: False", "frozen at exit: True"]
