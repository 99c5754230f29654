"""The fake model's token counts do not depend on the folder a session runs in: a recording
normalizes each body as fingerprints do before counting it, so two recordings of one scenario
under temp folders of different name lengths report the same usage, byte for byte."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from replay.session.recording import record_bundle

LIBRARY = Path(__file__).resolve().parents[3] / "cassettes"
# Its hook logs absolute workspace paths, which the model then reads back: the sent bodies carry
# the temp folder's name, and its usage is unpinned.
SCENARIO = LIBRARY / "backfilled-relative-paths" / "scenario.yaml"


async def test_two_temp_folders_of_different_lengths_give_the_same_usage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded = []
    for name in ("t", "a-much-longer-temp-folder-name"):
        temp = tmp_path / name
        temp.mkdir()
        monkeypatch.setattr(tempfile, "tempdir", str(temp))
        bundle = await record_bundle(tmp_path / f"out-{name}", scenario=SCENARIO)
        recorded.append(bundle)

    short, long = recorded
    assert short.cassette_path.read_bytes() == long.cassette_path.read_bytes()
    assert short.transcript_path.read_bytes() == long.transcript_path.read_bytes()
