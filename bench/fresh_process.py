"""Run a measurement in a child forked from this process before it has replayed anything: what a
cassette's first replay in a process costs, with nothing the process keeps between replays
(bodies known by their bytes, the secret scan's verdicts, a response's encoded chunks) learned
yet. The benches call `in_fresh_child` before their own warm-ups, so every child starts from the
same untouched state; the child's result comes back pickled."""

from __future__ import annotations

import os
import pickle
import sys
import traceback
from collections.abc import Callable
from typing import TypeVar

__all__ = ["in_fresh_child"]

T = TypeVar("T")


def in_fresh_child(measure: Callable[[], T]) -> T:
    """``measure()`` run in a forked child of this process (POSIX only); raises SystemExit with
    the child's error when it fails."""
    sys.stdout.flush()
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: measure, send the result, leave without running the parent's exit code
        os.close(read_end)
        try:
            payload = pickle.dumps((True, measure()))
        except BaseException:  # whatever the child hit is the parent's to report
            payload = pickle.dumps((False, traceback.format_exc()))
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(payload)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    if not data or os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"a fresh child process died (status {status}) before it sent its measurement")
    ok, value = pickle.loads(data)
    if not ok:
        raise SystemExit(f"a fresh child process failed:\n{value}")
    return value
