"""The folders a writer leaves while it works — a bundle's staging folder beside it, the old
bundle swapped out, scratch folders in the system temp folder — are named after their owner
(``replay.storage.process_owner``); a SIGTERM removes them, and the next writer sweeps those whose
owner died (SIGKILL, a power cut) without ever touching a live writer's."""

from __future__ import annotations

import re
import shutil
import tempfile
from enum import StrEnum
from pathlib import Path

from replay.storage.process_owner import OwnerTag

__all__ = [
    "ScratchKind",
    "retired_path",
    "scratch_prefix",
    "staging_prefix",
    "sweep_stale_scratch",
    "sweep_stale_staging",
]

# Any kind's, including kinds earlier versions had (a replay's "run" copy of a workspace).
_SCRATCH = re.compile(r"^agent-replay-(?:[a-z]+)-(\d+-\d+)-")


class ScratchKind(StrEnum):
    """What a scratch folder in the system temp folder is for."""

    RECORD = "record"  # a recorder's scratch copy of the cassette
    SESSION = "session"  # the workspace and session folder a run works in
    RERECORD = "rerecord"  # a re-recording compared with the committed bundle


def staging_prefix(out: Path) -> str:
    """The name prefix of this process's staging folder for the bundle ``out`` (hidden, so no
    search takes it for a bundle)."""
    return f".{out.name}.new-{OwnerTag.current()}-"


def retired_path(out: Path) -> Path:
    """Where this process moves the old bundle when the system cannot exchange two folders."""
    return out.with_name(f".{out.name}.old-{OwnerTag.current()}")


def scratch_prefix(kind: ScratchKind) -> str:
    """The name prefix of this process's scratch folders of ``kind`` in the system temp folder."""
    return f"agent-replay-{kind}-{OwnerTag.current()}-"


def sweep_stale_staging(out: Path) -> list[Path]:
    """Remove the staging folders and retired bundles beside ``out`` whose owner is dead; a
    retired bundle only while ``out`` itself exists (otherwise it is the only copy, and
    ``load_bundle`` tells the user where it is). Returns what was removed."""
    if not out.parent.is_dir():
        return []
    pattern = re.compile(rf"^\.{re.escape(out.name)}\.(new|old)-(\d+-\d+)(?:-.*)?$")
    removed = []
    for entry in sorted(out.parent.iterdir()):
        match = pattern.match(entry.name)
        if match is None or not entry.is_dir() or entry.is_symlink():
            continue
        if match.group(1) == "old" and not out.is_dir():
            continue
        if _dead(match.group(2)):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


def sweep_stale_scratch(root: Path | None = None) -> list[Path]:
    """Remove the scratch folders in ``root`` (the system temp folder) whose owner is dead."""
    root = Path(root or tempfile.gettempdir())
    removed = []
    try:
        entries = sorted(root.iterdir())
    except OSError:
        return []
    for entry in entries:
        match = _SCRATCH.match(entry.name)
        if match is None or entry.is_symlink() or not entry.is_dir():
            continue
        if _dead(match.group(1)):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


def _dead(tag_text: str) -> bool:
    tag = OwnerTag.parse(tag_text)
    return tag is not None and not tag.alive()
