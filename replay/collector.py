"""Python's cyclic garbage collector paused while a burst of objects that are not garbage is built.

Loading a cassette and importing the SDK each build hundreds of thousands of objects, none of
them garbage yet, and every allocation burst triggers collections that walk all of them again:
with the collector on, loading 10,000 interactions took a third longer, and importing what
``replay verify`` needs before its workers fork 0.3 s of its 1.7 s. And when the process ends,
the interpreter's last collection walks all of them once more (0.4 s once the SDK is loaded).

Turning the collector back on is not free either: everything made while it was off is in the
youngest generation, so the next collection walks it all (0.07 s after the SDK's import), and
the one after that again as it is promoted. Modules live as long as the process: the block that
imports them (``long_lived=True``) hands what it made straight to the oldest generation, where
only the (rarer) full collections look at it, as they would have once it was promoted.
"""

from __future__ import annotations

import atexit
import gc
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

__all__ = ["collector_paused", "command_owns_the_process", "no_collection_at_exit", "set_aside_for_the_process"]

# Whether this process runs one command and exits (the ``replay`` script, ``python -m replay.cli``),
# not a program that calls the command line in process (a test's CliRunner) and goes on.
_command_owns_the_process = False
# Whether `set_aside_for_the_process` froze what was made so far (then a block's objects stay young).
_set_aside = False


@contextmanager
def collector_paused(*, long_lived: bool = False) -> Iterator[None]:
    """The collector off for the block, back on after it (even when it raises), unless it was
    already off. ``long_lived``: what the block made (imported modules) goes to the oldest
    generation once it ends, not through the young ones, where the command owns the process
    (`command_owns_the_process`) and nothing is frozen yet (frozen objects are someone's to thaw,
    not this). A program that calls the command line in process keeps its generations as they
    were: what it froze is not even counted (`gc.get_freeze_count` walks every frozen object: 47 ms
    in a test process that froze the 426,000 objects collecting this suite built)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if long_lived and _command_owns_the_process and not _set_aside and gc.get_freeze_count() == 0:
            gc.freeze()  # every tracked object: set aside, and the young generation's count reset
            gc.unfreeze()  # back, all of it, into the oldest generation
        if was_enabled:
            gc.enable()


def command_owns_the_process() -> None:
    """Say that this process runs one command and exits (the command line's entry points)."""
    global _command_owns_the_process
    _command_owns_the_process = True


def set_aside_for_the_process() -> None:
    """Leave every object made so far (the modules a command imported: the SDK, the engine) out
    of all later collections (`gc.freeze`), for a command that replays in its own process and
    exits: ``replay run``, and ``replay verify`` without workers. Its full collections then walk
    only what replaying makes, as those of ``replay verify``'s workers do (forked with the same
    objects frozen): 0.3 s of ``--jobs 1`` on the library. Only where the command owns the
    process (`command_owns_the_process`): a program that calls it in process keeps its garbage
    collectable."""
    global _set_aside
    if _command_owns_the_process:
        gc.freeze()
        _set_aside = True


@cache
def no_collection_at_exit() -> None:
    """When the process exits, skip the interpreter's last walk over every object (`gc.freeze`
    from an exit handler): everything is freed as the interpreter shuts down anyway, files are
    closed by their owners and the standard streams flushed by the interpreter. Registered once."""
    atexit.register(gc.freeze)
