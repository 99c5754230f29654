"""`collector_paused`: the cyclic collector is off inside the block and as it was after it; with
``long_lived`` what the block made goes to the oldest generation (not garbage forever: a full
collection still frees it) in a process the command line owns, unless someone has objects
frozen. `set_aside_for_the_process`: what was made before is out of every later collection, what
is made after is collected. `no_collection_at_exit`: a process that exits freezes its objects
first."""

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


LONG_LIVED = """
import gc, weakref
from replay.collector import collector_paused, command_owns_the_process

def generation_of(obj):
    return next((g for g in range(3) if any(found is obj for found in gc.get_objects(generation=g))), None)

class Node:
    def __init__(self):
        self.me = self  # a cycle: only the cyclic collector frees it

with collector_paused(long_lived=True):
    made = [[]]
print("not owned:", generation_of(made))
command_owns_the_process()
with collector_paused(long_lived=True):
    made, node = [[]], Node()
print("made:", generation_of(made), gc.isenabled(), gc.get_freeze_count())
alive = weakref.ref(node)
del node
gc.collect()
print("garbage freed:", alive() is None)
kept = [[]]
gc.freeze()
with collector_paused(long_lived=True):
    made = [[]]
print("frozen before:", generation_of(kept), generation_of(made))
"""


def test_what_a_long_lived_block_made_goes_to_the_oldest_generation_and_is_still_collected() -> None:
    # In a process of its own: the suite freezes what collecting it built, and so would this.
    lines = run_python(LONG_LIVED)

    assert lines == [
        "not owned: 0",  # a program calling the command line in process keeps its generations
        "made: 2 True 0",  # the oldest generation, the collector on, nothing left frozen
        "garbage freed: True",  # a full collection still frees it
        "frozen before: None 0",  # still frozen (theirs to thaw), and made as without long_lived
    ]


def run_python(code: str) -> list[str]:
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


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
    assert run_python(code) == ["frozen while running: False", "frozen at exit: True"]


def test_what_a_command_made_before_replaying_is_set_aside_and_what_it_makes_after_is_collected() -> None:
    code = """
import gc
from replay.collector import command_owns_the_process, set_aside_for_the_process
imported = [[]]
set_aside_for_the_process()
print("not owned:", gc.get_freeze_count())
command_owns_the_process()
set_aside_for_the_process()
made = [[]]
made.append(made)
ref = id(made)
del made
print("set aside:", gc.get_freeze_count() > 0, any(o is imported for o in gc.get_objects()))
print("after, collected:", gc.collect() > 0, all(id(o) != ref for o in gc.get_objects()))
"""
    # A program that calls the command line in process (a test's CliRunner) keeps its objects
    # collectable; the command line's own process sets them aside.
    assert run_python(code) == ["not owned: 0", "set aside: True False", "after, collected: True True"]


def test_the_command_lines_entry_points_say_they_own_their_process() -> None:
    code = """
import sys
import replay.collector as collector
from replay.cli import app as cli
sys.argv = ["replay", "--help"]
try:
    cli.run()
except SystemExit:
    pass
print("owned:", collector._command_owns_the_process)
"""
    assert run_python(code)[-1] == "owned: True"
