"""Which process owns a folder: a pid and that process's start time, written into the names of
the staging and scratch folders a writer makes, so a later writer can tell a dead owner's
leftovers (safe to remove) from a live one's (never touched), even after the pid is reused."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["OwnerTag"]

_TAG = re.compile(r"^(\d+)-(\d+)$")


@dataclass(frozen=True, kw_only=True)
class OwnerTag:
    """A process, told apart from a later one with the same pid by its start time (clock ticks
    since boot, ``/proc/PID/stat`` field 22; 0 where the system does not say)."""

    pid: int
    start: int

    @classmethod
    def current(cls) -> OwnerTag:
        """This process."""
        pid = os.getpid()
        return cls(pid=pid, start=_start_time(pid) or 0)

    @classmethod
    def parse(cls, text: str) -> OwnerTag | None:
        """The tag written as ``PID-START``, or None if ``text`` is not one."""
        match = _TAG.match(text)
        return cls(pid=int(match.group(1)), start=int(match.group(2))) if match else None

    def __str__(self) -> str:
        return f"{self.pid}-{self.start}"

    def alive(self) -> bool:
        """Whether this process is still running (a zombie, or a new process that reuses the
        pid, is not it)."""
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass  # another account's process: it exists
        start = _start_time(self.pid)
        if start is None:  # no /proc here: the pid alone has to do
            return True
        return start == self.start and _state(self.pid) != "Z"


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (which may hold spaces)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    return text[text.rfind(")") + 2 :].split()


def _start_time(pid: int) -> int | None:
    fields = _stat_fields(pid)
    # Field 3 (state) is fields[0]; field 22 (starttime) is fields[19].
    return int(fields[19]) if fields is not None and len(fields) > 19 else None


def _state(pid: int) -> str | None:
    fields = _stat_fields(pid)
    return fields[0] if fields else None
