"""examples/minimal_loop.py tested as any user's agent is: a plain ``anthropic.Anthropic()``
built inside a test under the ``replay_cassette`` marker, answered from the cassette beside this
file. It was recorded once with ``pytest tests/examples/test_minimal_loop_cassette.py
--record-mode=once``: the marker's scenario served the model on loopback while the loop ran."""

from __future__ import annotations

from pathlib import Path

import anthropic
import pytest

from tests.examples.conftest import load_module

minimal_loop = load_module("examples/minimal_loop.py")


@pytest.mark.replay_cassette("minimal-loop-notes", scenario="scenarios/minimal-loop-notes.yaml")
def test_the_minimal_loop_replays_from_its_cassette_offline(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.md").write_text("TODO: rotate the staging keys.\n", encoding="utf-8")

    answer = minimal_loop.run(anthropic.Anthropic(), "What is left to do?", tmp_path)

    assert answer == "One TODO: rotate the staging keys."
