"""The suite's own set-up: the order its slowest files start in names files that exist, and scratch
files go to memory only where that is a folder they can be written and run in."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from tests.conftest import SLOWEST_FIRST, ram_scratch_folder

ROOT = Path(__file__).resolve().parents[1]


def test_every_file_listed_to_start_first_exists_once() -> None:
    assert [path for path in SLOWEST_FIRST if not (ROOT / path).is_file()] == []
    assert len(set(SLOWEST_FIRST)) == len(SLOWEST_FIRST)


def test_scratch_goes_to_a_folder_in_memory_only_where_there_is_a_usable_one(tmp_path: Path) -> None:
    assert ram_scratch_folder(str(tmp_path / "missing")) is None
    (tmp_path / "file").write_text("")
    assert ram_scratch_folder(str(tmp_path / "file")) is None
    folder = ram_scratch_folder()
    if folder is not None and os.environ.get("TMPDIR") == folder:
        assert tempfile.gettempdir() == folder and str(tmp_path).startswith(folder)
