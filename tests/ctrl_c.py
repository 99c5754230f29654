"""Ctrl-C for the processes the tests start, whatever started the test run.

Several tests stop a process they started with SIGINT, as a user's Ctrl-C would. A shell starts a
background job (``(pytest &)``, a ``nohup`` run) with SIGINT ignored, an ignored signal stays
ignored across ``exec``, and Python then leaves it ignored: those processes would never see the
Ctrl-C. A run restores it once, in each process that collects (xdist's workers too), so every
process started from it gets Python's usual Ctrl-C."""

from __future__ import annotations

import signal
import threading

__all__ = ["restore_ctrl_c"]


def restore_ctrl_c() -> bool:
    """Give this process Python's usual Ctrl-C (``KeyboardInterrupt``) when SIGINT was ignored;
    whether it was. Only the main thread may set a handler: elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(signal.SIGINT) != signal.SIG_IGN:
        return False
    signal.signal(signal.SIGINT, signal.default_int_handler)
    return True
