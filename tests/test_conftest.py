"""The suite's own set-up: the order its slowest files start in names files that exist."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import SLOWEST_FIRST

ROOT = Path(__file__).resolve().parents[1]


def test_every_file_listed_to_start_first_exists_once() -> None:
    assert [path for path in SLOWEST_FIRST if not (ROOT / path).is_file()] == []
    assert len(set(SLOWEST_FIRST)) == len(SLOWEST_FIRST)
