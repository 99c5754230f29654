"""Python's cyclic garbage collector paused while a burst of objects that are not garbage is built.

Loading a cassette and importing the SDK each build hundreds of thousands of objects, none of
them garbage yet, and every allocation burst triggers collections that walk all of them again:
with the collector on, loading 10,000 interactions took a third longer, and importing what
``replay verify`` needs before its workers fork 0.3 s of its 1.7 s. And when the process ends,
the interpreter's last collection walks all of them once more (0.4 s once the SDK is loaded).
"""

from __future__ import annotations

import atexit
import gc
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

__all__ = ["collector_paused", "no_collection_at_exit"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """The collector off for the block, back on after it (even when it raises), unless it was
    already off."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@cache
def no_collection_at_exit() -> None:
    """When the process exits, skip the interpreter's last walk over every object (`gc.freeze`
    from an exit handler): everything is freed as the interpreter shuts down anyway, files are
    closed by their owners and the standard streams flushed by the interpreter. Registered once."""
    atexit.register(gc.freeze)
