"""What a dead writer left is swept by the next one; what a live writer is using, or the only
copy of a bundle, never is. Owners are told apart by pid and start time, so a reused pid does
not keep a dead writer's folder alive."""

from __future__ import annotations

import subprocess
from pathlib import Path

from replay.storage.process_owner import OwnerTag
from replay.storage.stale_folders import (
    ScratchKind,
    scratch_prefix,
    staging_prefix,
    sweep_stale_scratch,
    sweep_stale_staging,
)


def dead_owner() -> OwnerTag:
    """A process that has exited and been reaped."""
    process = subprocess.Popen(["true"])
    process.wait()
    return OwnerTag(pid=process.pid, start=1)


def folder(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "cassette.yaml").write_text("x")
    return path


def test_this_process_is_alive_and_a_reaped_one_or_a_reused_pid_is_not() -> None:
    me = OwnerTag.current()
    assert me.alive()
    assert OwnerTag.parse(str(me)) == me
    assert not dead_owner().alive()
    assert not OwnerTag(pid=me.pid, start=me.start + 1).alive(), "another process that had this pid"
    assert OwnerTag.parse("12-x") is None and OwnerTag.parse("notes") is None


def test_this_process_names_its_folders_after_itself() -> None:
    me = OwnerTag.current()
    assert staging_prefix(Path("lib/notes")) == f".notes.new-{me}-"
    assert scratch_prefix(ScratchKind.SESSION) == f"agent-replay-session-{me}-"


def test_staging_folders_of_dead_writers_are_swept_and_live_or_foreign_ones_are_kept(tmp_path: Path) -> None:
    out = folder(tmp_path / "notes")
    dead, me = dead_owner(), OwnerTag.current()
    stale = [folder(tmp_path / f".notes.new-{dead}-abc"), folder(tmp_path / f".notes.old-{dead}")]
    kept = [
        folder(tmp_path / f".notes.new-{me}-abc"),  # a live writer's
        folder(tmp_path / f".notes.new-{me.pid}-{me.start}"),
        folder(tmp_path / f".notesx.new-{dead}-abc"),  # another bundle's
        folder(tmp_path / ".notes.k3j2h1"),  # no owner in the name (an older version's): unknown, kept
        folder(tmp_path / ".notes.old-4242"),
    ]

    assert sweep_stale_staging(out) == sorted(stale)

    assert not any(path.exists() for path in stale)
    assert all(path.exists() for path in (*kept, out))


def test_a_retired_bundle_is_kept_while_it_is_the_only_copy(tmp_path: Path) -> None:
    out, dead = tmp_path / "notes", dead_owner()
    retired = folder(tmp_path / f".notes.old-{dead}")

    assert sweep_stale_staging(out) == []
    assert retired.exists()

    folder(out)
    assert sweep_stale_staging(out) == [retired]


def test_scratch_folders_of_dead_owners_are_swept_and_others_kept(tmp_path: Path) -> None:
    dead, me = dead_owner(), OwnerTag.current()
    # "run": a kind an older version had (a replay's copy of a workspace).
    stale = [folder(tmp_path / f"agent-replay-{kind}-{dead}-x1") for kind in [*ScratchKind, "run"]]
    kept = [
        folder(tmp_path / f"agent-replay-session-{me}-x1"),
        folder(tmp_path / "agent-replay-session-x1y2z3"),  # no owner in the name
        folder(tmp_path / f"other-{dead}-x1"),
    ]
    (tmp_path / f"agent-replay-run-{dead}-file").write_text("not a folder")

    assert sweep_stale_scratch(tmp_path) == sorted(stale)
    assert all(path.exists() for path in kept)
    assert (tmp_path / f"agent-replay-run-{dead}-file").exists()
