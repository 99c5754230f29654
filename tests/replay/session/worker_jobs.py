"""Jobs for the worker pool's tests: module-level, so a fork server can send them by name. An
item names what the job does: ``crash`` ends its process, ``hang`` never returns, ``raise``
raises, anything else comes back upper-cased with the worker's process id."""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from replay.session.verify import BundleSummary


def echo(item: str) -> tuple[str, int]:
    if item.startswith("crash"):
        os.kill(os.getpid(), signal.SIGKILL)
    if item.startswith("hang"):
        # For a test that waits for it: one write, so two workers' lines never interleave (print
        # writes the text and its newline separately).
        os.write(sys.stdout.fileno(), f"hanging in {os.getpid()}\n".encode())
        time.sleep(3600)
    if item.startswith("raise"):
        raise RuntimeError("the job failed")
    return item.upper(), os.getpid()


def verify_unless_crash(bundle: str) -> BundleSummary:
    """``verify_bundle``, except that the process running a bundle named ``crash`` dies."""
    from replay.session.verify import verify_bundle  # not for a fork server's preload: the SDK

    if os.path.basename(bundle) == "crash":
        sys.stdout.flush()
        os._exit(3)
    return verify_bundle(bundle)
